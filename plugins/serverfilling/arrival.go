package serverfilling

import (
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The arrival-order ServerFilling path: O(C) per event plus O(1) per start
// and preemption, amortised (C need buckets), never a pass over M.
//
// Under arrival order M is a prefix of the arrival sequence that only ever
// grows at its end: an arrival joins M if M is not full, and a completion
// (of a job of M: every running job is in M) lowers M's total need, after
// which M extends forward until it is full again; M never loses a job but
// by completion, so each job joins M once. The choice depends only on how
// many jobs of each need bucket M holds (takes), and within a bucket the
// served jobs are the first ones in arrival order. So the policy keeps:
//   - the jobs in arrival order (a doubly linked list through the slots)
//     and M's last job, its total need and its count per bucket;
//   - per bucket, the bucket's jobs in arrival order (a second linked list),
//     the number served and a cursor on the first unserved one: the jobs of
//     a bucket in M are a prefix of that list and the served ones a prefix
//     of those, so changing the number served by d moves the cursor d steps,
//     each step one start or preemption.
//
// A decision computes the takes from the counts and moves the cursors. To
// keep the decision trace identical to the general path's (preemptions
// first, then starts, each in the order of M, that is arrival order), the
// jobs to preempt and to start are collected and, when more than one
// bucket contributes, sorted by arrival index before the engine is told.

// linkArrival appends slot i to the arrival list and its bucket's list.
func (p *Policy) linkArrival(i int32) {
	sl := &p.slots[i]
	sl.prev, sl.next = p.tail, -1
	if p.tail >= 0 {
		p.slots[p.tail].next = i
	} else {
		p.head = i
	}
	p.tail = i
	b := sl.bucket
	sl.bprev, sl.bnext = p.bTail[b], -1
	if p.bTail[b] >= 0 {
		p.slots[p.bTail[b]].bnext = i
	} else {
		p.bHead[b] = i
	}
	p.bTail[b] = i
	if p.bCur[b] < 0 {
		p.bCur[b] = i // every earlier job of the bucket is served
	}
}

// unlinkArrival removes served slot i from both lists.
func (p *Policy) unlinkArrival(i int32) {
	sl := &p.slots[i]
	if sl.prev >= 0 {
		p.slots[sl.prev].next = sl.next
	} else {
		p.head = sl.next
	}
	if sl.next >= 0 {
		p.slots[sl.next].prev = sl.prev
	} else {
		p.tail = sl.prev
	}
	b := sl.bucket
	if sl.bprev >= 0 {
		p.slots[sl.bprev].bnext = sl.bnext
	} else {
		p.bHead[b] = sl.bnext
	}
	if sl.bnext >= 0 {
		p.slots[sl.bnext].bprev = sl.bprev
	} else {
		p.bTail[b] = sl.bprev
	}
	if p.mLast == i {
		p.mLast = sl.prev
	}
}

// joinM adds slot i, the job after M's last, to M.
func (p *Policy) joinM(i int32) {
	sl := &p.slots[i]
	p.mLast = i
	p.sumM += int(sl.need)
	p.counts[sl.bucket]++
}

func (p *Policy) arriveFIFO(s *sdk.System, i int32) {
	p.linkArrival(i)
	if p.sumM >= p.k {
		return // behind a full M: nothing changes
	}
	p.joinM(i)
	p.decideFIFO(s)
}

func (p *Policy) completeFIFO(s *sdk.System, i int32) {
	sl := &p.slots[i]
	p.unlinkArrival(i)
	p.sumM -= int(sl.need)
	p.counts[sl.bucket]--
	p.served[sl.bucket]--
	*sl = slot{}
	p.free = append(p.free, i)
	for p.sumM < p.k {
		nx := p.head
		if p.mLast >= 0 {
			nx = p.slots[p.mLast].next
		}
		if nx < 0 {
			break
		}
		p.joinM(nx)
	}
	p.decideFIFO(s)
}

// decideFIFO applies the takes of M's counts by moving the bucket cursors.
func (p *Policy) decideFIFO(s *sdk.System) {
	take := p.takes(p.counts)
	pre, starts := p.next[:0], p.starts[:0]
	preB, startB := 0, 0 // buckets contributing
	for b := range take {
		want, cur := take[b], p.bCur[b]
		if p.served[b] > want {
			preB++
		}
		for p.served[b] > want {
			if cur >= 0 {
				cur = p.slots[cur].bprev
			} else {
				cur = p.bTail[b]
			}
			pre = append(pre, cur)
			p.served[b]--
		}
		if p.served[b] < want {
			startB++
		}
		for p.served[b] < want {
			starts = append(starts, cur)
			cur = p.slots[cur].bnext
			p.served[b]++
		}
		p.bCur[b] = cur
	}
	if preB > 1 {
		slices.SortFunc(pre, p.byArrival)
	} else {
		slices.Reverse(pre) // collected from the back of one bucket
	}
	if startB > 1 {
		slices.SortFunc(starts, p.byArrival)
	}
	for _, i := range pre {
		s.Preempt(p.slots[i].j)
	}
	for _, i := range starts {
		s.Start(p.slots[i].j)
	}
	p.next, p.starts = pre[:0], starts[:0]
}

func (p *Policy) byArrival(a, b int32) int {
	if p.slots[a].id < p.slots[b].id {
		return -1
	}
	return 1
}
