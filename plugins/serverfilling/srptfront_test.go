package serverfilling

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestWaitFront checks a bucket's waiting jobs held as a front and a treap
// (srptfront.go) against a sorted slice: the rank of each insertion (at the
// front's start, inside it, past it, into a full front), the first job's
// removal, the size, the job at a rank (wAtKept, the kept treap ranks
// included), the count ahead of a job (waitCountLess) and the front
// emptied into the treap (frontFlush); after every step the front is in
// descending order and precedes every job of the treap, and the treap's
// kept ranks are right.
func TestWaitFront(t *testing.T) {
	p := &Policy{seed: 1, fastSRPT: true, ord: SRPTOrder}
	r := rng.New(11, 0)
	sb := &sbucket{root: -1}
	var ref []int32 // the waiting jobs in (key, id) order
	byKey := func(a, b int32) int {
		if heapLess(p, a, b) {
			return -1
		}
		return 1
	}
	newSlot := func() int32 {
		key := float64(r.IntN(40))
		if r.IntN(2) == 0 && len(ref) > 0 { // mostly ahead of the first, as SRPT's preemptions
			key = p.slots[ref[0]].key - float64(r.IntN(3))
		}
		id := int64(r.IntN(1<<20))<<24 | int64(len(p.slots)) // distinct, in no order
		p.slots = append(p.slots, slot{id: id, key: key})
		return int32(len(p.slots) - 1)
	}
	spills, inside, past := 0, 0, 0
	for step := range 60000 {
		grow := 10 // out of 20: the insertions' share, higher in phases where the jobs pile up
		if step/3000%2 == 1 {
			grow = 16
		}
		switch {
		case r.IntN(20) < grow || len(ref) == 0:
			i := newSlot()
			n := len(sb.front)
			rank := p.waitInsert(sb, i)
			at, _ := slices.BinarySearchFunc(ref, i, byKey)
			if int(rank) != at {
				t.Fatalf("step %d: insert rank %d, want %d", step, rank, at)
			}
			switch {
			case n == frontCap && at < n:
				spills++
			case at > 0 && at < n:
				inside++
			case at >= n && n > 0:
				past++
			}
			ref = slices.Insert(ref, at, i)
		case r.IntN(400) > 0:
			p.waitDeleteMin(sb)
			ref = ref[1:]
		default: // a run moves: the front goes to the treap
			p.frontFlush(sb)
		}
		if got := p.waitSize(sb); int(got) != len(ref) {
			t.Fatalf("step %d: size %d, want %d", step, got, len(ref))
		}
		f := sb.front
		for k := 1; k < len(f); k++ {
			if !heapLess(p, f[k], f[k-1]) {
				t.Fatalf("step %d: front not descending at %d", step, k)
			}
		}
		if len(f) > 0 && sb.root >= 0 && !heapLess(p, f[0], p.tFirst(sb.root)) {
			t.Fatalf("step %d: the front's last job does not precede the treap's first", step)
		}
		for _, kr := range sb.kept { // the kept treap ranks are right
			if kr.r > 0 && p.tSelect(sb.root, kr.r-1) != kr.x {
				t.Fatalf("step %d: kept rank %d of the treap holds %d, not %d", step, kr.r-1, kr.x, p.tSelect(sb.root, kr.r-1))
			}
		}
		for range 3 {
			if len(ref) == 0 {
				break
			}
			k := int32(r.IntN(len(ref)))
			switch r.IntN(3) {
			case 0: // the first ranks, as decisions ask
				k = min(int32(r.IntN(3)), int32(len(ref)-1))
			case 1: // the treap's first ranks, which it keeps
				k = min(int32(len(sb.front)+r.IntN(3)), int32(len(ref)-1))
			}
			if got := p.wAtKept(sb, k); got != ref[k] {
				t.Fatalf("step %d: wAtKept(%d) = %d, want %d", step, k, got, ref[k])
			}
		}
		x := newSlot()
		want := 0
		for want < len(ref) && p.less(ref[want], x) {
			want++
		}
		if got := p.waitCountLess(sb, x); int(got) != want {
			t.Fatalf("step %d: count ahead %d, want %d", step, got, want)
		}
	}
	if spills < 100 || inside < 1000 || past < 1000 {
		t.Fatalf("cases not reached: %d insertions into a full front, %d inside, %d past it", spills, inside, past)
	}
}
