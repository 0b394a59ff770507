package sim

import (
	"math"
	"math/bits"
)

// event is an entry of the future-event list: the time and the job it
// belongs to. A departure's job is the job in service; a policy timer gets
// an engine-internal Job of its own (state stateTimer, the tag in id) from
// the same pool, so that every entry has the same two words and its
// tie-break key (Job.evSeq) in the same place.
type event struct {
	t float64
	j *Job
}

// eventHeap is the future-event list: a binary min-heap of the pending
// departures and timers on (t, seq), where seq (Job.evSeq) is the insertion
// order, so ties in t are broken first-in first-out. The order is total, so
// any correct priority queue pops the same sequence.
//
// What a heap of running jobs costs is instructions per level and branches
// the processor cannot predict (which child is earlier, whether a new
// departure rises past its parent), so: entries are two words (16 bytes;
// the tie-break key lives in the Job and is read only on a tie, which is
// rare); a pop sinks its hole to a leaf choosing the earlier child by an
// integer subtraction's borrow instead of a branch (times are never
// negative, so their IEEE-754 bits order as unsigned integers); a push
// compares times only, since a new entry has the largest seq and loses
// every tie. A sorted array for small lists (pop O(1), push by a
// branch-free binary search and a memmove) was tried: 3% fewer
// instructions on MSF over one-or-all, but no faster in time, so not kept.
// It is written out rather than through container/heap to keep interface
// calls off the per-event path, and it is deliberately not the project's
// generic heap (sim/heapq), which moves 40-byte items and is compiled per
// GC shape.
//
// Departure entries keep their job's heapIdx current so that a preemption
// removes its departure in O(log n); only a preempting policy needs that
// (System.Preempt is the one reader), so with track unset the heap never
// writes it, which saves a store into a cold Job at every level.
//
// A pop is lazy: it hands out the root and leaves it in place as a hole
// (hole set), because the event it returns is usually a departure whose
// policy at once starts another job, and that push then fills the root's
// hole directly (one sink to a leaf and a short rise) instead of a pop's
// sink and rise followed by a push's rise. Anything else (next, remove, a
// second pop) first completes the pending pop.
type eventHeap struct {
	ev    []event
	seq   uint64
	track bool // keep Job.heapIdx current (the policy may preempt)
	hole  bool // ev[0] was popped; it is not an event any more
}

func (h *eventHeap) len() int {
	if h.hole {
		return len(h.ev) - 1
	}
	return len(h.ev)
}

// next is the time of the earliest event; the heap must not be empty.
func (h *eventHeap) next() float64 {
	if h.hole {
		h.settle()
	}
	return h.ev[0].t
}

// settle completes a pending pop: the last entry fills the root's hole.
func (h *eventHeap) settle() {
	h.hole = false
	n := len(h.ev) - 1
	if n > 0 {
		h.popDown(n)
	}
	h.ev = h.ev[:n]
}

// before reports whether a comes before b in the (t, seq) order.
func before(a, b event) bool {
	return a.t < b.t || (a.t == b.t && a.j.evSeq < b.j.evSeq)
}

// push adds j's event at time t (t >= 0, not NaN). After a pop it takes
// the root's hole: the hole sinks to a leaf and the new entry rises from
// there (Floyd's method, as in popDown), the heap keeping its size.
func (h *eventHeap) push(t float64, j *Job) {
	h.seq++
	j.evSeq = h.seq
	if h.hole {
		h.hole = false
		h.pushUp(h.sink(len(h.ev)), t, j)
		return
	}
	h.ev = append(h.ev, event{t, j})
	h.pushUp(len(h.ev)-1, t, j)
}

// pushUp places the new entry (t, j) at or above leaf i. It has the largest
// seq, so it rises only past strictly later times.
func (h *eventHeap) pushUp(i int, t float64, j *Job) {
	ev := h.ev
	for i > 0 {
		p := (i - 1) / 2
		if !(t < ev[p].t) {
			break
		}
		ev[i] = ev[p]
		if h.track {
			ev[i].j.heapIdx = int32(i)
		}
		i = p
	}
	ev[i] = event{t, j}
	if h.track {
		j.heapIdx = int32(i)
	}
}

// pop returns the earliest event and leaves its place as the root's hole
// (see eventHeap); the heap must not be empty.
func (h *eventHeap) pop() event {
	if h.hole {
		h.settle()
	}
	h.hole = true
	return h.ev[0]
}

// popDown fills the root's hole with the last entry h.ev[n] (Floyd's
// bottom-up deletion): the hole first sinks to a leaf, and the last entry
// then rises from there, usually by no level at all since it was a leaf
// itself.
func (h *eventHeap) popDown(n int) {
	last := h.ev[n]
	i := h.sink(n)
	h.ev[i] = last
	h.up(i)
}

// sink moves the root's hole down to a leaf of the first n entries, each
// level moving up the earlier of its two children, and returns the hole's
// index.
func (h *eventHeap) sink(n int) int {
	ev := h.ev[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n {
			tl, tr := math.Float64bits(ev[l].t), math.Float64bits(ev[r].t)
			_, borrow := bits.Sub64(tr, tl, 0) // 1 if tr < tl
			c += int(borrow)
			if tr == tl && ev[r].j.evSeq < ev[l].j.evSeq {
				c = r
			}
		}
		ev[i] = ev[c]
		if h.track {
			ev[i].j.heapIdx = int32(i)
		}
		i = c
	}
	return i
}

// remove deletes job j's event.
func (h *eventHeap) remove(j *Job) {
	if h.hole {
		h.settle()
	}
	h.removeAt(int(j.heapIdx))
}

// removeAt deletes the entry at index i.
func (h *eventHeap) removeAt(i int) {
	n := len(h.ev) - 1
	if i != n {
		h.ev[i] = h.ev[n]
		h.ev = h.ev[:n]
		if !h.down(i) {
			h.up(i)
		}
		return
	}
	h.ev = h.ev[:n]
}

// up and down move the entry at i by a hole: the entry is held aside while
// the entries it passes move one level each, and it is written once where
// it stops.
func (h *eventHeap) up(i int) {
	ev := h.ev
	e := ev[i]
	for i > 0 {
		p := (i - 1) / 2
		if !before(e, ev[p]) {
			break
		}
		ev[i] = ev[p]
		if h.track {
			ev[i].j.heapIdx = int32(i)
		}
		i = p
	}
	ev[i] = e
	if h.track {
		e.j.heapIdx = int32(i)
	}
}

func (h *eventHeap) down(i0 int) bool {
	ev := h.ev
	i, n := i0, len(ev)
	e := ev[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && before(ev[r], ev[l]) {
			c = r
		}
		if !before(ev[c], e) {
			break
		}
		ev[i] = ev[c]
		if h.track {
			ev[i].j.heapIdx = int32(i)
		}
		i = c
	}
	ev[i] = e
	if h.track {
		e.j.heapIdx = int32(i)
	}
	return i > i0
}
