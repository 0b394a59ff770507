package maxweight

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// brute enumerates every packing and returns the best value.
func brute(items []item, capacity int) val {
	var best val
	var rec func(i, c int, v val)
	rec = func(i, c int, v val) {
		if i == len(items) {
			if best.less(v) {
				best = v
			}
			return
		}
		for u := 0; u <= items[i].b && u*items[i].w <= c; u++ {
			rec(i+1, c-u*items[i].w, v.add(items[i].v.mul(u)))
		}
	}
	rec(0, capacity, val{})
	return best
}

func packed(ks *knapsack) (val, int) {
	var v val
	var w int
	for i, it := range ks.items {
		v = v.add(it.v.mul(ks.t[i]))
		w += it.w * ks.t[i]
		if ks.t[i] < 0 || ks.t[i] > it.b {
			return val{-1, -1}, -1
		}
	}
	return v, w
}

// TestKnapsackExact compares each of the solver's methods with exhaustive
// enumeration on random instances shaped like MaxWeight's (weights = needs,
// values = (Q_n, n·(k+1) [+1])), small enough to enumerate: solve (LP test,
// branch and bound, DP), branch and bound alone (when it finishes), branch
// and bound with a budget of 3 nodes (falls back to the DP), and the DP
// alone.
func TestKnapsackExact(t *testing.T) {
	r := rng.New(7, 11)
	var ks, tiny knapsack
	tiny.budget = 3
	for trial := 0; trial < 5000; trial++ {
		capacity := 1 + r.IntN(16)
		ks.reset()
		tiny.reset()
		var items []item
		for g, n := 0, 1+r.IntN(5); g < n; g++ {
			w := 1 + r.IntN(capacity)
			q := 1 + r.IntN(8)
			kept := r.IntN(q + 1)
			v := val{int64(q), int64(w * (capacity + 1))}
			for _, it := range []item{{g, w, kept, val{v.hi, v.lo + 1}}, {g, w, q - kept, v}} {
				if it.b > 0 {
					ks.add(it)
					tiny.add(it)
					items = append(items, it)
				}
			}
		}
		want := brute(items, capacity)
		check := func(method string, ks *knapsack) {
			t.Helper()
			if got, w := packed(ks); w > capacity || got != want {
				t.Fatalf("trial %d: items %+v cap %d: %s gave %+v (weight %d), want %+v", trial, items, capacity, method, got, w, want)
			}
		}
		ks.solve(capacity)
		check("solve", &ks)
		tiny.solve(capacity)
		check("solve with 3 nodes", &tiny)
		if !ks.greedy(capacity) && ks.branchAndBound(capacity) {
			check("branch and bound", &ks)
		}
		ks.dynamic(capacity)
		check("DP", &ks)
	}
	t.Logf("%d solves: %d needed branch and bound, %d the DP; with 3 nodes %d the DP",
		ks.solves, ks.bbRuns, ks.dpRuns, tiny.dpRuns)
	if ks.bbRuns == 0 || tiny.dpRuns == 0 {
		t.Error("a method was never exercised")
	}
}

// TestKnapsackLarge: on a Borg-sized instance (k = 2048) the DP and the LP
// shortcut agree with each other, and a packing that is provably optimal by
// hand is found: 3000 need-1 jobs (weight 3000 each) fill all 2048 servers.
func TestKnapsackLarge(t *testing.T) {
	var ks knapsack
	ks.add(item{0, 1, 3000, val{3000, 2049}})
	ks.add(item{1, 2000, 1, val{1, 2000 * 2049}})
	ks.add(item{2, 100, 30, val{30, 100 * 2049}})
	ks.solve(2048)
	if ks.t[0] != 2048 || ks.t[1] != 0 || ks.t[2] != 0 || ks.dpRuns != 0 || ks.bbRuns != 0 {
		t.Fatalf("got %v (runs: bb %d, dp %d), want [2048 0 0] by the LP test", ks.t, ks.bbRuns, ks.dpRuns)
	}
	// 40 need-1 jobs (Q=40), one need-2000 job, 30 need-100 jobs (Q=30):
	// need-1 first (40 per server), then need-100 (0.3 per server): 40 + 20
	// need-100 jobs = 2040 servers, weight 40·40 + 20·30 = 2200; the
	// need-2000 job (weight 1) would displace 20 need-100 jobs (600).
	ks.reset()
	ks.add(item{0, 1, 40, val{40, 2049}})
	ks.add(item{1, 2000, 1, val{1, 2000 * 2049}})
	ks.add(item{2, 100, 30, val{30, 100 * 2049}})
	ks.solve(2048)
	greedyT := append([]int(nil), ks.t...)
	if ks.bbRuns != 1 || ks.dpRuns != 0 {
		t.Errorf("runs: bb %d, dp %d; want branch and bound to settle it", ks.bbRuns, ks.dpRuns)
	}
	ks.dynamic(2048)
	if ks.t[0] != 40 || ks.t[1] != 0 || ks.t[2] != 20 || greedyT[0] != 40 || greedyT[2] != 20 {
		t.Fatalf("DP %v, solve %v, want [40 0 20]", ks.t, greedyT)
	}
}
