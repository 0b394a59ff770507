package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
)

// detTiesWide is detTies with a class of need k: k = 8, needs 1, 2, 4
// and 8, deterministic and two-point durations so that remaining sizes tie
// exactly and often within a need and across needs (1 × 2 = 2 × 1 = 4 ×
// 0.5 = 8 × 0.25), at ρ ≈ 0.95. The need-8 class makes it a workload of the
// wide path (srptwide.go), where ties decide where a preempted job lands
// among its bucket's waiting jobs.
func detTiesWide() *sim.Workload {
	w := detTies()
	w.Name = "det-ties-wide-8"
	w.Classes = append(w.Classes, sim.Class{Name: "e", Need: 8, Share: 0.1, Service: must(dist.NewDeterministic(0.25))})
	var work, total float64
	for _, c := range w.Classes {
		work += c.Share * float64(c.Need) * c.Service.Mean()
		total += c.Share
	}
	w.ArrivalRate = 0.95 * 8 * total / work
	return w
}

// TestWidePathEquivalent: ServerFilling-SRPT on workloads with a class
// wider than k/2, where the SRPT path keeps each need bucket as one slice
// (srptwide.go), takes exactly the general path's decisions and the treap
// path's (forceTreap), event for event, with crossings on and off and both
// packings: exact ties (detTiesWide), one-or-all near saturation, needs
// that do not divide k with a wide one (k = 24, need 16), and Borg cell B
// at ρ = 0.95 (k = 2048, needs up to 2000).
func TestWidePathEquivalent(t *testing.T) {
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	borg1 := namedWorkload(t, "borg-b", 1)
	wls := []wl{
		{detTiesWide(), 20000},
		{namedWorkload(t, "one-or-all", 7), 20000},
		{mixedWorkload("nondivisible-24", 24, []int{1, 3, 5, 7, 10, 16}, 0.95, 24), 20000},
		{namedWorkload(t, "borg-b", 0.95/borg1.Load()), 8000},
	}
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, x := range wls {
		for _, seed := range seeds {
			for _, crossings := range []bool{true, false} {
				for _, packing := range []string{PackingStop, PackingSkip} {
					params := map[string]any{"crossings": crossings, "packing": packing}
					name := fmt.Sprintf("%s/seed=%d/crossings=%v/packing=%s", x.w.Name, seed, crossings, packing)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						cfg := sim.Config{Seed: seed, Warmup: x.arrivals / 10, Arrivals: x.arrivals, MaxInSystem: 20000}
						wide := configured(t, SRPTOrder, ServerFilling, params)
						gen := configured(t, SRPTOrder, ServerFilling, params)
						gen.general = true
						sameTrace(t, name, x.w, gen, wide, cfg)
						if !wide.wide {
							t.Fatal("the wide path was not taken")
						}
						treap := configured(t, SRPTOrder, ServerFilling, params)
						treap.forceFast, treap.forceTreap = true, true
						sameTrace(t, name+"/treap", x.w, treap, configured(t, SRPTOrder, ServerFilling, params), cfg)
						if !treap.fastSRPT || treap.wide {
							t.Fatal("the treap path was not taken")
						}
					})
				}
			}
		}
	}
}
