package cputime

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// spin busy-loops on the calling thread for at least d of wall time and
// returns the thread CPU time and the wall time measured around it.
func spin(t *testing.T, d time.Duration) (cpu, wall time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := Thread()
	if !ok {
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	start := time.Now()
	x := uint64(1)
	for time.Since(start) < d {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	wall = time.Since(start)
	c1, _ := Thread()
	if x == 0 { // keeps the loop from being optimised away; never true for this LCG from 1
		t.Log(x)
	}
	return c1 - c0, wall
}

// TestBusyLoop spins on a locked thread until its clock has advanced by
// 50 ms (a ceiling of 60 s of wall time keeps a broken clock from hanging
// the test). The thread's CPU time cannot exceed the wall time around it
// (one thread runs on one CPU at a time; a small slack covers the two
// clocks' reads not being simultaneous). Its lower side is checked against
// the kernel's own account of the thread's run time,
// /proc/thread-self/schedstat, which does not depend on how loaded the
// machine is: a wall-time lower bound would fail whenever the thread waits
// for a core.
func TestBusyLoop(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := Thread()
	if !ok {
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	s0, haveSched := schedRun(t)
	start := time.Now()
	x := uint64(1)
	var c1 time.Duration
	for {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		c1, _ = Thread()
		if c1-c0 >= 50*time.Millisecond || time.Since(start) > time.Minute {
			break
		}
	}
	wall := time.Since(start)
	s1, _ := schedRun(t)
	if x == 0 { // keeps the loop from being optimised away; never true for this LCG from 1
		t.Log(x)
	}
	cpu := c1 - c0
	t.Logf("cpu %v, wall %v", cpu, wall)
	if cpu < 50*time.Millisecond {
		t.Fatalf("thread CPU advanced only %v in %v of busy looping", cpu, wall)
	}
	if cpu > wall+time.Millisecond {
		t.Errorf("thread CPU %v exceeds the wall time %v around it", cpu, wall)
	}
	if haveSched {
		if d := cpu - (s1 - s0); d < -2*time.Millisecond || d > 2*time.Millisecond {
			t.Errorf("thread CPU %v differs from the kernel's run time %v by %v", cpu, s1-s0, d)
		}
	}
}

// schedRun reads the calling thread's run time from /proc/thread-self/schedstat
// (first field, nanoseconds); ok is false where the file does not exist.
func schedRun(t *testing.T) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return 0, false
	}
	var ns int64
	if _, err := fmt.Sscan(string(data), &ns); err != nil {
		t.Fatalf("schedstat %q: %v", data, err)
	}
	return time.Duration(ns), true
}

// TestShortLoop: a 2 ms loop — shorter than a scheduler tick at HZ=250 —
// reads more than 0. getrusage(RUSAGE_THREAD), tick-sampled, often reads 0
// here; that is why this clock is used.
func TestShortLoop(t *testing.T) {
	cpu, wall := spin(t, 2*time.Millisecond)
	t.Logf("cpu %v, wall %v", cpu, wall)
	if cpu <= 0 {
		t.Errorf("thread CPU of a %v busy loop is %v, want > 0", wall, cpu)
	}
	if cpu > wall+time.Millisecond {
		t.Errorf("thread CPU %v exceeds the wall time %v around it", cpu, wall)
	}
}

// TestProcessCoversThread: the process's CPU time includes the spinning
// thread's, so across a spin it advances by at least the thread's measured
// CPU time, less the resolution of getrusage's account (it is kept from
// the scheduler's runtime but may lag a tick, 10 ms at HZ=100: the slack).
func TestProcessCoversThread(t *testing.T) {
	p0, ok := Process()
	if !ok {
		t.Skip("no process CPU clock on " + runtime.GOOS)
	}
	cpu, _ := spin(t, 100*time.Millisecond)
	p1, _ := Process()
	if got, slack := p1-p0, 10*time.Millisecond; got < cpu-slack {
		t.Fatalf("process CPU advanced %v across a spin whose thread used %v", got, cpu)
	}
}
