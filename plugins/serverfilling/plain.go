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
//     bitset), fusing takes and the cursor moves into one pass; once no
//     server is left (or PackStop has stopped) only the buckets that still
//     have served jobs are visited. Per event: O(1) plus O(1) per start,
//     preemption and job entering M, plus one step per bucket occupied in M
//     up to the point where the servers run out.
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
	out  sdk.FIFO // the jobs behind M, in arrival order

	occ    []uint64 // buckets with jobs in M
	served []uint64 // buckets with served jobs

	pre, starts []int32
	ents        []pEnt
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
	q.out.Reset()
	w := (p.nBuckets + 63) / 64
	q.occ = append(q.occ[:0], make([]uint64, w)...)
	q.served = append(q.served[:0], make([]uint64, w)...)
	q.pre, q.starts, q.ents = q.pre[:0], q.starts[:0], q.ents[:0]
}

func (q *plain) arrive(s *sdk.System, j *sdk.Job) {
	if q.sumM >= q.k {
		q.out.Push(j) // behind a full M: nothing changes
		return
	}
	q.enter(j) // M is every job and short of k: j joins it
	q.decide(s)
}

func (q *plain) complete(s *sdk.System, j *sdk.Job) {
	i := int32(j.Idx)
	l := q.ln[i]
	x := &q.bk[l.b]
	// j was served, so it is in the served prefix of its bucket, never the
	// cursor.
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
	for q.sumM < q.k && q.out.Len() > 0 {
		q.enter(q.out.Pop())
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
}

// decide serves, bucket by bucket in descending need, each bucket whole
// while it fits; the first that does not fit gets floor(servers left /
// need), and after it PackStop serves nothing while PackSkip goes on with
// the same rule (takes, on M's counts).
func (q *plain) decide(s *sdk.System) {
	pre, starts := q.pre[:0], q.starts[:0]
	preRuns, startRuns := 0, 0
	rem := q.k
	last := -1 // the bucket after which nothing more is served
	for w, word := range q.occ {
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
			if want := int32(t); x.served != want {
				pre, starts, preRuns, startRuns = q.move(x, b, want, pre, starts, preRuns, startRuns)
			}
			if rem == 0 || stopped {
				last = b
				goto rest
			}
		}
	}
	goto apply
rest:
	// Every later bucket takes nothing: only those still serving matter.
	for w := last >> 6; w < len(q.served); w++ {
		word := q.served[w]
		if w == last>>6 {
			word &^= (2 << (last & 63)) - 1 // buckets up to last
		}
		for word != 0 {
			b := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			pre, starts, preRuns, startRuns = q.move(&q.bk[b], b, 0, pre, starts, preRuns, startRuns)
		}
	}
apply:
	if preRuns > 1 {
		q.byArrival(pre)
	}
	if startRuns > 1 {
		q.byArrival(starts)
	}
	for _, i := range pre {
		s.Preempt(q.job[i])
	}
	for _, i := range starts {
		s.Start(q.job[i])
	}
	q.pre, q.starts = pre[:0], starts[:0]
}

// move brings bucket b (x) to want served jobs: preempting from the back
// of its served prefix (appended to pre in arrival order) or starting from
// its cursor (appended to starts in arrival order).
func (q *plain) move(x *pBucket, b int, want int32, pre, starts []int32, preRuns, startRuns int) ([]int32, []int32, int, int) {
	cur := x.cur
	if x.served > want {
		from := len(pre)
		for x.served > want {
			if cur >= 0 {
				cur = q.ln[cur].prev
			} else {
				cur = x.tail
			}
			pre = append(pre, cur)
			x.served--
		}
		slices.Reverse(pre[from:])
		preRuns++
	} else {
		for x.served < want {
			starts = append(starts, cur)
			cur = q.ln[cur].next
			x.served++
		}
		startRuns++
	}
	x.cur = cur
	if x.served == 0 {
		q.served[b>>6] &^= 1 << (b & 63)
	} else {
		q.served[b>>6] |= 1 << (b & 63)
	}
	return pre, starts, preRuns, startRuns
}

// byArrival sorts list (runs from several buckets) by arrival index.
func (q *plain) byArrival(list []int32) {
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
