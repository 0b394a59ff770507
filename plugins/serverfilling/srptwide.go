package serverfilling

import (
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The SRPT path with a class wider than k/2 (Borg cell B, one-or-all):
// srptfast.go's decisions, with each need bucket kept as one sorted slice
// instead of two treaps.
//
// Why. With a wide class a decision moves many jobs at once (a wide job of
// small remaining size entering the served set preempts the narrow jobs on
// up to its need servers, its completion restarts as many: 20 preemptions
// per arrival on Borg cell B at ρ = 0.95), and on the treaps each move is a
// deletion from one tree and an insertion into the other, O(log n) with a
// large constant: more per moved job than the general path spends per job
// of M in its pass over M, which is why srptfast.go stayed below k/2. But
// the moves are always at a bucket's seam (srptfast.go): a preemption takes
// the bucket's last running job and makes it its first waiting one (its key
// now, frozen from then on, is the least of the waiting ones but for ties and
// for arrivals since the last decision), a start takes the first waiting job
// to the end of the running ones (its fin the largest but for the same
// exceptions). So a bucket kept as one slice
//
//	seq = [running jobs by (fin, arrival)] [waiting jobs by (key, arrival)]
//
// with nRun marking the seam moves a job by moving the seam: O(1) per move
// when the job already sits at its place, which is the usual case, and one
// copy of the jobs it passes otherwise (found by binary search). Every
// lookup srptfast.go makes becomes an index: the last running job is
// seq[nRun−1], the r-th waiting one seq[nRun+r], a count of waiting jobs
// ahead of a job a binary search. An arrival is a binary search and one copy
// of the jobs behind it in its bucket, a completion one copy of those behind
// it: a memmove of up to n words, not O(log n), but at a fraction of a
// nanosecond per word it stays below a treap's O(log n) pointer chase up to
// thousands of jobs per bucket; the general path would pass over up to k jobs
// of M per event anyway.
//
// A decision's passes over the need buckets skip the buckets holding no
// job: a bit per bucket kept as jobs arrive and complete, listed at a
// decision when it changed (listOccupied; Borg cell B has 26 needs, 12 of
// them occupied on average at ρ = 0.95). There are three such passes per
// decision: one finds both ends of M for its repair (lastMWide), one
// computes the takes and moves the seams (applySeamsWide), one arms the
// crossing timer.
//
// Both slices keep exactly the treaps' orders (modeFall for the running
// part, modeKey for the waiting part), so every lookup returns the job the
// treap would and the decisions are srptfast.go's, hence the general path's
// (TestWidePathEquivalent, and TestFastPathEquivalent and
// TestEquivalentToReference on Borg cell B and one-or-all).

// wideSRPT reports whether the SRPT path keeps its buckets as slices: SRPT
// order (one run group per bucket), ServerFilling, a class wider than k/2,
// and not forced onto the treaps (tests, BenchmarkPathChoice).
func (p *Policy) wideSRPT(maxNeed int32) bool {
	return p.ord == SRPTOrder && p.proc == ServerFilling && 2*int(maxNeed) > p.k && !p.forceTreap
}

// sRunIndex is the place of job x among sb's running jobs in (fin,
// arrival) order: x's index if it runs, else where it would go.
func (p *Policy) sRunIndex(sb *sbucket, x int32) int32 {
	return p.sBound(sb.seq, 0, sb.nRun, x, modeFall)
}

// sWaitCount is the number of sb's waiting jobs in (key, arrival) order
// before job x (x not among them, or at its own place).
func (p *Policy) sWaitCount(sb *sbucket, x int32) int32 {
	return p.sBound(sb.seq, sb.nRun, int32(len(sb.seq)), x, modeKey) - sb.nRun
}

// sBound is the first index of seq[lo:hi], sorted in treap order mode,
// whose job is not before x (hi if none). Both orders compare a float
// (key or fin) and then the arrival index: sBoundOn searches on the one
// mode names.
func (p *Policy) sBound(seq []int32, lo, hi, x int32, mode uint8) int32 {
	if mode == modeFall {
		return lo + p.sBoundOn(seq[lo:hi], x, true)
	}
	if mode == modeKey {
		return lo + p.sBoundOn(seq[lo:hi], x, false)
	}
	for lo < hi { // modeRise: not on the slices; kept for completeness
		m := int32(uint32(lo+hi) >> 1)
		if p.tLess(seq[m], x, mode) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// sBoundOn is the number of jobs of seq, sorted by (fin, arrival) if fin
// else (key, arrival), that precede x in that order. Whether the probed
// job precedes x is a coin toss at each step, so the search advances
// without a branch on it (the step is masked by a flag the compiler
// sets with SETcc): as a branch it was mispredicted at half the steps
// (an arrival's place among its bucket's waiting jobs on Borg cell B).
// Only an equal float, rare, takes a branch, to compare arrivals: as a
// second flag it cost more than it saved. The last probe keeps its
// branch too (measured slower without it).
func (p *Policy) sBoundOn(seq []int32, x int32, fin bool) int32 {
	slots := p.slots
	xs := &slots[x]
	xv, xid := xs.key, xs.id
	if fin {
		xv = xs.fin
	}
	base, n := 0, len(seq)
	if n == 0 {
		return 0
	}
	for n > 1 {
		half := n >> 1
		ys := &slots[seq[base+half]]
		yv := ys.key
		if fin {
			yv = ys.fin
		}
		step := half & -bit(yv < xv)
		if yv == xv && ys.id < xid { // rare: a tie on the float
			step = half
		}
		base += step
		n -= half
	}
	ys := &slots[seq[base]]
	yv := ys.key
	if fin {
		yv = ys.fin
	}
	if yv < xv || yv == xv && ys.id < xid {
		base++
	}
	return int32(base)
}

// sWaitCountLess is tCountLess for a slice bucket: the waiting jobs
// ahead of x in the order less (a prefix of the waiting part).
func (p *Policy) sWaitCountLess(sb *sbucket, x int32) int32 {
	lo, hi := sb.nRun, int32(len(sb.seq))
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		if p.less(sb.seq[m], x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - sb.nRun
}

// sInsertWaiting adds waiting job x to sb and returns its rank among the
// waiting jobs. An arrival goes ahead of every waiting job of its bucket
// in a third of the cases (35% on Borg cell B at ρ = 0.95, where a bucket
// has ~110 waiting jobs), which one comparison with the first finds; the
// binary search, a chain of loads from cold slots (7% of the CPU
// profile), is left for the others, over the jobs after the first.
func (p *Policy) sInsertWaiting(sb *sbucket, x int32) int32 {
	r := int32(0)
	if n := sb.nRun; int(n) < len(sb.seq) && !keyBefore(&p.slots[x], &p.slots[sb.seq[n]]) {
		r = p.sBound(sb.seq, n+1, int32(len(sb.seq)), x, modeKey) - n
	}
	at := sb.nRun + r
	sb.seq = append(sb.seq, 0)
	copy(sb.seq[at+1:], sb.seq[at:])
	sb.seq[at] = x
	p.setLive(p.slots[x].bucket)
	if r >= sb.w { // outside M (arriveSRPT): the carry's bound φ (carriedWide)
		p.outsideArrival(x)
	}
	return r
}

// sInsertRunning adds job x, not in sb, started (fin set), to sb's running
// jobs.
func (p *Policy) sInsertRunning(sb *sbucket, x int32) {
	at := p.sRunIndex(sb, x)
	sb.seq = append(sb.seq, 0)
	copy(sb.seq[at+1:], sb.seq[at:])
	sb.seq[at] = x
	sb.nRun++
	p.slots[x].serve = true
	p.setLive(p.slots[x].bucket)
}

// sRemoveRunning takes running job x out of sb (a completion).
func (p *Policy) sRemoveRunning(sb *sbucket, x int32) {
	at := int32(0) // usually the first: the least fin
	if sb.seq[0] != x {
		at = p.sRunIndex(sb, x)
	}
	sb.seq = append(sb.seq[:at], sb.seq[at+1:]...)
	sb.nRun--
	p.slots[x].serve = false
	if len(sb.seq) == 0 {
		b := p.slots[x].bucket
		p.live[b>>6] &^= 1 << (b & 63)
		p.occStale = true
	}
}

// setLive marks need bucket b as holding jobs.
func (p *Policy) setLive(b int32) {
	if bit := uint64(1) << (b & 63); p.live[b>>6]&bit == 0 {
		p.live[b>>6] |= bit
		p.occStale = true
	}
}

// visit is the list of need buckets the crossing timer's pass
// (armCrossingSRPT) visits: on the wide path those of the occupied ones
// (listOccupied, brought up to date at the start of each decision) whose
// job might give a timer (crossCands), or all of them when at most
// carryBuckets are occupied (one-or-all, where crossNone seldom holds);
// on the treap path every bucket. (The wide path's other passes range
// over occ directly, the treap path's over every bucket.)
func (p *Policy) visit() []int32 {
	if !p.wide {
		if len(p.occ) != len(p.sb) {
			p.listAll()
		}
		return p.occ
	}
	if len(p.occ) <= carryBuckets {
		return p.occ
	}
	return p.crossCands()
}

// crossCands is the occupied buckets whose candidate might cross M's last
// job b = slots[wLast] before the pending timer: none if crossNone says
// so, else those whose last running job y is a candidate of the pass
// (armCrossingSRPT: y runs, its need fits the slack, its rate is below
// b's) and has a stored key not below KB, b's key at the pending timer.
// Where crossNone does not hold (35% of the passes on Borg cell B at ρ =
// 0.95) the pass estimated ~4.4 crossings and searched one at 0.5% of
// them; the list usually comes out empty. Exact: y's stored key is its
// key at an instant up to now (lastMWide's refresh or an earlier one) or
// its frozen key from before its start, which its key at the start does
// not exceed (setRun's fin), and a running key never rises with t; so a
// stored key below KB keeps y's key below b's up to the pending timer,
// and, as in crossNone, y's crossing (crossFrom: an instant where b is
// ahead, or b's fin, past the timer as KB > 0) is past it. The pass
// gives t with minInstant(t, timerAt) the least crossing among its
// candidates or timerAt, whichever is earlier (a candidate it skips on
// its bound crosses at or after that bound), so leaving out candidates
// that cross after timerAt leaves minInstant(t, timerAt) as it is; the
// stopper's candidate (crossStopper) and setCrossingTimer (which arms
// only an instant before timerAt, that instant then the same) see only
// that.
func (p *Policy) crossCands() []int32 {
	if p.crossNone() {
		return nil
	}
	b := &p.slots[p.wLast]
	kb := p.cls[b.class].scale * clamp0(b.fin-p.timerAt)
	if !(kb > 0) {
		return p.occ // nothing pending (+Inf), or b done by then: no bound
	}
	slack, rate := int32(p.sumM-p.k), b.rate
	occ, sbs, slots, bneed := p.occ, p.sb, p.slots, p.bneed
	out := p.crossBuf[:len(occ)] // (room: listOccupied)
	m := 0
	for _, bi := range occ {
		sb := &sbs[bi]
		n := sb.nRun
		if n == 0 || bneed[bi] > slack {
			continue
		}
		if ys := &slots[sb.seq[n-1]]; ys.rate < rate && ys.key >= kb {
			out[m] = bi
			m++
		}
	}
	return out[:m]
}

// crossNone reports that the crossing timer's pass over the buckets
// (armCrossingSRPT's loop, which calls it through visit once it has
// found a timer may be due: M's last job b = slots[wLast] runs, M has
// slack) would leave the pending timer as it is, so that the pass can be
// skipped: b's key at the pending timer's instant, KB, is above both 0
// and wSK, the key of the latest candidate other than b of the decision's
// last repair pass (lastMWide, whose last is the b armCrossingSRPT was
// given: decideSRPT's last call of it gives that job). On Borg cell B at
// ρ = 0.95 it holds at 65% of the passes (445 k of 683 k a replication),
// each of which visits ~11 occupied buckets and estimates ~4.4 crossings
// (~650 instructions, 9% of the run's), and it sets a timer at 0.4% of them.
//
// Why it is exact. Every candidate of the pass is the last running job y
// of a bucket other than b's (a rate below b's: a smaller need) after the
// decision's moves. Either y ran at the repair: its fin is at most that of
// its bucket's last running job z then, so its key now is at most z's
// (scale × clamp0(fin − now), each step monotone in fin), and z's key now
// is at most wSK (lastMWide refreshed it and placed it, or dropped it on
// a stored key below the second latest's so far, a value its key now
// cannot exceed: running keys only fall). Or y started in this decision (startSeam,
// startRare, sStartFirst): its fin puts its key now at most its frozen
// key, the key of a job that was in M waiting at the repair (at most its
// bucket's last waiting job of M, a candidate of the pass other than b,
// which runs) or running then (at most wSK as above). A running key never
// rises with t in floating point, so at every instant t ≥ now y's key is
// at most wSK, and b's is at least KB while t ≤ timerAt. So aheadAt(b, y,
// t) (b's key ≤ y's) is false on [now, timerAt]; crossFrom, stepping
// upwards from an estimate ≥ now, returns either an instant where it holds,
// past timerAt, or b's fin, past timerAt since KB = scale × clamp0(fin −
// timerAt) > 0. Every candidate's crossing is then past timerAt (and one
// skipped on its bound is past it too), so the loop would leave t at an
// instant not before timerAt, where it leaves t at +Inf when skipped: the
// stopper's candidate (crossStopper) compares against minInstant(t,
// timerAt) = timerAt either way, and setCrossingTimer arms only an instant
// before timerAt. A timer pending at +Inf gives KB = 0: no skip.
func (p *Policy) crossNone() bool {
	b := &p.slots[p.wLast] // running: keyAtSRPT's moving case
	kb := p.cls[b.class].scale * clamp0(b.fin-p.timerAt)
	return kb > p.wSK && kb > 0
}

// listAll lists every need bucket in occ (the treap paths).
func (p *Policy) listAll() {
	p.occ = p.occ[:0]
	for b := range p.sb {
		p.occ = append(p.occ, int32(b))
	}
}

// listOccupied lists the need buckets holding jobs in occ, the buckets a
// decision's passes (the repair of M, the takes, the seams, the crossing
// timer) visit on the wide path: Borg cell B has 12 of its 26 occupied on
// average at ρ = 0.95. Listed at a decision only when an arrival or a
// completion has filled or emptied a bucket since the last one; a pass
// then costs a slice range per occupied bucket instead of a bit-set
// search per step.
func (p *Policy) listOccupied() {
	p.occ = p.occ[:0]
	for b := firstFrom(p.live, 0); b >= 0; b = firstFrom(p.live, b+1) {
		p.occ = append(p.occ, int32(b))
	}
	p.occStale = false
	// Room for takesWide's list (two entries per occupied bucket), so
	// that it makes no call; mergeBuf never shrinks.
	p.mergeBuf = slices.Grow(p.mergeBuf[:0], 2*len(p.occ))
	p.crossBuf = slices.Grow(p.crossBuf[:0], len(p.occ))
}

// sToWaiting is toWaiting for a slice bucket: running job x becomes
// waiting with its key now, frozen from here on. It moves from its place
// among the running jobs (usually the last) to its place among the waiting
// ones (usually the first).
func (p *Policy) sToWaiting(sb *sbucket, x int32, now float64) {
	from := sb.nRun - 1
	if sb.seq[from] != x {
		from = p.sRunIndex(sb, x)
	}
	sl := &p.slots[x] // skey and stopRun for a running SRPT job, inlined
	p.refreshSRPT(sl, now)
	sl.moving, sl.rate, sl.serve = false, 0, false
	to := sb.nRun - 1 // its place once it has left the running part
	if int(sb.nRun) < len(sb.seq) && p.tLess(sb.seq[sb.nRun], x, modeKey) {
		to += p.sWaitCount(sb, x)
	}
	if to != from { // usually not: the last running job becomes the first waiting one
		copy(sb.seq[from:to], sb.seq[from+1:to+1])
	}
	sb.seq[to] = x
	sb.nRun--
}

// sStartFirst starts sb's first waiting job (setRun now; the engine call
// is the caller's) and returns it. It moves to its place among the
// running jobs (usually the end).
func (p *Policy) sStartFirst(s *sdk.System, sb *sbucket, now float64) int32 {
	x := sb.seq[sb.nRun]
	p.setRun(s, &p.slots[x], now)
	to := sb.nRun
	if to > 0 && !p.tLess(sb.seq[to-1], x, modeFall) {
		to = p.sRunIndex(sb, x)
	}
	if to != sb.nRun { // usually not: the first waiting job becomes the last running one
		copy(sb.seq[to+1:sb.nRun+1], sb.seq[to:sb.nRun])
	}
	sb.seq[to] = x
	sb.nRun++
	p.slots[x].serve = true
	return x
}

// applySeamsWide is applySeams on the slices: the same moves, in the same
// order, with the usual case of each written out (a preempted job stays at
// the seam as the first waiting job, a started one as the last running
// job: sToWaiting and sStartFirst without their searches) and the
// bucket's scale read once. A preempted job goes elsewhere only when the
// first waiting job precedes it (an arrival since the last decision, or a
// tie in key broken by arrival), a started one only when the last running
// job does not precede it in (fin, arrival); sToWaiting and sStartFirst
// place those. It also records where each bucket's runs end in pre and
// starts, for mergeBucketRuns. The takes come first, from takesWide or
// takesFromCut (srptwidecut.go), which also list the buckets where
// something moves; the moves visit only those.
func (p *Policy) applySeamsWide(s *sdk.System, evicted []int32, now float64) (pre, starts []int32) {
	pre, starts = p.next[:0], p.starts[:0]
	p.preEnds, p.startEnds = p.preEnds[:0], p.startEnds[:0]
	// takesWide's list, in mergeBuf (free until mergeBucketRuns; grown
	// by listOccupied), or takesFromCut's where it applies (srptwidecut.go).
	mv := p.mergeBuf[:2*len(p.occ)]
	if len(p.occ) > carryBuckets && p.packing == PackStop && p.sumM > p.k {
		mv = p.takesFromCut(p.runNeed(s, evicted), mv)
	} else {
		mv = p.takesWide(mv)
	}
	for i := 0; i+1 < len(mv); i += 2 {
		b, t := mv[i], mv[i+1]
		sb := &p.sb[b]
		np, ns := len(pre), len(starts)
		nb := np // end of preemptSeam's block in pre
		if sb.nRun != t {
			// The bucket's scale, as Init computes each class's: need/k.
			scale := float64(p.bneed[b]) * p.invK
			if sb.nRun > t {
				pre = p.preemptSeam(sb, t, scale, now, pre)
				nb = len(pre)
			} else {
				starts = slices.Grow(starts, int(t-sb.nRun))[:ns+int(t-sb.nRun)]
				p.startSeam(s, sb, t, scale, now, starts[ns:])
			}
		}
		for sb.w > 0 && sb.nRun > 0 { // as applySeams
			// runLast on the slices (p.wide, nRun > 0), written out: the
			// call and the spills around it cost 13 M instructions a
			// replication on Borg cell B at ρ = 0.95 (tenth round, srptw48).
			x := sb.seq[sb.nRun-1]
			p.refreshSRPT(&p.slots[x], now)
			y := sb.seq[sb.nRun]
			if !p.less(y, x) {
				break
			}
			p.sToWaiting(sb, x, now) // y stays the first waiting job: x's key now is above y's
			p.sStartFirst(s, sb, now)
			pre = append(pre, x)
			starts = append(starts, y)
		}
		if len(pre) > nb {
			ascendRun(pre[np:], nb-np)
		}
		if len(pre) > np {
			p.preEnds = append(p.preEnds, int32(len(pre)))
		}
		if len(starts) > ns {
			p.startEnds = append(p.startEnds, int32(len(starts)))
		}
	}
	return pre, starts
}

// takesWide computes the takes over the occupied buckets (takes's rule,
// takeStep's: an empty bucket takes 0, which changes neither the servers
// left nor the cut), sets cut and rem, and returns in mv (room for two
// entries per occupied bucket) the buckets where something moves, each
// followed by its take: those whose take differs from their running
// jobs, or that have a waiting job of M beside a running one to exchange.
// A bucket's take depends only on the counts in M of the buckets before
// it, which the moves do not change, so the takes can all come before
// the moves. Most buckets move nothing (Borg cell B at ρ = 0.95: 11.2
// occupied per decision, 1.8 with moves), and this pass over them is a
// function of its own that makes no call, with takeStep's state in
// locals: with the moves' calls in the same loop, or the state behind
// takeStep's pointers, the compiler reloaded its values from the stack
// at every bucket (cachegrind: 55 → 34 instructions per bucket).
func (p *Policy) takesWide(mv []int32) []int32 {
	occ, sbs, bneed := p.occ, p.sb, p.bneed
	m, rem, cut := 0, int32(p.k), int32(p.nBuckets)
	i := 0
	for ; i < len(occ); i++ {
		b := occ[i]
		sb := &sbs[b]
		n, w := sb.nRun, sb.w
		c, need := n+w, bneed[b]
		if c*need <= rem { // the bucket's jobs of M all fit: t = c
			rem -= c * need
			if w != 0 { // else no move, and no waiting job of M beside a running one to exchange
				mv[m], mv[m+1] = b, c
				m += 2
			}
			continue
		}
		t := rem / need // the cut
		rem -= t * need
		cut = min(cut, b)
		if n != t || t != 0 && t != c {
			mv[m], mv[m+1] = b, t
			m += 2
		}
		if p.packing == PackStop {
			i++
			break
		}
	}
	for ; i < len(occ); i++ { // stopped: the later buckets take 0
		if b := occ[i]; sbs[b].nRun != 0 {
			mv[m], mv[m+1] = b, 0
			m += 2
		}
	}
	p.cut, p.rem = cut, int(rem)
	return mv[:m]
}

// preemptSeam preempts sb's last running jobs down to t running, from the
// last backwards, and appends them to pre in the order they ran in (by
// (fin, arrival), which is the order at the decision instant, cmpWas, in
// one bucket), as mergeBucketRuns takes them. Each is
// usually the last running job and becomes the first waiting one by
// moving the seam (its key now, frozen from here on, is above the waiting
// jobs'); sToWaiting places the others (an arrival since the last decision
// or a key tie broken by arrival ahead of it), outside the loop: a call in
// it would make the compiler keep the loop's values on the stack. The
// counts are kept in locals and stored once, for the same reason (the
// stores to slots would make it reload them at every step), and pre is
// grown once and written by index.
func (p *Policy) preemptSeam(sb *sbucket, t int32, scale, now float64, pre []int32) []int32 {
	seq, slots, n := sb.seq, p.slots, sb.nRun
	sb.w += n - t
	np := len(pre)
	pre = slices.Grow(pre, int(n-t))[:np+int(n-t)]
	out := pre[np:]
	// The first waiting job's (key, arrival), the order keyBefore compares
	// (+Inf: none): a job preempted at the seam becomes it, one placed
	// elsewhere leaves it.
	firstKey, firstID := math.Inf(1), int64(0)
	if int(n) < len(seq) {
		fs := &slots[seq[n]]
		firstKey, firstID = fs.key, fs.id
	}
	// seq[t:n] and out indexed alike from 0: the loop then needs no
	// register for t and no bounds check on out, and keeps its values
	// in registers (it reloaded two from the stack at every job).
	part := seq[t:n]
	out = out[:len(part)]
	for i := len(part) - 1; i >= 0; i-- {
		for ; i >= 0; i-- {
			x := part[i]
			out[i] = x
			xs := &slots[x]
			k := scale * clamp0(xs.fin-now) // skey, then frozen
			xs.key = k
			if firstKey < k || firstKey == k && firstID < xs.id {
				break
			}
			xs.moving, xs.rate, xs.serve = false, 0, false // stopRun
			firstKey, firstID = k, xs.id
		}
		if i >= 0 {
			sb.nRun = t + int32(i) + 1
			p.sToWaiting(sb, part[i], now)
		}
	}
	sb.nRun = t
	return pre
}

// startSeam starts sb's first waiting jobs up to t running (setRun; the
// engine calls are the caller's) and writes them to out (t − nRun long,
// grown by the caller in its starts) in that order. Each usually becomes
// the last running job by moving the seam (its fin is above the running
// jobs'); sStartFirst places the others. A job placed elsewhere moves only
// jobs before it, so the ones to start are seq[nRun:t] as they were, each
// written to out as the loop reads it.
//
// The usual start (fin one of finAtMost's two usual answers, after the
// last running job) is the inner loop's, which makes no call: with
// finFar's and sStartFirst's calls in it, the compiler stored four of
// the loop's values on the stack at every start. A start that needs
// either leaves it for startRare. Writing out in the loop spares a
// memmove call per bucket (one-or-all: memmove 20.6 → 14.0 M
// instructions). Nothing is live after the loop (sb.nRun is set to t
// before it, and startRare puts it back after sStartFirst, which reads
// it; the caller grows starts and passes out): while the loop kept the
// grown starts (to return it) and t (to store), the compiler reloaded
// three values from the stack at every start, one now (tenth round,
// srptw48: startSeam 405.5 → 383.0 M instructions on Borg cell B at ρ =
// 0.95, its caller +16 M for the growth moved there).
//
// The usual start's keys, scale × (fin − now) at fin and at f, one ulp
// below, are startRare's scale × clamp0(·) bit for bit: the engine's
// Remaining is at least 0 (it clamps) and now at least 0, so fin =
// now + Remaining rounds to at least now and fin − now is at least +0
// (x − x is +0); f is one ulp below fin only when fin's key exceeds k,
// the job's key, which is at least 0 (need/k times a remaining duration,
// clamped), so then fin > now, f ≥ now (now is a float below fin) and
// f − now ≥ +0, and fin > 0, which makes startRare's guard (fin > 0 or
// no step down) true. Each clamp0 was a comparison, a jump and a zeroing
// at each of the ~8.3 M starts of a replication on Borg cell B at ρ =
// 0.95.
func (p *Policy) startSeam(s *sdk.System, sb *sbucket, t int32, scale, now float64, out []int32) {
	seq, slots, n := sb.seq, p.slots, sb.nRun
	run := seq[n:t]
	out = out[:len(run)] // the same length, which spares the loop out's bounds check
	sb.w -= t - n
	sb.nRun = t // startRare restores it after sStartFirst (nothing is live after the loop)
	rate := 0.0
	if p.crossings {
		rate = scale
	}
	// The last running job's (fin, arrival), the order finBefore compares:
	// a job started at the seam becomes it, one placed elsewhere leaves it.
	lastFin, lastID := math.Inf(-1), int64(0)
	if n > 0 {
		ls := &slots[seq[n-1]]
		lastFin, lastID = ls.fin, ls.id
	}
	for d := 0; d < len(run); d++ {
		for ; d < len(run); d++ {
			x := run[d]
			out[d] = x
			xs := &slots[x]
			// The key read once: read after setRun's stores, it was
			// loaded again (8.3 M instructions on Borg cell B).
			k := xs.key
			xs.since, xs.key0, xs.moving = now, k, true // setRun
			// finAtMost(now+Remaining, now, scale, key) with its two
			// usual cases written out, which it returns exactly (its
			// gallop's first step is the ulp below): the engine's value
			// itself or one ulp down, 49% and 48% of the starts on Borg
			// cell B at ρ = 0.95. Which of the two is a coin toss, so it
			// is chosen without a branch (down, a flag the compiler sets
			// without a jump: as a branch it was mispredicted at half the
			// starts); the rest (fin one ulp down still above, 2.5%) take
			// finFar in startRare. Here fin − now and f − now are never
			// below +0 (see startSeam's comment), so the keys are taken
			// without clamp0 and without finAtMost's guard for fin = 0.
			fin := now + s.Remaining(xs.j)
			down := uint64(0)
			if scale*(fin-now) > k {
				down = 1
			}
			f := math.Float64frombits(math.Float64bits(fin) - down)
			if !(scale*(f-now) <= k) {
				break
			}
			if !(lastFin < f || lastFin == f && lastID < xs.id) {
				break
			}
			xs.fin, xs.rate, xs.serve = f, rate, true
			lastFin, lastID = f, xs.id
		}
		if d < len(run) {
			lastFin, lastID = p.startRare(s, sb, n+int32(d), rate, scale, now, lastFin, lastID)
		}
	}
}

// startRare is startSeam's start of sb.seq[i] (setRun's part done) where
// its inner loop stopped: a fin that finFar must lower, or one not after
// the last running job's (lastFin, lastID), which sStartFirst places
// (setRun again: the same). It returns the last running job's (fin,
// arrival) after the start. Out of startSeam's inner loop so that the
// loop makes no call.
func (p *Policy) startRare(s *sdk.System, sb *sbucket, i int32, rate, scale, now, lastFin float64, lastID int64) (float64, int64) {
	xs := &p.slots[sb.seq[i]]
	fin := now + s.Remaining(xs.j)
	k := xs.key
	down := uint64(0)
	if scale*clamp0(fin-now) > k {
		down = 1
	}
	if f := math.Float64frombits(math.Float64bits(fin) - down); scale*clamp0(f-now) <= k && (fin > 0 || down == 0) {
		fin = f
	} else {
		fin = finFar(fin, now, scale, k)
	}
	xs.fin, xs.rate, xs.serve = fin, rate, true
	if lastFin < fin || lastFin == fin && lastID < xs.id {
		return fin, xs.id
	}
	t := sb.nRun // startSeam's t: sStartFirst reads nRun as the running jobs' end
	sb.nRun = i
	p.sStartFirst(s, sb, now)
	sb.nRun = t
	return lastFin, lastID
}

// finFar is finAtMost(fin0, now, scale, key), computed from where the
// key reaches key instead of searched from fin0 down: the largest fin at
// which scale × (fin − now) is at most key is within an ulp or two of now
// + key/scale, and which of the two ulps around that guess it is follows
// from the key at each, without a branch. The guess is checked (its key
// at most key, the next fin's above, below fin0): the key is monotone in
// fin, so a guess that passes is finAtMost's answer bit for bit, and one
// that does not (rare: about one in 10^4 of TestFinNear's draws over wide
// ranges of instants and keys) takes finAtMost. Why: the
// starts that finAtMost must lower by more than an ulp (2.5% of the
// wide path's on Borg cell B at ρ = 0.95, a job restarted many times)
// took its gallop and bisection, whose steps are coin tosses: 1.4 M
// mispredicted branches a replication, 4% of the run's.
func finFar(fin0, now, scale, key float64) float64 {
	if f, ok := finGuess(fin0, now, scale, key); ok {
		return f
	}
	return finAtMost(fin0, now, scale, key)
}

// finGuess is finFar's guess and whether it passed its check (if so, it
// is finAtMost's answer).
func finGuess(fin0, now, scale, key float64) (float64, bool) {
	above := func(b uint64) uint64 { // 1 if the fin of bit pattern b gives a key above key
		return uint64(bit(scale*clamp0(math.Float64frombits(b)-now) > key))
	}
	g := math.Float64bits(now + key/scale)
	ans := g + 1 - above(g) - above(g+1) // the last of g−1, g, g+1 at most key, if one is
	ok := fin0 > 0 && ans < math.Float64bits(fin0) && above(ans) == 0 && above(ans+1) == 1
	return math.Float64frombits(ans), ok
}

// lastMWide is lastM on the slices, and firstOut's least job outside M
// (-1 if none) found in the same pass over the buckets. A candidate whose
// key is below the second latest's so far cannot be either of the two (the
// order compares keys first), so most are dropped on one comparison of
// keys, without less. A running candidate's key is refreshed (runLast)
// only when its last refreshed value, which its key now cannot exceed
// (running keys only fall), is not below that bound.
//
// This pass compares keys only, with no call in its loop (lastTwo.place's
// call and less inlined made the compiler reload the loop's values from
// the stack at every bucket): while no key it compares equals one it is
// compared with, the order's later parts are never asked and the answer
// is lastMWideTies's. At the first such tie it hands over to
// lastMWideTies from the start, which then refreshes the same keys (those
// refreshed so far are the ones it would, under the same bounds, and a
// refreshed key only passes its bound test if it would have been placed).
func (p *Policy) lastMWide(now float64) (last, second, first int32) {
	if p.wFromWait {
		p.fromWait() // (srptw50carry.go)
	}
	if len(p.occ) > carryBuckets && p.carriedStep(now) {
		return p.carriedWide()
	}
	p.wNew = 0 // read by the decision's first step only (srptw50carry.go)
	occ, sbs, slots, bneed, invK := p.occ, p.sb, p.slots, p.bneed, p.invK
	last, second, first = -1, -1, -1
	lk, sk, fk := math.Inf(-1), math.Inf(-1), math.Inf(1)
	for _, b := range occ {
		sb := &sbs[b]
		n, w, seq := sb.nRun, sb.w, sb.seq
		if w > 0 {
			c := seq[n+w-1]
			if k := slots[c].key; k >= sk {
				switch {
				case k > lk:
					last, second, lk, sk = c, last, k, lk
				case k > sk && k < lk:
					second, sk = c, k
				default:
					return p.lastMWideTies(now)
				}
			}
		}
		if int(n+w) < len(seq) {
			c := seq[n+w]
			if k := slots[c].key; k < fk {
				first, fk = c, k
			} else if k == fk {
				return p.lastMWideTies(now)
			}
		}
		if n > 0 {
			cs := &slots[seq[n-1]]
			if cs.key < sk {
				continue
			}
			k := float64(bneed[b]) * invK * clamp0(cs.fin-now) // keyAt for a running SRPT job
			cs.key = k
			if k >= sk {
				switch {
				case k > lk:
					last, second, lk, sk = seq[n-1], last, k, lk
				case k > sk && k < lk:
					second, sk = seq[n-1], k
				default:
					return p.lastMWideTies(now)
				}
			}
		}
	}
	p.wLast, p.wSK = last, sk
	if len(occ) > carryBuckets {
		p.carryFromWide(last, second, first)
	}
	return last, second, first
}

// carriedWide is lastMWide's answer when srptcarry.go's carry holds
// (carriedStep: M's last job is the recorded L, running, its key
// refreshed to now): L, carriedPass for second (the step's eviction of L,
// if due, is evictWide's, which reads neither second nor first), and -1
// for first when φ, a bound below every key outside M, exceeds L's key
// (no job outside M precedes L), else -2, which has decideSRPT look
// the least one up (firstOut, whose firstOutWide makes its key φ again).
// srptcarry.go's argument holds here as written: the wide path's seams
// move jobs at each bucket's seam as the treap path's do, an arrival joins
// M only ahead of its bucket's last waiting job of M (sInsertWaiting's
// rank below w), and one outside M lowers φ (sInsertWaiting). The record
// the crossing timer reads (wLast, wSK) stays the pass's: L, and κ, which
// bounds the key now of every candidate other than L as wSK did at the
// pass (the claim of srptcarry.go), so crossNone stays exact. Borg cell
// B at ρ = 0.95: the carry holds at 645 k of the 675 k first repair steps
// of a replication's 716 k decisions.
//
// With at most carryBuckets occupied buckets (one-or-all: two) the pass
// costs about what the test and the record cost, and the carry seldom
// holds (63 k of 173 k first steps at λ = 7: M's last changes with the
// wide job's moves), so neither is made: a record not made leaves the
// last one, still valid while M has not changed since (every change
// clears it), and φ is kept either way.
func (p *Policy) carriedWide() (last, second, first int32) {
	x := p.carry.x
	p.wLast, p.wSK = x, p.carry.kap
	first = -2
	if p.carry.phi > p.slots[x].key {
		first = -1
	} else if p.wNew > 0 {
		first = p.wNew - 1 // the least job outside M (srptw50carry.go)
	}
	p.wNew = 0
	return x, carriedPass, first
}

// carryBuckets is the number of occupied buckets up to which lastMWide
// neither tries nor records srptcarry.go's carry (see carriedWide).
const carryBuckets = 2

// lastMWideTies is lastMWide with every comparison the order's whole
// (lastTwo.place, less).
func (p *Policy) lastMWideTies(now float64) (last, second, first int32) {
	t := lastTwo{last: -1, second: -1, lk: math.Inf(-1), sk: math.Inf(-1)}
	first, fk := int32(-1), math.Inf(1)
	slots := p.slots
	for _, b := range p.occ {
		sb := &p.sb[b]
		n, w := sb.nRun, sb.w
		if w > 0 {
			c := sb.seq[n+w-1]
			if k := slots[c].key; k >= t.sk {
				t.place(p, c, k)
			}
		}
		if int(n+w) < len(sb.seq) {
			c := sb.seq[n+w]
			if k := slots[c].key; k < fk || k == fk && p.less(c, first) {
				first, fk = c, k
			}
		}
		if n > 0 {
			c := sb.seq[n-1]
			cs := &slots[c]
			if cs.key < t.sk {
				continue
			}
			k := float64(p.bneed[b]) * p.invK * clamp0(cs.fin-now) // keyAt for a running SRPT job
			cs.key = k
			if k >= t.sk {
				t.place(p, c, k)
			}
		}
	}
	p.wLast, p.wSK = t.last, t.sk
	if len(p.occ) > carryBuckets {
		p.carryFromWide(t.last, t.second, first)
	}
	return t.last, t.second, first
}

// lastTwo is the latest two jobs seen and their keys (-Inf: none yet).
type lastTwo struct {
	last, second int32
	lk, sk       float64
}

// place puts job c of key k, not before the second latest, among the two.
func (t *lastTwo) place(p *Policy, c int32, k float64) {
	switch {
	case k > t.lk || k == t.lk && p.less(t.last, c):
		t.last, t.second, t.lk, t.sk = c, t.last, k, t.lk
	case k > t.sk || p.less(t.second, c):
		t.second, t.sk = c, k
	}
}

// firstOutWide is firstOut on the slices, dropping on one comparison of
// keys the candidates past the second least so far (see lastMWide).
func (p *Policy) firstOutWide() (first, second int32) {
	first, second = -1, -1
	fk, sk := math.Inf(1), math.Inf(1)
	slots := p.slots
	for _, b := range p.occ {
		sb := &p.sb[b]
		i := sb.nRun + sb.w
		if int(i) >= len(sb.seq) {
			continue
		}
		c := sb.seq[i]
		k := slots[c].key
		switch {
		case k > sk:
		case k < fk || k == fk && p.less(c, first):
			first, second, fk, sk = c, first, k, fk
		case k < sk || p.less(c, second):
			second, sk = c, k
		}
	}
	p.carry.phi = fk // the least key outside M (srptcarry.go's φ; carriedWide)
	p.wPhi2 = sk     // the least of the other buckets' (carryAddWide)
	return first, second
}

// bit is 1 if b, else 0, set without a branch (SETcc).
func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keyBefore is tLess(modeKey) on slots: the waiting jobs' order.
func keyBefore(a, b *slot) bool { return a.key < b.key || a.key == b.key && a.id < b.id }

// finBefore is tLess(modeFall) on slots: the running jobs' order.
func finBefore(a, b *slot) bool { return a.fin < b.fin || a.fin == b.fin && a.id < b.id }

// wSize, wAt and wCountLess are the lookups srptfast.go makes in a
// bucket's waiting jobs, on either representation: their number, the one
// of rank r, and how many are ahead of x in the order less.
func (p *Policy) wSize(sb *sbucket) int32 {
	if p.wide {
		return int32(len(sb.seq)) - sb.nRun
	}
	return p.tSize(sb.root)
}

func (p *Policy) wAt(sb *sbucket, r int32) int32 {
	if p.wide {
		return sb.seq[sb.nRun+r]
	}
	return p.tSelect(sb.root, r)
}

func (p *Policy) wCountLess(sb *sbucket, x int32) int32 {
	if p.wide {
		return p.sWaitCountLess(sb, x)
	}
	return p.tCountLess(sb.root, x)
}

// runTail is need bucket b's running job of largest (fin, arrival) under
// SRPT (one run group per bucket; b has running jobs).
func (p *Policy) runTail(b int) int32 {
	if p.wide {
		sb := &p.sb[b]
		return sb.seq[sb.nRun-1]
	}
	return p.tLast(p.rroot[b])
}

// ascendRun puts a bucket's preempted jobs in pre, seg, in the order at the
// decision instant: seg[:k] are preemptSeam's, in that order, and seg[k:]
// the exchange loop's, each the last running job then, so in the reverse
// order and all before seg[:k] (one bucket: the order is (fin, arrival)).
// Rare: an exchange needs an arrival since the last decision ahead of a
// running job.
func ascendRun(seg []int32, k int) {
	slices.Reverse(seg[k:])
	if k > 0 { // seg[k:] to the front: a rotation by three reversals
		slices.Reverse(seg)
		slices.Reverse(seg[:len(seg)-k])
		slices.Reverse(seg[len(seg)-k:])
	}
}

// orderRunsWide puts applySeamsWide's runs in the engine-call order: the
// starts always, the preemptions only where their order can matter
// (System.PreemptionsCommute; else any order leaves the engine the same).
func (p *Policy) orderRunsWide(s *sdk.System, pre, starts []int32) {
	if !s.PreemptionsCommute() {
		p.mergeBucketRuns(pre, p.preEnds, true)
	}
	p.mergeBucketRuns(starts, p.startEnds, false)
}

// mergeBucketRuns puts applySeams's preemptions (pre: true) or starts in
// the order at the decision instant that engineCalls sorts them into
// (cmpWas), by merging runs instead of sorting. applySeams makes the moves
// need bucket by need bucket, and within a bucket preempts from the last
// running job backwards and starts from the first waiting one on, so the
// list is one run per bucket, each in that order (preemptSeam writes the
// preemptions in it, ascendRun puts the exchanges' in it); ends are the
// runs' ends, which applySeams records. While each
// run follows the ones before it, the list is left as it is; from the
// first that does not, mergeFrom takes over. On Borg cell B at ρ = 0.95
// one decision in seven has several runs, nine on average with 200 jobs (a
// wide job's completion restarting narrow jobs of many needs).
func (p *Policy) mergeBucketRuns(list, ends []int32, pre bool) {
	if len(ends) < 2 { // one run or none (most decisions): in order as it is
		return
	}
	done := int32(0) // list[:done] is merged
	for r, end := range ends {
		if done > 0 && p.wasBefore(list[done], list[done-1], pre) {
			p.mergeFrom(list, ends[r:], done, pre)
			return
		}
		done = end
	}
}

// mergeFrom merges list[:done], in order, with the runs ending at ends,
// each in order, building the result in mergeBuf and
// copying it back. The buckets come in descending need, and a job's key is
// its need/k times its remaining duration, so a later run's jobs mostly
// precede the ones merged so far: the merged jobs sit in the middle of
// mergeBuf, a run preceding them all is copied below them, one following
// them all above, and any other is merged downwards from below them
// (mergeDownPre, mergeDownStarts), which stops once the run is placed. A
// run thus costs its length and the merged jobs ahead of its last, instead
// of a copy of all the jobs merged so far there and back.
func (p *Policy) mergeFrom(list, ends []int32, done int32, pre bool) {
	n := len(list)
	p.mergeBuf = slices.Grow(p.mergeBuf[:0], 2*n)[:2*n]
	buf := p.mergeBuf
	lo, hi := n, n+copy(buf[n:], list[:done])
	for _, end := range ends {
		run := list[done:end]
		done = end
		switch {
		case !p.wasBefore(run[0], buf[hi-1], pre): // after every merged job
			hi += copy(buf[hi:], run)
		case !p.wasBefore(buf[lo], run[len(run)-1], pre): // before every one
			lo -= copy(buf[lo-len(run):lo], run)
		case pre:
			lo = p.mergeDownPre(buf, lo, hi, run)
		default:
			lo = p.mergeDownStarts(buf, lo, hi, run)
		}
	}
	copy(list, buf[lo:hi])
}

// mergeDownPre merges run (preempted jobs, in order) with buf[lo:hi] (in
// order), writing from lo − len(run) upwards: a merged job is written at
// or below where it was read, so nothing unread is overwritten, and once
// run is placed the rest of buf[lo:hi] is already in place. It returns the
// new lo. The heads' keys (frozen at the decision instant) are kept in
// locals; equal keys, rare, take wasBefore.
func (p *Policy) mergeDownPre(buf []int32, lo, hi int, run []int32) int {
	slots := p.slots
	o, i, r := lo-len(run), lo, 0
	newLo := o
	x, y := run[0], buf[i]
	xk, yk := slots[x].key, slots[y].key
	for {
		takeX := xk < yk
		if xk == yk {
			takeX = p.wasBefore(x, y, true)
		}
		if takeX {
			buf[o] = x
			o++
			if r++; r == len(run) {
				return newLo
			}
			x = run[r]
			xk = slots[x].key
		} else {
			buf[o] = y
			o++
			if i++; i == hi {
				copy(buf[o:hi], run[r:])
				return newLo
			}
			y = buf[i]
			yk = slots[y].key
		}
	}
}

// mergeDownStarts is mergeDownPre for started jobs: ordered by the key
// they had before starting (key0), then arrival.
func (p *Policy) mergeDownStarts(buf []int32, lo, hi int, run []int32) int {
	slots := p.slots
	o, i, r := lo-len(run), lo, 0
	newLo := o
	x, y := run[0], buf[i]
	xs, ys := &slots[x], &slots[y]
	for {
		if xs.key0 < ys.key0 || xs.key0 == ys.key0 && xs.id < ys.id {
			buf[o] = x
			o++
			if r++; r == len(run) {
				return newLo
			}
			x = run[r]
			xs = &slots[x]
		} else {
			buf[o] = y
			o++
			if i++; i == hi {
				copy(buf[o:hi], run[r:])
				return newLo
			}
			y = buf[i]
			ys = &slots[y]
		}
	}
}

// wasBefore is cmpWas(pre)(a, b) < 0 under the SRPT order, written out
// for the merge: a preempted job's key is frozen at the decision instant
// and every one of them was running with a moving key, so the order is
// (key, rate descending with crossings, fin, arrival); a started job's is
// its frozen key from before the start, key0, then arrival.
func (p *Policy) wasBefore(a, b int32, pre bool) bool {
	sa, sb := &p.slots[a], &p.slots[b]
	if !pre {
		return sa.key0 < sb.key0 || sa.key0 == sb.key0 && sa.id < sb.id
	}
	if sa.key != sb.key {
		return sa.key < sb.key
	}
	if p.crossings {
		if ra, rb := p.cls[sa.class].scale, p.cls[sb.class].scale; ra != rb {
			return ra > rb
		}
	}
	if sa.fin != sb.fin {
		return sa.fin < sb.fin
	}
	return sa.id < sb.id
}
