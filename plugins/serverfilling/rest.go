package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

// restQueue holds the waiting jobs outside M, whose keys are frozen: a FIFO
// under arrival order (a job never leaves M there, so arrivals come in key
// order and nothing is pushed back), a binary min-heap on (key, arrival
// index) otherwise. Nothing is ever removed from the middle.
type restQueue struct {
	fifo bool
	q    sdk.FIFO
	h    []int32
}

func (r *restQueue) reset(fifo bool) {
	r.fifo = fifo
	r.q.Reset()
	r.h = r.h[:0]
}

func (r *restQueue) len() int {
	if r.fifo {
		return r.q.Len()
	}
	return len(r.h)
}

func (r *restQueue) top() int32 {
	if r.fifo {
		return int32(r.q.Front().Idx)
	}
	return r.h[0]
}

func heapLess(p *Policy, a, b int32) bool {
	sa, sb := &p.slots[a], &p.slots[b]
	return sa.key < sb.key || sa.key == sb.key && sa.id < sb.id
}

func (r *restQueue) push(p *Policy, i int32) {
	if r.fifo {
		r.q.Push(p.slots[i].j)
		return
	}
	r.h = append(r.h, i)
	r.up(p, len(r.h)-1)
}

func (r *restQueue) pop(p *Policy) int32 {
	if r.fifo {
		return int32(r.q.Pop().Idx)
	}
	h := r.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	r.h = h[:n]
	if n > 0 {
		r.down(p, 0)
	}
	return top
}

func (r *restQueue) up(p *Policy, i int) {
	h := r.h
	x := h[i]
	for i > 0 {
		parent := (i - 1) / 2
		if !heapLess(p, x, h[parent]) {
			break
		}
		h[i] = h[parent]
		i = parent
	}
	h[i] = x
}

func (r *restQueue) down(p *Policy, i int) {
	h := r.h
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && heapLess(p, h[c+1], h[c]) {
			c++
		}
		if !heapLess(p, h[c], x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}
