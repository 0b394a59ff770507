package sdk

import (
	"math/bits"
	"sort"
	"unsafe"

	"github.com/msjfarm/msjfarm/internal/prefault"
	"github.com/msjfarm/msjfarm/internal/prefetch"
)

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
		// A full ring doubles here rather than in a helper: with a call
		// in it Push would be too big for the compiler to inline, and it
		// is on every policy's arrival path. Appending the buffer to
		// itself keeps every queued job at its ring position under the
		// doubled mask (the jobs that had wrapped round to the front
		// reappear right after the old end, where the larger ring looks
		// for them); the two stale copies are cleared.
		if q.n == 0 {
			q.buf = make([]*Job, 16)
		} else {
			q.buf = append(q.buf, q.buf...)
			clear(q.buf[:q.head])
			clear(q.buf[q.head+q.n:])
		}
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
	if q.n >= prefetchAbove {
		// The jobs near the front have waited behind the others and are
		// likely cold, and they are the next ones a policy starts:
		// fetching a job's cache lines prefetchAhead pops before it is
		// popped overlaps the miss with the events in between. On Adaptive
		// Quickswap over Borg cell B at λ = 4.5 (queues of 10^4 to 10^5
		// jobs), where the first read of a started job was a quarter of
		// the cycles, fetching the new front job took 12-15% off the time
		// per event, and fetching the fourth one (three pops ahead)
		// instead a further 10% (1.44 → 1.29 s for 10^7 arrivals, five
		// interleaved pairs): one event of lead left the miss only partly
		// hidden.
		prefetch.Line(unsafe.Pointer(q.buf[(q.head+prefetchAhead)&(len(q.buf)-1)]))
	}
	return j
}

// prefetchAbove is the queue length from which Pop prefetches: in a
// shorter queue the jobs are still in the cache. prefetchAhead is how many
// pops ahead (0: the new front job); prefetchAbove > prefetchAhead, so the
// job fetched is always in the queue.
const (
	prefetchAbove = 16
	prefetchAhead = 3
)

// Reset empties the queue, keeping its capacity.
func (q *FIFO) Reset() {
	for i := 0; i < q.n; i++ {
		q.buf[(q.head+i)&(len(q.buf)-1)] = nil
	}
	q.head, q.n = 0, 0
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
func (c *ClassQueues) Push(j *Job) { c.Q[j.Class()].Push(j); c.total++ }

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
		if j == nil || j.Need() > maxNeed {
			continue
		}
		if best < 0 || j.ID() < bestID {
			best, bestID = i, j.ID()
		}
	}
	return best
}

// NeedQueues queues waiting jobs by server need: one FIFO per distinct need
// of the workload, so classes that share a need are served in arrival order
// between themselves (the papers identify a class with its need). Groups are
// indexed in priority order — decreasing need (MSF and its relatives) or
// increasing need (LSF). A bitset of non-empty groups lets a fill skip empty
// groups in O(#groups/64), and, in decreasing order, From[f] is the first
// group whose need is at most f idle servers, so an MSF-order fill costs
// O(#groups/64 + jobs started).
type NeedQueues struct {
	Need  []int  // need of group g, in priority order
	Of    []int  // class index -> group
	Q     []FIFO // waiting jobs of group g
	From  []int  // decreasing order only: From[f] = first g with Need[g] <= f (len(Need) if none)
	Total int    // waiting jobs in all groups
	nz    []uint64
}

// Reset builds the groups for the system's classes, in decreasing need order
// if desc and increasing otherwise, and empties them, reusing storage when
// the shape is unchanged.
func (g *NeedQueues) Reset(s *System, desc bool) {
	cls := s.Classes()
	var needs []int
	seen := map[int]bool{}
	for _, c := range cls {
		if !seen[c.Need] {
			seen[c.Need] = true
			needs = append(needs, c.Need)
		}
	}
	sort.Ints(needs)
	if desc {
		for i, j := 0, len(needs)-1; i < j; i, j = i+1, j-1 {
			needs[i], needs[j] = needs[j], needs[i]
		}
	}
	g.Need = needs
	g.Of = g.Of[:0]
	for _, c := range cls {
		g.Of = append(g.Of, g.Index(c.Need))
	}
	if len(g.Q) != len(needs) {
		g.Q = make([]FIFO, len(needs))
	}
	for i := range g.Q {
		g.Q[i].Reset()
	}
	g.nz = make([]uint64, (len(needs)+63)/64)
	g.Total = 0
	g.From = g.From[:0]
	if desc {
		i := len(needs)
		for f := 0; f <= s.Servers(); f++ {
			for i > 0 && needs[i-1] <= f {
				i--
			}
			g.From = append(g.From, i)
		}
	}
}

// Index returns the group of a need, or -1.
func (g *NeedQueues) Index(need int) int {
	for i, n := range g.Need {
		if n == need {
			return i
		}
	}
	return -1
}

// Push queues j in its need's group.
func (g *NeedQueues) Push(j *Job) {
	i := g.Of[j.Class()]
	g.Q[i].Push(j)
	g.nz[i>>6] |= 1 << uint(i&63)
	g.Total++
}

// Pop removes the oldest job of group i.
func (g *NeedQueues) Pop(i int) *Job {
	// Written to stay within the compiler's inlining budget (cost 80 of
	// 80 with Go 1.26): it runs once per job started.
	q := &g.Q[i]
	j := q.Pop()
	if q.n == 0 {
		g.nz[i>>6] &^= 1 << (i & 63)
	}
	g.Total--
	return j
}

// Next returns the first group at index >= i with a waiting job, or -1.
func (g *NeedQueues) Next(i int) int {
	w := i >> 6
	if w >= len(g.nz) {
		return -1
	}
	if x := g.nz[w] >> uint(i&63); x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(g.nz); w++ {
		if g.nz[w] != 0 {
			return w<<6 + bits.TrailingZeros64(g.nz[w])
		}
	}
	return -1
}

// ParkingFIFO is a first-in first-out queue for a policy that only ever
// takes the job at its front, such as FCFS: the first ParkAfter jobs are kept
// as Jobs (a FIFO), and the jobs queued behind them are parked (System.Park)
// until they reach the front. A queue that stays short costs what a FIFO
// does; a backlog costs 24 bytes per job instead of a Job's 96, in blocks
// that are never copied and hold no pointers for the garbage collector to
// scan. An overloaded FCFS run (10^6 waiting jobs) needs a quarter of the
// memory, and the kernel zero-fills a quarter of the pages. The ring is an
// array in the struct (8 KiB, even when empty), which keeps Push and Pop
// free of a growth path.
type ParkingFIFO struct {
	near [ParkAfter]*Job // ring of the oldest jobs
	head int             // index of the front in near
	n    int             // jobs in near
	far  parkedQueue     // the jobs behind them, parked
}

// ParkAfter is the number of jobs a ParkingFIFO holds as Jobs before it parks
// the ones behind them: 96 KiB of Jobs, which a queue of a stable system
// rarely outgrows (parking and unparking a job costs a little more than
// queueing it).
const ParkAfter = 1024

// Len is the number of queued jobs.
func (q *ParkingFIFO) Len() int { return q.n + q.far.n }

// Push appends waiting job j at the back. If j is parked, the queue holds
// the job but not the *Job: j must not be used afterwards (Front and Pop
// give the job back as a Job when it reaches the front).
func (q *ParkingFIFO) Push(s *System, j *Job) {
	if q.far.n == 0 && q.n < ParkAfter {
		q.near[(q.head+q.n)&(ParkAfter-1)] = j
		q.n++
		return
	}
	q.far.park(s, j)
}

// Front returns the oldest job, or nil if the queue is empty.
func (q *ParkingFIFO) Front(s *System) *Job {
	if q.n == 0 {
		return q.unparkFront(s)
	}
	return q.near[q.head]
}

// unparkFront moves the oldest parked job, if any, to the emptied ring and
// returns it.
func (q *ParkingFIFO) unparkFront(s *System) *Job {
	if q.far.n == 0 {
		return nil
	}
	j := q.far.unpark(s)
	q.near[q.head] = j
	q.n = 1
	return j
}

// Pop removes and returns the oldest job, or nil if the queue is empty.
func (q *ParkingFIFO) Pop(s *System) *Job {
	if q.n == 0 {
		return q.far.unpark(s)
	}
	j := q.near[q.head]
	q.near[q.head] = nil
	q.head = (q.head + 1) & (ParkAfter - 1)
	q.n--
	if q.n >= prefetchAbove {
		// As FIFO.Pop does.
		prefetch.Line(unsafe.Pointer(q.near[(q.head+prefetchAhead)&(ParkAfter-1)]))
	}
	return j
}

// Reset empties the queue, keeping one block of parked storage.
func (q *ParkingFIFO) Reset() {
	clear(q.near[:])
	q.head, q.n = 0, 0
	q.far.reset()
}

// parkedQueue is a first-in first-out queue of parked jobs. It grows a
// block of parkedBlock values at a time and gives each emptied block back to
// the next growth, so nothing is ever copied.
type parkedQueue struct {
	blocks [][]Parked // the queue, oldest block first
	head   int        // index of the front in blocks[0]
	tail   int        // index of the next park in the last block
	n      int
	spare  []Parked // the last emptied block, reused by the next growth
}

// parkedBlock is the number of values in a block: 48 KiB.
const parkedBlock = 2048

// park parks j (System.Park) at the back.
func (q *parkedQueue) park(s *System, j *Job) {
	if len(q.blocks) == 0 || q.tail == parkedBlock {
		q.grow()
	}
	s.Park(j, &q.blocks[len(q.blocks)-1][q.tail])
	q.tail++
	q.n++
}

func (q *parkedQueue) grow() {
	b := q.spare
	if b == nil {
		b = make([]Parked, parkedBlock)
		prefault.Slice(b) // it is written front to back from now on
	}
	q.spare = nil
	q.blocks = append(q.blocks, b)
	q.tail = 0
}

// unpark removes the oldest parked job and returns it as a Job
// (System.Unpark), or nil if the queue is empty.
func (q *parkedQueue) unpark(s *System) *Job {
	if q.n == 0 {
		return nil
	}
	j := s.Unpark(&q.blocks[0][q.head])
	q.head++
	q.n--
	if q.head == parkedBlock || q.n == 0 {
		// The front block is used up, or the queue is empty (then it
		// is the only block): keep it as the spare.
		q.spare = q.blocks[0]
		q.blocks[0] = nil
		q.blocks = q.blocks[1:]
		q.head = 0
	}
	return j
}

func (q *parkedQueue) reset() {
	if len(q.blocks) > 0 && q.spare == nil {
		q.spare = q.blocks[0]
	}
	clear(q.blocks)
	q.blocks = q.blocks[:0]
	q.head, q.tail, q.n = 0, 0, 0
}
