package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// constantOneK is a workload of needs 1 and k with exponential durations
// (constant Gittins ranks) at load rho; tie: the two classes' ranks equal
// (need/k × mean), so that the order falls back on arrivals between them.
func constantOneK(k int, rho float64, tie bool, seed uint64) *sim.Workload {
	r := rng.New(seed, 61)
	mw := 0.5 + 2*r.Float64()
	mn := 0.5 + 2*r.Float64()
	if tie {
		mn = float64(k) * mw
	}
	sw, sn := 0.05+0.3*r.Float64(), 0.5+r.Float64()
	w := &sim.Workload{Name: fmt.Sprintf("one-k/k=%d/rho=%.2f/tie=%v", k, rho, tie), Servers: k}
	w.Classes = []sim.Class{
		{Name: "narrow", Need: 1, Share: sn, Service: must(dist.NewExponential(mn))},
		{Name: "wide", Need: k, Share: sw, Service: must(dist.NewExponential(mw))},
	}
	w.ArrivalRate = rho * float64(k) * (sn + sw) / (sn*mn + sw*float64(k)*mw)
	return w
}

// TestDivisorAsServerFilling: DivisorFilling-Gittins with backfill, needs 1
// and k and constant ranks runs on ServerFilling's static path
// (divAsServerFilling), and its trace is, event for event, that of its
// own general path, of the one-or-all slices it took before
// (noSFGate) and of ServerFilling-Gittins; with backfill off, or a rank
// that moves, it keeps its own path.
func TestDivisorAsServerFilling(t *testing.T) {
	arrivals := int64(6000)
	if testing.Short() {
		arrivals /= 6
	}
	var ws []*sim.Workload
	for i, k := range []int{2, 3, 6, 32, 48, 128, 2048} {
		for j, rho := range []float64{0.7, 0.97, 1.1} {
			ws = append(ws, constantOneK(k, rho, j == 1, uint64(10*i+j)))
		}
	}
	// Two classes of need 1 with ranks apart: still needs k and 1.
	three := constantOneK(32, 0.97, false, 77)
	three.Name = "one-k/k=32/three-classes"
	three.Classes = append(three.Classes, sim.Class{Name: "narrow-2", Need: 1, Share: 0.7, Service: must(dist.NewExponential(3.5))})
	ws = append(ws, three, simtest.Named(t, "one-or-all", 4), simtest.Named(t, "one-or-all", 7))
	for _, w := range ws {
		cfg := sim.Config{Seed: 3, Warmup: arrivals / 10, Arrivals: arrivals, MaxInSystem: 20000}
		if w.Servers >= 512 {
			cfg.Arrivals /= 4
		}
		t.Run(w.Name, func(t *testing.T) {
			t.Parallel()
			got := New(GittinsOrder, DivisorFilling)
			gen, slices := New(GittinsOrder, DivisorFilling), New(GittinsOrder, DivisorFilling)
			gen.general, slices.noSFGate = true, true
			sf := New(GittinsOrder, ServerFilling)
			simtest.SameTrace(t, w.Name+"/general", w, gen, got, cfg)
			if !got.static || got.ds != nil {
				t.Fatalf("static path %v, divisor path %v: want the static path alone", got.static, got.ds != nil)
			}
			if len(w.Classes) == 2 { // (three classes: a bucket per class, not the slices)
				simtest.SameTrace(t, w.Name+"/slices", w, slices, New(GittinsOrder, DivisorFilling), cfg)
				if slices.static || slices.ds == nil || !slices.ds.oneK {
					t.Fatalf("noSFGate: static path %v, one-or-all slices %v", slices.static, slices.ds != nil && slices.ds.oneK)
				}
			}
			simtest.SameTrace(t, w.Name+"/serverfilling", w, sf, New(GittinsOrder, DivisorFilling), cfg)
			off := configured(t, GittinsOrder, DivisorFilling, map[string]any{"backfill": false})
			if _, err := sim.Run(w, off, cfg); err != nil {
				t.Fatal(err)
			}
			if off.static || off.ds == nil {
				t.Fatalf("backfill off: static path %v, divisor path %v", off.static, off.ds != nil)
			}
		})
	}
	// A rank that moves (the narrow class's, monotone): the divisor path.
	w := monotoneWorkload("one-k/monotone", 32, []int{1, 32}, 0.97, 5)
	p := New(GittinsOrder, DivisorFilling)
	if _, err := sim.Run(w, p, sim.Config{Seed: 1, Arrivals: 500}); err != nil {
		t.Fatal(err)
	}
	if p.static || p.ds == nil || !p.ds.oneK {
		t.Fatalf("moving rank: static path %v, one-or-all slices %v", p.static, p.ds != nil && p.ds.oneK)
	}
}
