package serverfilling

import (
	"fmt"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// detTies: k = 8, needs 1, 2 and 4 with deterministic and two-point
// durations, so that remaining sizes tie exactly and often (equal sizes
// within a need, need × duration equal across needs: 1 × 2 = 2 × 1 =
// 4 × 0.5), at ρ ≈ 0.95: the SRPT path's tie rules (arrival index) against
// the general path's.
func detTies() *sim.Workload {
	w := &sim.Workload{Name: "det-ties-8", Servers: 8, Classes: []sim.Class{
		{Name: "a", Need: 1, Share: 0.4, Service: must(dist.NewDeterministic(2))},
		{Name: "b", Need: 2, Share: 0.3, Service: must(dist.NewEmpirical([]float64{1, 1, 3}))},
		{Name: "c", Need: 4, Share: 0.2, Service: must(dist.NewDeterministic(0.5))},
		{Name: "d", Need: 1, Share: 0.1, Service: must(dist.NewEmpirical([]float64{2, 4}))},
	}}
	atLoad(w, 0.95)
	return w
}

// atLoad sets w's arrival rate for load rho: rho × k / (Σ share × need ×
// mean duration / Σ share).
func atLoad(w *sim.Workload, rho float64) {
	var work, total float64
	for _, c := range w.Classes {
		work += c.Share * float64(c.Need) * c.Service.Mean()
		total += c.Share
	}
	w.ArrivalRate = rho * float64(w.Servers) * total / work
}

// srptVariants runs f as one subtest per seed, crossings on and off and
// packing reading, named after workload wname and those.
func srptVariants(t *testing.T, wname string, seeds []uint64, f func(t *testing.T, name string, seed uint64, params map[string]any)) {
	for _, seed := range seeds {
		for _, crossings := range []bool{true, false} {
			for _, packing := range []string{PackingStop, PackingSkip} {
				params := map[string]any{"crossings": crossings, "packing": packing}
				name := fmt.Sprintf("%s/seed=%d/crossings=%v/packing=%s", wname, seed, crossings, packing)
				t.Run(name, func(t *testing.T) { f(t, name, seed, params) })
			}
		}
	}
}

// TestSRPTPathEquivalent: ServerFilling-SRPT's O(C · log n) path
// (srptfast.go) takes exactly the decisions of the general path, event for
// event, with crossings on and off and under both packing readings, over
// many seeds, on workloads with exact ties (detTies), with needs that do not
// divide k, with many classes of one need (mixedWorkload draws several
// duration families), and at k = 2048 near saturation. Packing "stop" is
// also compared with the frozen pre-rework implementation (refPolicy).
func TestSRPTPathEquivalent(t *testing.T) {
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	wls := []wl{
		{detTies(), 20000},
		{mixedWorkload("divisible-12", 12, divisors(12), 0.95, 12), 20000},
		{mixedWorkload("nondivisible-24", 24, []int{1, 3, 5, 7, 10, 16}, 0.95, 24), 20000},
		{mixedWorkload("same-need-8", 8, []int{1, 1, 2, 2, 4, 4, 8}, 0.9, 8), 20000},
		{namedWorkload(t, "powers-of-two-h2", p2Rate(0.97)), 20000},
		{twoClass2048(126), 8000},
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, x := range wls {
		srptVariants(t, x.w.Name, seeds, func(t *testing.T, name string, seed uint64, params map[string]any) {
			cfg := sim.Config{Seed: seed, Warmup: x.arrivals / 10, Arrivals: x.arrivals, MaxInSystem: 20000}
			fast := configured(t, SRPTOrder, ServerFilling, params)
			fast.forceFast = true
			gen := configured(t, SRPTOrder, ServerFilling, params)
			gen.general = true
			simtest.SameTrace(t, name, x.w, gen, fast, cfg)
			if params["packing"] == PackingStop {
				ref := newRef(SRPTOrder, ServerFilling)
				if err := sim.Configure(ref, map[string]any{"crossings": params["crossings"]}); err != nil {
					t.Fatal(err)
				}
				simtest.SameTrace(t, name+"/ref", x.w, ref, fast2(t, SRPTOrder, params), cfg)
			}
		})
	}
}

// TestSRPTPathBorgB: the SRPT path against the general path on Borg cell B
// (26 classes, k = 2048) at ρ = 0.92, the BenchmarkCatalog case where the
// path once preempted a job it had started in the same decision: under
// engine 0.4.0's tolerance rule, keys of one need that tied within the
// crossing tolerance but not exactly were ordered one way by the waiting
// treap and the other by less. Seed 1 hit it at t ≈ 51943, inside this run
// (150000 arrivals; 100000 end before it). The total order of engine 0.5.0
// (srptfastorder.go) removes the cause; TestFastPathLong (tag long) runs
// seeds 1-4 past t = 49339, where seed 4 parted the two paths under 0.4.0.
func TestSRPTPathBorgB(t *testing.T) {
	if testing.Short() {
		t.Skip("long run (two policies on 165000 arrivals at k = 2048)")
	}
	w1 := namedWorkload(t, "borg-b", 1)
	w := namedWorkload(t, "borg-b", 0.92/w1.Load())
	cfg := sim.Config{Seed: 1, Warmup: 15000, Arrivals: 150000, MaxInSystem: 20000}
	fast := configured(t, SRPTOrder, ServerFilling, nil)
	fast.forceFast = true // Borg cell B has needs above k/2 (see initSRPT)
	gen := configured(t, SRPTOrder, ServerFilling, nil)
	gen.general = true
	simtest.SameTrace(t, "borg-b/rho=0.92/seed=1", w, gen, fast, cfg)
	if !fast.fastSRPT {
		t.Fatal("the fast path was not taken")
	}
}

// fast2 is a fresh ServerFilling policy of order o on the SRPT path
// whatever its needs (forceFast).
func fast2(t *testing.T, o Order, params map[string]any) *Policy {
	p := configured(t, o, ServerFilling, params)
	p.forceFast = true
	return p
}

// monotoneMix: k = 12, classes whose Gittins ranks never rise with age
// (deterministic, uniform, Weibull of shape 2 by rank table) mixed with
// exponential ones (constant ranks), several classes per need, ρ ≈ 0.95;
// detRanks adds exact rank ties (equal deterministic durations across
// classes, need × duration equal across needs).
func monotoneMix(detRanks bool) *sim.Workload {
	w := &sim.Workload{Name: "monotone-mix-12", Servers: 12, Classes: []sim.Class{
		{Name: "det1", Need: 1, Share: 0.25, Service: must(dist.NewDeterministic(1.5))},
		{Name: "uni1", Need: 1, Share: 0.2, Service: must(dist.NewUniform(0.5, 3))},
		{Name: "exp2", Need: 2, Share: 0.15, Service: must(dist.NewExponential(1))},
		{Name: "det3", Need: 3, Share: 0.15, Service: must(dist.NewDeterministic(0.7))},
		{Name: "wei4", Need: 4, Share: 0.15, Service: must(dist.NewWeibullMean(2, 1.2))},
		{Name: "uni6", Need: 6, Share: 0.1, Service: must(dist.NewUniform(0.1, 1))},
	}}
	if detRanks {
		w.Name = "monotone-ties-12"
		w.Classes[1].Service = must(dist.NewDeterministic(1.5)) // ties det1
		w.Classes[3].Service = must(dist.NewDeterministic(0.5)) // 3 × 0.5 = 1 × 1.5
	}
	var work, total float64
	for _, c := range w.Classes {
		work += c.Share * float64(c.Need) * c.Service.Mean()
		total += c.Share
	}
	w.ArrivalRate = 0.95 * 12 * total / work
	return w
}

// TestGittinsPathEquivalent: ServerFilling-Gittins with ranks that never
// rise takes the O(C · log n) path of srptfast.go (run groups per class)
// and the general path's decisions, event for event, over many seeds, and
// the frozen pre-rework implementation's.
func TestGittinsPathEquivalent(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, w := range []*sim.Workload{monotoneMix(false), monotoneMix(true)} {
		for _, seed := range seeds {
			for _, packing := range []string{PackingStop, PackingSkip} {
				name := fmt.Sprintf("%s/seed=%d/packing=%s", w.Name, seed, packing)
				t.Run(name, func(t *testing.T) {
					cfg := sim.Config{Seed: seed, Warmup: 2000, Arrivals: 30000, MaxInSystem: 20000}
					params := map[string]any{"packing": packing}
					fast := configured(t, GittinsOrder, ServerFilling, params)
					fast.forceFast = true
					gen := configured(t, GittinsOrder, ServerFilling, params)
					gen.general = true
					simtest.SameTrace(t, name, w, gen, fast, cfg)
					if !fast.fastSRPT {
						t.Fatal("the fast path was not taken")
					}
					if packing == PackingStop {
						simtest.SameTrace(t, name+"/ref", w, newRef(GittinsOrder, ServerFilling), fast2(t, GittinsOrder, params), cfg)
					}
				})
			}
		}
	}
}

// TestTreap checks the SRPT path's treap operations against a sorted slice
// under random inserts (with key ties), deletions anywhere, deletions of
// the first job and order-statistics lookups: ranks, sizes, order.
func TestTreap(t *testing.T) {
	p := &Policy{seed: 1}
	r := rng.New(5, 0)
	root := int32(-1)
	var ref []int32 // slots in (key, id) order
	var free []int32
	for step := 0; step < 20000; step++ {
		switch op := r.IntN(10); {
		case op < 5 || len(ref) == 0: // insert
			var i int32
			if n := len(free); n > 0 {
				i, free = free[n-1], free[:n-1]
			} else {
				p.slots = append(p.slots, slot{})
				i = int32(len(p.slots) - 1)
			}
			p.slots[i] = slot{id: int64(step), key: float64(r.IntN(50))}
			var rank int32
			root, rank = p.tInsert(root, i, modeKey)
			at, _ := slices.BinarySearchFunc(ref, i, func(a, b int32) int {
				if heapLess(p, a, b) {
					return -1
				}
				return 1
			})
			if int(rank) != at {
				t.Fatalf("step %d: insert rank %d, want %d", step, rank, at)
			}
			ref = slices.Insert(ref, at, i)
		case op < 8: // delete anywhere
			k := r.IntN(len(ref))
			root = p.tDelete(root, ref[k], modeKey)
			free = append(free, ref[k])
			ref = slices.Delete(ref, k, k+1)
		default: // delete the first
			if p.tFirst(root) != ref[0] {
				t.Fatalf("step %d: first %d, want %d", step, p.tFirst(root), ref[0])
			}
			root = p.tDeleteMin(root)
			free = append(free, ref[0])
			ref = ref[1:]
		}
		if int(p.tSize(root)) != len(ref) {
			t.Fatalf("step %d: size %d, want %d", step, p.tSize(root), len(ref))
		}
		if len(ref) > 0 {
			k := r.IntN(len(ref))
			if got := p.tSelect(root, int32(k)); got != ref[k] {
				t.Fatalf("step %d: select %d = %d, want %d", step, k, got, ref[k])
			}
			if p.tLast(root) != ref[len(ref)-1] {
				t.Fatalf("step %d: last %d, want %d", step, p.tLast(root), ref[len(ref)-1])
			}
		}
	}
}

// TestKeptLookups checks the lookups the treap path keeps between walks
// against a sorted slice: wAtKept's kept ranks as jobs are inserted
// anywhere (keptInsert) and the first one leaves (keptDeleteMin), asked
// for often the same few ranks so that the kept answers are used, and
// tDeleteLast's new last job.
func TestKeptLookups(t *testing.T) {
	p := &Policy{seed: 1, fastSRPT: true}
	r := rng.New(6, 0)
	sb := &sbucket{root: -1}
	run := int32(-1)        // a treap in modeFall, for tDeleteLast
	var ref, runRef []int32 // slots in (key, id) and (fin, id) order
	byKey := func(a, b int32) int {
		if heapLess(p, a, b) {
			return -1
		}
		return 1
	}
	byFin := func(a, b int32) int {
		if p.tLess(a, b, modeFall) {
			return -1
		}
		return 1
	}
	hits := 0
	for step := range 40000 {
		switch op := r.IntN(10); {
		case op < 4 || len(ref) == 0: // a waiting job enters
			p.slots = append(p.slots, slot{id: int64(step), key: float64(r.IntN(20))})
			i := int32(len(p.slots) - 1)
			var rank int32
			sb.root, rank = p.tInsert(sb.root, i, modeKey)
			sb.keptInsert(rank, i)
			at, _ := slices.BinarySearchFunc(ref, i, byKey)
			ref = slices.Insert(ref, at, i)
		case op < 6: // the first waiting job leaves
			sb.root = p.tDeleteMin(sb.root)
			sb.keptDeleteMin()
			ref = ref[1:]
		case op < 8 || len(runRef) == 0: // a running job enters
			p.slots = append(p.slots, slot{id: int64(step), fin: float64(r.IntN(20))})
			i := int32(len(p.slots) - 1)
			run, _ = p.tInsert(run, i, modeFall)
			at, _ := slices.BinarySearchFunc(runRef, i, byFin)
			runRef = slices.Insert(runRef, at, i)
		default: // the last running job leaves
			var last int32
			run, last = p.tDeleteLast(run)
			runRef = runRef[:len(runRef)-1]
			want := int32(-1)
			if n := len(runRef); n > 0 {
				want = runRef[n-1]
			}
			if last != want || p.tSize(run) != int32(len(runRef)) {
				t.Fatalf("step %d: tDeleteLast: last %d, size %d; want %d, %d", step, last, p.tSize(run), want, len(runRef))
			}
		}
		for range 2 {
			if len(ref) == 0 {
				break
			}
			k := min(int32(r.IntN(3)), int32(len(ref)-1)) // the first ranks, as decisions ask
			if r.IntN(4) == 0 {
				k = int32(r.IntN(len(ref)))
			}
			if sb.kept[0].r == k+1 || sb.kept[1].r == k+1 {
				hits++
			}
			if got := p.wAtKept(sb, k); got != ref[k] {
				t.Fatalf("step %d: wAtKept(%d) = %d, want %d", step, k, got, ref[k])
			}
		}
	}
	if hits < 10000 {
		t.Fatalf("only %d lookups answered from the kept ranks", hits)
	}
}
