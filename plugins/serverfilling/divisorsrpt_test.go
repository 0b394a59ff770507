package serverfilling

import (
	"fmt"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// dsRandomCases draws n workloads for the DivisorFilling-SRPT path: k =
// 2^a·3^b from 1 to 2048 (small ones often, where ties and Case 2's odd
// branch are frequent), one to seven classes of random divisors of k (need
// 1 and wide needs more often, so that Case 1, the deep levels and the
// selections across several needs all occur), ρ from 0.6 to 1.15. Every
// third case has deterministic durations from a short list, so that
// remaining sizes and completions tie.
func dsRandomCases(n int, arrivals int64, gittins bool) []dfCase {
	r := rng.New(18, 2)
	ks := []int{1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 27, 32, 36, 48, 54, 64, 72, 96, 144, 192, 256, 384, 512, 768, 1024, 1536, 2048}
	var cs []dfCase
	for i := range n {
		k := ks[r.IntN(len(ks))]
		ds := divisors(k)
		needs := make([]int, 1+r.IntN(7))
		seen := map[int]bool{}
		for j := range needs {
			switch r.IntN(4) {
			case 0:
				needs[j] = 1
			case 1:
				needs[j] = ds[len(ds)/2+r.IntN((len(ds)+1)/2)]
			default:
				needs[j] = ds[r.IntN(len(ds))]
			}
			if seen[needs[j]] {
				needs[j] = ds[r.IntN(len(ds))]
			}
			seen[needs[j]] = true
		}
		rho := 0.6 + 0.55*r.Float64()
		name := fmt.Sprintf("random-%d/k=%d/needs=%v/rho=%.3f", i, k, needs, rho)
		a := arrivals
		if k >= 512 { // the general path is O(k) per event there
			a /= 2
		}
		if gittins {
			// Ranks that never rise (the path's condition); every other
			// case with two or more classes of one need (classBuckets).
			if i%2 == 0 {
				slices.Sort(needs)
				needs = slices.Compact(needs)
			} else {
				needs = append(needs, needs[0])
				if len(needs) < 4 {
					needs = append(needs, 1)
				}
			}
			cs = append(cs, dfCase{w: monotoneWorkload(name+"/monotone", k, needs, rho, uint64(700+i)), arrivals: a, seed: uint64(i + 1)})
			continue
		}
		if i%3 == 2 {
			cs = append(cs, dfCase{w: tiedWorkload(name+"/ties", k, needs, rho, uint64(500+i)), arrivals: a, seed: uint64(i + 1)})
		} else {
			cs = append(cs, dfCase{w: mixedWorkload(name, k, needs, rho, uint64(500+i)), arrivals: a, seed: uint64(i + 1)})
		}
	}
	return cs
}

// dsStructuredCases: the k = 2048 two-class level workload from few jobs
// to far past saturation (L up to thousands: M full, arrivals landing
// inside M and evicting running jobs), k = 2048 and k = 1536 with many
// needs (selections across several buckets at every level, and in
// backfill), one-or-all (k = 32), and k = 72 and k = 36 with every divisor
// as a need (Case 2's odd branch), with ties.
func dsStructuredCases(t *testing.T) []dfCase {
	cs := []dfCase{
		{w: twoClass2048(10), arrivals: 20000},
		{w: twoClass2048(125), arrivals: 15000},
		{w: twoClass2048(134), arrivals: 12000},
		{w: twoClass2048(160), arrivals: 10000},
		{w: mixedWorkload("p2-2048", 2048, powersOfTwo(2048), 0.95, 5), arrivals: 10000},
		{w: mixedWorkload("p2-2048-over", 2048, powersOfTwo(2048), 1.1, 6), arrivals: 10000},
		{w: tiedWorkload("some-1536-ties", 1536, []int{1, 2, 3, 8, 12, 64, 96, 512}, 1.05, 7), arrivals: 10000},
		{w: namedWorkload(t, "one-or-all", 7), arrivals: 40000},
		{w: mixedWorkload("all-72", 72, divisors(72), 0.97, 8), arrivals: 30000},
		{w: tiedWorkload("all-36-ties", 36, divisors(36), 1.05, 9), arrivals: 30000},
	}
	// Borg cell B with its needs rounded up to powers of two: 26 classes
	// on 12 needs (two to five classes of one need under Gittins,
	// classBuckets), around its saturation.
	for _, rho := range []float64{0.92, 0.97} {
		w := borgBPow2(t, 1)
		cs = append(cs, dfCase{w: borgBPow2(t, rho/w.Load()), arrivals: 10000})
	}
	// 40 classes on the 12 needs (up to 6 of one need).
	cs = append(cs, dfCase{w: manyClassWorkload(40, 0.97), arrivals: 10000})
	for i := range cs {
		cs[i].seed = uint64(60 + i)
	}
	return cs
}

// TestDivisorSRPTPathExact: the DivisorFilling-SRPT path (divisorsrpt.go)
// takes exactly the decisions of the general path (decide and divFill),
// event for event, with backfill and crossings each on and off, on the
// random and structured workloads above. TestDivisorSRPTPathLong (build tag
// long) runs four times the random workloads at five times the length.
func TestDivisorSRPTPathExact(t *testing.T) { dsExact(t, SRPTOrder, 60, false) }

// TestDivisorGittinsPathExact: the same for DivisorFilling-Gittins with
// ranks that never rise (deterministic, uniform, Weibull of shape ≥ 1,
// exponential: constant ranks), random workloads, every other one with two
// or more classes of one need (classBuckets), plus the structured ones
// (Borg cell B rounded to powers of two: up to five classes of one need).
func TestDivisorGittinsPathExact(t *testing.T) { dsExact(t, GittinsOrder, 40, true) }

// TestDivisorOneKExact: with needs k and 1 the DivisorFilling-SRPT and
// -Gittins paths decide by dsOneK instead of the recursion; they still take
// exactly the general path's decisions, for k even, odd (Case 2's odd
// branch all the way down), 2 (the wide need at scale 2 is the need-1
// bucket of the level below) and 2048, few and many jobs of either need,
// with and without ties, backfill and crossings on and off. It fails if
// the shortcut is not taken.
func TestDivisorOneKExact(t *testing.T) {
	arrivals := int64(6000)
	if testing.Short() {
		arrivals /= 6
	}
	srpt, gittins := oneKCases(arrivals, 0)
	t.Run("srpt", func(t *testing.T) { dsFastVsGeneral(t, SRPTOrder, srpt) })
	t.Run("gittins", func(t *testing.T) { dsFastVsGeneral(t, GittinsOrder, gittins) })
	for o, c := range map[Order]dfCase{SRPTOrder: srpt[0], GittinsOrder: gittins[0]} {
		p := New(o, DivisorFilling)
		if _, err := sim.Run(c.w, p, sim.Config{Seed: 1, Arrivals: 100}); err != nil {
			t.Fatal(err)
		}
		if p.ds == nil || !p.ds.oneK {
			t.Errorf("%s: dsOneK not taken", orderName[o])
		}
	}
}

// oneKCases are TestDivisorOneKExact's workloads, needs 1 and k, for SRPT
// and for Gittins (ranks that never rise), seeds offset by seed.
func oneKCases(arrivals int64, seed uint64) (srpt, gittins []dfCase) {
	for i, k := range []int{2, 3, 6, 9, 27, 32, 48, 128, 2048} {
		needs := []int{1, k}
		for j, rho := range []float64{0.7, 0.97, 1.1} {
			name := fmt.Sprintf("one-k/k=%d/rho=%.2f", k, rho)
			seed := seed + uint64(900+10*i+j)
			c := dfCase{w: mixedWorkload(name, k, needs, rho, seed), arrivals: arrivals, seed: seed}
			if j == 1 {
				c.w = tiedWorkload(name+"/ties", k, needs, rho, seed)
			}
			srpt = append(srpt, wideCut(c))
			c.w = monotoneWorkload(name+"/monotone", k, needs, rho, seed)
			gittins = append(gittins, wideCut(c))
		}
	}
	return srpt, gittins
}

// dsExact runs order's fast path against the general one on n random
// workloads (gittins: of the kind the Gittins path takes) and the
// structured ones, 8000 arrivals each (a sixth with -short), those with
// k ≥ 512 at a quarter of their length (wideCut; TestDivisorSRPTPathLong
// runs them in full, five times over).
func dsExact(t *testing.T, order Order, n int, gittins bool) {
	arrivals := int64(8000)
	if testing.Short() {
		arrivals /= 6
	}
	var cs []dfCase
	for _, c := range dsRandomCases(n, arrivals, gittins) {
		cs = append(cs, wideCut(c))
	}
	for _, c := range dsStructuredCases(t) {
		if testing.Short() {
			c.arrivals /= 6
		}
		cs = append(cs, wideCut(c))
	}
	dsFastVsGeneral(t, order, cs)
}

// dsFastVsGeneral compares the traces of the DivisorFilling-SRPT path and
// the general path on every case, backfill and crossings on and off, and
// fails if the path was not taken (Gittins: where it applies, ranks that
// never rise).
func dsFastVsGeneral(t *testing.T, o Order, cs []dfCase) {
	for _, c := range cs {
		crossings := []bool{true, false}
		if o == GittinsOrder {
			crossings = crossings[:1] // no such parameter
		}
		for _, backfill := range []bool{true, false} {
			for _, crossings := range crossings {
				name := fmt.Sprintf("%s@%.4g/backfill=%v/crossings=%v", c.w.Name, c.w.ArrivalRate, backfill, crossings)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					params := map[string]any{"backfill": backfill}
					if o == SRPTOrder {
						params["crossings"] = crossings
					}
					gen, fast := configured(t, o, DivisorFilling, params), configured(t, o, DivisorFilling, params)
					gen.general = true
					fast.noSFGate = true // this path, not ServerFilling's (TestDivisorAsServerFilling)
					cfg := sim.Config{Seed: c.seed, Warmup: c.arrivals / 10, Arrivals: c.arrivals, MaxInSystem: 20000}
					simtest.SameTrace(t, name, c.w, gen, fast, cfg)
					want := o == SRPTOrder || fast.monotone
					if (fast.ds != nil) != want || gen.ds != nil {
						t.Errorf("path taken: %v (want %v), with general: %v (want false)", fast.ds != nil, want, gen.ds != nil)
					}
				})
			}
		}
	}
}

// TestDivisorSRPTFallback: the path is taken for k = 2^a·3^b (SRPT; Gittins
// with ranks that never rise, two classes of one need or not), with or
// without a class wider than k/2, and the general path with a prime factor
// ≥ 5 in k (Case 3) or, under Gittins, more than maxClassBuckets classes
// sharing needs.
func TestDivisorSRPTFallback(t *testing.T) {
	for _, c := range []struct {
		o    Order
		k    int
		want bool
		two  bool // two classes of need 1
		wide bool // a class of need k
	}{{SRPTOrder, 2048, true, false, false}, {SRPTOrder, 2, true, false, false}, {SRPTOrder, 72, true, false, false},
		{SRPTOrder, 60, false, false, false}, {SRPTOrder, 7, false, false, false}, {SRPTOrder, 2048, true, false, true},
		{SRPTOrder, 32, true, false, true}, {GittinsOrder, 2048, true, false, false}, {GittinsOrder, 2048, true, true, false},
		{GittinsOrder, 60, false, false, false}, {GittinsOrder, 2048, true, false, true}, {GittinsOrder, 32, true, false, true}} {
		needs := []int{1, c.k / 2}
		if c.k%2 == 1 {
			needs = []int{1} // k/2 would not divide k
		}
		if c.wide {
			needs = []int{1, c.k}
		}
		if c.two {
			needs = append(needs, 1)
		}
		w := tiedWorkload("fallback", c.k, needs, 0.8, 1)
		p := configured(t, c.o, DivisorFilling, nil)
		if _, err := sim.Run(w, p, sim.Config{Seed: 1, Arrivals: 10}); err != nil {
			t.Fatal(err)
		}
		if got := p.ds != nil; got != c.want {
			t.Errorf("order %d, k = %d, needs %v: path taken %v, want %v", c.o, c.k, needs, got, c.want)
		}
	}
	// Past maxClassBuckets classes sharing needs, Gittins takes the
	// general path (the path's passes over the buckets cost more there).
	for _, nc := range []int{maxClassBuckets, maxClassBuckets + 1} {
		p := configured(t, GittinsOrder, DivisorFilling, nil)
		if _, err := sim.Run(manyClassWorkload(nc, 0.8), p, sim.Config{Seed: 1, Arrivals: 10}); err != nil {
			t.Fatal(err)
		}
		if got, want := p.ds != nil, nc <= maxClassBuckets; got != want {
			t.Errorf("%d classes on 12 needs: path taken %v, want %v", nc, got, want)
		}
	}
}
