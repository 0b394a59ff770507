package cputime

import (
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

// TestBusyLoop spins 50 ms on a locked thread. The thread's CPU time cannot
// exceed the wall time around it (one thread runs on one CPU at a time; a
// small slack covers the two clocks' reads not being simultaneous); it can
// fall short only by the time the thread was descheduled, so the lower
// bound is loose (a quarter) to survive a loaded machine.
func TestBusyLoop(t *testing.T) {
	cpu, wall := spin(t, 50*time.Millisecond)
	t.Logf("cpu %v, wall %v", cpu, wall)
	if cpu > wall+time.Millisecond {
		t.Errorf("thread CPU %v exceeds the wall time %v around it", cpu, wall)
	}
	if cpu < wall/4 {
		t.Errorf("thread CPU %v is below a quarter of the wall time %v of a busy loop", cpu, wall)
	}
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
