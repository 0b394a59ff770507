package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestPlainPathExact: the plain path (plain.go) takes exactly the decisions
// of the general path (decide, with every shortcut off), event for event,
// under both packings, on workloads whose needs do not form a divisibility
// chain (where stop and skip differ), on one with more than 64 distinct
// needs (the bucket bitsets span several words), past saturation (jobs
// pile up behind M), and on one-or-all.
func TestPlainPathExact(t *testing.T) {
	needs70 := make([]int, 70)
	for i := range needs70 {
		needs70[i] = i + 1
	}
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	wls := []wl{
		{namedWorkload(t, "borg-b", 2), 30000},
		{namedWorkload(t, "borg-b", 4.5), 20000},
		{namedWorkload(t, "four-class", 4.8), 50000},
		{namedWorkload(t, "one-or-all", 7), 50000},
		{mixedWorkload("nondivisible-24", 24, []int{1, 3, 5, 7, 10, 16}, 0.95, 24), 50000},
		{mixedWorkload("needs-1-70", 200, needs70, 0.9, 70), 30000},
		{mixedWorkload("needs-1-70-over", 200, needs70, 1.1, 71), 20000},
	}
	if testing.Short() {
		for i := range wls {
			wls[i].arrivals /= 5
		}
	}
	for _, x := range wls {
		for _, packing := range []string{PackingStop, PackingSkip} {
			t.Run(fmt.Sprintf("%s@%g/%s", x.w.Name, x.w.ArrivalRate, packing), func(t *testing.T) {
				t.Parallel()
				params := map[string]any{"packing": packing}
				fast, slow := configured(t, ArrivalOrder, ServerFilling, params), configured(t, ArrivalOrder, ServerFilling, params)
				slow.exhaustive = true
				cfg := sim.Config{Seed: 33, Warmup: x.arrivals / 10, Arrivals: x.arrivals, MaxInSystem: 20000}
				simtest.SameTrace(t, x.w.Name, x.w, slow, fast, cfg)
				if fast.pl == nil || slow.pl != nil {
					t.Errorf("plain path taken: %v (want true), with exhaustive: %v (want false)", fast.pl != nil, slow.pl != nil)
				}
			})
		}
	}
}
