package sim_test

import (
	"runtime"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
)

func mallocs(t *testing.T, w *sim.Workload, arrivals int64) uint64 {
	t.Helper()
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	if _, err := sim.Run(w, &fcfs.FCFS{}, sim.Config{Seed: 3, Arrivals: arrivals}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&b)
	return b.Mallocs - a.Mallocs
}

// TestSteadyStateAllocatesNothing: a stable run four times longer performs
// (almost) the same number of heap allocations: everything is set-up, and
// the per-event path allocates nothing. The slack allows a few more job-pool
// chunks (256 jobs each) and ring-buffer doublings when the longer run
// reaches a new maximum number in system — at ρ = 0.5 on M/M/4 that maximum
// grows by a few dozen jobs at most, i.e. at most a handful of allocations.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	w := single(4, 2, expD(1))
	short := mallocs(t, w, 50000)
	long := mallocs(t, w, 200000)
	t.Logf("allocations: %d for 5e4 arrivals, %d for 2e5", short, long)
	if long > short+8 {
		t.Fatalf("%d more allocations for 1.5e5 more arrivals: the event path allocates", long-short)
	}
}
