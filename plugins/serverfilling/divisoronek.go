package serverfilling

import (
	"math"

	"github.com/msjfarm/msjfarm/sdk"
)

// DivisorFilling-SRPT and -Gittins with exactly the needs k and 1
// (one-or-all, dsOneK) keep each need bucket as one sorted slice instead
// of its two treaps, as ServerFilling-SRPT's wide path does (srptwide.go):
//
//	seq = [running jobs by (fin, arrival)] [waiting jobs by (key, arrival)]
//
// with nRun marking the seam. The decisions are decideDS's, step for step
// (the repair of M at its ends, dsOneK, the seams, the engine calls in the
// general path's order); only where the jobs are kept differs.
//
// Why. On one-or-all at λ = 7 these members preempt about 16 times per
// arrival: the ~31 narrow jobs of M stop when a wide job enters M and
// restart when it leaves, so nearly every decision moves a whole bucket
// run. On the treaps a run is a split, an in-order walk that collects it
// (tCollect, ~34 instructions per job and the walk's cache misses), a pass
// and a join, and the lookups of M's ends are walks; on the slice a run is
// the seam moved over it (a job stays where it is when its new key or fin
// keeps it in place, the usual case) and every lookup is an index. The
// slices cost a binary search and a copy of the jobs behind it per arrival
// and completion, which at one-or-all's L ≈ 30 is a few words.
//
// Both slices keep exactly the treaps' orders (modeFall for the running
// part, modeKey for the waiting part), so every lookup returns the job the
// treap would: TestDivisorOneKExact checks the decisions against the
// general path, TestDivisorSRPTPathExact and TestDivisorGittinsPathExact
// include one-or-all.

// arriveOneK is arriveDS on the slices.
func (p *Policy) arriveOneK(s *sdk.System, i int32) {
	q := p.ds
	sl := &p.slots[i]
	sb := &p.sb[sl.bucket]
	if p.ord == SRPTOrder {
		sl.age = s.Size(sl.j) // the engine's remaining duration until a preemption (oneKStop)
	}
	if p.allServedDS() && p.sumM+int(sl.need) <= p.k {
		// Every job is served and i fits too: it just starts, placed among
		// the running jobs at once (a binary search and a short copy).
		p.sumM += int(sl.need)
		q.cnt++
		p.maxKey = math.Max(p.maxKey, sl.key)
		p.start(s, sl, s.Now())
		sl.serve = true
		p.oneKInsert(sb, i, p.sRunIndex(sb, i))
		sb.nRun++
		return
	}
	var r int32
	if n := len(sb.seq); p.ord == GittinsOrder && (n == int(sb.nRun) || p.tLess(sb.seq[n-1], i, modeKey)) {
		// Behind every waiting job, as Gittins arrivals of a constant
		// rank always are (one key per class, the largest arrival index):
		// no search.
		r = int32(n) - sb.nRun
	} else {
		r = p.sBoundOn(sb.seq[sb.nRun:], i, false) // sWaitCount, without sBound's call
	}
	p.oneKInsert(sb, i, sb.nRun+r)
	if r < sb.w { // ahead of the bucket's waiting jobs in M: joins M
		sb.w++
		p.sumM += int(sl.need)
		q.cnt++
	} else {
		p.nOut++
	}
	if q.cnt >= p.k && sl.key >= p.maxKey {
		// Behind every job of a full M, whose keys have not risen; at an
		// equal key too: i, waiting (rate 0, its key not moving) and the
		// latest arrival, comes after any job of that key in the order
		// less. Under Gittins of a constant rank, one key per class, that
		// is every narrow arrival while k narrow jobs run.
		return
	}
	p.decideOneK(s)
}

// oneKInsert puts job x at index at of sb's slice.
func (p *Policy) oneKInsert(sb *sbucket, x, at int32) {
	sb.seq = append(sb.seq, 0)
	copy(sb.seq[at+1:], sb.seq[at:])
	sb.seq[at] = x
}

// completeOneK is completeDS on the slices.
func (p *Policy) completeOneK(s *sdk.System, i int32) {
	all := p.allServedDS()
	sl := &p.slots[i]
	sb := &p.sb[sl.bucket]
	at := int32(0) // under SRPT usually the first: the least fin
	if sb.seq[0] != i {
		at = p.oneKRunning(sb, i)
	}
	sb.seq = append(sb.seq[:at], sb.seq[at+1:]...)
	sb.nRun--
	p.sumM -= int(sl.need)
	p.ds.cnt--
	p.release(i)
	if all {
		return // every other job is still served: nothing to decide
	}
	p.decideOneK(s)
}

// oneKRunning is the index of running job i in sb's slice. Among at most
// oneKScan running jobs (one-or-all, k = 32, has at most 32) it is found
// by its id, a scan whose only mispredicted branch is its exit, rather
// than by sRunIndex's binary search, whose comparisons are a coin toss
// (under Gittins a completing job is anywhere among the running ones).
func (p *Policy) oneKRunning(sb *sbucket, i int32) int32 {
	if sb.nRun > oneKScan {
		return p.sRunIndex(sb, i)
	}
	run := sb.seq[:sb.nRun]
	for at, x := range run {
		if x == i {
			return int32(at)
		}
	}
	panic("serverfilling: completing job not running")
}

// oneKScan is the most running jobs oneKRunning scans.
const oneKScan = 64

// decideOneK is decideDS on the slices.
func (p *Policy) decideOneK(s *sdk.System) {
	q := p.ds
	now := s.Now()
	q.now = now

	// 1. M = the first k jobs, repaired at its ends.
	evicted := p.evicted[:0]
	mLast := int32(-2) // M's last job once repaired (-2: not known)
	for {
		if q.cnt < p.k {
			o, o2 := p.oneKFirstOut()
			if o < 0 {
				break
			}
			sb := &p.sb[p.slots[o].bucket]
			n := int32(p.k - q.cnt)
			if o2 >= 0 {
				n = min(n, p.sWaitCountLess(sb, o2)-sb.w)
			} else {
				n = min(n, int32(len(sb.seq))-sb.nRun-sb.w)
			}
			p.oneKJoin(sb, n, p.slots[o].need)
			continue
		}
		last, second, first := p.oneKEnds(now, q.cnt == p.k)
		if q.cnt > p.k {
			ls := &p.slots[last]
			sb := &p.sb[ls.bucket]
			if ls.serve {
				// M's last is running: evicted and preempted, as decideDS.
				// It lands behind M's waiting jobs (sb.w stays).
				p.oneKToWaiting(sb, last, now)
				evicted = append(evicted, last)
				q.cnt--
				p.sumM -= int(ls.need)
				p.nOut++
			} else {
				n := int32(q.cnt - p.k)
				if second >= 0 {
					n = min(n, sb.w-p.sWaitCountLess(sb, second))
				} else {
					n = min(n, sb.w)
				}
				p.oneKJoin(sb, -n, ls.need)
			}
			continue
		}
		if o := first; o >= 0 && p.less(o, last) {
			p.oneKJoin(&p.sb[p.slots[o].bucket], 1, p.slots[o].need)
			continue
		}
		mLast = last // nothing changed since the last look
		break
	}
	if mLast == -2 {
		mLast, _, _ = p.oneKEnds(now, false)
	}
	maxKey := math.Inf(-1)
	if mLast >= 0 {
		maxKey = p.slots[mLast].key
	}

	// 2. The recursion and backfill: three outcomes.
	p.dsOneK()

	// 3. The seams; 4. the engine calls in the general path's order: the
	// running jobs evicted from M sorted into the order at the decision
	// instant, then the other preemptions and the starts, already in it
	// (oneKSeams), each kind in one engine call.
	runPre, runStarts := p.oneKSeams(s, q.srv, now)
	if len(p.next)+len(p.starts) == 0 && len(q.preB) <= 1 && len(q.startB) <= 1 {
		// No exchanges and at most one run of each kind, the usual case
		// (with needs k and 1 at most one bucket runs or starts jobs: a
		// wide job and a narrow one never run together): the runs the
		// move loops wrote are already in the engine-call order.
		p.engineCallsRuns(s, evicted, runPre, runStarts, false, false)
	} else {
		// The general path's order (seamsInOrder), from the runs' ids.
		q.runPre = append(q.runPre[:0], runPre...)
		q.runStarts = append(q.runStarts[:0], runStarts...)
		pre, starts := p.seamsInOrder(s, p.next, p.starts)
		p.engineCallsRuns(s, evicted, pre, starts, false, false)
		p.next, p.starts = pre, starts // (their buffers, grown)
	}
	p.evicted = evicted[:0]
	p.maxKey = maxKey
}

// oneKJobsBuf is the buffer the move loops write a decision's runs into,
// as slot ids for the engine calls (engineCallsRuns hands them to
// PreemptJobsIn and StartJobsIn with p.jobs): the preempted jobs from 0
// on, the started ones from half on. A decision moves each job at most
// once, and the preemptions are at most the running jobs, so half, the
// jobs in the buckets, leaves room for both. Ids, not the jobs
// themselves: a pointer store into the heap takes a write barrier, whose
// call (rarely taken, but there) made the move loops keep their values on
// the stack (+10 instructions a job).
func (p *Policy) oneKJobsBuf() (jw []int32, half int) {
	q := p.ds
	half = len(p.sb[0].seq) + len(p.sb[1].seq)
	if len(q.moveIDs) < 2*half {
		q.moveIDs = make([]int32, 4*half)
	}
	return q.moveIDs, half
}

// oneKJoin moves n waiting jobs of sb (of need need) into M (n < 0: out
// of it), with M's counts.
func (p *Policy) oneKJoin(sb *sbucket, n, need int32) {
	sb.w += n
	p.ds.cnt += int(n)
	p.sumM += int(n) * int(need)
	p.nOut -= int(n)
}

// oneKEnds is dsEnds on the slices: M's last job, the latest of the other
// candidates (keys refreshed), and if wantFirst the least job outside M
// (-1: none), in one pass over the buckets. The two buckets (the wide
// jobs', then the narrow ones') are written out rather than looped over:
// each test then has a branch of its own, whose outcome follows its
// bucket's state, where a loop's shared branches were mispredicted ~10^6
// times a run.
func (p *Policy) oneKEnds(now float64, wantFirst bool) (last, second, first int32) {
	last, second, first = -1, -1, -1
	wd, nr := &p.sb[0], &p.sb[1]
	if w := wd.w; w > 0 {
		last = wd.seq[wd.nRun+w-1]
	}
	srpt := p.ord == SRPTOrder
	if n := wd.nRun; n > 0 {
		c := wd.seq[n-1]
		if srpt { // its key refreshed at now (a call was not inlined)
			p.refreshSRPT(&p.slots[c], now)
		} else {
			p.skey(c, now)
		}
		last, second = p.dsPut(last, second, c)
	}
	if wantFirst && int(wd.nRun+wd.w) < len(wd.seq) {
		first = wd.seq[wd.nRun+wd.w]
	}
	n, w := nr.nRun, nr.w
	if w > 0 {
		last, second = p.dsPut(last, second, nr.seq[n+w-1])
	}
	if n > 0 {
		c := nr.seq[n-1]
		if srpt {
			p.refreshSRPT(&p.slots[c], now)
		} else {
			p.skey(c, now)
		}
		last, second = p.dsPut(last, second, c)
	}
	if wantFirst && int(n+w) < len(nr.seq) {
		if c := nr.seq[n+w]; first < 0 || p.less(c, first) {
			first = c
		}
	}
	return last, second, first
}

// oneKFirstOut is firstOut on the slices: the least job outside M and the
// least of the other buckets' first ones outside it (-1: none).
func (p *Policy) oneKFirstOut() (first, second int32) {
	first, second = -1, -1
	for b := range p.sb {
		sb := &p.sb[b]
		i := sb.nRun + sb.w
		if int(i) >= len(sb.seq) {
			continue
		}
		switch c := sb.seq[i]; {
		case first < 0 || p.less(c, first):
			first, second = c, first
		case second < 0 || p.less(c, second):
			second = c
		}
	}
	return first, second
}

// oneKToWaiting is toWaiting on the slices: running job x becomes
// waiting, its key now frozen, and moves from its place among the running
// jobs (usually the last) to its place among the waiting ones (usually the
// first). The caller keeps sb.w.
func (p *Policy) oneKToWaiting(sb *sbucket, x int32, now float64) {
	from := sb.nRun - 1
	if sb.seq[from] != x {
		from = p.sRunIndex(sb, x)
	}
	sl := p.skey(x, now)
	sl.serve = false
	if p.ord == SRPTOrder {
		sl.age = oneKStop(sl.age, now-sl.since)
	}
	p.stopRun(sl, now)
	to := sb.nRun - 1 // its place once it has left the running part
	if int(sb.nRun) < len(sb.seq) && p.tLess(sb.seq[sb.nRun], x, modeKey) {
		to += p.sWaitCount(sb, x)
	}
	if to != from {
		copy(sb.seq[from:to], sb.seq[from+1:to+1])
	}
	sb.seq[to] = x
	sb.nRun--
}

// oneKStartFirst places sb's first waiting job x, started (setRun done),
// among the running jobs where it does not follow the last one: it moves
// over the running jobs behind it.
func (p *Policy) oneKStartFirst(sb *sbucket, x int32) {
	to := p.sRunIndex(sb, x)
	copy(sb.seq[to+1:sb.nRun+1], sb.seq[to:sb.nRun])
	sb.seq[to] = x
}

// oneKSeams is applySeamsDS on the slices: per bucket its seam moved to
// take[b] running jobs (the preempted jobs, from the last running one
// backwards, each usually staying in place as the first waiting one; the
// started ones, from the first waiting one on, each usually staying in
// place as the last running one), then the exchanges while the bucket's
// first waiting job precedes its last running one. A bucket's seam moves
// are one run in the order at the decision instant (see dsOrder), its
// exchanges single moves; dsOrder merges them into that order.
//
// The exchanges are appended to p.next and p.starts, emptied first;
// the runs' slot ids are written into oneKJobsBuf's buffer for the engine
// calls and returned as runPre and runStarts, with where each run ends in
// q.preB and q.startB. The caller puts them in order (seamsInOrder) when
// there is more than a run of a kind.
func (p *Policy) oneKSeams(s *sdk.System, take []int32, now float64) (runPre, runStarts []int32) {
	q := p.ds
	jw, half := p.oneKJobsBuf()
	nPre, nStart := 0, 0
	p.next, p.starts = p.next[:0], p.starts[:0]
	q.preB, q.startB = q.preB[:0], q.startB[:0]
	for b := range p.sb {
		sb := &p.sb[b]
		t := take[b]
		if sb.nRun == t && (sb.w == 0 || t == 0) {
			continue
		}
		switch {
		case sb.nRun > t:
			at := nPre
			nPre += int(sb.nRun - t)
			if p.ord == SRPTOrder {
				p.oneKPreemptSRPT(sb, t, now, jw[at:nPre])
			} else {
				p.oneKPreempt(sb, t, now, jw[at:nPre])
			}
			q.preB = append(q.preB, nPre)
		case sb.nRun < t:
			at := half + nStart
			nStart += int(t - sb.nRun)
			if p.ord == SRPTOrder {
				p.oneKStartSRPT(sb, t, now, jw[at:half+nStart])
			} else {
				p.oneKStart(s, sb, t, now, jw[at:half+nStart])
			}
			q.startB = append(q.startB, nStart)
		}
		for sb.w > 0 && sb.nRun > 0 { // as seamSingles
			x := sb.seq[sb.nRun-1]
			p.skey(x, now)
			y := sb.seq[sb.nRun]
			if !p.less(y, x) {
				break
			}
			p.oneKToWaiting(sb, x, now) // y stays the first waiting job: it precedes x
			p.setRun(s, &p.slots[y], now)
			p.slots[y].serve = true
			if l := sb.nRun - 1; l >= 0 && !p.tLess(sb.seq[l], y, modeFall) {
				p.oneKStartFirst(sb, y)
			}
			sb.nRun++
			p.next, p.starts = append(p.next, x), append(p.starts, y)
		}
	}
	return jw[:nPre], jw[half : half+nStart]
}

// oneKPreempt preempts sb's running jobs from the last one down to t
// running and writes them into jr in the order they ran in (by (fin,
// arrival), the order at the decision instant within a bucket). Each
// usually becomes the first waiting job by moving the seam; oneKToWaiting
// places the others (an arrival since the last decision, or a key tie
// broken by arrival, ahead of it). Placing one moves only jobs after it, so
// the run is seq[t:nRun] as it was.
func (p *Policy) oneKPreempt(sb *sbucket, t int32, now float64, jr []int32) {
	seq, n := sb.seq, sb.nRun
	sb.w += n - t
	c := &p.cls[p.slots[seq[t]].class] // one class per bucket here
	switch {
	case p.ord == GittinsOrder && c.rank.constant:
		p.oneKPreemptConstant(sb, t, now, jr)
	default:
		for i := n - 1; i >= t; i-- {
			jr[i-t] = seq[i]
			sb.nRun = i + 1
			p.oneKToWaiting(sb, seq[i], now)
		}
	}
	sb.nRun = t
}

// oneKFirst is the first waiting job's (key, arrival) in sb, the waiting
// part's order (+Inf: none): a job preempted at the seam must precede it.
func (p *Policy) oneKFirst(sb *sbucket) (float64, int64) {
	if int(sb.nRun) < len(sb.seq) {
		fs := &p.slots[sb.seq[sb.nRun]]
		return fs.key, fs.id
	}
	return math.Inf(1), 0
}

// oneKLast is the last running job's (fin, arrival) in sb, the running
// part's order (−Inf: none): a started job must follow it to stay at the
// seam.
func (p *Policy) oneKLast(sb *sbucket) (float64, int64) {
	if n := sb.nRun; n > 0 {
		ls := &p.slots[sb.seq[n-1]]
		return ls.fin, ls.id
	}
	return math.Inf(-1), 0
}

// oneKPreemptSRPT is oneKPreempt under the SRPT order, which oneKSeams
// calls directly (a call less per run): keyAt and stopRun inlined, the
// remaining duration kept (oneKStop). The jobs that stay at the seam,
// nearly all, are placed by oneKPreemptSeam, a loop
// that makes no call (a call in it made the compiler keep the loop's
// values on the stack); the others here, one at a time.
func (p *Policy) oneKPreemptSRPT(sb *sbucket, t int32, now float64, jr []int32) {
	n := sb.nRun
	run := sb.seq[t:n]
	sb.w += n - t
	scale := p.cls[p.slots[run[0]].class].scale // one need per bucket
	firstKey, firstID := p.oneKFirst(sb)
	for {
		m := p.oneKPreemptSeam(run, jr, scale, now, &firstKey, &firstID)
		if m == 0 {
			sb.nRun = t
			return
		}
		// run[m-1] does not stay at the seam: placed by oneKToWaiting,
		// which moves only jobs from its index on, so run[:m-1] is as it
		// was; the first waiting job is the same.
		sb.nRun = t + int32(m)
		p.oneKToWaiting(sb, run[m-1], now)
		run = run[:m-1]
	}
}

// oneKPreemptSeam preempts run's jobs from the last one backwards while
// each stays at the seam, ahead of the first waiting job (*firstKey,
// *firstID, updated as they go), writing each into jr at its index in run
// (the order they ran in). It returns how many jobs of run are left, the
// last of them written into jr but not preempted (0: all preempted).
func (p *Policy) oneKPreemptSeam(run, jr []int32, scale, now float64, firstKey *float64, firstID *int64) int {
	slots := p.slots
	fk, fid := *firstKey, *firstID
	jr = jr[:len(run)]
	i := len(run) - 1
	for ; i >= 0; i-- {
		x := run[i]
		jr[i] = x
		xs := &slots[x]
		k := scale * clamp0(xs.fin-now)
		if fk < k || fk == k && fid < xs.id {
			break
		}
		xs.key, xs.serve, xs.moving, xs.rate = k, false, false, 0
		xs.age = oneKStop(xs.age, now-xs.since)
		fk, fid = k, xs.id
	}
	*firstKey, *firstID = fk, fid
	return i + 1
}

// oneKPreemptConstant is oneKPreemptSRPT for Gittins ranks that are
// constant: the key stays, nothing moves.
//
// One comparison usually settles the whole run. Here every job of a
// bucket has one key, its class's rank0 (one class per bucket on this
// path, and a constant rank's key never changes), and no running job's
// fin is ever set (setRun sets it only for ranks that move), so the
// running jobs, by (fin, arrival), are in arrival order. The loop below
// compares each job, from the last running one down, with the job ahead
// of which it goes: the first waiting job for the last running one, then
// the job it has just placed there, which has the same key and a later
// arrival, so that comparison never fails. Hence if the last running job
// precedes the first waiting one, every job of the run stays at the seam,
// and the run is written out without a comparison per job.
func (p *Policy) oneKPreemptConstant(sb *sbucket, t int32, now float64, jr []int32) {
	seq, slots := sb.seq, p.slots
	firstKey, firstID := p.oneKFirst(sb)
	if run := seq[t:sb.nRun]; len(run) > 0 {
		if ls := &slots[run[len(run)-1]]; !(firstKey < ls.key || firstKey == ls.key && firstID < ls.id) {
			jr = jr[:len(run)]
			for d, x := range run {
				jr[d] = x
				xs := &slots[x]
				xs.serve, xs.rate = false, 0
			}
			return
		}
	}
	for i := sb.nRun - 1; i >= t; i-- {
		for ; i >= t; i-- {
			jr[i-t] = seq[i]
			xs := &slots[seq[i]]
			if firstKey < xs.key || firstKey == xs.key && firstID < xs.id {
				break
			}
			xs.serve, xs.rate = false, 0
			firstKey, firstID = xs.key, xs.id
		}
		if i >= t {
			sb.nRun = i + 1
			p.oneKToWaiting(sb, seq[i], now)
		}
	}
}

// oneKStart starts sb's first waiting jobs up to t running (setRun; the
// engine calls are the caller's) and writes them into jr in that order.
// Each usually becomes the last running job by moving the seam (its fin
// follows the running jobs'); oneKStartFirst places the others. A job
// placed elsewhere moves only jobs before it, so the loops read the ones
// to start from seq[nRun:t] as they go: each is read before anything
// moves over its place.
func (p *Policy) oneKStart(s *sdk.System, sb *sbucket, t int32, now float64, jr []int32) {
	n := sb.nRun
	run := sb.seq[n:t]
	sb.w -= t - n
	c := &p.cls[p.slots[run[0]].class] // one class per bucket here
	switch {
	case p.ord == GittinsOrder && c.rank.constant:
		p.oneKStartConstant(sb, run, now, jr)
	default:
		for d := range run {
			x := run[d]
			xs := &p.slots[x]
			jr[d] = x
			p.setRun(s, xs, now) // (constant Gittins ranks: since and key0 only)
			xs.serve = true
			sb.nRun = n + int32(d)
			if l := sb.nRun - 1; l >= 0 && !p.tLess(sb.seq[l], x, modeFall) {
				p.oneKStartFirst(sb, x)
			}
		}
	}
	sb.nRun = t
}

// oneKStartConstant is oneKStart's loop for Gittins ranks that are
// constant: setRun sets since and key0 only (fin stays), and a job that
// does not follow the last running one is placed outside the inner loop.
//
// As in oneKPreemptConstant, one comparison usually settles the run: the
// waiting jobs, by (key, arrival) with one key, are in arrival order, and
// every fin is the same (never set), so each job to start follows the one
// started before it, and the run follows the last running job if its
// first job does.
func (p *Policy) oneKStartConstant(sb *sbucket, run []int32, now float64, jr []int32) {
	slots, n := p.slots, sb.nRun
	lastFin, lastID := p.oneKLast(sb)
	if fs := &slots[run[0]]; !(lastFin > fs.fin || lastFin == fs.fin && lastID > fs.id) {
		jr = jr[:len(run)]
		for d, x := range run {
			jr[d] = x
			xs := &slots[x]
			xs.since, xs.key0, xs.serve = now, xs.key, true
		}
		return
	}
	for d := 0; d < len(run); d++ {
		for ; d < len(run); d++ {
			jr[d] = run[d]
			xs := &slots[run[d]]
			xs.since, xs.key0, xs.serve = now, xs.key, true
			if lastFin > xs.fin || lastFin == xs.fin && lastID > xs.id {
				break
			}
			lastFin, lastID = xs.fin, xs.id
		}
		if d < len(run) {
			sb.nRun = n + int32(d)
			p.oneKStartFirst(sb, run[d])
		}
	}
}

// oneKStartSRPT is oneKStart under the SRPT order, which oneKSeams calls
// directly (a call less per run): setRun inlined, the remaining duration
// read from the slot (oneKStop) instead of s.Remaining. The usual starts, nearly all, are made by oneKStartSeam, a
// loop that makes no call; the two rare cases, a fin that finAtMost must
// lower further and a job that does not follow the last running one,
// here, one at a time.
func (p *Policy) oneKStartSRPT(sb *sbucket, t int32, now float64, jr []int32) {
	slots, n := p.slots, sb.nRun
	run := sb.seq[n:t]
	sb.w -= t - n
	scale := p.cls[slots[run[0]].class].scale // one need per bucket
	rate := 0.0
	if p.crossings {
		rate = scale
	}
	lastFin, lastID := p.oneKLast(sb)
	for d := 0; ; d++ {
		d += p.oneKStartSeam(run[d:], jr[d:], scale, now, rate, &lastFin, &lastID)
		if d == len(run) {
			sb.nRun = t
			return
		}
		xs := &slots[run[d]]
		f := now + xs.age
		if scale*clamp0(f-now) > xs.key {
			// Usually one ulp too late (about half the starts on
			// one-or-all): finAtMost's search would take that ulp at its
			// first step and return it, so it is tried here first,
			// without the call, as oneKStartSeam does.
			if g := math.Float64frombits(math.Float64bits(f) - 1); f > 0 && scale*clamp0(g-now) <= xs.key {
				f = g
			} else {
				f = finAtMost(f, now, scale, xs.key)
			}
		}
		xs.since, xs.key0, xs.fin, xs.moving, xs.rate, xs.serve = now, xs.key, f, true, rate, true
		if lastFin < f || lastFin == f && lastID < xs.id {
			lastFin, lastID = f, xs.id
		} else {
			// Placed by oneKStartFirst, which moves only jobs before it:
			// run[d+1:] is as it was.
			sb.nRun = n + int32(d)
			p.oneKStartFirst(sb, run[d])
		}
	}
}

// oneKStartSeam starts run's jobs from the first one on while each stays
// at the seam, following the last running job (*lastFin, *lastID, updated
// as they go), with a fin finAtMost's usual one-ulp step gives, writing
// each into jr at its index in run. It returns how many it started: the
// next one, if any, written into jr but not started, is the caller's.
func (p *Policy) oneKStartSeam(run, jr []int32, scale, now, rate float64, lastFin *float64, lastID *int64) int {
	slots := p.slots
	lf, lid := *lastFin, *lastID
	jr = jr[:len(run)]
	d := 0
	for ; d < len(run); d++ {
		x := run[d]
		jr[d] = x
		xs := &slots[x]
		key := xs.key
		f := now + xs.age
		// finAtMost's usual one-ulp step taken without a branch (the
		// step is needed for about half the starts, at random: as a
		// branch it was mispredicted ~2·10⁶ times a run); a fin the
		// step does not bring to the key is left to the caller. Neither
		// f − now needs clamp0, whose value it is: age ≥ 0 (a size, or
		// oneKStop's), so f = now + age ≥ now, rounded, and f − now ≥ +0;
		// and the step is taken only when scale·(f − now) > key ≥ 0, so
		// f > now ≥ 0 (finAtMost's f > 0), and the float below f is
		// still ≥ now.
		f = math.Float64frombits(math.Float64bits(f) - b2u(scale*(f-now) > key))
		if scale*(f-now) > key || lf > f || lf == f && lid > xs.id {
			break
		}
		xs.since, xs.key0, xs.fin, xs.moving, xs.rate, xs.serve = now, key, f, true, rate, true
		lf, lid = f, xs.id
	}
	*lastFin, *lastID = lf, lid
	return d
}

// oneKStop is the engine's remaining duration of a job preempted after
// running for served, from rem, its remaining duration at the start: the
// engine's own arithmetic (sim.System.Preempt: remaining −= served, then
// 0 if negative), so that the value is the engine's to the bit. Under the
// SRPT order these paths keep it in the slot's age (which only the Gittins
// order uses) for every waiting job, set from its size at arrival, and
// oneKStart reads it instead of calling s.Remaining: the call, made per
// started job, kept the start loop's values on the stack.
// TestOneKRemaining checks it against the engine's at every event.
func oneKStop(rem, served float64) float64 {
	rem -= served
	if rem < 0 {
		rem = 0
	}
	return rem
}

// b2u is 1 for true, 0 for false (compiled without a branch).
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
