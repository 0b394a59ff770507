package serverfilling

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTreapRuns: tSplitRank, tCollect and a join by tMerge (the moves of
// divisorseams.go) against a sorted slice. 300 jobs with keys drawn from
// 40 values (so equal keys are ordered by arrival) are inserted in random
// order; the treap is split at every rank r, the pieces must hold the first
// r jobs of the sorted slice and the rest with consistent subtree sizes,
// and the rejoined treap the whole slice again.
func TestTreapRuns(t *testing.T) {
	const n = 300
	rng := rand.New(rand.NewPCG(1, 2))
	p := &Policy{slots: make([]slot, n), ds: &dsrpt{}, seed: 0x9e3779b9}
	for i := range p.slots {
		p.slots[i] = slot{id: int64(i), key: float64(rng.IntN(40))}
	}
	root := int32(-1)
	for _, i := range rng.Perm(n) {
		root, _ = p.tInsert(root, int32(i), modeKey)
	}
	want := sortedJobs(p, n)
	for r := int32(0); r <= n; r++ {
		l, rr := p.tSplitRank(root, r)
		if got := p.tCollect(l, nil); !slices.Equal(got, want[:r]) {
			t.Fatalf("split at %d: first part %v, want %v", r, got, want[:r])
		}
		if got := p.tCollect(rr, nil); !slices.Equal(got, want[r:]) {
			t.Fatalf("split at %d: second part %v, want %v", r, got, want[r:])
		}
		if !sizesOK(p, l) || !sizesOK(p, rr) || p.tSize(l) != r || p.tSize(rr) != n-r {
			t.Fatalf("split at %d: subtree sizes wrong", r)
		}
		root = p.tMerge(l, rr)
		if got := p.tCollect(root, nil); !slices.Equal(got, want) || !sizesOK(p, root) {
			t.Fatalf("rejoined at %d: %v", r, got)
		}
	}
}

// TestTreapJoins: joinFront and joinBack put a run split off one treap
// into another, with the keys of the two overlapping in every way: run
// entirely ahead, entirely behind, interleaved, ties, and a run whose own
// order is not the destination's (so they must fall back to inserting
// jobs one by one). Each result must be the sorted union with consistent
// subtree sizes. 2000 random cases of up to 30 + 30 jobs.
func TestTreapJoins(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for c := range 2000 {
		nd, nr := rng.IntN(30), 1+rng.IntN(30)
		p := &Policy{slots: make([]slot, nd+nr), ds: &dsrpt{}, seed: 0x9e3779b9}
		lo, span := rng.IntN(20), 1+rng.IntN(20) // run's keys relative to dst's [0, 20)
		for i := range p.slots {
			k := rng.IntN(20)
			if i >= nd {
				k = lo + rng.IntN(span) - 10
			}
			p.slots[i] = slot{id: int64(rng.IntN(1000)*100 + i), key: float64(k)}
		}
		dst, src := int32(-1), int32(-1)
		for i := range nd {
			dst, _ = p.tInsert(dst, int32(i), modeKey)
		}
		// The run's treap in its own order: by key, or (a third of the
		// cases) by id, which mode's order does not follow.
		srcMode := uint8(modeKey)
		if c%3 == 0 {
			for i := nd; i < nd+nr; i++ {
				p.slots[i].fin = float64(p.slots[i].id)
			}
			srcMode = modeFall
		}
		for i := nd; i < nd+nr; i++ {
			src, _ = p.tInsert(src, int32(i), srcMode)
		}
		run := p.tCollect(src, nil)
		want := sortedJobs(p, nd+nr)
		var got int32
		if c%2 == 0 {
			got = p.joinFront(dst, src, run, modeKey, runSorted(p, run, modeKey))
		} else {
			got = p.joinBack(dst, src, run, modeKey, runSorted(p, run, modeKey))
		}
		if g := p.tCollect(got, nil); !slices.Equal(g, want) || p.tSize(got) != int32(nd+nr) || !sizesOK(p, got) {
			t.Fatalf("case %d: joined %v, want %v", c, g, want)
		}
	}
}

// sizesOK checks every subtree size of treap t.
func sizesOK(p *Policy, t int32) bool {
	if t < 0 {
		return true
	}
	n := &p.tn[t]
	return n.sz == 1+p.tSize(n.l)+p.tSize(n.r) && sizesOK(p, n.l) && sizesOK(p, n.r)
}

// sortedJobs is jobs 0..n-1 of p sorted in the waiting treaps' order.
func sortedJobs(p *Policy, n int) []int32 {
	want := make([]int32, n)
	for i := range want {
		want[i] = int32(i)
	}
	slices.SortFunc(want, func(a, b int32) int {
		if p.tLess(a, b, modeKey) {
			return -1
		}
		return 1
	})
	return want
}

// runSorted reports whether run is in mode's order (what preemptRun and
// startRun learn while they move a run).
func runSorted(p *Policy, run []int32, mode uint8) bool {
	for i := 1; i < len(run); i++ {
		if !p.tLess(run[i-1], run[i], mode) {
			return false
		}
	}
	return true
}
