package sim

// event is an entry of the future-event list: a departure (j != nil) or a
// policy timer (j == nil, tag).
type event struct {
	t   float64
	j   *Job
	tag int
	seq uint64 // insertion order: ties in t are broken first-in first-out
}

// eventHeap is a binary min-heap on (t, seq), written out rather than through
// container/heap to keep interface calls off the per-event path. Departure
// entries keep their job's heapIdx current so a preemption removes its
// departure in O(log n).
//
// It is deliberately not the project's generic heap (sim/heapq), which
// MaxWeight uses and which supports the same operations: measured on
// BenchmarkFCFSOneOrAllStable (process CPU time, GOMAXPROCS=1, interleaved
// runs on a loaded machine), the engine on heapq took 0.88 s against 0.70 s
// with this heap, +25%, i.e. about 15 ns more per event. The generic
// version moves 40-byte items holding two pointers (payload and position)
// where this one moves 32-byte events holding one, and its code is compiled
// per GC shape with a dictionary argument; on the per-event path of a
// 32-server system, where the heap is small and every event pushes or pops,
// that difference dominates.
type eventHeap struct {
	ev  []event
	seq uint64
}

func (h *eventHeap) len() int { return len(h.ev) }

// next is the time of the earliest event; the heap must not be empty.
func (h *eventHeap) next() float64 { return h.ev[0].t }

func (h *eventHeap) less(a, b int) bool {
	ea, eb := &h.ev[a], &h.ev[b]
	return ea.t < eb.t || (ea.t == eb.t && ea.seq < eb.seq)
}

func (h *eventHeap) push(t float64, j *Job, tag int) {
	h.seq++
	h.ev = append(h.ev, event{t: t, j: j, tag: tag, seq: h.seq})
	i := len(h.ev) - 1
	if j != nil {
		j.heapIdx = int32(i)
	}
	h.up(i)
}

func (h *eventHeap) pop() event {
	n := len(h.ev) - 1
	e := h.ev[0]
	h.ev[0] = h.ev[n]
	h.ev = h.ev[:n]
	if n > 0 {
		h.down(0)
	}
	return e
}

// remove deletes the entry at index i.
func (h *eventHeap) remove(i int) {
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
// it stops. Against pairwise swaps this halves the writes (and the heapIdx
// updates) per level; the pop order, which (t, seq) makes total, is the
// same whatever the sifting.
func (h *eventHeap) up(i int) {
	e := h.ev[i]
	for i > 0 {
		p := (i - 1) / 2
		q := &h.ev[p]
		if !(e.t < q.t || (e.t == q.t && e.seq < q.seq)) {
			break
		}
		h.ev[i] = *q
		if j := q.j; j != nil {
			j.heapIdx = int32(i)
		}
		i = p
	}
	h.ev[i] = e
	if e.j != nil {
		e.j.heapIdx = int32(i)
	}
}

func (h *eventHeap) down(i0 int) bool {
	i, n := i0, len(h.ev)
	e := h.ev[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.less(r, l) {
			c = r
		}
		q := &h.ev[c]
		if !(q.t < e.t || (q.t == e.t && q.seq < e.seq)) {
			break
		}
		h.ev[i] = *q
		if j := q.j; j != nil {
			j.heapIdx = int32(i)
		}
		i = c
	}
	h.ev[i] = e
	if e.j != nil {
		e.j.heapIdx = int32(i)
	}
	return i > i0
}
