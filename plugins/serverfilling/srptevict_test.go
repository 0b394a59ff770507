package serverfilling

import (
	"fmt"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestEvictRunsH2: the fast path against the general path on the
// hyperexponential two-class workload of BenchmarkLevelsH2 (k = 2048) at
// the L = 1300 and L = 5000 rates, where a short wide job arriving ahead
// of M's end evicts runs of up to 128 running narrow jobs (evictRuns), the
// repair steps after a carried one evict without a pass (carriedStep) and
// the job added ahead of M's last keeps the carry (carryAdd), with
// crossings on and off and both packing readings.
func TestEvictRunsH2(t *testing.T) {
	for _, rate := range []float64{125, 137} {
		for _, params := range []map[string]any{nil, {"crossings": false}, {"packing": PackingStop}} {
			c := equivCase{
				name: fmt.Sprintf("two-class-2048-h2@%g/%v", rate, params), w: twoClass2048H2(rate),
				o: SRPTOrder, params: params, arrivals: 5000, seed: 3,
			}
			t.Run(c.name, func(t *testing.T) { t.Parallel(); fastVsGeneral(t, c) })
		}
	}
}

// TestFrontRun: frontRun against waitInsert called for each job of the
// run, the last first (what evictMove does without it), on random
// waiting sets (front and treap) and random runs in the waiting order
// (their sizes in proportion to frontCap),
// most of them ahead of every waiting job: where frontRun takes the run,
// the front must be the same jobs in the same order and the treap the same
// jobs in order; where it declines, nothing may have changed. Each case is
// reached: the run taken with an empty front, with a front it does not
// fill, with one it overfills, and declined.
func TestFrontRun(t *testing.T) {
	r := rng.New(12, 0)
	var empty, fits, spills, declined int
	for trial := range 4000 {
		a := &Policy{seed: 1, fastSRPT: true, ord: SRPTOrder}
		b := &Policy{seed: 1, fastSRPT: true, ord: SRPTOrder}
		sa, sbk := &sbucket{root: -1}, &sbucket{root: -1}
		mk := func(key float64) int32 {
			id := int64(r.IntN(1<<20))<<24 | int64(len(a.slots)) // distinct, in no order
			a.slots = append(a.slots, slot{id: id, key: key})
			b.slots = append(b.slots, slot{id: id, key: key})
			return int32(len(a.slots) - 1)
		}
		for range r.IntN(frontCap * 5 / 2) {
			i := mk(float64(8 + r.IntN(40)))
			a.waitInsert(sa, i)
			b.waitInsert(sbk, i)
		}
		if r.IntN(4) == 0 { // the front emptied into the treap
			a.frontFlush(sa)
			b.frontFlush(sbk)
		}
		run := make([]int32, 1+r.IntN(frontCap*9/4))
		ahead := r.IntN(4) > 0
		for k := range run {
			key := float64(r.IntN(8))
			if r.IntN(frontCap) == 0 {
				key = 8 // a tie with the waiting jobs' least keys
			}
			if !ahead {
				key = float64(r.IntN(50))
			}
			run[k] = mk(key)
		}
		slices.SortFunc(run, func(x, y int32) int {
			if heapLess(a, x, y) {
				return -1
			}
			return 1
		})
		front0 := slices.Clone(sa.front)
		tree0 := a.tCollect(sa.root, nil)
		n0 := len(sa.front)
		if a.frontRun(sa, run, slices.Clone(run)) {
			switch {
			case n0 == 0:
				empty++
			case n0+len(run) <= frontCap:
				fits++
			default:
				spills++
			}
		} else {
			declined++
			if !slices.Equal(sa.front, front0) || !slices.Equal(a.tCollect(sa.root, nil), tree0) {
				t.Fatalf("trial %d: frontRun declined the run but changed the waiting jobs", trial)
			}
			for i := len(run) - 1; i >= 0; i-- {
				a.waitInsert(sa, run[i])
			}
		}
		for i := len(run) - 1; i >= 0; i-- {
			b.waitInsert(sbk, run[i])
		}
		if !slices.Equal(sa.front, sbk.front) {
			t.Fatalf("trial %d: front %v, want %v", trial, sa.front, sbk.front)
		}
		if got, want := a.tCollect(sa.root, nil), b.tCollect(sbk.root, nil); !slices.Equal(got, want) {
			t.Fatalf("trial %d: treap %v, want %v", trial, got, want)
		}
		for k := int32(0); k < a.waitSize(sa); k += 7 { // the treap's sizes too
			if x, y := a.wAtKept(sa, k), b.wAtKept(sbk, k); x != y {
				t.Fatalf("trial %d: rank %d holds %d, want %d", trial, k, x, y)
			}
		}
	}
	t.Logf("%d into an empty front, %d fitting, %d spilling, %d declined", empty, fits, spills, declined)
	if empty < 100 || fits < 100 || spills < 100 || declined < 100 {
		t.Fatalf("cases not reached: %d into an empty front, %d fitting, %d spilling, %d declined", empty, fits, spills, declined)
	}
}
