package serverfilling

import (
	"math"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
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
	atLoad(w, 0.95)
	return w
}

// manyNeeds has more need buckets than one word of the bucket bit set
// (liveWords): k = 256, needs 1 to 69 and a wide 200, at ρ = 0.95.
func manyNeeds() *sim.Workload {
	needs := make([]int, 0, 70)
	for n := 1; n < 70; n++ {
		needs = append(needs, n)
	}
	return mixedWorkload("needs-70-256", 256, append(needs, 200), 0.95, 70)
}

// TestWidePathEquivalent: ServerFilling-SRPT on workloads with a class
// wider than k/2, where the SRPT path keeps each need bucket as one slice
// (srptwide.go), takes exactly the general path's decisions and the treap
// path's (forceTreap), event for event, with crossings on and off and both
// packings: exact ties (detTiesWide), one-or-all near saturation, needs
// that do not divide k with a wide one (k = 24, need 16), Borg cell B at
// ρ = 0.95 (k = 2048, needs up to 2000), and 70 needs (manyNeeds: the
// buckets' bit set takes two words).
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
		{manyNeeds(), 8000},
	}
	seeds := []uint64{1, 2}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, x := range wls {
		srptVariants(t, x.w.Name, seeds, func(t *testing.T, name string, seed uint64, params map[string]any) {
			t.Parallel()
			cfg := sim.Config{Seed: seed, Warmup: x.arrivals / 10, Arrivals: x.arrivals, MaxInSystem: 20000}
			wide := configured(t, SRPTOrder, ServerFilling, params)
			gen := configured(t, SRPTOrder, ServerFilling, params)
			gen.general = true
			simtest.SameTrace(t, name, x.w, gen, wide, cfg)
			if !wide.wide {
				t.Fatal("the wide path was not taken")
			}
			if want := (wide.nBuckets + 63) / 64; len(wide.live) != want {
				t.Fatalf("%d words of bucket bits for %d buckets, want %d", len(wide.live), wide.nBuckets, want)
			}
			treap := configured(t, SRPTOrder, ServerFilling, params)
			treap.forceFast, treap.forceTreap = true, true
			simtest.SameTrace(t, name+"/treap", x.w, treap, configured(t, SRPTOrder, ServerFilling, params), cfg)
			if !treap.fastSRPT || treap.wide {
				t.Fatal("the treap path was not taken")
			}
		})
	}
}

// TestFinAtMost: finAtMost's galloping and bisection over bit patterns
// give the fin that setRun's former loop found one ulp at a time, on
// random starts: instants from 0 to 10^6, remaining durations from 10^-9
// to 10^4, needs of 1 to 2048 of 2048 servers, and keys from the exact
// one down by up to 2^12 ulps of fin (a job restarted that many times), to
// 0, and above it (no step at all).
func TestFinAtMost(t *testing.T) {
	r := rng.New(35, 1)
	for i := range 20000 {
		now, rem, scale, fin0 := finDraw(r, i)
		key := finKeyDraw(r, i%4, now, rem, scale, fin0)
		if want, got := finLinear(fin0, now, scale, key), finAtMost(fin0, now, scale, key); got != want {
			t.Fatalf("now %v rem %v scale %v key %v: finAtMost %v, one ulp at a time %v", now, rem, scale, key, got, want)
		}
	}
}

// finLinear is finAtMost one ulp at a time, as setRun's former loop was.
func finLinear(fin, now, scale, key float64) float64 {
	for scale*clamp0(fin-now) > key {
		fin = math.Nextafter(fin, math.Inf(-1))
	}
	return fin
}

// finDraw draws a start for the fin tests: an instant (0 one time in
// seven, else from 1 to 10^6), a remaining duration from 10^-9 to 10^4, a
// need of 1 to 2048 of 2048 servers (scale) and the engine's fin.
func finDraw(r *rng.Stream, i int) (now, rem, scale, fin0 float64) {
	if i%7 != 0 {
		now = math.Pow(10, 6*r.Float64())
	}
	rem = math.Pow(10, -9+13*r.Float64())
	scale = float64(1+r.IntN(2048)) / 2048
	return now, rem, scale, now + rem
}

// finKeyDraw draws a key of kind c for finDraw's start: 0 the exact one,
// 1 below it by up to 2^12 ulps of fin (a job restarted that many times),
// 2 zero where that is at most 2^12 ulps away, 3 above it (no step at
// all), 4 anywhere below it.
func finKeyDraw(r *rng.Stream, c int, now, rem, scale, fin0 float64) float64 {
	ulp := math.Nextafter(fin0, math.Inf(1)) - fin0
	switch c {
	case 0:
		return scale * rem
	case 1:
		return scale * math.Max(rem-float64(r.IntN(1<<12))*ulp, 0)
	case 2:
		return scale * math.Max(rem-float64(1<<12)*ulp, 0)
	case 3:
		return scale * rem * (1 + r.Float64())
	default:
		return scale * rem * r.Float64()
	}
}

// TestMergeBucketRuns: mergeBucketRuns (mergeRun's written-out merge)
// puts runs that are each in order into the order engineCallsRuns would
// sort them into (cmpWas), for the preempted jobs and the started ones
// (each run in order, as applySeamsWide appends them), with crossings on and off. Keys, fins and scales are drawn from
// three values each so that every tie-break is exercised; 500 random
// decisions of 1–6 runs of 1–12 jobs per case.
func TestMergeBucketRuns(t *testing.T) {
	r := rng.New(35, 3)
	for _, crossings := range []bool{true, false} {
		for _, pre := range []bool{true, false} {
			p := &Policy{ord: SRPTOrder, crossings: crossings}
			p.cls = []classInfo{{need: 1, scale: 0.25}, {need: 2, scale: 0.5}, {need: 4, scale: 1}}
			for round := 0; round < 500; round++ {
				p.slots = p.slots[:0]
				var list, ends []int32
				for range 1 + r.IntN(6) {
					run := make([]int32, 1+r.IntN(12))
					for i := range run {
						k := float64(r.IntN(3))
						run[i] = int32(len(p.slots))
						p.slots = append(p.slots, slot{id: int64(len(p.slots)), key: k, key0: k,
							fin: float64(r.IntN(3)), class: int32(r.IntN(3)), moving: true})
					}
					slices.SortFunc(run, p.cmpWas(pre))
					list = append(list, run...)
					ends = append(ends, int32(len(list)))
				}
				want := slices.Clone(list)
				slices.SortFunc(want, p.cmpWas(pre))
				p.mergeBucketRuns(list, ends, pre)
				if !slices.Equal(list, want) {
					t.Fatalf("crossings %v pre %v round %d: merged %v, want %v", crossings, pre, round, list, want)
				}
			}
		}
	}
}

// TestPreemptSeamPlaces: preemptSeam leaves a bucket's slice in the
// treaps' orders (running jobs by (fin, arrival), waiting ones by (key,
// arrival)) and returns the preempted jobs in the order they ran in,
// when the preempted jobs' keys tie the waiting jobs' (fins
// and keys drawn from three values, now = 0 and scale 1, so a preempted
// job's key is its fin) and arrivals are in any order: the ties are where
// a preempted job goes behind a waiting one (sToWaiting) rather than at
// the seam. 2000 random buckets.
func TestPreemptSeamPlaces(t *testing.T) {
	r := rng.New(36, 1)
	p := &Policy{ord: SRPTOrder, crossings: true, cls: []classInfo{{need: 1, scale: 1}}}
	for round := 0; round < 2000; round++ {
		nRun, nWait := 1+r.IntN(8), r.IntN(8)
		p.slots = p.slots[:0]
		ids := make([]int, nRun+nWait) // arrival indices in random order
		for i := range ids {
			j := r.IntN(i + 1)
			ids[i], ids[j] = ids[j], i
		}
		seq := make([]int32, nRun+nWait)
		for i := range seq {
			seq[i] = int32(i)
			v := float64(1 + r.IntN(3))
			p.slots = append(p.slots, slot{id: int64(ids[i]), key: v, fin: v, moving: i < nRun, serve: i < nRun})
		}
		slices.SortFunc(seq[:nRun], func(a, b int32) int {
			if finBefore(&p.slots[a], &p.slots[b]) {
				return -1
			}
			return 1
		})
		slices.SortFunc(seq[nRun:], func(a, b int32) int {
			if keyBefore(&p.slots[a], &p.slots[b]) {
				return -1
			}
			return 1
		})
		take := int32(r.IntN(nRun))
		want := slices.Clone(seq[take:nRun])
		sb := sbucket{seq: seq, nRun: int32(nRun)}
		pre := p.preemptSeam(&sb, take, 1, 0, nil)
		if !slices.Equal(pre, want) {
			t.Fatalf("round %d: preempted %v, want %v", round, pre, want)
		}
		if sb.nRun != take || sb.w != int32(nRun)-take {
			t.Fatalf("round %d: nRun %d w %d, want %d and %d", round, sb.nRun, sb.w, take, int32(nRun)-take)
		}
		for i := 1; i < len(seq); i++ {
			a, b := &p.slots[seq[i-1]], &p.slots[seq[i]]
			if i < int(take) && !finBefore(a, b) || i > int(take) && !keyBefore(a, b) {
				t.Fatalf("round %d: seq %v out of order at %d (nRun %d)", round, seq, i, take)
			}
			if b.moving != (i < int(take)) || b.serve != (i < int(take)) {
				t.Fatalf("round %d: job at %d running state %v/%v with %d running", round, i, b.moving, b.serve, take)
			}
		}
	}
}

// TestAscendRun: ascendRun turns a bucket's preempted jobs as
// applySeamsWide appends them, preemptSeam's block in order then the
// exchange loop's jobs in reverse order, all before the block, into one
// run in order, for every split of up to 9 jobs.
func TestAscendRun(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for k := 0; k < n; k++ { // k = n: no exchange, ascendRun not called
			seg := make([]int32, 0, n)
			for i := n - k; i < n; i++ {
				seg = append(seg, int32(i)) // the block: the latest jobs, in order
			}
			for i := n - k - 1; i >= 0; i-- {
				seg = append(seg, int32(i)) // the exchanges, latest first
			}
			ascendRun(seg, k)
			for i := range seg {
				if seg[i] != int32(i) {
					t.Fatalf("n %d k %d: %v, want 0..%d in order", n, k, seg, n-1)
				}
			}
		}
	}
}
