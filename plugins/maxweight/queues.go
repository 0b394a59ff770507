package maxweight

import (
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim/heapq"
)

// deque is a double-ended ring buffer of jobs: waiting jobs of one need
// group, oldest first. Preempted jobs go back to the front (they are older
// than every waiting job of their group, see MaxWeight), arrivals to the back.
// No allocation once it has reached its largest size.
type deque struct {
	buf  []*sdk.Job
	head int
	n    int
}

func (d *deque) len() int { return d.n }

func (d *deque) grow() {
	size := 2 * len(d.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]*sdk.Job, size)
	for i := 0; i < d.n; i++ {
		nb[i] = d.buf[(d.head+i)&(len(d.buf)-1)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(j *sdk.Job) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = j
	d.n++
}

func (d *deque) pushFront(j *sdk.Job) {
	if d.n == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1) & (len(d.buf) - 1)
	d.buf[d.head] = j
	d.n++
}

func (d *deque) popFront() *sdk.Job {
	j := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	return j
}

func (d *deque) reset() {
	for i := 0; i < d.n; i++ {
		d.buf[(d.head+i)&(len(d.buf)-1)] = nil
	}
	d.head, d.n = 0, 0
}

// youngest is a max-heap of running jobs on arrival index (Job.ID): the
// project's heap keyed by -ID (IDs are unique, so no tie-breaker is needed),
// with each job's position kept in Job.Idx so that a completion removes it in
// O(log n).
type youngest struct {
	h heapq.Heap[int64, *sdk.Job]
}

func (y *youngest) len() int { return y.h.Len() }

func (y *youngest) push(j *sdk.Job) {
	y.h.Push(heapq.Item[int64, *sdk.Job]{Key: -j.ID(), Val: j, Pos: &j.Idx})
}

func (y *youngest) pop() *sdk.Job { return y.h.Pop().Val }

func (y *youngest) remove(i int) { y.h.Remove(i) }

func (y *youngest) reset() { y.h.Reset() }
