package heapq

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// slot stands for a caller's record that knows its position in the heap, as
// a job does in the engine's event list and in a policy's queue.
type slot struct {
	key float64
	id  int64
	pos int
	in  bool
}

// check verifies the heap property, the positions and the membership.
func check(t *testing.T, h *Heap[float64, *slot], slots []slot) {
	t.Helper()
	n := 0
	for i := 0; i < h.Len(); i++ {
		it := h.At(i)
		if it.Val.pos != i {
			t.Fatalf("item %d (id %d) records position %d", i, it.Val.id, it.Val.pos)
		}
		if it.Key != it.Val.key || it.Tie != it.Val.id {
			t.Fatalf("item %d: key (%v, %d), slot has (%v, %d)", i, it.Key, it.Tie, it.Val.key, it.Val.id)
		}
		if i > 0 && before(it, h.At((i-1)/2)) {
			t.Fatalf("item %d orders before its parent", i)
		}
	}
	for i := range slots {
		if slots[i].in {
			n++
		}
	}
	if n != h.Len() {
		t.Fatalf("%d slots in the heap, Len %d", n, h.Len())
	}
}

// TestAgainstSort: a random mix of pushes, pops, removals from the middle,
// decrease- and increase-keys keeps the heap property and every position,
// and pops come out in (Key, Tie) order, the order a sort gives.
func TestAgainstSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	slots := make([]slot, 2000)
	var h Heap[float64, *slot]
	var popped []slot
	for step := 0; step < 20000; step++ {
		i := r.IntN(len(slots))
		s := &slots[i]
		switch op := r.IntN(10); {
		case !s.in && op < 5:
			// Coarse keys so that ties, broken by id, are frequent.
			s.key, s.id, s.in = float64(r.IntN(50)), int64(i), true
			h.Push(Item[float64, *slot]{Key: s.key, Tie: s.id, Val: s, Pos: &s.pos})
		case s.in && op < 3:
			got := h.Remove(s.pos)
			if got.Val != s {
				t.Fatalf("Remove(%d) returned slot %d, want %d", s.pos, got.Val.id, s.id)
			}
			s.in = false
		case s.in && op < 6:
			s.key = float64(r.IntN(50))
			h.At(s.pos).Key = s.key
			h.Fix(s.pos)
		case h.Len() > 0 && op >= 8:
			top := *h.Top()
			got := h.Pop()
			if got.Val != top.Val {
				t.Fatalf("Pop returned slot %d, Top was %d", got.Val.id, top.Val.id)
			}
			for j := range slots {
				if sj := &slots[j]; sj.in && sj != got.Val && (sj.key < got.Key || sj.key == got.Key && sj.id < got.Tie) {
					t.Fatalf("popped (%v, %d) while (%v, %d) was in the heap", got.Key, got.Tie, sj.key, sj.id)
				}
			}
			got.Val.in = false
			popped = append(popped, *got.Val)
		}
		if step%97 == 0 {
			check(t, &h, slots)
		}
	}
	check(t, &h, slots)
	var rest []slot
	for h.Len() > 0 {
		it := h.Pop()
		it.Val.in = false
		rest = append(rest, *it.Val)
	}
	if !slices.IsSortedFunc(rest, func(a, b slot) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	}) {
		t.Fatal("draining the heap did not give (Key, Tie) order")
	}
	if len(popped) == 0 || len(rest) == 0 {
		t.Fatalf("the test exercised too little: %d pops, %d left", len(popped), len(rest))
	}
}

// TestReset: Reset empties the heap and drops the items' pointers.
func TestReset(t *testing.T) {
	var h Heap[int64, *slot]
	s := &slot{}
	h.Push(Item[int64, *slot]{Key: 3, Val: s})
	h.Push(Item[int64, *slot]{Key: 1, Val: s})
	h.Reset()
	if h.Len() != 0 {
		t.Fatalf("Len %d after Reset", h.Len())
	}
	if full := h.items[:2]; full[0].Val != nil || full[1].Val != nil {
		t.Fatal("Reset kept the payloads' pointers alive")
	}
}

// TestNoAllocation: once grown, pushing, popping and removing allocate
// nothing (the engine's per-event path relies on it).
func TestNoAllocation(t *testing.T) {
	slots := make([]slot, 64)
	var h Heap[float64, *slot]
	for i := range slots {
		h.Push(Item[float64, *slot]{Key: float64(i % 7), Tie: int64(i), Val: &slots[i], Pos: &slots[i].pos})
	}
	allocs := testing.AllocsPerRun(100, func() {
		a := h.Pop()
		b := h.Remove(slots[5].pos % h.Len())
		h.Push(a)
		h.Push(b)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

// BenchmarkHoldModel: the classic hold-model workload of a future-event
// list (pop the earliest, push it back later) on a heap of 32 and of 2048
// indexed items, the sizes of the engine's list on the one-or-all and Borg
// workloads.
func BenchmarkHoldModel(b *testing.B) {
	for _, n := range []int{32, 2048} {
		b.Run(map[int]string{32: "32", 2048: "2048"}[n], func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			slots := make([]slot, n)
			var h Heap[float64, *slot]
			for i := range slots {
				h.Push(Item[float64, *slot]{Key: r.Float64(), Tie: int64(i), Val: &slots[i], Pos: &slots[i].pos})
			}
			seq := int64(n)
			b.ResetTimer()
			for b.Loop() {
				it := h.Pop()
				seq++
				it.Key += r.ExpFloat64()
				it.Tie = seq
				h.Push(it)
			}
		})
	}
}
