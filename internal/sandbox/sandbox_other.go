//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
	"time"
)

// Landlock and seccomp are Linux's: elsewhere New reports them missing,
// and plugins run as with --plugin-sandbox off.
func probe() (landlockABI int, seccompOK bool) { return 0, false }

func userTasks(int) (int64, bool) { return 0, false }

// Threads is 0: a process's threads are read from Linux's /proc.
func Threads(int) int64 { return 0 }

// CPU is 0: a process's CPU time is read from Linux's /proc.
func CPU(int) time.Duration { return 0 }

func libraries(string) (string, []string) { return "", nil }

// LibraryHint is "": plugins run unconfined here.
func (s *Sandbox) LibraryHint(binary, stderr string) string { return "" }

// launcherAttr is never used here (New turns the sandbox off).
func launcherAttr(uintptr) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// probeNamespaces: namespaces are Linux's.
func probeNamespaces() (uintptr, error, error) {
	return 0, errors.New("not Linux"), errors.New("not Linux")
}

func hasNetNS(uintptr) bool { return false }
func hasRoot(uintptr) bool  { return false }

// closeOnExec is Linux's (launch_linux.go); elsewhere plugins run
// unconfined.
func closeOnExec() {}

// Undumpable is Linux's (hide_linux.go); elsewhere another process of the
// user may read msjfarm's environment as the system allows.
func Undumpable() error { return nil }

func ownsUserNS(uintptr) bool { return false }

func nprocPerNamespace() bool { return false }
