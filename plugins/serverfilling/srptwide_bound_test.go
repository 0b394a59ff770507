package serverfilling

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestSBoundOn: the branch-free search (sBoundOn, through sBound) returns
// the index a plain binary search on tLess returns, in both slice orders
// (modeKey on key, modeFall on fin, each then arrival), on random sorted
// slices of 0–40 jobs whose keys and fins come from a few values (ties
// common), for probes equal to a job of the slice, tied with some in
// key or fin, or between and outside them. It fails with the tie on
// arrival dropped, the step taken on the wrong side, or the last probe
// off by one.
func TestSBoundOn(t *testing.T) {
	r := rng.New(39, 1)
	p := &Policy{}
	plain := func(seq []int32, x int32, mode uint8) int32 {
		lo, hi := int32(0), int32(len(seq))
		for lo < hi {
			m := (lo + hi) / 2
			if p.tLess(seq[m], x, mode) {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	for round := 0; round < 20000; round++ {
		mode := modeKey
		if round%2 == 1 {
			mode = modeFall
		}
		n := r.IntN(41)
		p.slots = p.slots[:0]
		ids := make([]int, n+1) // arrival indices in random order, the last for the probe
		for i := range ids {
			j := r.IntN(i + 1)
			ids[i], ids[j] = ids[j], i
		}
		for i := 0; i <= n; i++ {
			v := float64(r.IntN(6)) / 2
			p.slots = append(p.slots, slot{id: int64(ids[i]), key: v, fin: v})
		}
		seq := make([]int32, n)
		for i := range seq {
			seq[i] = int32(i)
		}
		// Insertion sort in the order mode (small n).
		for i := 1; i < n; i++ {
			for j := i; j > 0 && p.tLess(seq[j], seq[j-1], mode); j-- {
				seq[j], seq[j-1] = seq[j-1], seq[j]
			}
		}
		for _, x := range append(seq, int32(n)) {
			lo := int32(0)
			if n > 0 {
				lo = int32(r.IntN(n + 1))
			}
			want := lo + plain(seq[lo:], x, mode)
			if got := p.sBound(seq, lo, int32(n), x, mode); got != want {
				t.Fatalf("round %d mode %d: sBound(%d..%d, job %d) = %d, want %d", round, mode, lo, n, x, got, want)
			}
		}
	}
}
