package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// The equivalence of the O(C · log n) path (srptfast.go) and the general
// path (decide), event for event (decision traces through sim.Config's
// Observer, compared exactly): both order jobs by the total order of
// srptfastorder.go, so they must agree on every run, not only on most.
// The default runs are short (a few seconds in all); TestFastPathLong
// (build tag long) runs the same cases for ten times as long and Borg cell
// B at ρ = 0.92 over seeds 1-4 past t = 49339, where seed 4 parted the two
// paths under the 0.4.0 tolerance rule.

// equivCase is one workload and run length, with its policy parameters.
type equivCase struct {
	name     string
	w        *sim.Workload
	o        Order
	params   map[string]any
	arrivals int64
	seed     uint64
}

// fastVsGeneral runs c under the general path and under the fast path
// (forced whatever the needs) and compares the traces; it fails if the fast
// path was not taken.
func fastVsGeneral(t *testing.T, c equivCase) {
	t.Helper()
	cfg := sim.Config{Seed: c.seed, Warmup: c.arrivals / 10, Arrivals: c.arrivals, MaxInSystem: 20000}
	gen := configured(t, c.o, ServerFilling, c.params)
	gen.general = true
	fast := configured(t, c.o, ServerFilling, c.params)
	fast.forceFast = true
	simtest.SameTrace(t, c.name, c.w, gen, fast, cfg)
	if !fast.fastSRPT {
		t.Fatalf("%s: the fast path was not taken", c.name)
	}
}

// randomCases draws n small workloads (k from 4 to 64, one to seven
// classes of random needs, random duration families, ρ from 0.7 to 1.1,
// crossings and packing at random) for ServerFilling-SRPT, and n with only
// classes whose Gittins rank never rises (exponential, deterministic,
// uniform, Weibull of shape ≥ 1) for ServerFilling-Gittins.
func randomCases(n int, arrivals int64) []equivCase {
	r := rng.New(18, 5)
	ks := []int{4, 6, 8, 12, 16, 24, 32, 64}
	var cs []equivCase
	for i := range n {
		k := ks[r.IntN(len(ks))]
		needs := make([]int, 1+r.IntN(7))
		for j := range needs {
			needs[j] = 1 + r.IntN(k)
			if r.IntN(2) == 0 {
				needs[j] = 1 + r.IntN(max(1, k/4)) // narrow classes are the usual case
			}
		}
		rho := 0.7 + 0.4*r.Float64()
		params := map[string]any{"crossings": r.IntN(4) != 0, "packing": []string{PackingStop, PackingSkip}[r.IntN(2)]}
		name := fmt.Sprintf("random-%d/k=%d/needs=%v/rho=%.3f/%v", i, k, needs, rho, params)
		cs = append(cs, equivCase{name: "srpt/" + name, w: mixedWorkload(name, k, needs, rho, uint64(100+i)),
			o: SRPTOrder, params: params, arrivals: arrivals, seed: uint64(i + 1)})
		gparams := map[string]any{"packing": params["packing"]}
		cs = append(cs, equivCase{name: "gittins/" + name, w: monotoneWorkload(name, k, needs, rho, uint64(200+i)),
			o: GittinsOrder, params: gparams, arrivals: arrivals, seed: uint64(i + 1)})
	}
	return cs
}

// monotoneWorkload is mixedWorkload with only duration families whose
// Gittins rank never rises with age (and exact ties: deterministic
// durations from a short list); the first class's rank is not constant, so
// the policy is not on the static path.
func monotoneWorkload(name string, k int, needs []int, rho float64, seed uint64) *sim.Workload {
	r := rng.New(seed, 98)
	w := &sim.Workload{Name: name, Servers: k}
	var work, total float64
	for i, n := range needs {
		mean := 0.5 + 2*r.Float64()
		var d dist.Dist
		fam := r.IntN(4)
		if i == 0 {
			fam = 1 + r.IntN(3) // a rank that moves: not the static path
		}
		switch fam {
		case 0:
			d = must(dist.NewExponential(mean))
		case 1:
			d = must(dist.NewDeterministic([]float64{0.5, 1, 1.5, 2}[r.IntN(4)]))
		case 2:
			d = must(dist.NewUniform(0.2*mean, 1.8*mean))
		case 3:
			d = must(dist.NewWeibullMean(1+2*r.Float64(), mean))
		}
		share := 0.2 + r.Float64()
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("c%d-need-%d", i, n), Need: n, Share: share, Service: d})
		work += share * float64(n) * d.Mean()
		total += share
	}
	w.ArrivalRate = rho * float64(k) * total / work
	return w
}

// structuredCases: one-or-all (Quickswap §6.2, k = 32, needs 1 and 32) at
// λ = 7; the two-class k = 2048 workload of the level benchmarks at three
// levels (λ = 10, 52.5, 125: about 100, 500 and 1300 jobs under arrival
// order) and at λ = 137, past saturation; Borg cell B (26 classes, needs up to 2000 of 2048) at ρ = 0.92,
// seed 4. scale multiplies the run lengths.
func structuredCases(t *testing.T, scale int64) []equivCase {
	borg1 := namedWorkload(t, "borg-b", 1)
	cs := []equivCase{
		{name: "one-or-all@7", w: namedWorkload(t, "one-or-all", 7), arrivals: 20000 * scale},
		{name: "borg-b/rho=0.92/seed=4", w: namedWorkload(t, "borg-b", 0.92/borg1.Load()), arrivals: 15000 * scale, seed: 4},
	}
	for _, rate := range []float64{10, 52.5, 125} {
		cs = append(cs, equivCase{name: fmt.Sprintf("two-class-2048@%g", rate), w: twoClass2048(rate), arrivals: 6000 * scale})
	}
	// Past saturation (the L = 5000 rate of BenchmarkLevels): a wide job's
	// start or completion moves runs of narrow jobs at once, and the kept
	// last running jobs and waiting ranks (runLast, wAtKept) are used at
	// nearly every decision.
	cs = append(cs, equivCase{name: "two-class-2048@137", w: twoClass2048(137), arrivals: 4000 * scale})
	for i := range cs {
		cs[i].o = SRPTOrder
		if cs[i].seed == 0 {
			cs[i].seed = 7
		}
	}
	return cs
}

// TestFastPathEquivalent: the fast and general paths on random small
// workloads (SRPT and monotone Gittins) and on the structured ones above.
func TestFastPathEquivalent(t *testing.T) {
	if testing.Short() {
		t.Skip("several thousand arrivals per case, two policies each")
	}
	cs := append(randomCases(16, 8000), structuredCases(t, 1)...)
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) { t.Parallel(); fastVsGeneral(t, c) })
	}
}
