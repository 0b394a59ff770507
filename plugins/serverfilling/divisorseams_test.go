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
		p.slots[i] = slot{id: int64(i), key: float64(rng.IntN(40)), tl: -1, tr: -1}
	}
	root := int32(-1)
	for _, i := range rng.Perm(n) {
		root, _ = p.tInsert(root, int32(i), modeKey)
	}
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
	var sizeOK func(t int32) bool
	sizeOK = func(t int32) bool {
		if t < 0 {
			return true
		}
		s := &p.slots[t]
		return s.tsz == 1+p.tSize(s.tl)+p.tSize(s.tr) && sizeOK(s.tl) && sizeOK(s.tr)
	}
	for r := int32(0); r <= n; r++ {
		l, rr := p.tSplitRank(root, r)
		if got := p.tCollect(l, nil); !slices.Equal(got, want[:r]) {
			t.Fatalf("split at %d: first part %v, want %v", r, got, want[:r])
		}
		if got := p.tCollect(rr, nil); !slices.Equal(got, want[r:]) {
			t.Fatalf("split at %d: second part %v, want %v", r, got, want[r:])
		}
		if !sizeOK(l) || !sizeOK(rr) || p.tSize(l) != r || p.tSize(rr) != n-r {
			t.Fatalf("split at %d: subtree sizes wrong", r)
		}
		if r > 0 && r < n && (!p.inOrder(want[:r], modeKey) || p.inOrder([]int32{want[r], want[0]}, modeKey)) {
			t.Fatalf("inOrder wrong at %d", r)
		}
		root = p.tMerge(l, rr)
		if got := p.tCollect(root, nil); !slices.Equal(got, want) || !sizeOK(root) {
			t.Fatalf("rejoined at %d: %v", r, got)
		}
	}
}
