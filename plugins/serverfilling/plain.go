package serverfilling

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The plain path: ServerFilling under arrival order (policy serverfilling,
// either packing), the static path of static.go specialised to a single key
// group, where its bookkeeping simplifies further:
//
//   - M is a prefix of the arrival order that never loses a job to anything
//     but a completion: an arrival either joins an M that is every job (and
//     was short of k, so nothing drops off its end) or lands behind a full
//     M; a completion only lets M extend. So the jobs behind M are a FIFO
//     of *Job that needs no slot, no links and no bookkeeping until a
//     completion pulls them into M, and an arrival behind a full M costs one
//     push. There are never jobs that left M to preempt first, and every
//     order the static path sorts by is plain arrival order.
//   - M's jobs are kept per need bucket only (linked lists through flat
//     int32 arrays, arrival order, a cursor on the first unserved one, as in
//     static.go). A decision visits only the buckets with jobs in M (a
//     bitset), from the first whose count changed since the last decision
//     (the takes before it are unchanged), fusing takes and the cursor moves
//     into one pass; once no server is left (or PackStop has stopped) only
//     the buckets that still have served jobs are visited. Per event: O(1)
//     plus O(1) per start, preemption and job entering M, plus one step per
//     occupied bucket between the first changed one and the point where the
//     servers run out (at most the number of distinct needs; with two
//     classes, two).
//
// The engine calls are those of the static path (and so of the general
// path), in the same order: preemptions first, then starts, each in arrival
// order (a merge by arrival index only when more than one bucket
// contributes). TestEquivalentToReference checks this event for event.

// pBucket is one need bucket: M's jobs of that need in arrival order.
type pBucket struct {
	head, tail int32 // M's jobs of the bucket (-1: none)
	cur        int32 // first unserved one (-1: none)
	served     int32
	inM        int32
	need       int32
}

// pLink is a slot's place in its bucket's list.
type pLink struct {
	prev, next int32
	b          int32 // bucket
}

type pEnt struct {
	id int64
	i  int32
}

// plain is the state of the plain path (nil when the policy takes another).
type plain struct {
	k    int
	stop bool    // PackStop
	sumM int     // total need of M
	cb   []int32 // bucket of each class

	bk   []pBucket
	job  []*sdk.Job // per slot (a job of M)
	ln   []pLink    // per slot
	free []int32
	out  jobRing // the jobs behind M, in arrival order

	occ    []uint64 // buckets with jobs in M
	served []uint64 // buckets with served jobs

	dirty    int   // first bucket whose count in M changed since the last decision (len(bk): none)
	cut      int   // bucket where the last decision ran out of servers or stopped (len(bk): none)
	remAfter []int // per bucket up to cut: servers left after it at the last decision that reached it

	// A decision's preemptions and starts (capacity k: each holds a server),
	// how many, and from how many buckets.
	pre, starts        []int32
	np, ns             int
	preRuns, startRuns int
	keys               []uint64 // scratch: byArrival
	ents               []pEnt
}

// initPlain sets the plain path up if the policy is plain ServerFilling
// (Init, after the buckets).
func (p *Policy) initPlain() {
	if p.ord != ArrivalOrder || p.proc != ServerFilling || p.exhaustive {
		p.pl = nil
		return
	}
	q := p.pl
	if q == nil {
		q = &plain{}
		p.pl = q
	}
	q.k, q.stop, q.sumM = p.k, p.packing == PackStop, 0
	q.cb = q.cb[:0]
	for _, c := range p.cls {
		q.cb = append(q.cb, c.bucket)
	}
	q.bk = q.bk[:0]
	for b := range p.nBuckets {
		q.bk = append(q.bk, pBucket{head: -1, tail: -1, cur: -1, need: p.bneed[b]})
	}
	clear(q.job)
	q.job, q.ln, q.free = q.job[:0], q.ln[:0], q.free[:0]
	q.out.reset()
	w := (p.nBuckets + 63) / 64
	q.occ = append(q.occ[:0], make([]uint64, w)...)
	q.served = append(q.served[:0], make([]uint64, w)...)
	if cap(q.pre) < p.k {
		q.pre, q.starts = make([]int32, p.k), make([]int32, p.k)
	}
	q.pre, q.starts, q.ents = q.pre[:p.k], q.starts[:p.k], q.ents[:0]
	q.dirty, q.cut = p.nBuckets, p.nBuckets
	q.remAfter = append(q.remAfter[:0], make([]int, p.nBuckets)...)
}

func (q *plain) arrive(s *sdk.System, j *sdk.Job) {
	if q.sumM >= q.k { // behind a full M: nothing changes
		r := &q.out
		if r.n == len(r.buf) {
			r.grow()
		}
		r.buf[(r.head+r.n)&(len(r.buf)-1)] = j
		r.n++
		return
	}
	q.enter(j) // M is every job and short of k: j joins it
	q.decide(s)
}

// unlinkServed takes completed job i out of its bucket's list and counts,
// and releases its slot; it returns the bucket. i was served, so it is in
// the served prefix of its bucket, never the cursor.
func (q *plain) unlinkServed(i int32) int32 {
	l := q.ln[i]
	x := &q.bk[l.b]
	if l.prev >= 0 {
		q.ln[l.prev].next = l.next
	} else {
		x.head = l.next
	}
	if l.next >= 0 {
		q.ln[l.next].prev = l.prev
	} else {
		x.tail = l.prev
	}
	x.served--
	x.inM--
	q.sumM -= int(x.need)
	if x.served == 0 {
		q.served[l.b>>6] &^= 1 << (l.b & 63)
	}
	if x.inM == 0 {
		q.occ[l.b>>6] &^= 1 << (l.b & 63)
	}
	q.job[i] = nil
	q.free = append(q.free, i)
	return l.b
}

func (q *plain) complete(s *sdk.System, j *sdk.Job) {
	b := q.unlinkServed(int32(j.Idx))
	q.dirty = min(q.dirty, int(b))
	for r := &q.out; q.sumM < q.k && r.n > 0; {
		j := r.buf[r.head]
		r.head = (r.head + 1) & (len(r.buf) - 1)
		r.n--
		q.enter(j)
	}
	q.decide(s)
}

// enter appends j to M (it is later in arrival order than all of M).
func (q *plain) enter(j *sdk.Job) {
	var i int32
	if n := len(q.free); n > 0 {
		i = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		i = int32(len(q.job))
		q.job = append(q.job, nil)
		q.ln = append(q.ln, pLink{})
	}
	j.Idx = int(i)
	b := q.cb[j.Class()]
	x := &q.bk[b]
	q.job[i] = j
	q.ln[i] = pLink{prev: x.tail, next: -1, b: b}
	if x.tail >= 0 {
		q.ln[x.tail].next = i
	} else {
		x.head = i
	}
	x.tail = i
	if x.cur < 0 {
		x.cur = i // every earlier job of the bucket is served
	}
	if x.inM == 0 {
		q.occ[b>>6] |= 1 << (b & 63)
	}
	x.inM++
	q.sumM += int(x.need)
	q.dirty = min(q.dirty, int(b))
}

// decide serves, bucket by bucket in descending need, each bucket whole
// while it fits; the first that does not fit gets floor(servers left /
// need), and after it PackStop serves nothing while PackSkip goes on with
// the same rule (takes, on M's counts).
//
// Incrementally: the takes of the buckets before the first one whose count
// in M changed since the last decision (dirty) are unchanged, and so are
// the servers left after each of them (remAfter), so the pass starts at
// dirty; if dirty is past the bucket where the last pass ran out of servers
// or stopped (cut), nothing changes at all.
func (q *plain) decide(s *sdk.System) {
	lo := q.dirty
	q.dirty = len(q.bk)
	if lo > q.cut || lo >= len(q.bk) {
		return // every change is past the cut: those buckets still take nothing
	}
	q.np, q.ns, q.preRuns, q.startRuns = 0, 0, 0, 0
	rem := q.k
	if b := q.occupiedBefore(lo); b >= 0 {
		rem = q.remAfter[b]
	}
	last := -1 // the bucket after which nothing more is served
	w0 := lo >> 6
	word := q.occ[w0] &^ (1<<(lo&63) - 1)
	for w := w0; ; {
		for word != 0 {
			b := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			x := &q.bk[b]
			t, n := int(x.inM), int(x.need)
			stopped := false
			if t*n > rem {
				t = rem / n
				stopped = q.stop
			}
			rem -= t * n
			q.remAfter[b] = rem
			if want := int32(t); x.served != want {
				q.move(x, b, want)
			}
			if rem == 0 || stopped {
				last = b
				goto rest
			}
		}
		if w++; w == len(q.occ) {
			break
		}
		word = q.occ[w]
	}
	q.cut = len(q.bk)
	goto apply
rest:
	// Every later bucket takes nothing: only those still serving matter.
	q.cut = last
	for w := last >> 6; w < len(q.served); w++ {
		word := q.served[w]
		if w == last>>6 {
			word &^= (2 << (last & 63)) - 1 // buckets up to last
		}
		for word != 0 {
			b := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			q.move(&q.bk[b], b, 0)
		}
	}
apply:
	q.apply(s)
}

// apply makes the engine calls of the moves just collected: the
// preemptions, then the starts, each in arrival order (the general path's
// order).
func (q *plain) apply(s *sdk.System) {
	pre, starts := q.pre[:q.np], q.starts[:q.ns]
	if q.preRuns > 1 {
		q.byArrival(pre)
	}
	if q.startRuns > 1 {
		q.byArrival(starts)
	}
	job := q.job
	for _, i := range pre {
		s.Preempt(job[i])
	}
	for _, i := range starts {
		s.Start(job[i])
	}
}

// occupiedBefore is the last bucket before lo with jobs in M (-1: none).
func (q *plain) occupiedBefore(lo int) int { return lastBefore(q.occ, lo) }

// move brings bucket b (x) to want served jobs: preempting from the back
// of its served prefix (added to pre in arrival order) or starting from its
// cursor (added to starts in arrival order).
func (q *plain) move(x *pBucket, b int, want int32) {
	cur := x.cur
	if d := int(x.served - want); d > 0 {
		pre := q.pre[q.np : q.np+d]
		for k := d - 1; k >= 0; k-- {
			if cur >= 0 {
				cur = q.ln[cur].prev
			} else {
				cur = x.tail
			}
			pre[k] = cur
		}
		q.np += d
		q.preRuns++
	} else {
		starts := q.starts[q.ns : q.ns-d]
		for k := range starts {
			starts[k] = cur
			cur = q.ln[cur].next
		}
		q.ns -= d
		q.startRuns++
	}
	x.cur = cur
	x.served = want
	if want == 0 {
		q.served[b>>6] &^= 1 << (b & 63)
	} else {
		q.served[b>>6] |= 1 << (b & 63)
	}
}

// byArrival sorts list (runs from several buckets) by arrival index: as
// keys id·2^shift + slot in one []uint64 (an ordered sort, no comparison
// calls), or on (id, slot) pairs if an id is too large for that.
func (q *plain) byArrival(list []int32) {
	shift := uint(bits.Len(uint(len(q.job))))
	keys := q.keys[:0]
	for _, i := range list {
		id := uint64(q.job[i].ID())
		if id>>(64-shift) != 0 {
			q.byArrivalPairs(list)
			return
		}
		keys = append(keys, id<<shift|uint64(i))
	}
	slices.Sort(keys)
	mask := uint64(1)<<shift - 1
	for k, key := range keys {
		list[k] = int32(key & mask)
	}
	q.keys = keys[:0]
}

func (q *plain) byArrivalPairs(list []int32) {
	ents := q.ents[:0]
	for _, i := range list {
		ents = append(ents, pEnt{q.job[i].ID(), i})
	}
	slices.SortFunc(ents, func(a, b pEnt) int { return cmp.Compare(a.id, b.id) })
	for k, e := range ents {
		list[k] = e.i
	}
	q.ents = ents[:0]
}

// jobRing is a FIFO of jobs on a power-of-two ring buffer (sdk.FIFO, with
// push and pop written out at the call sites, which are per event).
type jobRing struct {
	buf     []*sdk.Job
	head, n int
}

func (r *jobRing) grow() {
	nb := make([]*sdk.Job, max(16, 2*len(r.buf)))
	for i := range r.n {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

func (r *jobRing) reset() {
	clear(r.buf)
	r.head, r.n = 0, 0
}
