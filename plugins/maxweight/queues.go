package maxweight

import "github.com/msjfarm/msjfarm/sdk"

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

// youngest is a max-heap of running jobs on arrival index (Job.ID), with each
// job's position in Job.Idx so that a completion removes it in O(log n).
type youngest struct {
	h []*sdk.Job
}

func (y *youngest) len() int { return len(y.h) }

func (y *youngest) set(i int, j *sdk.Job) { y.h[i] = j; j.Idx = i }

func (y *youngest) push(j *sdk.Job) {
	y.h = append(y.h, j)
	y.up(len(y.h) - 1)
}

func (y *youngest) pop() *sdk.Job {
	j := y.h[0]
	y.remove(0)
	return j
}

func (y *youngest) remove(i int) {
	last := len(y.h) - 1
	if i != last {
		y.set(i, y.h[last])
	}
	y.h[last] = nil
	y.h = y.h[:last]
	if i < last {
		y.down(i)
		y.up(i)
	}
}

func (y *youngest) up(i int) {
	j := y.h[i]
	for i > 0 {
		p := (i - 1) / 2
		if y.h[p].ID() >= j.ID() {
			break
		}
		y.set(i, y.h[p])
		i = p
	}
	y.set(i, j)
}

func (y *youngest) down(i int) {
	j := y.h[i]
	n := len(y.h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && y.h[r].ID() > y.h[c].ID() {
			c = r
		}
		if y.h[c].ID() <= j.ID() {
			break
		}
		y.set(i, y.h[c])
		i = c
	}
	y.set(i, j)
}

func (y *youngest) reset() {
	clear(y.h)
	y.h = y.h[:0]
}
