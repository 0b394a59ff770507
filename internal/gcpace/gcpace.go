// Package gcpace sets the garbage collector's pace for the processes that
// run simulations: msjfarm itself and every policy plugin binary.
//
// Why: a replication's heap is almost all live until the replication ends —
// pooled jobs and the queues that hold them — and it allocates nothing in a
// steady state, so the collector has almost nothing to free. When a backlog
// grows (an unstable load, a run near saturation), the default GOGC=100
// nevertheless starts a cycle at every doubling of the heap, and each cycle
// scans every queued job pointer and sends every pointer store of the event
// loop through the write barrier while it marks. On FCFS over one-or-all at
// λ = 7 (a backlog of 750 000 jobs after 1.33·10^6 arrivals) that was ~25%
// of the CPU time; at GOGC=400 it is ~10%, and the peak memory is the same,
// because there is so little garbage to let accumulate.
//
// At GOGC=400 the runtime still starts its first cycle at 16 MiB (its 4-MiB
// minimum heap, scaled by GOGC), which a growing backlog reaches in a few
// tens of milliseconds; that one cycle, mostly its write barriers, was 7% of
// the same run once the backlog was kept compactly (sdk.ParkingFIFO). So
// the collector also waits until the heap reaches Floor: the goal is
// max(Floor, live heap × (1 + Percent/100)), set again after every cycle.
package gcpace

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

const (
	// Percent is the GOGC value a simulation process runs with when the
	// environment does not set GOGC, once its live heap is past
	// Floor/(1+Percent/100).
	Percent = 400
	// Floor is the heap size below which no cycle starts: 64 MiB, which a
	// replication reaches only with a queue of 10^6 jobs or more.
	Floor = 64 << 20
	// runtimeMinHeap is the Go runtime's minimum heap goal at GOGC=100
	// (defaultHeapMinimum): at GOGC=x the goal is never below
	// runtimeMinHeap·x/100, so the percent that gives Floor is the largest
	// one the floor may use.
	runtimeMinHeap = 4 << 20
	maxPercent     = Floor / runtimeMinHeap * 100
)

// Apply sets the collector's pace — goal max(Floor, live × (1 +
// Percent/100)) — unless $GOGC is set (the user's choice wins, including
// GOGC=off, and then nothing is changed). It returns the GOGC now in force,
// as debug.SetGCPercent reports it (negative: off).
func Apply() int {
	if _, set := os.LookupEnv("GOGC"); set {
		v := debug.SetGCPercent(-1)
		debug.SetGCPercent(v)
		return v
	}
	p := PercentFor(liveHeap())
	debug.SetGCPercent(p)
	if armed.CompareAndSwap(false, true) {
		arm() // once per process: msjfarm's __serve-family calls Apply twice
	}
	return p
}

var armed atomic.Bool

// PercentFor is the GOGC that puts the next goal at max(Floor, live × (1 +
// Percent/100)) for a live heap of live bytes.
func PercentFor(live uint64) int {
	switch {
	case live*(100+Percent)/100 >= Floor:
		return Percent
	case live == 0:
		return maxPercent
	}
	// live·(1 + p/100) = Floor, within [Percent, maxPercent].
	return min(max(int(Floor*100/live)-100, Percent), maxPercent)
}

// arm re-sets the pace after the next cycle: a cleanup runs once the
// collector has found an object unreachable, that is after each cycle.
func arm() {
	s := new(sentinel)
	runtime.AddCleanup(s, func(struct{}) {
		if stopped.Load() {
			return
		}
		debug.SetGCPercent(PercentFor(liveHeap()))
		arm()
	}, struct{}{})
}

var stopped atomic.Bool

// Stop gives the collector back its default pace (GOGC=100, or $GOGC)
// for good, in a process that turns out to run no simulation: the
// coordinator, whose heap is mostly garbage, would otherwise grow to five
// times what is live.
func Stop() {
	stopped.Store(true)
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(100)
	}
}

// Simulating sets the simulation pace, if Stop had set the default one,
// until the returned function restores it: for simulations a process runs
// between reads (the dry run's calibrations, timed on the thread CPU
// clock, which counts the collector's assists: at GOGC=100 over the
// campaign's plan they took ~15% more than at the pace the farm's
// replications run).
func Simulating() (restore func()) {
	if !stopped.Load() {
		return func() {}
	}
	Resume()
	return Stop
}

// Resume undoes Stop: the simulation pace again (Apply), for a process
// that read at the default pace before it simulates (msjfarm reproduce
// reads a campaign, then re-runs some of its replications).
func Resume() int {
	if stopped.CompareAndSwap(true, false) {
		armed.Store(false) // Stop broke the chain of cleanups: arm again
	}
	return Apply()
}

// Hold gives the collector its default pace until release is called,
// for a process that simulates (at the simulation pace) and meanwhile
// does work whose heap is mostly garbage: the finalisation of `msjfarm
// run`'s embedded coordinator, whose report tables of 12,000 points,
// built and dropped at GOGC=400, grew the process to 3.2 GB. In a process
// already at the default pace (Stop: `msjfarm coordinator`) it changes
// nothing. Holds nest; the last release resumes the simulation pace.
func Hold() (release func()) {
	holdMu.Lock()
	defer holdMu.Unlock()
	if holds == 0 && !stopped.Load() {
		Stop()
		heldStop = true
	}
	holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			holdMu.Lock()
			defer holdMu.Unlock()
			holds--
			if holds == 0 && heldStop {
				heldStop = false
				Resume()
			}
		})
	}
}

var (
	holdMu   sync.Mutex
	holds    int
	heldStop bool // the first Hold stopped the simulation pace
)

// sentinel is large enough not to share a tiny-allocator block, whose
// other objects could keep it reachable.
type sentinel [32]byte

// liveHeap is the heap the last cycle found live (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
