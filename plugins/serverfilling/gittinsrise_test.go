package serverfilling

import (
	"fmt"
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// risingWorkload has one class per need in needs, the first with a rank
// that rises with age (H2 or Weibull of shape < 1), the others drawn from
// rising, constant (exponential) and falling (deterministic from a short
// list, uniform) ranks, at load rho. ties: every class of a family shares
// one distribution, so ranks tie across classes of one need and
// need × rank ties across needs more often.
func risingWorkload(name string, k int, needs []int, rho float64, seed uint64, ties bool) *sim.Workload {
	r := rng.New(seed, 97)
	w := &sim.Workload{Name: name, Servers: k}
	var work, total float64
	for i, n := range needs {
		mean := 0.5 + 2*r.Float64()
		scv := 2 + 20*r.Float64()
		shape := 0.25 + 0.7*r.Float64()
		if ties {
			mean, scv, shape = 1, 10, 0.4
		}
		fam := r.IntN(5)
		if i == 0 {
			fam = r.IntN(2)
		}
		var d dist.Dist
		switch fam {
		case 0:
			d = must(dist.NewHyperExp(mean, scv))
		case 1:
			d = must(dist.NewWeibullMean(shape, mean))
		case 2:
			d = must(dist.NewExponential(mean))
		case 3:
			d = must(dist.NewDeterministic([]float64{0.5, 1, 1.5, 2}[r.IntN(4)]))
		case 4:
			d = must(dist.NewUniform(0.2*mean, 1.8*mean))
		}
		share := 0.2 + r.Float64()
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("c%d-need-%d", i, n), Need: n, Share: share, Service: d})
		work += share * float64(n) * d.Mean()
		total += share
	}
	w.ArrivalRate = rho * float64(k) * total / work
	return w
}

// riseVsGeneral runs w under the general path and under the rising-rank
// path (forced whatever the needs) and compares the decision traces event
// for event; it fails if the rising-rank path was not taken.
func riseVsGeneral(t *testing.T, name string, w *sim.Workload, packing string, seed uint64, arrivals int64) {
	t.Helper()
	cfg := sim.Config{Seed: seed, Warmup: arrivals / 10, Arrivals: arrivals, MaxInSystem: 20000}
	params := map[string]any{"packing": packing}
	gen := configured(t, GittinsOrder, ServerFilling, params)
	gen.general = true
	rise := configured(t, GittinsOrder, ServerFilling, params)
	rise.forceFast = true
	simtest.SameTrace(t, name, w, gen, rise, cfg)
	if rise.gr == nil {
		t.Fatalf("%s: the rising-rank path was not taken", name)
	}
}

// TestRisePathEquivalent: ServerFilling-Gittins with ranks that rise with
// age takes exactly the general path's decisions on the rising-rank path
// (gittinsrise.go), event for event: random mixes of rising, constant and
// falling ranks at k from 4 to 64 (needs dividing k or not, up to k,
// several classes per need, exact rank ties), both packings; the two-class k = 2048
// workload with H2 durations at three levels (about 450, 950 and 1300 jobs
// in system) and with Weibull durations; the power-of-two H2 workload.
func TestRisePathEquivalent(t *testing.T) {
	n, arrivals := 24, int64(8000)
	if testing.Short() {
		n, arrivals = 8, 4000
	}
	risePathCases(t, n, arrivals, 1)
}

// risePathCases runs n random cases of arrivals arrivals each and the
// structured ones (at scale times that) through riseVsGeneral.
func risePathCases(t *testing.T, n int, arrivals, scale int64) {
	r := rng.New(18, 6)
	ks := []int{4, 6, 8, 12, 16, 32, 64}
	for i := range n {
		k := ks[r.IntN(len(ks))]
		needs := make([]int, 1+r.IntN(6))
		for j := range needs {
			switch r.IntN(4) {
			case 0:
				needs[j] = 1 + r.IntN(k) // above k/2 too: the path is forced
			case 1:
				needs[j] = 1 + r.IntN(max(1, k/2))
			default:
				needs[j] = 1 + r.IntN(max(1, k/4))
			}
		}
		rho := 0.8 + 0.35*r.Float64()
		ties := i%3 == 0
		packing := []string{PackingStop, PackingSkip}[i%2]
		name := fmt.Sprintf("random-%d/k=%d/needs=%v/rho=%.3f/ties=%v/%s", i, k, needs, rho, ties, packing)
		w := risingWorkload(name, k, needs, rho, uint64(300+i), ties)
		t.Run(name, func(t *testing.T) { t.Parallel(); riseVsGeneral(t, name, w, packing, uint64(i+1), arrivals) })
	}
	weib := twoClass2048(125)
	weib.Name = "two-class-2048-weibull"
	weib.Classes[0].Service = must(dist.NewWeibullMean(0.4, 10))
	weib.Classes[1].Service = must(dist.NewWeibullMean(0.7, 1))
	big := []*sim.Workload{twoClass2048H2(52.5), twoClass2048H2(125), twoClass2048H2(134), weib,
		namedWorkload(t, "powers-of-two-h2", p2Rate(0.97))}
	for _, w := range big {
		for _, packing := range []string{PackingStop, PackingSkip} {
			name := fmt.Sprintf("%s@%g/%s", w.Name, w.ArrivalRate, packing)
			t.Run(name, func(t *testing.T) { t.Parallel(); riseVsGeneral(t, name, w, packing, 5, 4*arrivals*scale) })
		}
	}
}

// TestRisingRanksMonotone: the computed H2 and Weibull (shape < 1) ranks,
// the ones the rising-rank path orders by age, never fall as the age
// grows, over a dense geometric sweep of ages and over runs of consecutive
// floating-point ages where the ranks flatten (the path's per-class order
// rests on it).
func TestRisingRanksMonotone(t *testing.T) {
	ds := []dist.Dist{
		must(dist.NewHyperExp(10, 10)), must(dist.NewHyperExp(1, 100)), must(dist.NewHyperExp(1, 2)),
		must(dist.NewWeibullMean(0.6, 2)), must(dist.NewWeibullMean(0.3, 2)), must(dist.NewWeibullMean(0.45, 1)),
	}
	for _, d := range ds {
		f, err := newRankFn(d)
		if err != nil {
			t.Fatal(err)
		}
		if !f.nonDecreasing {
			t.Fatalf("%s: not marked nonDecreasing", d)
		}
		prev, px := f.at(0), 0.0
		for x := 1e-9 * d.Mean(); x < 1e4*d.Mean(); x *= 1 + 1e-5 {
			if v := f.at(x); v < prev {
				t.Fatalf("%s: rank %v at age %v, %v at %v", d, v, x, prev, px)
			} else {
				prev, px = v, x
			}
		}
		for _, x0 := range []float64{1, 16, 30, 100, 300} {
			x := x0 * d.Mean()
			prev := f.at(x)
			for range 200000 {
				x = math.Nextafter(x, math.Inf(1))
				v := f.at(x)
				if v < prev {
					t.Fatalf("%s: rank %v at age %v, below the rank one ulp before", d, v, x)
				}
				prev = v
			}
		}
	}
}

// BenchmarkRisePathChoice: what the k/2 rule rests on for the rising-rank
// path, as BenchmarkPathChoice for the SRPT path: ServerFilling-Gittins on
// twoClassWide with H2 durations (same means, C² = 10) on the rising-rank
// path (forced) and on the general path, with the wide need k/4, k/2 and
// k, at k = 2048 and 32. 10^5 measured arrivals per replication
// (-benchtime=1x); compare cpu-ns/event.
func BenchmarkRisePathChoice(b *testing.B) {
	for _, c := range []struct{ k, wide int }{{2048, 512}, {2048, 1024}, {2048, 2048}, {512, 128}, {256, 64}, {128, 32}, {64, 16}, {32, 8}, {32, 16}, {32, 32}} {
		w := twoClassWide(c.k, c.wide)
		for i := range w.Classes {
			w.Classes[i].Service = must(dist.NewHyperExp(w.Classes[i].Service.Mean(), 10))
		}
		for _, path := range []string{"rise", "general"} {
			b.Run(fmt.Sprintf("k=%d/wide=%d/%s", c.k, c.wide, path), func(b *testing.B) {
				p := New(GittinsOrder, ServerFilling)
				p.forceFast = path == "rise"
				p.general = path == "general"
				benchL(b, w, p, 100000)
			})
		}
	}
}
