//go:build long

package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestWidePathLong: the slice path of ServerFilling-SRPT (srptwide.go)
// against the general path, event for event, on the wide workloads of
// issue #35 over long runs: Borg cell B at ρ = 0.92, 0.95 and 0.97 (seeds
// 1-3, 100000 arrivals) and one-or-all at λ = 4 and 7 (seeds 1-4, 200000
// arrivals), crossings on (the default) and off.
func TestWidePathLong(t *testing.T) {
	borg1 := namedWorkload(t, "borg-b", 1)
	type run struct {
		w        *sim.Workload
		arrivals int64
		seeds    uint64
	}
	var runs []run
	for _, rho := range []float64{0.92, 0.95, 0.97} {
		runs = append(runs, run{namedWorkload(t, "borg-b", rho/borg1.Load()), 100000, 3})
	}
	for _, lambda := range []float64{4, 7} {
		runs = append(runs, run{namedWorkload(t, "one-or-all", lambda), 200000, 4})
	}
	for _, r := range runs {
		for seed := uint64(1); seed <= r.seeds; seed++ {
			for _, crossings := range []bool{true, false} {
				name := fmt.Sprintf("%s@%.4g/seed=%d/crossings=%v", r.w.Name, r.w.ArrivalRate, seed, crossings)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					params := map[string]any{"crossings": crossings}
					cfg := sim.Config{Seed: seed, Warmup: r.arrivals / 10, Arrivals: r.arrivals, MaxInSystem: 50000}
					gen := configured(t, SRPTOrder, ServerFilling, params)
					gen.general = true
					wide := configured(t, SRPTOrder, ServerFilling, params)
					simtest.SameTrace(t, name, r.w, gen, wide, cfg)
					if !wide.wide {
						t.Fatal("the slice path was not taken")
					}
				})
			}
		}
	}
}
