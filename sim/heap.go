package sim

import "github.com/msjfarm/msjfarm/sim/heapq"

// event is an entry of the future-event list: a departure (j != nil) or a
// policy timer (j == nil, tag).
type event struct {
	t   float64
	j   *Job
	tag int
}

// eventHeap is the future-event list: the project's generic heap keyed by
// time, ties broken first-in first-out by an insertion counter, so the event
// sequence is deterministic. A departure keeps its job's heapIdx current so
// that a preemption removes it in O(log n).
type eventHeap struct {
	h   heapq.Heap[float64, eventVal]
	seq int64
}

type eventVal struct {
	j   *Job
	tag int
}

func (h *eventHeap) len() int { return h.h.Len() }

// next is the time of the earliest event; the heap must not be empty.
func (h *eventHeap) next() float64 { return h.h.Top().Key }

func (h *eventHeap) push(t float64, j *Job, tag int) {
	h.seq++
	it := heapq.Item[float64, eventVal]{Key: t, Tie: h.seq, Val: eventVal{j, tag}}
	if j != nil {
		it.Pos = &j.heapIdx
	}
	h.h.Push(it)
}

func (h *eventHeap) pop() event {
	it := h.h.Pop()
	return event{t: it.Key, j: it.Val.j, tag: it.Val.tag}
}

// remove deletes the entry at index i.
func (h *eventHeap) remove(i int) { h.h.Remove(i) }
