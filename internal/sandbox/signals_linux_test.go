package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeEnv makes this test binary, started through the launcher, run
// signalProbe instead of its tests.
const probeEnv = "SANDBOX_TEST_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		signalProbe()
		os.Exit(0)
	}
	if name := os.Getenv(nsProbeEnv); name != "" {
		nsReport(name)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// signalProbe is a plugin reaching for its host (its parent) by every
// route to a signal and through prctl's int argument, then doing what an
// honest Go program does with signals: one line per attempt, the name and
// "ok" or the error.
func signalProbe() {
	host, self := os.Getppid(), os.Getpid()
	raw := func(nr, a, b, c uintptr) error {
		if _, _, e := syscall.RawSyscall(nr, a, b, c); e != 0 {
			return e
		}
		return nil
	}
	// A siginfo of a process's sigqueue (si_code SI_QUEUE): one whose
	// si_code says "the kernel" is refused by the kernel itself.
	var info [128]byte
	*(*int32)(unsafe.Pointer(&info[8])) = -1
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		fmt.Printf("socketpair: %v\n", err)
		return
	}
	fd := uintptr(fds[0])
	owner := int32(host)
	// A pid with bit 32 set: the kernel reads only the low bits, so the
	// filter must too (a variable, so the constant fits a 32-bit uintptr,
	// where the bit drops and the step repeats "kill host").
	var upper32 uint64 = 1 << 32
	var ownerEx [2]int32
	ownerEx[0], ownerEx[1] = 1 /* F_OWNER_PID */, int32(host)
	steps := []struct {
		name string
		do   func() error
	}{
		{"kill host", func() error { return raw(unix.SYS_KILL, uintptr(host), 0, 0) }},
		{"kill host, upper bits set", func() error { return raw(unix.SYS_KILL, uintptr(upper32)|uintptr(host), 0, 0) }},
		{"kill all", func() error { return raw(unix.SYS_KILL, ^uintptr(0), 0, 0) }},
		{"tgkill host", func() error { return raw(unix.SYS_TGKILL, uintptr(host), uintptr(host), 0) }},
		{"tkill host", func() error { return raw(unix.SYS_TKILL, uintptr(host), 0, 0) }},
		{"rt_sigqueueinfo host", func() error {
			return raw(unix.SYS_RT_SIGQUEUEINFO, uintptr(host), 0, uintptr(unsafe.Pointer(&info)))
		}},
		{"pidfd_send_signal host", func() error {
			pfd, err := unix.PidfdOpen(host, 0)
			if err != nil {
				return err
			}
			defer unix.Close(pfd)
			return unix.PidfdSendSignal(pfd, 0, nil, 0)
		}},
		{"F_SETSIG", func() error { return raw(unix.SYS_FCNTL, fd, unix.F_SETSIG, uintptr(syscall.SIGCONT)) }},
		{"F_SETOWN host", func() error { return raw(unix.SYS_FCNTL, fd, unix.F_SETOWN, uintptr(host)) }},
		{"F_SETOWN host, upper bits set", func() error { return raw(unix.SYS_FCNTL, fd, uintptr(upper32)|unix.F_SETOWN, uintptr(host)) }},
		{"F_SETOWN_EX host", func() error {
			return raw(unix.SYS_FCNTL, fd, unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&ownerEx)))
		}},
		{"FIOSETOWN host", func() error { return raw(unix.SYS_IOCTL, fd, fioSetOwn, uintptr(unsafe.Pointer(&owner))) }},
		{"SIOCSPGRP host", func() error { return raw(unix.SYS_IOCTL, fd, unix.SIOCSPGRP, uintptr(unsafe.Pointer(&owner))) }},
		{"PR_SET_PDEATHSIG", func() error { return raw(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, 0, 0) }},
		{"PR_SET_PDEATHSIG, upper bits set", func() error { return raw(unix.SYS_PRCTL, uintptr(upper32)|unix.PR_SET_PDEATHSIG, 0, 0) }},
		{"PR_SET_DUMPABLE", func() error { return raw(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0) }},
		// What stays allowed.
		{"kill self", func() error { return raw(unix.SYS_KILL, uintptr(self), 0, 0) }},
		{"kill own group", func() error { return raw(unix.SYS_KILL, 0, 0, 0) }},
		{"kill -self", func() error { return syscall.Kill(-self, 0) }},
		{"tgkill own thread", func() error { return raw(unix.SYS_TGKILL, uintptr(self), uintptr(unix.Gettid()), 0) }},
		{"F_GETOWN", func() error { return raw(unix.SYS_FCNTL, fd, unix.F_GETOWN, 0) }},
		{"SIOCINQ", func() error {
			var n int32
			return raw(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&n)))
		}},
		{"PR_GET_PDEATHSIG", func() error {
			var sig int32
			return raw(unix.SYS_PRCTL, unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0)
		}},
		// The runtime preempts a goroutine that never yields with a signal
		// to its thread (tgkill): on one P, the sleeper wakes only so.
		{"preemption", func() error {
			runtime.GOMAXPROCS(1)
			stop := make(chan struct{})
			go func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					// No call in the loop: preemptible only by a signal.
					for i := 0; i < 1e9; i++ {
					}
				}
			}()
			time.Sleep(20 * time.Millisecond)
			close(stop)
			return nil
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			fmt.Printf("%s: %v\n", s.name, err)
		} else {
			fmt.Printf("%s: ok\n", s.name)
		}
	}
}

// TestSignalsFiltered: a plugin that Landlock does not confine (a kernel
// without Landlock, or before ABI 6, which scopes signals) and that runs
// as its host's user could signal any process of that user, its host
// among them, by kill, tgkill, tkill, rt_sigqueueinfo, a pidfd or a
// descriptor's owner (SIGIO), and clear its parent-death signal by
// setting prctl's option's upper 32 bits, which a 64-bit comparison
// missed. The test binary, launched as a plugin with seccomp alone
// (Landlock off, as such a kernel gets it), runs signalProbe against its
// parent, the test: each route is refused (EPERM), and the calls a Go
// program makes on itself work. Unconfined (--plugin-sandbox off) the
// same probe reaches the host, so the refusals are seccomp's.
func TestSignalsFiltered(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{BestEffort, Off} {
		t.Run(string(mode), func(t *testing.T) {
			s, err := New(Options{Mode: mode, User: "self"})
			if err != nil {
				t.Fatal(err)
			}
			if mode != Off && !s.seccomp {
				t.Skip("no seccomp on this kernel")
			}
			s.landlock = 0 // a kernel without Landlock
			out := runAsPlugin(t, s, exe, probeEnv+"=1")
			got := probeLines(out)
			t.Logf("%s", out)
			allowed := []string{"kill self", "kill own group", "kill -self", "tgkill own thread", "F_GETOWN", "SIOCINQ", "PR_GET_PDEATHSIG", "preemption"}
			for _, name := range allowed {
				if got[name] != "ok" {
					t.Errorf("%s: %q, want ok", name, got[name])
				}
			}
			for name, res := range got {
				if slices.Contains(allowed, name) {
					continue
				}
				switch {
				case mode == Off && res != "ok" && !strings.Contains(name, "upper bits"):
					// Unconfined, as the host's user (or root), every
					// route reaches the host.
					t.Errorf("unconfined %s: %q, want ok (the probe does not show what the filter refuses)", name, res)
				case mode != Off && res != syscall.EPERM.Error():
					t.Errorf("%s: %q, want %q", name, res, syscall.EPERM.Error())
				}
			}
			if len(got) != len(allowed)+16 {
				t.Errorf("%d probes reported, want %d", len(got), len(allowed)+16)
			}
		})
	}
}
