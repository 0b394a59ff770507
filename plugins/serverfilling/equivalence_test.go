package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestEquivalentToReference: every policy of the family takes exactly the
// decisions of the implementation before the O(C · log n) rework
// (refPolicy, ref_test.go), event for event, on long random runs: needs
// that do not divide k (Borg cell B, k = 2048; a k = 24 mix; simtest.Mixed,
// k = 10), the two-class k = 2048 benchmark workload below and past
// saturation, the four-class k = 15 workload near saturation, and the
// power-of-two workloads (exponential and H2 durations).
func TestEquivalentToReference(t *testing.T) {
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	wls := []wl{
		{namedWorkload(t, "borg-b", 2), 30000},
		{namedWorkload(t, "borg-b", 4.5), 20000},
		{twoClass2048(125), 30000},
		{twoClass2048(134), 20000},
		{namedWorkload(t, "four-class", 4.5), 100000},
		{namedWorkload(t, "four-class", 4.8), 100000},
		{namedWorkload(t, "one-or-all", 7), 100000},
		{namedWorkload(t, "powers-of-two", p2Rate(0.95)), 100000},
		{namedWorkload(t, "powers-of-two-h2", p2Rate(0.95)), 100000},
		{mixedWorkload("nondivisible-24", 24, []int{1, 3, 5, 7, 10, 16}, 0.9, 24), 100000},
		{simtest.Mixed(2.5), 100000},
		{expTies(), 100000},
	}
	if testing.Short() {
		for i := range wls {
			wls[i].arrivals /= 10
		}
	}
	for _, x := range wls {
		for pi, sp := range Policies {
			ref := []*refPolicy{newRef(ArrivalOrder, ServerFilling), newRef(SRPTOrder, ServerFilling), newRef(GittinsOrder, ServerFilling),
				newRef(ArrivalOrder, DivisorFilling), newRef(SRPTOrder, DivisorFilling), newRef(GittinsOrder, DivisorFilling)}[pi]
			if ref.proc == DivisorFilling && !dividesAll(x.w) {
				continue
			}
			cfg := sim.Config{Seed: 21, Warmup: x.arrivals / 10, Arrivals: x.arrivals}
			t.Run(fmt.Sprintf("%s/%s@%g", sp.Name, x.w.Name, x.w.ArrivalRate), func(t *testing.T) {
				t.Parallel()
				simtest.SameTrace(t, x.w.Name+"/"+sp.Name, x.w, ref, sp.New(), cfg)
			})
		}
	}
}

// expTies: k = 12, exponential classes (constant Gittins ranks: the static
// path) whose Gittins keys need/k × mean tie across needs (1 × 2, 2 × 1 and
// 3 × 2/3 all give 2/12) and differ within a need (need 1 with means 2 and
// 0.5), plus a need 5 that does not divide k; ρ ≈ 0.9.
func expTies() *sim.Workload {
	e := func(m float64) dist.Dist { return must(dist.NewExponential(m)) }
	w := &sim.Workload{Name: "exp-ties-12", Servers: 12, Classes: []sim.Class{
		{Name: "a", Need: 1, Share: 0.3, Service: e(2)}, {Name: "b", Need: 2, Share: 0.2, Service: e(1)},
		{Name: "c", Need: 1, Share: 0.2, Service: e(0.5)}, {Name: "d", Need: 3, Share: 0.2, Service: e(2.0 / 3)},
		{Name: "e", Need: 5, Share: 0.1, Service: e(1)},
	}}
	var work float64
	for _, c := range w.Classes {
		work += c.Share * float64(c.Need) * c.Service.Mean()
	}
	w.ArrivalRate = 0.9 * 12 / work
	return w
}

func dividesAll(w *sim.Workload) bool {
	for _, c := range w.Classes {
		if w.Servers%c.Need != 0 {
			return false
		}
	}
	return true
}
