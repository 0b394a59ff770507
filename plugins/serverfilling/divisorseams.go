package serverfilling

import (
	"math"
	"slices"
	"sort"

	"github.com/msjfarm/msjfarm/sdk"
)

// Moving a bucket's run of jobs at once (the DivisorFilling-SRPT path,
// divisorsrpt.go). Past saturation at k = 2048 DivisorFilling-SRPT and
// -Gittins preempt 36–113 times per arrival, nearly all of them narrow jobs
// that a wide job's start pushes out together and its completion restarts
// together. applySeams (srptfast.go) moves them one at a time, three
// treap walks each (the last running job, its removal, its insertion among
// the waiting ones), which was most of these policies' cost per event
// there (profile at the L = 5000 rate: applySeams 77%, the treap walks
// under it). But the jobs a decision preempts in one bucket are the last m
// of its running treap and the jobs it starts the first m of its waiting
// treap, so each run is one split by rank, a pass over the run, and one
// join: O(m + log n) instead of O(m · log n).
//
// A join needs the run to come entirely before (preempted jobs: ahead of
// the waiting ones) or after (started jobs: behind the running ones) the
// treap it joins, in that treap's order. It usually does, since a bucket's
// running jobs precede its waiting ones in the order, but the two treaps
// order by different fields ((key, arrival) waiting, (fin, arrival)
// running), so equal keys, and an arrival since the last decision that
// precedes running jobs (dsExc), can interleave them; the jobs out of
// place are then inserted one by one and the rest of the run joined
// (joinFront, joinBack). Either way the treaps hold the same jobs in the
// same order, and only their shapes (which no decision reads) can differ,
// so every decision is the one applySeams takes: TestTreapJoins checks the
// joins against a sorted union, TestDivisorSRPTPathExact,
// TestDivisorGittinsPathExact and the frozen reference tests the
// decisions.

// seamRun is the shortest run moved with one split and one join; one or
// two jobs take applySeams' per-job walks, about as many treap walks as a
// split, a join and the checks (not tuned by measurement).
const seamRun = 3

// applySeamsDS is applySeams for the DivisorFilling path (one run group per
// bucket), in one pass over the buckets: a bucket where nothing moves (its
// take is its running jobs, and no waiting job of M sits beside a running
// one to exchange) is passed on one test; a run of at least seamRun
// preempted or started jobs is moved at once; shorter runs, and the
// exchanges with an arrival that precedes running jobs, one job at a time
// as applySeams does (seamSingles). Buckets are independent, so the order
// in which they are visited changes nothing. It returns both lists in the
// order engineCalls would sort them into (cmpWas), merging the runs rather
// than sorting them (dsOrder).
func (p *Policy) applySeamsDS(s *sdk.System, take []int32, now float64) (pre, starts []int32) {
	q := p.ds
	pre, starts = p.next[:0], p.starts[:0] // the moves one at a time
	q.runPre, q.runStarts = q.runPre[:0], q.runStarts[:0]
	q.preB, q.startB = q.preB[:0], q.startB[:0] // where each run ends
	for b := range p.sb {
		sb := &p.sb[b]
		t := take[b]
		if sb.nRun == t && (sb.w == 0 || t == 0) {
			continue
		}
		switch g := sb.groups[0]; {
		case sb.nRun-t >= seamRun:
			q.runPre = p.preemptRun(sb, g, t, now, q.runPre)
			q.preB = append(q.preB, len(q.runPre))
		case t-sb.nRun >= seamRun:
			q.runStarts = p.startRun(s, sb, g, t-sb.nRun, now, q.runStarts)
			q.startB = append(q.startB, len(q.runStarts))
		}
		pre, starts = p.seamSingles(s, sb, t, now, pre, starts)
	}
	return p.seamsInOrder(s, pre, starts)
}

// seamsInOrder ends a decision's seam moves (applySeamsDS, oneKSeams):
// the runs moved at once appended to the single moves (pre, starts), each
// list then put in the engine-call order (dsOrder).
func (p *Policy) seamsInOrder(s *sdk.System, pre, starts []int32) ([]int32, []int32) {
	q := p.ds
	n0, m0 := len(pre), len(starts)
	pre, q.runPre = appendRuns(pre, q.runPre)
	starts, q.runStarts = appendRuns(starts, q.runStarts)
	if !s.PreemptionsCommute() { // else any order will do (engineCallsRuns)
		q.preB = p.dsOrder(pre, n0, q.preB, true)
	}
	q.startB = p.dsOrder(starts, m0, q.startB, false)
	return pre, starts
}

// appendRuns appends the runs moved at once to the single moves, and
// returns the list and the run buffer to keep: when there are no single
// moves the run buffer is handed over instead of copied, and the single
// moves' buffer is kept in its place (the two swap, and stay distinct).
func appendRuns(single, runs []int32) (list, keep []int32) {
	if len(single) == 0 {
		return runs, single
	}
	return append(single, runs...), runs
}

// dsOrder sorts list, applySeams' moves (its first n0 jobs, in no useful
// order) followed by runs moved at once (the k-th ending at n0 + ends[k]),
// into the order at the decision instant (cmpWas; running: the preempted
// jobs). A run is already in that order: a bucket's running treap orders
// by (fin, arrival), and a preempted job's key, need/k × (fin − now) under
// SRPT or its class's rank at age now − fin under Gittins (a rank that
// never rises), is monotone in fin with fin then arrival breaking ties in
// cmpWas as well; its waiting treap orders by (key, arrival), the started
// jobs' key0 and arrival in cmpWas. So only applySeams' few moves are
// sorted, and then the pieces are merged pairwise, O(n · log pieces)
// (with one run, the narrow jobs a wide job's start preempts or its
// completion restarts, nothing at all is done); every comparison ends with
// the job's unique id, so the result is the sort's.
// TestDivisorSRPTPathExact and TestDivisorGittinsPathExact check the
// engine calls' order against the general path's. It returns ends for
// reuse.
func (p *Policy) dsOrder(list []int32, n0 int, ends []int, running bool) []int {
	if len(list) < 2 || n0 == 0 && len(ends) == 1 {
		return ends[:0]
	}
	cmp := p.cmpWas(running)
	if n0 > 1 {
		slices.SortFunc(list[:n0], cmp)
	}
	// Piece boundaries, in place of ends: [0, n0, n0 + ends[0], ...].
	bs := ends
	for i := range bs {
		bs[i] += n0
	}
	if n0 > 0 {
		bs = append(bs, 0)
		copy(bs[1:], bs)
		bs[0] = n0
	}
	bs = append(bs, 0)
	copy(bs[1:], bs)
	bs[0] = 0
	q := p.ds
	for len(bs) > 2 { // merge pieces pairwise, halving their number
		w := 1
		for i := 0; i+2 < len(bs); i += 2 {
			mergeAdjacent(list[bs[i]:bs[i+2]], bs[i+1]-bs[i], cmp, &q.mergeBuf)
			bs[w] = bs[i+2]
			w++
		}
		if len(bs)%2 == 0 { // an odd number of pieces: the last one stays
			bs[w] = bs[len(bs)-1]
			w++
		}
		bs = bs[:w]
	}
	return bs[:0]
}

// mergeAdjacent merges list[:mid] and list[mid:], each in cmp's order,
// in place (buf: scratch for the first).
func mergeAdjacent(list []int32, mid int, cmp func(a, b int32) int, buf *[]int32) {
	if mid == 0 || mid == len(list) || cmp(list[mid-1], list[mid]) < 0 {
		return // already in order
	}
	*buf = append((*buf)[:0], list[:mid]...)
	a, i, o := *buf, mid, 0
	for len(a) > 0 && i < len(list) {
		if cmp(list[i], a[0]) < 0 {
			list[o] = list[i]
			i++
		} else {
			list[o] = a[0]
			a = a[1:]
		}
		o++
	}
	copy(list[o:], a) // the rest of list[i:] is in place
}

// preemptRun preempts the running jobs of bucket sb (run group g) past its
// first keep, as toWaiting does one at a time: their keys frozen now, they
// join the bucket's waiting jobs in M. The run is collected straight into
// pre, and whether it is in the waiting treap's order, which joinFront
// needs, is learnt in the pass that freezes the keys, against the previous
// job's key and id held in registers (a separate pass of tLess, runSorted,
// was 6–8% of these policies' instructions on one-or-all at λ = 7).
func (p *Policy) preemptRun(sb *sbucket, g, keep int32, now float64, pre []int32) []int32 {
	var tail int32
	p.rroot[g], tail = p.tSplitRank(p.rroot[g], keep)
	n0 := len(pre)
	pre = p.tCollect(tail, pre)
	run := pre[n0:]
	sorted := true
	slots := p.slots
	pk, pid := math.Inf(-1), int64(math.MinInt64) // the previous job's (key, id)
	if p.ord == SRPTOrder {
		sorted = p.freezeRunSRPT(run, now)
	} else if p.ord == GittinsOrder && p.cls[slots[run[0]].class].rank.constant {
		// skey and stopRun for a job of constant rank (one class per
		// bucket on this path): the key stays, nothing moves
		for _, x := range run {
			sl := &slots[x]
			sl.serve, sl.moving, sl.rate = false, false, 0
			if pairBefore(sl.key, sl.id, pk, pid) {
				sorted = false
			}
			pk, pid = sl.key, sl.id
		}
	} else {
		for _, x := range run {
			sl := p.skey(x, now)
			sl.serve = false
			p.stopRun(sl, now)
			if pairBefore(sl.key, sl.id, pk, pid) {
				sorted = false
			}
			pk, pid = sl.key, sl.id
		}
	}
	m := int32(len(run))
	sb.nRun -= m
	sb.w += m
	sb.root = p.joinFront(sb.root, tail, run, modeKey, sorted)
	return pre
}

// freezeRunSRPT freezes the keys of run, running SRPT jobs of one bucket
// (one need, one scale) preempted at once, as keyAt and stopRun would one
// at a time (written out: per job, this loop is the preemption's cost),
// and reports whether the run is in the waiting order (key, then id),
// learnt against the previous job's key and id held in registers.
func (p *Policy) freezeRunSRPT(run []int32, now float64) bool {
	slots := p.slots
	sorted := true
	pk, pid := math.Inf(-1), int64(math.MinInt64) // the previous job's (key, id)
	scale := p.cls[slots[run[0]].class].scale
	for _, x := range run {
		sl := &slots[x]
		k := scale * clamp0(sl.fin-now)
		sl.key = k
		sl.serve, sl.moving, sl.rate = false, false, 0
		if pairBefore(k, sl.id, pk, pid) {
			sorted = false
		}
		pk, pid = k, sl.id
	}
	return sorted
}

// startRun starts the first m waiting jobs of bucket sb (run group g), as
// the start loop of applySeams does one at a time; collected straight into
// starts, their order among the running jobs (joinBack) learnt as their
// fins are set.
func (p *Policy) startRun(s *sdk.System, sb *sbucket, g, m int32, now float64, starts []int32) []int32 {
	var head int32
	head, sb.root = p.tSplitRank(sb.root, m)
	n0 := len(starts)
	starts = p.tCollect(head, starts)
	run := starts[n0:]
	sorted := true
	slots := p.slots
	pf, pid := math.Inf(-1), int64(math.MinInt64) // the previous job's (fin, id)
	if p.ord == SRPTOrder {
		// setRun for an SRPT job, inlined: one need, one scale
		scale := p.cls[slots[run[0]].class].scale
		for _, x := range run {
			sl := &slots[x]
			sl.since, sl.key0 = now, sl.key
			f := now + s.Remaining(sl.j)
			if scale*clamp0(f-now) > sl.key { // (finAtMost's first test, without the call)
				f = finAtMost(f, now, scale, sl.key)
			}
			sl.fin, sl.moving, sl.serve = f, true, true
			if p.crossings {
				sl.rate = scale
			}
			if pairBefore(f, sl.id, pf, pid) {
				sorted = false
			}
			pf, pid = f, sl.id
		}
	} else if p.ord == GittinsOrder && p.cls[slots[run[0]].class].rank.constant {
		// setRun for a job of constant rank: fin stays
		for _, x := range run {
			sl := &slots[x]
			sl.since, sl.key0, sl.serve = now, sl.key, true
			if pairBefore(sl.fin, sl.id, pf, pid) {
				sorted = false
			}
			pf, pid = sl.fin, sl.id
		}
	} else {
		for _, x := range run {
			sl := &slots[x]
			p.setRun(s, sl, now)
			sl.serve = true
			if pairBefore(sl.fin, sl.id, pf, pid) {
				sorted = false
			}
			pf, pid = sl.fin, sl.id
		}
	}
	sb.w -= m
	sb.nRun += m
	p.rroot[g] = p.joinBack(p.rroot[g], head, run, modeFall, sorted)
	return starts
}

// pairBefore reports whether (v, id) comes strictly before (pv, pid): a
// moved run's order check against the previous job (preemptRun by (key,
// id), startRun by (fin, id)).
func pairBefore(v float64, id int64, pv float64, pid int64) bool {
	return v < pv || v == pv && id < pid
}

// joinFront adds the jobs of treap t, run in t's order, to treap dst of
// order mode, where they mostly come first: run's longest prefix that is in
// mode's order, ahead of dst's first job and of the rest of run is joined
// as t's subtree; the rest is inserted job by job (the preempted jobs that
// an arrival since the last decision precedes, or ties that the two orders
// break differently).
func (p *Policy) joinFront(dst, t int32, run []int32, mode uint8, sorted bool) int32 {
	p.tSetKeys(run, mode)
	f := int32(-1)
	if dst >= 0 {
		f = p.tFirst(dst)
	}
	j := 0
	switch {
	case len(run) == 0:
	case sorted && (f < 0 || p.tLess(run[len(run)-1], f, mode)):
		j = len(run) // the usual case: the whole run
	case sorted:
		// In order, so the jobs ahead of f are a prefix: found by bisection
		// (at the L = 5000 rate of twoClass2048, walking it was 1.4% of
		// DivisorFilling-SRPT's instructions).
		j = sort.Search(len(run), func(i int) bool { return !p.tLess(run[i], f, mode) })
	default:
		for j < len(run) && (j == 0 || p.tLess(run[j-1], run[j], mode)) && (f < 0 || p.tLess(run[j], f, mode)) {
			j++
		}
		if j > 0 {
			for _, x := range run[j:] {
				if !p.tLess(run[j-1], x, mode) {
					j = 0
					break
				}
			}
		}
	}
	if j < len(run) { // (splitting off nothing is a walk down the treap)
		t, _ = p.tSplitRank(t, int32(j))
	}
	for _, x := range run[j:] {
		dst = p.tAdd(dst, x, mode)
	}
	return p.tMerge(t, dst)
}

// joinBack is joinFront's mirror: the jobs of run mostly come after dst's,
// and run's longest suffix in mode's order, behind dst's last job and the
// rest of run, is joined as t's subtree (the started jobs, which follow
// the running ones but for ties that the two orders break differently and
// an arrival since the last decision).
func (p *Policy) joinBack(dst, t int32, run []int32, mode uint8, sorted bool) int32 {
	p.tSetKeys(run, mode)
	l := int32(-1)
	if dst >= 0 {
		l = p.tLast(dst)
	}
	n := len(run)
	j := n
	switch {
	case n == 0:
	case sorted && (l < 0 || p.tLess(l, run[0], mode)):
		j = 0 // the usual case: the whole run
	case sorted: // the jobs behind l are a suffix, found by bisection
		j = sort.Search(n, func(i int) bool { return p.tLess(l, run[i], mode) })
	default:
		for j > 0 && (j == n || p.tLess(run[j-1], run[j], mode)) && (l < 0 || p.tLess(l, run[j-1], mode)) {
			j--
		}
		if j < n {
			for _, x := range run[:j] {
				if !p.tLess(x, run[j], mode) {
					j = n
					break
				}
			}
		}
	}
	if j > 0 {
		_, t = p.tSplitRank(t, int32(j))
	}
	for _, x := range run[:j] {
		dst = p.tAdd(dst, x, mode)
	}
	return p.tMerge(dst, t)
}

// tSplitRank splits t into its first r jobs and the others.
func (p *Policy) tSplitRank(t, r int32) (int32, int32) {
	switch {
	case t < 0:
		return -1, -1
	case r <= 0: // nothing split off: no walk (a preemption of all the
		// bucket's running jobs, the narrow ones a wide job's start stops)
		return -1, t
	case r >= p.tn[t].sz: // all of it (all the bucket's waiting jobs start)
		return t, -1
	}
	n := &p.tn[t]
	if ls := p.tSize(n.l); r > ls {
		l, rr := p.tSplitRank(n.r, r-ls-1)
		n.r = l
		p.tFix(t)
		return t, rr
	}
	l, rr := p.tSplitRank(n.l, r)
	n.l = rr
	p.tFix(t)
	return l, t
}

// tCollect appends t's jobs in order to buf: recursion on left children
// and a loop down right ones (cheaper than an explicit stack).
func (p *Policy) tCollect(t int32, buf []int32) []int32 {
	for t >= 0 {
		n := &p.tn[t]
		if n.l >= 0 {
			buf = p.tCollect(n.l, buf)
		}
		buf = append(buf, t)
		t = n.r
	}
	return buf
}
