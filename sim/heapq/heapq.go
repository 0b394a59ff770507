// Package heapq is the project's generic binary heap: a min-heap of items keyed
// by an ordered key with an integer tie-breaker, generic over the key and the
// payload, allocation-free once its slice has grown, and optionally indexed,
// so that an item can be removed or re-keyed in O(log n).
//
// Why keys rather than a Less function: the order is the key's built-in <
// (then Tie's), which the compiler emits inline for each key type, whereas a
// Less supplied as a func value or as a method of a type parameter is an
// indirect call on every comparison (Go compiles generic code per shape and
// calls type-parameter methods through a dictionary); container/heap pays
// the same indirect calls through its interface. Even so, the engine's own
// event list stays hand-written: on its per-event path this heap measured
// 25% slower (see sim/heap.go for the numbers and the reason).
//
// Why Pos rather than a callback: an item that must be found again (a
// running job, to remove it when it completes (MaxWeight); a waiting job whose
// priority changes) carries a pointer to an int that the heap keeps equal to
// the item's position, again without an indirect call.
package heapq

import "cmp"

// Item is one entry of a Heap. Items are ordered by Key, then by Tie; for a
// deterministic pop sequence (a simulator's requirement) (Key, Tie) should
// be unique, e.g. with Tie an insertion counter or an arrival index.
type Item[K cmp.Ordered, V any] struct {
	Key K
	Tie int64
	Val V
	// Pos, if not nil, is kept equal to the item's current position while
	// the item is in the heap: pass it to Remove or Fix.
	Pos *int
}

// Heap is a binary min-heap of items (the least (Key, Tie) on top). The zero
// value is an empty heap. Keys must not be NaN.
type Heap[K cmp.Ordered, V any] struct {
	items []Item[K, V]
}

// Len is the number of items.
func (h *Heap[K, V]) Len() int { return len(h.items) }

// Top returns a pointer to the least item; the heap must not be empty.
// After changing its Key or Tie through the pointer, call Fix(0).
func (h *Heap[K, V]) Top() *Item[K, V] { return &h.items[0] }

// At returns a pointer to the item at position i. After changing its Key or
// Tie through the pointer, call Fix(i).
func (h *Heap[K, V]) At(i int) *Item[K, V] { return &h.items[i] }

// Push adds it.
func (h *Heap[K, V]) Push(it Item[K, V]) {
	h.items = append(h.items, it)
	h.up(len(h.items) - 1)
}

// Pop removes and returns the least item; the heap must not be empty.
func (h *Heap[K, V]) Pop() Item[K, V] { return h.Remove(0) }

// Remove removes and returns the item at position i.
func (h *Heap[K, V]) Remove(i int) Item[K, V] {
	it := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.items[i] = h.items[last]
	}
	h.items[last] = Item[K, V]{} // drop the payload's pointers
	h.items = h.items[:last]
	if i < last {
		h.Fix(i)
	}
	return it
}

// Fix restores the order after the Key or Tie of the item at position i has
// changed (decrease-key or increase-key).
func (h *Heap[K, V]) Fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// Reset empties the heap, keeping its storage for reuse.
func (h *Heap[K, V]) Reset() {
	clear(h.items)
	h.items = h.items[:0]
}

// before reports whether x orders before y.
func before[K cmp.Ordered, V any](x, y *Item[K, V]) bool {
	return x.Key < y.Key || (x.Key == y.Key && x.Tie < y.Tie)
}

// place records position i in the item there.
func (h *Heap[K, V]) place(i int) {
	if p := h.items[i].Pos; p != nil {
		*p = i
	}
}

// up and down move an item through a hole rather than by swapping: each
// item on the path is written once instead of twice, which matters because
// an item holding pointers is copied with write barriers (measured: swapping
// made the heap 2-3 times slower than the engine's former hand-written one).

func (h *Heap[K, V]) up(i int) {
	items := h.items
	x := items[i]
	for i > 0 {
		p := (i - 1) / 2
		if !before(&x, &items[p]) {
			break
		}
		items[i] = items[p]
		h.place(i)
		i = p
	}
	items[i] = x
	h.place(i)
}

// down moves the item at i0 towards the leaves and reports whether it moved.
func (h *Heap[K, V]) down(i0 int) bool {
	items := h.items
	i, n := i0, len(items)
	x := items[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && before(&items[r], &items[c]) {
			c = r
		}
		if !before(&items[c], &x) {
			break
		}
		items[i] = items[c]
		h.place(i)
		i = c
	}
	if i == i0 {
		return false
	}
	items[i] = x
	h.place(i)
	return true
}
