// Package flock holds the advisory locks msjfarm marks things in use
// with: a local run's campaign (cmd/msjfarm), an embedded NATS server's
// store directory (internal/protocol) and a process's scratch directory
// (internal/scratch). An flock, not a pid file, because the kernel lets go
// of it when its process ends, however it ends (SIGKILL, the OOM killer);
// a lock file also carries a line naming its holder, for the message of
// whoever finds it taken.
package flock

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// TryLock takes f's exclusive lock without waiting: false when another
// open file holds it (a descriptor of this process's own counts as
// another).
func TryLock(f *os.File) bool {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}

// Unlock lets go of f's lock (closing f does too).
func Unlock(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// Holder is the line the holder of the lock file at path wrote into it
// (Mark), or "another process" when it wrote none.
func Holder(path string) string {
	data, _ := os.ReadFile(path)
	if who := strings.TrimSpace(string(data)); who != "" {
		return who
	}
	return "another process"
}

// Mark replaces the content of f, whose lock this process holds, with a
// line naming it as who, and since when ("msjfarm run pid 4242 since
// 2026-12-02 01:55:50").
func Mark(f *os.File, who string) {
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(who+" since "+time.Now().Format(time.DateTime)+"\n"), 0)
}
