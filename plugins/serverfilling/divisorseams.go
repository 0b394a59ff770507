package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

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
// running) and equal keys or an arrival that precedes running jobs
// (dsExc) can interleave them; the run is then inserted job by job as
// before. Either way the treaps hold the same jobs in the same order, and
// only their shapes (which no decision reads) can differ, so every decision
// is the one applySeams takes: TestDivisorSRPTPathExact,
// TestDivisorGittinsPathExact and the frozen reference tests check it.

// seamRun is the shortest run moved with one split and one join: below it,
// the per-job walks cost no more.
const seamRun = 3

// applySeamsDS is applySeams for the DivisorFilling path (one run group per
// bucket), moving runs of at least seamRun jobs with one split and one
// join.
func (p *Policy) applySeamsDS(s *sdk.System, take []int32, now float64) (pre, starts []int32) {
	pre, starts = p.next[:0], p.starts[:0]
	for b := range p.sb {
		sb := &p.sb[b]
		g := sb.groups[0]
		if m := sb.nRun - take[b]; m >= seamRun {
			pre = p.preemptRun(sb, g, take[b], now, pre)
		}
		if m := take[b] - sb.nRun; m >= seamRun {
			starts = p.startRun(s, sb, g, m, now, starts)
		}
		for sb.nRun > take[b] {
			x := p.runLast(sb, now)
			p.toWaiting(x, now)
			sb.w++
			pre = append(pre, x)
		}
		for sb.nRun < take[b] {
			x := p.tFirst(sb.root)
			sb.root = p.tDeleteMin(sb.root)
			sb.w--
			p.setRun(s, &p.slots[x], now)
			p.runAppend(x)
			starts = append(starts, x)
		}
		for sb.w > 0 && sb.nRun > 0 {
			x := p.runLast(sb, now)
			y := p.tFirst(sb.root)
			if !p.less(y, x) {
				break
			}
			sb.root = p.tDeleteMin(sb.root)
			p.toWaiting(x, now)
			p.setRun(s, &p.slots[y], now)
			p.runAppend(y)
			pre = append(pre, x)
			starts = append(starts, y)
		}
	}
	return pre, starts
}

// preemptRun preempts the running jobs of bucket sb (run group g) past its
// first keep, as toWaiting does one at a time: their keys frozen now, they
// join the bucket's waiting jobs in M.
func (p *Policy) preemptRun(sb *sbucket, g, keep int32, now float64, pre []int32) []int32 {
	var tail int32
	p.rroot[g], tail = p.tSplitRank(p.rroot[g], keep)
	run := p.tCollect(tail, p.ds.seamBuf[:0])
	for _, x := range run {
		sl := p.skey(x, now)
		sl.serve = false
		p.stopRun(sl, now)
	}
	m := int32(len(run))
	sb.nRun -= m
	sb.w += m
	pre = append(pre, run...)
	// The split-off treap, in (fin, arrival) order, joins the waiting
	// treap as it is when it is in (key, arrival) order too and ahead.
	if p.inOrder(run, modeKey) && (sb.root < 0 || p.tLess(run[m-1], p.tFirst(sb.root), modeKey)) {
		sb.root = p.tMerge(tail, sb.root)
	} else {
		for _, x := range run {
			sb.root, _ = p.tInsert(sb.root, x, modeKey)
		}
	}
	p.ds.seamBuf = run[:0]
	return pre
}

// startRun starts the first m waiting jobs of bucket sb (run group g), as
// the start loop of applySeams does one at a time.
func (p *Policy) startRun(s *sdk.System, sb *sbucket, g, m int32, now float64, starts []int32) []int32 {
	var head int32
	head, sb.root = p.tSplitRank(sb.root, m)
	run := p.tCollect(head, p.ds.seamBuf[:0])
	for _, x := range run {
		sl := &p.slots[x]
		p.setRun(s, sl, now)
		sl.serve = true
	}
	sb.w -= m
	sb.nRun += m
	starts = append(starts, run...)
	// The split-off treap, in (key, arrival) order, joins the running
	// treap as it is when it is in (fin, arrival) order too and behind.
	if r := p.rroot[g]; p.inOrder(run, modeFall) && (r < 0 || p.tLess(p.tLast(r), run[0], modeFall)) {
		p.rroot[g] = p.tMerge(r, head)
	} else {
		for _, x := range run {
			p.rroot[g], _ = p.tInsert(p.rroot[g], x, modeFall)
		}
	}
	p.ds.seamBuf = run[:0]
	return starts
}

// inOrder reports whether run is in treap order mode. A run split off one
// treap is in the other's order but for runs of equal keys (keys do not
// fall with fin) or stale fins (constant Gittins ranks), so it nearly
// always is.
func (p *Policy) inOrder(run []int32, mode uint8) bool {
	for i := 1; i < len(run); i++ {
		if !p.tLess(run[i-1], run[i], mode) {
			return false
		}
	}
	return true
}

// tSplitRank splits t into its first r jobs and the others.
func (p *Policy) tSplitRank(t, r int32) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	sl := &p.slots[t]
	if ls := p.tSize(sl.tl); r > ls {
		l, rr := p.tSplitRank(sl.tr, r-ls-1)
		p.slots[t].tr = l
		p.tFix(t)
		return t, rr
	}
	l, rr := p.tSplitRank(sl.tl, r)
	p.slots[t].tl = rr
	p.tFix(t)
	return l, t
}

// tCollect appends t's jobs in order to buf.
func (p *Policy) tCollect(t int32, buf []int32) []int32 {
	stk := p.ds.seamStk[:0]
	for t >= 0 || len(stk) > 0 {
		for t >= 0 {
			stk = append(stk, t)
			t = p.slots[t].tl
		}
		t = stk[len(stk)-1]
		stk = stk[:len(stk)-1]
		buf = append(buf, t)
		t = p.slots[t].tr
	}
	p.ds.seamStk = stk
	return buf
}
