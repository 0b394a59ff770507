package sim

// FIFO is a first-in first-out queue of jobs on a growable ring buffer: O(1)
// push, pop and indexed access, no allocation once it has reached its largest
// size. Policies keep per-class or global arrival-order queues with it.
type FIFO struct {
	buf  []*Job
	head int
	n    int
}

// Len is the number of queued jobs.
func (q *FIFO) Len() int { return q.n }

// Push appends j at the back.
func (q *FIFO) Push(j *Job) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = j
	q.n++
}

// Front returns the oldest job, or nil if the queue is empty.
func (q *FIFO) Front() *Job {
	if q.n == 0 {
		return nil
	}
	return q.buf[q.head]
}

// At returns the i-th oldest job (0 is the front).
func (q *FIFO) At(i int) *Job {
	return q.buf[(q.head+i)&(len(q.buf)-1)]
}

// Pop removes and returns the oldest job, or nil if the queue is empty.
func (q *FIFO) Pop() *Job {
	if q.n == 0 {
		return nil
	}
	j := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return j
}

// Reset empties the queue, keeping its capacity.
func (q *FIFO) Reset() {
	for i := 0; i < q.n; i++ {
		q.buf[(q.head+i)&(len(q.buf)-1)] = nil
	}
	q.head, q.n = 0, 0
}

func (q *FIFO) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 16
	}
	nb := make([]*Job, size)
	for i := 0; i < q.n; i++ {
		nb[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = nb, 0
}

// ClassQueues keeps one FIFO per class. Since job IDs increase in arrival
// order, the globally oldest job among the class heads is found in
// O(#classes) without a global queue.
type ClassQueues struct {
	Q     []FIFO
	total int
}

// Reset sizes the queues for n classes and empties them.
func (c *ClassQueues) Reset(n int) {
	if len(c.Q) != n {
		c.Q = make([]FIFO, n)
	}
	for i := range c.Q {
		c.Q[i].Reset()
	}
	c.total = 0
}

// Len is the number of queued jobs in all classes.
func (c *ClassQueues) Len() int { return c.total }

// Push queues j behind the jobs of its class.
func (c *ClassQueues) Push(j *Job) { c.Q[j.class].Push(j); c.total++ }

// Pop removes the oldest job of class i.
func (c *ClassQueues) Pop(i int) *Job {
	j := c.Q[i].Pop()
	if j != nil {
		c.total--
	}
	return j
}

// Oldest returns the class whose head arrived first among classes whose need
// is at most maxNeed, or -1 if none has a waiting job that fits.
func (c *ClassQueues) Oldest(maxNeed int) int {
	best := -1
	var bestID int64
	for i := range c.Q {
		j := c.Q[i].Front()
		if j == nil || int(j.need) > maxNeed {
			continue
		}
		if best < 0 || j.id < bestID {
			best, bestID = i, j.id
		}
	}
	return best
}
