package serverfilling

import (
	"math"
	"sort"

	"github.com/msjfarm/msjfarm/sdk"
)

// The DivisorFilling-SRPT path: policy divisorfilling-srpt when k = 2^a·3^b
// (every recursion level is Case 1 or Case 2), crossings on or off,
// backfill on or off, and divisorfilling-gittins under the same k when no
// class's rank rises with age (a bucket's running jobs are then one run
// group of srptfast.go, ordered by age; with two classes of one need, a
// bucket per class: classBuckets); O(C · log n) per recursion level when
// no level cuts a mix of needs, never a pass over M. Elsewhere (k with a
// prime factor ≥ 5; Gittins with a rising rank) the general path (decide)
// is taken; see divisor.go.
//
// Why it is tractable for k = 2^a·3^b. Crossing timers are armed only after
// a Case 3 extraction (see Policy), and without a prime factor ≥ 5 in k no
// level is Case 3, so the policy decides at arrivals and completions only
// (Gittins never arms timers; the Case 3 restriction there is only that
// this path does not implement Case 3).
// Between two decisions jobs of different needs pass each other (their
// remaining sizes fall at different rates), but within one need bucket the
// order is kept (srptfast.go): per bucket, its running jobs by (fin,
// arrival), then its waiting jobs by (key, arrival). The served jobs of a
// bucket are a prefix of its jobs in M (divisor.go: every selection takes
// "the first kk" of a union of buckets, and backfill only extends the
// prefixes), so the running jobs of a bucket come first in it at every
// decision (Gittins: ranks never rising, the running jobs of one class
// keep their order by age and only move forward). The one exception is a
// job that arrived since the last decision (SRPT only: under Gittins a new
// job has its class's largest rank): it can precede running jobs of its bucket, and it is then the
// first of the bucket's waiting jobs (every other waiting job was behind
// the bucket's running ones at the last decision and stays behind them).
// So the per-bucket order at a decision is the running treap with at most
// one waiting job inserted at a known rank, then the waiting treap.
//
// The state is srptfast.go's (sbucket: running treap, waiting treap, w the
// waiting jobs in M), with M the first k jobs instead of a need prefix:
//  1. M is repaired at its ends as on that path, by count (add the least
//     outside jobs while M has fewer than k, drop M's last while it has
//     more, exchange while the least outside job precedes M's last; a
//     running job dropped from M is preempted first, as the general path
//     preempts the running jobs it evicts).
//  2. The recursion (divisorfast.go's fill, Case 3 excluded) works on
//     per-bucket rank ranges; the one operation that compares jobs across
//     buckets, "the first kk jobs of the union of some buckets' ranges"
//     (and backfill's weighted version), is a selection over the buckets'
//     sequences (dsCut): take the middle job of the widest remaining
//     window, count the jobs ahead of it in every other bucket (a walk of
//     each treap, O(log n)), and shrink every window accordingly: O(C ·
//     log n) rounds of O(C · log n). A range of one bucket alone is cut by
//     its count, which is the common case (a level that recurses on one
//     need). With exactly the needs k and 1 (one-or-all) the recursion and
//     backfill reduce to three outcomes of M's per-bucket counts (dsOneK),
//     and each bucket is kept as one sorted slice instead of its two
//     treaps (divisoronek.go).
//  3. The result, per bucket how many of its first jobs are served, is
//     applied at each bucket's seam as on srptfast.go (preempt the last
//     running jobs, start the first waiting ones, exchange while an
//     arrival precedes a running job), a run of m jobs in O(m + log n)
//     (one split and one join, divisorseams.go; O(log n) per job that an
//     arrival or a tie puts out of the run's order), and the engine is
//     called in the general path's order: the running
//     jobs M evicted, then the other preemptions, then the starts, each in
//     the order at the decision instant (cmpWas).
//
// The shortcuts are the general path's: an arrival behind a full M changes
// nothing; with backfill on, while every job is in M and served, an
// arrival that fits starts and a completion changes nothing. Exactly the
// general path's decisions: TestDivisorSRPTPathExact,
// TestDivisorGittinsPathExact.
//
// Measured (BenchmarkLevelsDivisorFilling/srpt-, divisorfilling-srpt on
// twoClass2048, cpu-ns/event, medians of 3 on a shared, noisy machine),
// this path / general path, by the L the SRPT order holds at the
// benchmark's rates: L ≈ 9.5: 66 / 76, 95: 73 / 91, 496: 82 / 124, 1390:
// 850 / 14545, 1687: 3666 / 25983, 1953: 4956 / 29332, 2044: 5105 / 30048.
// What grows from L ≈ 1390 on is the engine's starts and preemptions, the
// same on both paths (a wide job's start preempts up to 128 narrow ones):
// per arrival or completion 4.6 at the L ≈ 1390 rate, 6.2, 15 and 24 at
// the next three (trace counts, seed 1), about 200 ns each here (a few
// treap operations: the profile at the highest rate is tInsert, toWaiting,
// runAppend, tDeleteMin, runLast); the selection (dsCut) does not show.
// So per move this path is flat in L; per event it is 5.9 to 17 times
// faster than the general path above L ≈ 1000. Moving each bucket's run
// with one split and one join (divisorseams.go) then took the treap
// operations per move away: see there and docs/design.md for the
// figures.

// dsrpt is the state of the DivisorFilling-SRPT path beyond srptfast.go's
// (nil when the policy takes another).
type dsrpt struct {
	nb   int
	cnt  int     // jobs in M
	need []int32 // per bucket
	bOf  []int32 // per need 1..k: its bucket (-1: none)
	now  float64 // the decision's instant
	oneK bool    // the needs are k and 1 (dsOneK), the buckets kept as slices (divisoronek.go)

	// Two classes of one need (classBuckets): the buckets of b's need are
	// [b, gEnd[b]) when b is the first of them; glo, ghi scratch (dsCase1).
	shared   bool
	gEnd     []int32
	glo, ghi []int32

	srv    []int32 // per bucket: jobs served by the decision being taken
	lo, hi []int32 // per recursion depth, nb entries each: the list's rank ranges
	exc    []int32 // per bucket: rank of its first waiting job in its order (see dsExc; -2: not computed)
	a, z   []int32 // scratch: selection windows
	c      []int32 // scratch: counts ahead of a candidate
	cand   []int32 // scratch: buckets taking part in a selection
	fs     []int32 // scratch: backfill's buckets S

	mergeBuf          []int32 // scratch: dsOrder
	preB, startB      []int   // scratch: where each run moved at once ends
	runPre, runStarts []int32 // scratch: the jobs moved in runs

	moveIDs []int32 // scratch: the one-or-all slices' engine calls, slot ids (divisoronek.go, oneKJobsBuf)
}

// initDivSRPT sets the path up when the policy is DivisorFilling-SRPT with
// k = 2^a·3^b (Init, after the buckets, lpf and initSRPT).
func (p *Policy) initDivSRPT() {
	p.ds = nil
	if p.proc != DivisorFilling || p.static || p.exhaustive || p.allPairs || p.general || p.lpf[p.k] > 3 {
		return
	}
	switch {
	case p.ord == SRPTOrder:
	case p.ord == GittinsOrder && p.monotone:
		// A bucket's running jobs must be one run group: with two classes
		// of one need, one bucket per class (classBuckets), up to
		// maxClassBuckets of them.
		if len(p.cls) != p.nBuckets {
			if len(p.cls) > maxClassBuckets && !p.forceClassBuckets {
				return
			}
			p.classBuckets()
		}
	default:
		return
	}
	nb := p.nBuckets
	// Unlike ServerFilling-SRPT (initSRPT), the path is taken with a class
	// wider than k/2 too: a decision around a wide job moves its bucket
	// runs with one split and one join each (divisorseams.go), so the many
	// jobs it moves cost about what the engine calls for them cost, and
	// this path is the cheaper one (BenchmarkDivisorSRPTPathChoice,
	// cpu-ns/event, treap / general, loaded runs): SRPT on one-or-all
	// (k = 32, needs 1 and 32) 759–767 / 786–813 (before the bulk moves
	// 1414 / 662), at k = 2048 with needs 1 and 2048 7134 / 23485 (before
	// 27.7 / 21.9 µs), 1 and 1024 2938 / 22670, at k = 128 with needs 1 and
	// 128 1185 / 2526; Gittins at k = 2048 with needs 1 and 2048 10622–10658
	// / 23882–25826, at k = 128 with needs 1 and 128 1623–1680 / 2707–2733.
	// Gittins below k = 128 kept the general path until a run's keys and
	// order were learnt in one pass (preemptRun, startRun): on one-or-all
	// the treap path measured 856 / 813–835 before, 610–617 / 676–686
	// after, and with needs 1 and k at k = 32, 64 and 96 540 / 631, 706–710
	// / 1103–1110 and 899–909 / 1589–1590 (two runs each, quiet machine).
	p.sb = make([]sbucket, nb)
	p.rroot = make([]int32, nb)
	for b := range p.sb {
		p.sb[b] = sbucket{root: -1, groups: []int32{int32(b)}}
		p.rroot[b] = -1
	}
	if p.ord == GittinsOrder { // run groups are classes (runGroup)
		for c := range p.cls {
			p.sb[p.cls[c].bucket].groups[0] = int32(c)
		}
	}
	p.nOut = 0
	p.pend = p.pend[:0]
	p.seed = 0x9e3779b9
	p.evicted = p.evicted[:0]

	q := &dsrpt{nb: nb}
	q.need = append(q.need, p.bneed...)
	q.bOf = make([]int32, p.k+1)
	for n := range q.bOf {
		q.bOf[n] = -1
	}
	for b := nb - 1; b >= 0; b-- { // the first bucket of each need
		q.bOf[q.need[b]] = int32(b)
	}
	// Each recursive call divides kk by at least 2: depth ≤ log2 k + 1.
	depth := 2
	for x := p.k; x > 1; x /= 2 {
		depth++
	}
	q.lo, q.hi = make([]int32, depth*nb), make([]int32, depth*nb)
	q.srv, q.exc = make([]int32, nb), make([]int32, nb)
	q.a, q.z, q.c = make([]int32, nb), make([]int32, nb), make([]int32, nb)
	q.cand, q.fs = make([]int32, 0, nb), make([]int32, 0, nb)
	q.oneK = nb == 2 && int(q.need[0]) == p.k && q.need[1] == 1
	q.gEnd = make([]int32, nb)
	for b := nb - 1; b >= 0; b-- {
		q.gEnd[b] = int32(b + 1)
		if b+1 < nb && q.need[b+1] == q.need[b] {
			q.gEnd[b] = q.gEnd[b+1]
			q.shared = true
		}
	}
	if q.shared {
		q.glo, q.ghi = make([]int32, nb), make([]int32, nb)
	}
	p.ds = q
}

// maxClassBuckets is the most classes DivisorFilling-Gittins takes this
// path with when two of them share a need (classBuckets). Its passes over
// the buckets (M's ends, the seams, the selections across buckets) grow
// with the number of classes where the general path's pass over M does
// not: with exponential classes on the 12 power-of-two needs of k = 2048
// at ρ = 0.95 (BenchmarkDivisorGittinsClasses, cpu-ns/event, this path /
// general, one loaded run each), 12 classes 912 / 8431, 64 2204 / 4953,
// 200 5154 / 8448, 300 5519 / 5490, 700 12149 / 11343, 1000 16462 /
// 13950.
const maxClassBuckets = 256

// classBuckets gives each class a bucket of its own, needs in descending
// order (the buckets of one need consecutive, by class index), for
// DivisorFilling-Gittins with two classes of one need. The path needs a
// bucket's running jobs to be one run group, ordered by age; the running
// jobs of two classes of one need are two groups whose order across them
// changes as their ranks fall at different rates. One bucket per class
// keeps everything else as it is: every set the recursion cuts is a union
// of need buckets, hence of these buckets; the served jobs of a need are a
// prefix of its jobs in M, so those of each class are a prefix of the
// class's; and the one place where two buckets of one need must be told
// apart by the order, Case 1's "descending need, ties by the ordering", is
// a selection across them (dsCase1). The general path keeps its need
// buckets (Init); only this path's state is sized by these.
func (p *Policy) classBuckets() {
	order := make([]int, len(p.cls))
	for c := range order {
		order[c] = c
	}
	sort.SliceStable(order, func(a, b int) bool { return p.cls[order[a]].need > p.cls[order[b]].need })
	p.nBuckets = len(p.cls)
	p.bneed = make([]int32, p.nBuckets)
	for b, c := range order {
		p.cls[c].bucket = int32(b)
		p.bneed[b] = p.cls[c].need
	}
	p.counts = make([]int32, p.nBuckets+1)
	p.dfCnt = make([]int32, p.nBuckets)
	p.take = make([]int32, p.nBuckets)
	p.lastRun = make([]int32, p.nBuckets)
}

// allServedDS is the general path's allServed: with backfill on, every job
// in M (none waits outside) and M's total need at most k.
func (p *Policy) allServedDS() bool {
	return p.backfill && p.nOut == 0 && p.sumM <= p.k
}

func (p *Policy) arriveDS(s *sdk.System, i int32) {
	q := p.ds
	if q.oneK {
		p.arriveOneK(s, i)
		return
	}
	sl := &p.slots[i]
	if p.allServedDS() && p.sumM+int(sl.need) <= p.k {
		// Every job is served and j fits too: it just starts (the general
		// path's shortcut); its place among the running jobs is only needed
		// at the next decision (flushPending).
		p.sumM += int(sl.need)
		q.cnt++
		p.maxKey = math.Max(p.maxKey, sl.key)
		p.startPending(s, i)
		return
	}
	sb := &p.sb[sl.bucket]
	var r int32
	sb.root, r = p.tInsert(sb.root, i, modeKey)
	if r < sb.w { // ahead of the bucket's waiting jobs in M: joins M
		sb.w++
		p.sumM += int(sl.need)
		q.cnt++
	} else {
		p.nOut++
	}
	if q.cnt >= p.k && sl.key > p.maxKey {
		// Behind every job of a full M, whose keys have not risen (then
		// r ≥ w above): M and the choice are unchanged.
		return
	}
	p.decideDS(s)
}

func (p *Policy) completeDS(s *sdk.System, i int32) {
	if p.ds.oneK {
		p.completeOneK(s, i)
		return
	}
	all := p.allServedDS()
	sl := &p.slots[i]
	p.unrun(i)
	p.sumM -= int(sl.need)
	p.ds.cnt--
	p.release(i)
	if all {
		return // every other job is still served: nothing to decide
	}
	p.decideDS(s)
}

// decideDS is decide for this path (see the comment at the top).
func (p *Policy) decideDS(s *sdk.System) {
	q := p.ds
	if q.oneK {
		p.decideOneK(s) // the slices (divisoronek.go)
		return
	}
	now := s.Now()
	q.now = now
	p.flushPending()

	// 1. M = the first k jobs, repaired at its ends (by runs of one
	// bucket's waiting jobs, as decideSRPT does by need).
	evicted := p.evicted[:0]
	mLast := int32(-2) // M's last job once repaired (-2: not known)
	for {
		if q.cnt < p.k {
			o, o2 := p.firstOut()
			if o < 0 {
				break
			}
			sb := &p.sb[p.slots[o].bucket]
			n := int32(p.k - q.cnt)
			if o2 >= 0 {
				n = min(n, p.tCountLess(sb.root, o2)-sb.w)
			} else {
				n = min(n, p.tSize(sb.root)-sb.w)
			}
			sb.w += n
			q.cnt += int(n)
			p.sumM += int(n) * int(p.slots[o].need)
			p.nOut -= int(n)
			continue
		}
		last, second, first := p.dsEnds(now, q.cnt == p.k)
		if q.cnt > p.k {
			ls := &p.slots[last]
			if ls.serve {
				// M's last is running: the general path evicts and
				// preempts it. Made waiting, it only moves later among
				// equal keys, so it stays behind M.
				p.toWaiting(last, now)
				evicted = append(evicted, last)
				q.cnt--
				p.sumM -= int(ls.need)
				p.nOut++
			} else {
				sb := &p.sb[ls.bucket]
				n := int32(q.cnt - p.k)
				if second >= 0 {
					n = min(n, sb.w-p.tCountLess(sb.root, second))
				} else {
					n = min(n, sb.w)
				}
				sb.w -= n
				q.cnt -= int(n)
				p.sumM -= int(n) * int(ls.need)
				p.nOut += int(n)
			}
			continue
		}
		if o := first; o >= 0 && p.less(o, last) {
			p.sb[p.slots[o].bucket].w++
			q.cnt++
			p.sumM += int(p.slots[o].need)
			p.nOut--
			continue
		}
		mLast = last // nothing changed since lastM: no second walk
		break
	}
	if mLast == -2 {
		mLast, _, _ = p.dsEnds(now, false)
	}
	maxKey := math.Inf(-1)
	if mLast >= 0 {
		maxKey = p.slots[mLast].key
	}

	// 2. The recursion and backfill, on per-bucket counts.
	if q.oneK {
		p.dsOneK()
	} else {
		nb := q.nb
		lo, hi := q.lo[:nb], q.hi[:nb]
		for b := range nb {
			sb := &p.sb[b]
			lo[b], hi[b], q.srv[b], q.exc[b] = 0, sb.nRun+sb.w, 0, -2
		}
		p.dsFill(0, p.k, 1)
		if p.backfill {
			p.dsFirstFit()
		}
	}

	// 3. Apply at each bucket's seam (as decideSRPT).
	pre, starts := p.applySeamsDS(s, q.srv, now)

	// 4. Engine calls in the general path's order (pre and starts are in
	// it: dsOrder).
	p.engineCallsRuns(s, evicted, pre, starts, false, false)
	p.evicted, p.next, p.starts = evicted[:0], pre[:0], starts[:0]
	p.maxKey = maxKey
	// No crossing timer: for k = 2^a·3^b no level is Case 3 (see Policy).
}

// dsEnds is lastM, M's last job (-1 if none) and the latest of the other
// candidates (keys refreshed), and, if wantFirst, firstOut's least job
// outside M (-1 if none), in one pass over the buckets and on the treaps
// directly (one run group per bucket on this path): the repair of M asks
// for both at once once M has k jobs, and lastM's closure and firstOut's
// second pass were a tenth of these policies' instructions on one-or-all.
func (p *Policy) dsEnds(now float64, wantFirst bool) (last, second, first int32) {
	last, second, first = -1, -1, -1
	for b := range p.sb {
		sb := &p.sb[b]
		if sb.w > 0 {
			last, second = p.dsPut(last, second, p.waitAt(sb.root, sb.w-1))
		}
		if sb.nRun > 0 {
			c := p.tLast(p.rroot[sb.groups[0]])
			p.skey(c, now)
			last, second = p.dsPut(last, second, c)
		}
		if wantFirst && sb.w < p.tSize(sb.root) {
			if c := p.waitAt(sb.root, sb.w); first < 0 || p.less(c, first) {
				first = c
			}
		}
	}
	return last, second, first
}

// waitAt is tSelect(t, r) for t not empty, by a walk down one spine when r
// is the first or the last rank (M's end falls there in most buckets: no
// job of the bucket waits outside M, or none waits in it), which needs no
// subtree sizes.
func (p *Policy) waitAt(t, r int32) int32 {
	switch r {
	case 0:
		return p.tFirst(t)
	case p.tn[t].sz - 1:
		return p.tLast(t)
	}
	return p.tSelect(t, r)
}

// dsPut is lastM's put: c among the latest two jobs so far (-1: none).
func (p *Policy) dsPut(last, second, c int32) (int32, int32) {
	switch {
	case last < 0 || p.less(last, c):
		return c, last
	case second < 0 || p.less(second, c):
		return last, c
	}
	return last, second
}

// dsOneK is dsFill and dsFirstFit when the needs are k and 1 (one-or-all;
// bucket 0 the wide jobs, bucket 1 the narrow ones), where the recursion
// has three outcomes that per-bucket counts of M decide in O(1):
//   - M holds a wide job: it is served alone. Case 1 (M has at least k/6
//     narrow jobs) serves in descending need while the next job fits, and
//     the first wide job takes every server; otherwise every level is
//     Case 2 (Case 3 needs a prime factor ≥ 5) and keeps the wide jobs,
//     their need a multiple of the level's scale times the parity it keeps
//     (k/scale and kk divided alike), down to kk = 1, where Case 1 serves
//     the first of them. Backfill then finds no server free.
//   - No wide job, at least k/6 narrow ones: Case 1 serves all of M.
//   - No wide job, fewer narrow ones: Case 2 recurses on the empty set of
//     jobs of need > 1 and serves nothing; backfill, if on, then serves
//     all of M (fewer than k jobs of need 1).
//
// TestDivisorOneKExact checks it against the general path for several k,
// the structured and random cases of TestDivisorSRPTPathExact include
// one-or-all.
func (p *Policy) dsOneK() {
	q := p.ds
	wd, nr := &p.sb[0], &p.sb[1]
	nw, nn := wd.nRun+wd.w, nr.nRun+nr.w
	switch {
	case nw > 0:
		q.srv[0], q.srv[1] = 1, 0
	case p.backfill || 6*int(nn) >= p.k:
		q.srv[0], q.srv[1] = 0, nn
	default:
		q.srv[0], q.srv[1] = 0, 0
	}
}

// dsFill is divFill (divisor.go) on the list held at depth d (per bucket
// the ranks [lo, hi) of its jobs in M, in the order), kk servers, needs
// divided by scale, as dfast.fill; k = 2^a·3^b, so every level is Case 1
// or Case 2.
func (p *Policy) dsFill(d, kk, scale int) {
	q := p.ds
	nb := q.nb
	lo, hi := q.lo[d*nb:(d+1)*nb], q.hi[d*nb:(d+1)*nb]
	tot := 0
	for b := range nb {
		tot += int(hi[b] - lo[b])
	}
	if tot > kk {
		p.dsCut(lo, hi, false, kk)
		tot = kk
	}
	if tot == 0 || kk < 1 {
		return
	}
	ones := 0
	if b := q.bOf[scale]; b >= 0 {
		for g := b; g < q.gEnd[b]; g++ {
			ones += int(hi[g] - lo[g])
		}
	}
	if 6*ones >= kk {
		if q.shared {
			p.dsCase1(lo, hi, kk, scale)
		} else {
			case1(q.need, q.bOf, q.srv, lo, hi, kk, scale)
		}
		return
	}
	slo, shi := q.lo[(d+1)*nb:(d+2)*nb], q.hi[(d+1)*nb:(d+2)*nb]
	switch case2(q.need, lo, hi, slo, shi, scale) {
	case 2:
		p.dsFill(d+1, kk/2, scale*2)
	case 3:
		p.dsFill(d+1, kk/3, scale*3)
	}
}

// dsCase1 is case1 (divisorfast.go) when some need has several buckets
// (classBuckets): M in descending need while the next job fits, then M's
// other jobs of need scale in the order while servers remain, where the
// jobs of one need are taken in the order across its buckets, the first t
// of them by a selection (dsCutGroup). lo is 0 in every bucket, as in
// case1.
func (p *Policy) dsCase1(lo, hi []int32, kk, scale int) {
	q := p.ds
	rem := kk
	for b := int32(0); b < int32(q.nb); {
		e := q.gEnd[b]
		l := 0
		for g := b; g < e; g++ {
			l += int(hi[g] - lo[g])
		}
		n := int(q.need[b]) / scale
		if l*n <= rem {
			for g := b; g < e; g++ {
				q.srv[g] += hi[g] - lo[g]
			}
			rem -= l * n
			b = e
			continue
		}
		t := rem / n
		p.dsCutGroup(b, e, lo, hi, t)
		rem -= t * n
		break
	}
	if b := q.bOf[scale]; b >= 0 && rem > 0 {
		p.dsCutGroup(b, q.gEnd[b], q.srv, hi, rem)
	}
}

// dsCutGroup serves, on top of srv, the first t jobs in the order of the
// union of the ranges [from, hi) of buckets [b, e), a need's buckets.
func (p *Policy) dsCutGroup(b, e int32, from, hi []int32, t int) {
	q := p.ds
	glo, ghi := q.glo, q.ghi
	clear(glo)
	clear(ghi)
	for g := b; g < e; g++ {
		glo[g], ghi[g] = from[g], hi[g]
	}
	p.dsCut(glo, ghi, false, t)
	for g := b; g < e; g++ {
		q.srv[g] += ghi[g] - glo[g]
	}
}

// dsFirstFit is fillFirstFit (serverfilling.go) on srv, as
// dfast.fillFirstFit: with S the buckets with unserved jobs in M whose need
// fits (largest need nmax), first fit serves S's unserved jobs in the order
// while at least nmax servers stay free (one weighted selection), then the
// next one of S; then S shrinks (the servers left are fewer than nmax). At
// most C rounds.
func (p *Policy) dsFirstFit() {
	q := p.ds
	nb := q.nb
	rem := p.k
	for b := range nb {
		rem -= int(q.srv[b]) * int(q.need[b])
	}
	lo, hi := q.lo[nb:2*nb], q.hi[nb:2*nb] // depth 1's scratch: the recursion is done
	for rem > 0 {
		fs := q.fs[:0]
		nmax, tot := 0, 0
		for b := range nb {
			sb := &p.sb[b]
			lo[b], hi[b] = q.srv[b], q.srv[b]
			if n := int(q.need[b]); n <= rem && q.srv[b] < sb.nRun+sb.w {
				hi[b] = sb.nRun + sb.w
				fs = append(fs, int32(b))
				nmax = max(nmax, n)
				tot += int(hi[b]-lo[b]) * n
			}
		}
		q.fs = fs
		if len(fs) == 0 {
			return
		}
		if tot <= rem-nmax {
			for _, b := range fs {
				q.srv[b] = hi[b]
			}
			return // every job of S served; the others do not fit
		}
		p.dsCut(lo, hi, true, rem-nmax)
		for _, b := range fs {
			rem -= int(hi[b]-q.srv[b]) * int(q.need[b])
			q.srv[b] = hi[b]
		}
		// Some job of S is left (tot > rem − nmax): the next one in the
		// order, the least of each bucket's first unserved one, fits.
		best, bx := int32(-1), int32(-1)
		for _, b := range fs {
			if sb := &p.sb[b]; q.srv[b] < sb.nRun+sb.w {
				if x := p.dsAt(int(b), q.srv[b]); bx < 0 || p.less(x, bx) {
					best, bx = b, x
				}
			}
		}
		q.srv[best]++
		rem -= int(q.need[best])
	}
}

// dsCut cuts the union of the ranges [lo, hi) (ranks in each bucket's
// order) to its longest prefix in the order whose weight is at most bound
// (weight 1 per job, or its need if weighted), setting hi to the cut.
func (p *Policy) dsCut(lo, hi []int32, weighted bool, bound int) {
	q := p.ds
	wt := func(b int32) int {
		if weighted {
			return int(q.need[b])
		}
		return 1
	}
	cand := q.cand[:0]
	for b := range q.nb {
		if hi[b] > lo[b] {
			cand = append(cand, int32(b))
		}
	}
	q.cand = cand
	if len(cand) == 1 {
		b := cand[0]
		hi[b] = min(hi[b], lo[b]+int32(bound/wt(b)))
		return
	}
	// Per bucket the cut lies in [a, z]; each round takes the middle job x
	// of the widest window and learns, from the weight of the jobs up to x,
	// on which side of x every bucket's cut lies.
	a, z, c := q.a, q.z, q.c
	for _, b := range cand {
		a[b], z[b] = lo[b], hi[b]
	}
	for {
		best, width := int32(-1), int32(0)
		for _, b := range cand {
			if z[b]-a[b] > width {
				best, width = b, z[b]-a[b]
			}
		}
		if best < 0 {
			break
		}
		r := a[best] + (width-1)/2
		x := p.dsAt(int(best), r)
		t := (int(r-lo[best]) + 1) * wt(best)
		for _, b := range cand {
			if b == best {
				continue
			}
			c[b] = min(max(p.dsCountLess(int(b), x), lo[b]), hi[b])
			t += int(c[b]-lo[b]) * wt(b)
		}
		if t <= bound { // x and everything before it is in
			a[best] = r + 1
			for _, b := range cand {
				if b != best {
					a[b] = max(a[b], c[b])
				}
			}
		} else { // x and everything after it is out
			z[best] = r
			for _, b := range cand {
				if b != best {
					z[b] = min(z[b], c[b])
				}
			}
		}
	}
	for _, b := range cand {
		hi[b] = a[b]
	}
}

// dsExc returns the rank in bucket b's order (among its jobs in M) of its
// first waiting job when that job precedes some running job of the bucket
// (an arrival since the last decision), else the number of running jobs.
func (p *Policy) dsExc(b int) int32 {
	q := p.ds
	if e := q.exc[b]; e != -2 {
		return e
	}
	sb := &p.sb[b]
	e := sb.nRun
	if sb.w > 0 && sb.nRun > 0 {
		y := p.tFirst(sb.root)
		if p.less(y, p.runLast(sb, q.now)) {
			e = p.runCountLess(p.rroot[sb.groups[0]], y)
		}
	}
	q.exc[b] = e
	return e
}

// dsAt returns the job of rank r in bucket b's order (r below its jobs in
// M), its key current: the running jobs with at most one waiting job
// inserted (dsExc), then the waiting jobs.
func (p *Policy) dsAt(b int, r int32) int32 {
	sb := &p.sb[b]
	e := p.dsExc(b)
	switch {
	case r < e:
		x := p.tSelect(p.rroot[sb.groups[0]], r)
		p.skey(x, p.ds.now)
		return x
	case r == e:
		return p.tFirst(sb.root)
	case r <= sb.nRun:
		x := p.tSelect(p.rroot[sb.groups[0]], r-1)
		p.skey(x, p.ds.now)
		return x
	}
	return p.tSelect(sb.root, r-sb.nRun)
}

// dsCountLess is the number of bucket b's jobs in M ahead of job x (of
// another bucket, its key current) in the order.
func (p *Policy) dsCountLess(b int, x int32) int32 {
	sb := &p.sb[b]
	return p.runCountLess(p.rroot[sb.groups[0]], x) + min(sb.w, p.tCountLess(sb.root, x))
}

// runCountLess is the number of jobs of running treap t ahead of job x,
// their keys refreshed on the way (the treap's (fin, arrival) order is the
// order now among the jobs of one bucket).
func (p *Policy) runCountLess(t, x int32) int32 {
	now := p.ds.now
	n := int32(0)
	for t >= 0 {
		p.skey(t, now)
		if p.less(t, x) {
			n += 1 + p.tSize(p.tn[t].l)
			t = p.tn[t].r
		} else {
			t = p.tn[t].l
		}
	}
	return n
}
