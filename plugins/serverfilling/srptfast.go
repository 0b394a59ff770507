package serverfilling

import (
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The ServerFilling-SRPT path, also taken by ServerFilling-Gittins when no
// class's rank rises with age, when no class needs more than k/2 servers
// (see initSRPT for why and the measurements): O(C · log n) per event (C need buckets, or
// classes for Gittins; n jobs in system) plus O(log n) per start,
// preemption and job entering or leaving M, never a pass over M.
//
// Gittins: a running job's key is need/k × G(attained service), G its
// class's rank function. Running jobs of one class age at the same rate
// under the same G, so if G never rises their order by key is the order of
// their attained service (the older first, i.e. by since − age, fixed while
// running), and keys never rise, so the SRPT argument below holds with the
// running jobs grouped per class (run groups, see runGroup) instead of per
// need; classes of constant rank keep arrival order. Ranks that rise with
// age (hyperexponential, Weibull of shape < 1) take gittinsrise.go's
// search instead: see the package comment for why.
//
// The invariant that makes it incremental. A job's key is its remaining
// size r = need/k × remaining duration. It is frozen while the job waits and
// falls at rate need/k while it runs, so two running jobs of the same need
// (one bucket) fall at the same rate and keep both their difference and
// their order for as long as both run; a running job only moves forward past
// waiting jobs. Within one bucket the served jobs are the first take[b] of
// the bucket's jobs in M (takes), and M's jobs of the bucket are a prefix of
// the bucket's order (M is a prefix of the global order). Hence, at every
// decision and between decisions, each bucket's order is
//
//	[its running jobs, in the order they keep while running]
//	[its waiting jobs by (frozen key, arrival index)],
//
// M ∩ bucket is the running jobs plus the first w_b waiting jobs, and a
// decision only changes this at the seams: a start takes the least waiting
// job to the end of the running jobs, a preemption puts the last running job
// back as the least waiting one (its key at that instant, then frozen), an
// arrival is inserted among the waiting jobs (or, when every job fits and is
// served, among the running ones), and a completion removes a running job. Since running jobs only move forward and everything outside
// M waits, every job of M stays ahead of every job outside it between
// decisions, so M is still downward closed at the next decision; what can
// have changed is which job of M is last (jobs of different needs run at
// different rates), so M may now hold a job it no longer needs, and an
// arrival may land ahead of M's last job. The decision repairs M at its
// ends only: while M's total is below k, add the least job outside; while
// it reaches k without its last job, drop that job; while the least job
// outside precedes M's last, add it. M's last job is the latest of the C
// per-bucket last jobs of M, the least outside job the least of C
// per-bucket candidates; each is one order-statistics lookup in the bucket's
// waiting set (a treap with subtree sizes, keyed like the general path's
// heap, see treap below). The takes are computed from the per-bucket counts
// exactly as in the general path and applied bucket by bucket at the seams.
//
// The crossing timer needs, per bucket, only the running job of largest
// (fin, arrival), the last running one (crossAt is monotone in y's key
// among jobs of one rate); the general path takes the same candidates, so
// the timers are the same numbers by construction.
//
// The order is total (srptfastorder.go), so the general path's order at a
// decision does not depend on the order it had before, and this path, whose
// treaps hold exact keys, reproduces it. One representational freedom is
// left: a job preempted at a decision came first among jobs of its key
// while it ran (a moving key first) and is ordered by arrival among them
// once it waits, so it may land in its bucket's waiting treap behind jobs
// of the same key and need that are outside M. The count w then takes the
// first of those into M in its place: same need and key, so M's total,
// its last key and every later choice are the same (and the next decision
// rebuilds the true prefix in both paths).
//
// Engine calls are made in the general path's order (jobs that left M,
// then the other preemptions, then the starts, each in the order of the
// keys at the decision instant), and every key is computed with the general
// path's arithmetic, so the decision trace is identical:
// TestEquivalentToReference checks it against the frozen pre-rework
// implementation, TestShortcutsExact against the general path without
// shortcuts and TestCrossingTimersSuffice against the all-pairs timers.

// sbucket is one need bucket of the SRPT path.
type sbucket struct {
	groups []int32 // its run groups (see runGroup)
	nRun   int32   // running jobs
	root   int32   // waiting jobs: treap on (key, arrival index)
	w      int32   // the first w waiting jobs are in M
	// seq: on the wide path (srptwide.go) the running then the waiting
	// jobs, in place of the treaps. (ServerFilling's treap path under
	// SRPT keeps its running jobs in Policy.runs, srptrun.go, not here:
	// sbucket's size sets the stride of the bucket loops, and 136 bytes
	// instead of 112 cost the wide path 0.9% more instructions on
	// BenchmarkLoads.)
	seq   []int32
	front []int32 // ServerFilling's treap path: the first waiting jobs, descending (srptfront.go)

	// last is the bucket's last running job (-1: none) while lastOK, on
	// ServerFilling's treap path with one run group per bucket (runLast);
	// always known with the runSets (srptrun.go).
	last   int32
	lastOK bool

	// kept, on ServerFilling's treap path: the waiting jobs of ranks
	// kept[i].r − 1 (0: none), updated as jobs enter and the first one
	// leaves, forgotten when a run moves (wAtKept).
	kept [2]struct{ r, x int32 }
}

// initSRPT sets the SRPT path up (Init, after the buckets). Its treaps
// are taken only when no class needs more than k/2 servers. A decision around a
// wide job moves many narrow ones at once (its start preempts the jobs on
// up to need servers, its completion starts as many), and a move costs this
// path a few treap operations, several times what the general path spends
// per job of M in its one pass. Measured with BenchmarkPathChoice
// (ServerFilling-SRPT, cpu-ns/event, GOMAXPROCS=1, 10^5 arrivals, engine
// 0.5.0), fast / general: two classes (need 1 and a wide need, ρ = 0.97)
// at k = 2048 with the wide need k/16: 517 / 11297, k/4: 1194 / 12853,
// k/2: 3229 / 13867, k: 43295 / 28390; at k = 256, k/4: 517 / 1798, k/2:
// 693 / 2002; at k = 32, k/4: 389 / 451, k/2: 403 / 438; one-or-all (need
// k = 32, λ = 7): 1495 / 607; Borg cell B (needs up to 2000 of 2048, λ =
// 4.5): 3991 / 3225. So the treaps win up to k/2 and lose with a class
// of need above it. The decisions are the same either way. Beyond k/2
// ServerFilling-SRPT takes this path with each bucket kept as one slice
// instead of its treaps (srptwide.go, wideSRPT), where a move costs O(1);
// Gittins of ranks that are not constant takes the general path there.
func (p *Policy) initSRPT() {
	maxNeed := int32(0)
	for _, c := range p.cls {
		maxNeed = max(maxNeed, c.need)
	}
	p.fastSRPT = p.proc == ServerFilling && !p.exhaustive && !p.allPairs && !p.general && !p.static &&
		(p.ord == SRPTOrder || p.ord == GittinsOrder && p.monotone) &&
		(p.forceFast || 2*int(maxNeed) <= p.k || p.wideSRPT(maxNeed))
	p.wide = p.fastSRPT && p.wideSRPT(maxNeed)
	if !p.fastSRPT {
		return
	}
	p.sb = make([]sbucket, p.nBuckets)
	for b := range p.sb {
		p.sb[b] = sbucket{root: -1}
	}
	p.live = make([]uint64, (p.nBuckets+63)/64)
	p.occ, p.occStale = p.occ[:0], false
	p.carry.x = -1 // no record yet (srptcarry.go), on either path that reads it
	if p.ord == SRPTOrder {
		p.rroot = make([]int32, p.nBuckets)
		for b := range p.sb {
			p.sb[b].groups = []int32{int32(b)}
		}
	} else {
		p.rroot = make([]int32, len(p.cls))
		for c := range p.cls {
			b := p.cls[c].bucket
			p.sb[b].groups = append(p.sb[b].groups, int32(c))
		}
	}
	for g := range p.rroot {
		p.rroot[g] = -1
	}
	p.initRuns()
	p.nOut = 0
	p.pend = p.pend[:0]
	p.seed = 0x9e3779b9
	p.evicted = p.evicted[:0]
}

// skey refreshes a running job's key to its value now (keyAt, the general
// path's arithmetic) and returns the slot.
func (p *Policy) skey(i int32, now float64) *slot {
	sl := &p.slots[i]
	sl.key = p.keyAt(sl, now)
	return sl
}

// runGroup is the treap of running jobs job sl belongs to: its need bucket
// under SRPT (one rate per need), its class under Gittins (one rank
// function per class).
func (p *Policy) runGroup(sl *slot) int32 {
	if p.ord == SRPTOrder {
		return sl.bucket
	}
	return sl.class
}

// flushPending places the jobs started by the every-job-served arrival
// shortcut among the running jobs (before anything reads their order). So
// a job that arrives and completes while every job is served costs O(1),
// and each job is placed at most once per start. Short enough to inline:
// at most decisions there is none to place (at the L = 5000 rate of
// BenchmarkLevels the call and its store of the empty list were ~18
// instructions a decision).
func (p *Policy) flushPending() {
	if len(p.pend) > 0 {
		p.flushPendingJobs()
	}
}

// flushPendingJobs is flushPending's work, when there are jobs to place.
func (p *Policy) flushPendingJobs() {
	for _, i := range p.pend {
		sl := &p.slots[i]
		sl.pend = 0
		p.sb[sl.bucket].nRun--
		p.runAppend(i)
	}
	p.pend = p.pend[:0]
}

// runAppend adds job i, started (setRun: fin is set), to its bucket's
// running jobs. When the kept last job precedes it, i goes at the treap's
// end without a comparison or a split (tAppend): at k = 2048 past
// saturation (BenchmarkLevels, the L = 1300 and 5000 rates) 47% of the
// starts do, the others land anywhere. Under SRPT on this path the
// bucket's runSet takes it instead of the treap (srptrun.go).
func (p *Policy) runAppend(i int32) {
	sl := &p.slots[i]
	sb := &p.sb[sl.bucket]
	if p.usesFront() { // the blocks (srptrun.go)
		p.runsAdd(sb, &p.runs[sl.bucket], i)
		return
	}
	g := p.runGroup(sl)
	sb.nRun++
	sl.serve = true
	if sb.lastOK && sb.last >= 0 {
		if v, id := p.tKey(i, modeFall); nodeBefore(&p.tn[sb.last], v, id) {
			p.rroot[g] = p.tAppend(p.rroot[g], i, modeFall)
			sb.last = i
			return
		}
	}
	p.rroot[g] = p.tAdd(p.rroot[g], i, modeFall)
	if sb.lastOK && sb.last < 0 {
		sb.last = i
	}
}

// runRemove takes job i out of its bucket's running jobs.
func (p *Policy) runRemove(i int32) {
	sl := &p.slots[i]
	g := p.runGroup(sl)
	sb := &p.sb[sl.bucket]
	switch {
	case p.usesFront(): // the blocks (srptrun.go)
		p.runsRemove(sb, &p.runs[sl.bucket], sl, i)
		return
	case sb.lastOK && sb.last == i:
		// The kept last job leaves (a preemption, mostly): its removal
		// finds the next one on the way.
		p.rroot[g], sb.last = p.tDeleteLast(p.rroot[g])
	default:
		// A completion, mostly: under SRPT the bucket's first running
		// job, the one of least fin (tDeleteFirst; else the search).
		ok := false
		if p.ord == SRPTOrder {
			p.rroot[g], ok = p.tDeleteFirst(p.rroot[g], i)
		}
		if !ok {
			p.rroot[g] = p.tDelete(p.rroot[g], i, modeFall)
		}
		if sb.last == i {
			sb.lastOK = false
		}
	}
	sb.nRun--
	sl.serve = false
}

// runLast is the bucket's last running job (-1 if none), its key
// refreshed: the latest of its run groups' last jobs. On ServerFilling's
// treap path with one run group per bucket (every bucket under SRPT) it is
// kept in sb.last between walks: a start makes the job last if it follows
// the last one in the treap's order (runAppend), and only the last job's
// leaving (runRemove) or a run moved at once (applySeams) makes the next
// call walk the treap again. The treap's order is the bucket's running
// order (fin, arrival), so the kept job is the walk's, and a decision's
// several calls (the repair loop, the exchanges, the crossing timer) walk
// once. With the runSets (srptrun.go) it is always kept.
func (p *Policy) runLast(sb *sbucket, now float64) int32 {
	if p.wide {
		if sb.nRun == 0 {
			return -1
		}
		c := sb.seq[sb.nRun-1]
		p.refreshSRPT(&p.slots[c], now)
		return c
	}
	if sb.lastOK {
		if c := sb.last; c >= 0 && p.ord == SRPTOrder {
			p.refreshSRPT(&p.slots[c], now)
		} else if c >= 0 {
			p.skey(c, now)
		}
		return sb.last
	}
	last := int32(-1)
	for _, g := range sb.groups {
		r := p.rroot[g]
		if r < 0 {
			continue
		}
		c := p.tLast(r)
		p.skey(c, now)
		if last < 0 || p.less(last, c) {
			last = c
		}
	}
	if p.fastSRPT && len(sb.groups) == 1 {
		sb.last, sb.lastOK = last, true
	}
	return last
}

// allServedSRPT is allServed for this path.
func (p *Policy) allServedSRPT() bool { return p.nOut == 0 && p.sumM <= p.k }

// startPending starts arrival i while every job is served: it stays so
// until a decision, and the job's place among its bucket's running ones is
// only needed then (flushPending).
func (p *Policy) startPending(s *sdk.System, i int32) {
	sl := &p.slots[i]
	p.start(s, sl, s.Now())
	// It joins M running, with any key: no carry (srptcarry.go).
	p.carry.x = -1
	if p.wide { // a binary search and a short copy: placed at once
		p.sInsertRunning(&p.sb[sl.bucket], i)
		return
	}
	sl.serve = true
	p.sb[sl.bucket].nRun++
	p.pend = append(p.pend, i)
	sl.pend = int32(len(p.pend))
}

func (p *Policy) arriveSRPT(s *sdk.System, i int32) {
	sl := &p.slots[i]
	if p.allServedSRPT() && p.sumM+int(sl.need) <= p.k {
		p.sumM += int(sl.need)
		p.maxKey = math.Max(p.maxKey, sl.key)
		p.startPending(s, i)
		return
	}
	sb := &p.sb[sl.bucket]
	var r int32
	if p.wide {
		r = p.sInsertWaiting(sb, i)
	} else if p.usesFront() {
		r = p.waitInsert(sb, i)
		if r >= sb.w { // outside M: the carry's bound on those keys (srptcarry.go)
			p.carry.phi = min(p.carry.phi, sl.key)
		}
	} else {
		sb.root, r = p.tInsert(sb.root, i, modeKey)
		sb.keptInsert(r, i)
	}
	if r < sb.w { // ahead of the bucket's boundary in M: joins M
		sb.w++
		p.sumM += int(sl.need)
	} else {
		p.nOut++
	}
	if p.full() && sl.key > p.maxKey {
		return // behind every job of M, whose keys have not risen: M unchanged
	}
	p.decideSRPT(s)
}

// unrun takes completed job i out of its bucket's running jobs: out of
// the pending list if it was never placed in its treap (flushPending),
// else out of the treap.
func (p *Policy) unrun(i int32) {
	sl := &p.slots[i]
	if p.wide {
		p.sRemoveRunning(&p.sb[sl.bucket], i)
		return
	}
	if sl.pend > 0 { // never placed: swap it out of the pending list
		k := sl.pend - 1
		last := p.pend[len(p.pend)-1]
		p.pend[k] = last
		p.slots[last].pend = k + 1
		p.pend = p.pend[:len(p.pend)-1]
		sl.serve = false
		p.sb[sl.bucket].nRun--
		return
	}
	if p.runs != nil { // usesFront (initRuns); a completion: runRemove's case for the runSets, without its tests
		p.runsRemove(&p.sb[sl.bucket], &p.runs[sl.bucket], sl, i)
		return
	}
	p.runRemove(i)
}

func (p *Policy) completeSRPT(s *sdk.System, i int32) {
	all := p.allServedSRPT()
	sl := &p.slots[i]
	p.unrun(i)
	p.sumM -= int(sl.need)
	p.release(i)
	if all {
		return // still all served: nothing to decide
	}
	p.decideSRPT(s)
}

// lastM returns M's last job in the order now (-1 if M is empty): per
// bucket the later of its last running job and its last waiting job in M
// (an arrival since the last decision can precede running jobs); and the
// latest of the other candidates (-1 if none), each the last of its own
// sequence, so M's jobs of last's sequence that follow it are last's
// sequence's run at M's end.
func (p *Policy) lastM(now float64) (last, second int32) {
	if p.wide {
		last, second, _ = p.lastMWide(now)
		return last, second
	}
	last, second = -1, -1
	put := func(c int32) {
		switch {
		case last < 0 || p.less(last, c):
			last, second = c, last
		case second < 0 || p.less(second, c):
			second = c
		}
	}
	for b := range p.sb {
		sb := &p.sb[b]
		if sb.w > 0 {
			put(p.wAtKept(sb, sb.w-1))
		}
		if sb.nRun > 0 {
			put(p.runLast(sb, now))
		}
	}
	return last, second
}

// firstOut returns the least job outside M (-1 if none) and the least of
// the other buckets' first jobs outside M (-1 if none).
func (p *Policy) firstOut() (first, second int32) {
	if p.wide {
		return p.firstOutWide()
	}
	first, second = -1, -1
	for b := range p.sb {
		sb := &p.sb[b]
		if sb.w >= p.waitSize(sb) {
			continue
		}
		c := p.wAtKept(sb, sb.w)
		switch {
		case first < 0 || p.less(c, first):
			first, second = c, first
		case second < 0 || p.less(c, second):
			second = c
		}
	}
	return first, second
}

// wAtKept is wAt (the bucket's waiting job of rank r) keeping the last two
// answers on ServerFilling's treap path, where every change to the waiting
// treap forgets them (arriveSRPT, toWaiting, applySeams): a decision asks
// for the same ranks several times (M's last and first outside per bucket
// in each repair step and again for maxKey, the least waiting job in the
// exchanges and for the stopper), and a bucket whose waiting jobs did not
// change since the last decision (the wide bucket, when a narrow job
// arrives or completes) answers from the last one. DivisorFilling changes
// these treaps in divisorseams.go as well, so it walks every time.
func (p *Policy) wAtKept(sb *sbucket, r int32) int32 {
	if !p.fastSRPT || p.wide {
		if r == 0 && !p.wide {
			return p.tFirst(sb.root) // the walk applySeams took before
		}
		return p.wAt(sb, r)
	}
	n := int32(len(sb.front)) // the front's ranks first (srptfront.go)
	if r < n {
		return sb.front[n-1-r]
	}
	r -= n
	switch r + 1 {
	case sb.kept[0].r:
		return sb.kept[0].x
	case sb.kept[1].r:
		return sb.kept[1].x
	}
	x := p.tSelect(sb.root, r)
	sb.kept[1] = sb.kept[0]
	sb.kept[0].r, sb.kept[0].x = r+1, x
	return x
}

// keptInsert updates the kept ranks (wAtKept) for job x inserted at rank
// r of the waiting treap: the jobs from rank r on move one rank up, those
// before keep theirs, and x is kept. So a preempted job, inserted at rank
// 0 as a rule, answers the exchange loop's next look at the least waiting
// job.
func (sb *sbucket) keptInsert(r, x int32) {
	for i := range sb.kept {
		if sb.kept[i].r > r { // rank ≥ r
			sb.kept[i].r++
		}
	}
	sb.kept[1] = sb.kept[0]
	sb.kept[0].r, sb.kept[0].x = r+1, x
}

// keptDeleteMin updates the kept ranks for the waiting treap's first job
// removed: it is forgotten, the others move one rank down.
func (sb *sbucket) keptDeleteMin() {
	for i := range sb.kept {
		if sb.kept[i].r > 0 {
			sb.kept[i].r--
		}
	}
}

// tCountLess is the number of jobs of waiting treap t ahead of job x in the
// order (less; x in any state): a prefix of t, since t is in that order.
func (p *Policy) tCountLess(t, x int32) int32 {
	n := int32(0)
	for t >= 0 {
		if p.less(t, x) {
			n += 1 + p.tSize(p.tn[t].l)
			t = p.tn[t].r
		} else {
			t = p.tn[t].l
		}
	}
	return n
}

// toWaiting turns running job i into a waiting one (its key now, frozen
// from here on) and returns its bucket.
func (p *Policy) toWaiting(i int32, now float64) *sbucket {
	if p.wide {
		sb := &p.sb[p.slots[i].bucket]
		p.sToWaiting(sb, i, now)
		return sb
	}
	sl := p.skey(i, now)
	p.runRemove(i)
	p.stopRun(sl, now)
	sb := &p.sb[sl.bucket]
	if p.usesFront() {
		p.waitInsert(sb, i)
		return sb
	}
	var r int32
	sb.root, r = p.tInsert(sb.root, i, modeKey)
	if p.fastSRPT {
		sb.keptInsert(r, i)
	}
	return sb
}

// decideSRPT is decide for this path (see the comment at the top).
func (p *Policy) decideSRPT(s *sdk.System) {
	now := s.Now()

	p.flushPending()
	if p.occStale {
		p.listOccupied()
	}

	// 1. Repair M at its ends.
	evicted := p.evicted[:0]
	last := int32(-1) // M's last job, when fresh is set
	fresh := false
	// Waiting jobs enter and leave M in runs: while M is short, the least
	// outside job's bucket gives all its jobs ahead of the other buckets'
	// least (up to the need missing); while M has a job too many, the
	// waiting run at M's end that follows every other sequence's last goes
	// (down to the surplus). Same result as one job at a time, in O(C log n)
	// per run instead of per job.
	for {
		fresh = false
		if p.sumM < p.k {
			if !p.growM() {
				break
			}
			continue
		}
		// The wide path and the runSets' find M's least outside job in the
		// same pass (first: -2 until looked up).
		second, first := int32(-1), int32(-2)
		switch {
		case p.wide:
			last, second, first = p.lastMWide(now)
		case p.runs != nil:
			last, second, first = p.lastFirstRuns(now)
		default:
			last, second = p.lastM(now)
		}
		fresh = true
		ls := &p.slots[last]
		if p.sumM-int(ls.need) >= p.k {
			if ls.serve && p.runs != nil {
				// With the steps that would follow; the carry moves to
				// the bucket's next running job (srptdecide.go).
				evicted = p.evictRuns(last, now, evicted)
				fresh = false
				continue
			}
			if ls.serve && p.wideCarry() {
				// The carry moves to the bucket's next running job when it
				// can (srptw50carry.go).
				evicted = p.evictWide(last, now, evicted)
				fresh = false
				continue
			}
			p.carry.x = -1 // M changes (srptcarry.go)
			if ls.serve {
				p.toWaiting(last, now) // M's last: it lands just after M's waiting jobs
				evicted = append(evicted, last)
				p.sumM -= int(ls.need)
				p.nOut++
			} else {
				sb := &p.sb[ls.bucket]
				need := ls.need
				n := int32(p.sumM-p.k) / need // surplus, in jobs of this need
				if second >= 0 {
					n = min(n, sb.w-p.waitCountLess(sb, second))
				} else {
					n = min(n, sb.w)
				}
				sb.w -= n
				p.sumM -= int(n * need)
				p.nOut += int(n)
			}
			fresh = false
			continue
		}
		if first == -2 {
			first, _ = p.firstOut()
		}
		if o := first; o >= 0 && p.less(o, last) {
			if p.wide {
				p.carryAddWide(o, second) // M changes (srptw50carry.go)
			} else {
				p.carryAdd(o) // M changes (srptcarry.go)
			}
			p.sb[p.slots[o].bucket].w++
			p.sumM += int(p.slots[o].need)
			p.nOut--
			fresh = false
			continue
		}
		break
	}

	// M's last job in the order at the decision instant, with the rates
	// before this decision's preemptions and starts (the general path's
	// merge order): maxKey and the crossing timer's boundary job. The
	// repair loop's last look is still valid if it changed nothing since.
	if !fresh {
		last, _ = p.lastM(now)
	}
	maxKey := math.Inf(-1)
	if last >= 0 {
		maxKey = p.slots[last].key
	}

	// 2. The takes, applied at each bucket's seam.
	var pre, starts []int32
	if p.wide {
		pre, starts = p.applySeamsWide(s, evicted, now)
	} else if p.runs != nil { // the takes too (mid50seams.go)
		pre, starts = p.applySeamsRuns(s, now)
	} else {
		sbs := p.sb // in locals: the stores to cnt made p.sb reload per bucket
		cnt := p.counts[:len(sbs)]
		for b := range sbs {
			cnt[b] = sbs[b].nRun + sbs[b].w
		}
		pre, starts = p.applySeams(s, p.takes(cnt), now)
	}
	p.setStopper()

	// 3. Engine calls in the general path's order.
	if p.wide {
		p.orderRunsWide(s, pre, starts)
		p.engineCallsRuns(s, evicted, pre, starts, false, false)
	} else { // with the runSets, starts sorted unless from one bucket (mid50seams.go)
		p.engineCallsRuns(s, evicted, pre, starts, true, p.runs == nil || p.startsMixed(starts))
	}
	p.evicted, p.next, p.starts = evicted[:0], pre[:0], starts[:0]
	p.maxKey = maxKey

	// 4. Crossing timer.
	if p.kinetic() {
		if p.runs != nil {
			p.armCrossingRuns(s, now, last)
		} else {
			p.armCrossingSRPT(s, now, last)
		}
	}
}

// setStopper sets p.idle to the servers the takes leave idle and, under
// PackStop while some idle, p.stopper to the job that stopped the packing:
// the cut bucket's least waiting job (-1: none). The stopper is read only
// while servers idle (crossStopper and armCrossing test p.idle > 0), so
// with none idle it is left at -1 without its look-up: the same timers.
// At the L = 5000 rate of BenchmarkLevels no server idles at nearly every
// decision, and the look-up, its tests and crossStopper's call were ~50
// instructions a decision. Short enough to inline; findStopper is the
// rest.
func (p *Policy) setStopper() {
	p.stopper, p.idle = -1, p.rem
	if p.rem > 0 {
		p.findStopper()
	}
}

// findStopper is setStopper's look-up, with servers idle.
func (p *Policy) findStopper() {
	if p.packing == PackStop && int(p.cut) < p.nBuckets && p.sb[p.cut].w > 0 {
		p.stopper = p.wAtKept(&p.sb[p.cut], 0)
	}
}

// growM is the repair's step while M is short (decideSRPT): the least
// outside job's bucket gives all its jobs ahead of the other buckets' least,
// up to the need missing. It reports false if no job is outside M.
func (p *Policy) growM() bool {
	p.carry.x = -1 // M changes, or is not full (srptcarry.go)
	o, o2 := p.firstOut()
	if o < 0 {
		return false
	}
	sb := &p.sb[p.slots[o].bucket]
	need := int32(p.slots[o].need)
	n := (int32(p.k-p.sumM) + need - 1) / need // jobs of this need M lacks
	if o2 >= 0 {
		n = min(n, p.waitCountLess(sb, o2)-sb.w)
	} else {
		n = min(n, p.waitSize(sb)-sb.w)
	}
	sb.w += n
	p.sumM += int(n * need)
	p.nOut -= int(n)
	return true
}

// applySeams moves each need bucket's seam to take[b] running jobs: it
// preempts the bucket's last running jobs beyond it and starts its first
// waiting ones up to it, then exchanges while the bucket's least waiting
// job precedes its last running one. Arrivals since the last decision can
// precede running jobs of their bucket; the last running job is always one
// that ran before this decision: a job started here has a key at most its
// frozen one and runs (srptfastorder.go), so it stays ahead of every
// waiting job it was ahead of, and the order is total, so each exchange is
// a strict improvement and the loop ends. It returns the preempted and the
// started jobs (setRun already called for each start; the engine calls are
// the caller's, in order).
//
// On the runSets' path decideSRPT makes the takes and the seams in one
// pass (applySeamsRuns, mid50seams.go) and no simulation comes here; the
// runSets' branches here and in seamSingles (exchangeRuns) stay as that
// pass's reference in TestApplySeamsRuns, the form it replaced. Removing
// them changed the compiler's register use in seamSingles and cost
// DivisorFilling-SRPT on borg-b-pow2, which runs seamSingles at most
// decisions, 57 M instructions (+0.17%; cachegrind, one replication).
func (p *Policy) applySeams(s *sdk.System, take []int32, now float64) (pre, starts []int32) {
	pre, starts = p.next[:0], p.starts[:0]
	for b := range p.sb {
		sb := &p.sb[b]
		if sb.nRun == take[b] && (sb.w == 0 || sb.nRun == 0) {
			continue // nothing to move or exchange (as in applySeamsDS)
		}
		if p.runs != nil { // usesFront (TestApplySeamsRuns' reference only, see below); the runs' moves see to the front
			if sb.nRun-take[b] >= seamRun {
				pre = p.preemptRunBlocks(sb, b, take[b], now, pre)
				sb.kept = [2]struct{ r, x int32 }{}
			}
			if take[b]-sb.nRun >= seamRun {
				starts = p.startRunBlocks(s, sb, b, take[b]-sb.nRun, now, starts)
				sb.kept = [2]struct{ r, x int32 }{}
			}
		} else if len(sb.groups) == 1 && sb.nRun-take[b] >= seamRun {
			pre = p.preemptRun(sb, sb.groups[0], take[b], now, pre)
			sb.lastOK, sb.kept = false, [2]struct{ r, x int32 }{}
		}
		if p.runs == nil && len(sb.groups) == 1 && take[b]-sb.nRun >= seamRun {
			starts = p.startRun(s, sb, sb.groups[0], take[b]-sb.nRun, now, starts)
			sb.lastOK, sb.kept = false, [2]struct{ r, x int32 }{}
		}
		pre, starts = p.seamSingles(s, sb, take[b], now, pre, starts)
	}
	return pre, starts
}

// seamSingles is the rest of applySeams on bucket sb (take t), after any
// run moved at once: the preemptions and starts left one at a time, then
// the exchanges while the bucket's least waiting job precedes its last
// running one. DivisorFilling's applySeamsDS calls it per bucket too; the
// kept waiting ranks (wAtKept, keptDeleteMin) are ServerFilling's treap
// path's only, and elsewhere wAtKept's rank-0 lookup is tFirst's walk.
func (p *Policy) seamSingles(s *sdk.System, sb *sbucket, t int32, now float64, pre, starts []int32) ([]int32, []int32) {
	for sb.nRun > t {
		x := p.runLast(sb, now)
		p.toWaiting(x, now)
		sb.w++
		pre = append(pre, x)
	}
	for sb.nRun < t {
		sb.w--
		x := p.wAtKept(sb, 0)
		p.waitDeleteMin(sb)
		p.setRun(s, &p.slots[x], now)
		p.runAppend(x)
		starts = append(starts, x)
	}
	if p.runs != nil {
		return p.exchangeRuns(s, sb, now, pre, starts)
	}
	for sb.w > 0 && sb.nRun > 0 {
		x := p.runLast(sb, now)
		y := p.wAtKept(sb, 0)
		if !p.less(y, x) {
			break
		}
		p.waitDeleteMin(sb)
		p.toWaiting(x, now)
		p.setRun(s, &p.slots[y], now)
		p.runAppend(y)
		pre = append(pre, x)
		starts = append(starts, y)
	}
	return pre, starts
}

// engineCalls makes a decision's engine calls in the general path's order:
// the running jobs that left M, then the other preempted ones, then the
// starts, each list in the order at the decision instant with the rates
// before the decision (the preempted jobs were running, the started ones
// waiting). setRun was called for each start when it was chosen.
func (p *Policy) engineCalls(s *sdk.System, evicted, pre, starts []int32) {
	p.engineCallsRuns(s, evicted, pre, starts, true, true)
}

// engineCallsRuns is engineCalls with pre and starts sorted only where
// asked (the others already are).
//
// The preemptions are put in order only when the engine says their order
// can matter (System.PreemptionsCommute: a trace, or a list of running
// jobs); otherwise any order leaves it in the same state, and neither the
// sorts here nor the callers' merges of their runs (mergeBucketRuns,
// dsOrder) are made.
func (p *Policy) engineCallsRuns(s *sdk.System, evicted, pre, starts []int32, sortPre, sortStarts bool) {
	if !s.PreemptionsCommute() {
		if len(evicted) > 1 {
			slices.SortFunc(evicted, p.cmpWas(true))
		}
		if sortPre && len(pre) > 1 {
			slices.SortFunc(pre, p.cmpWas(true))
		}
	}
	if sortStarts && len(starts) > 1 {
		slices.SortFunc(starts, p.cmpWas(false))
	}
	// One engine call per list (System.PreemptJobsIn, StartJobsIn), on
	// the slots' jobs table: the engine's per-job checks and the calls
	// themselves were about a sixth of the engine's cost per move, and
	// copying each move's job into a list for it (PreemptJobs, StartJobs)
	// cost 13-15 instructions a move more. A single move takes the single
	// call, which costs less than a list's (at the L = 5000 rate of
	// BenchmarkLevels, ~2 moves per decision, lists for every move cost
	// 1.4% more).
	jobs, ne := p.jobs, len(evicted)
	switch n := ne + len(pre); {
	case n == 1 && ne == 1:
		s.Preempt(jobs[evicted[0]])
	case n == 1:
		s.Preempt(jobs[pre[0]])
	case n > 1:
		if ne > 0 {
			s.PreemptJobsIn(jobs, evicted)
		}
		if len(pre) > 0 {
			s.PreemptJobsIn(jobs, pre)
		}
	}
	switch len(starts) {
	case 0:
	case 1:
		s.Start(jobs[starts[0]])
	default:
		s.StartJobsIn(jobs, starts)
	}
}

// cmpWas orders jobs as less did at the decision instant, before the
// decision's preemptions and starts: running (preempted jobs: key frozen
// now, rate need/k with crossings, then fin) or waiting (started jobs: the
// frozen key, kept in key0 since a refresh can lower key once it runs).
func (p *Policy) cmpWas(running bool) func(a, b int32) int {
	return func(a, b int32) int {
		sa, sb := &p.slots[a], &p.slots[b]
		ka, kb := sa.key, sb.key
		if !running {
			ka, kb = sa.key0, sb.key0
		}
		if ka != kb {
			if ka < kb {
				return -1
			}
			return 1
		}
		if running && p.crossings {
			if ra, rb := p.cls[sa.class].scale, p.cls[sb.class].scale; ra != rb {
				if ra > rb {
					return -1
				}
				return 1
			}
		}
		// Preempted jobs: a moving key (SRPT, Gittins of a non-constant
		// rank) came first at equal keys, and among those the least fin.
		ma, mb := running && p.movingClass(sa), running && p.movingClass(sb)
		if ma != mb {
			if ma {
				return -1
			}
			return 1
		}
		if ma && sa.fin != sb.fin {
			if sa.fin < sb.fin {
				return -1
			}
			return 1
		}
		if sa.id < sb.id {
			return -1
		}
		return 1
	}
}

// armCrossingSRPT is armCrossing's ServerFilling case for this path: per
// bucket only its last running job can give the earliest crossing (see the
// comment at the top).
func (p *Policy) armCrossingSRPT(s *sdk.System, now float64, last int32) {
	if p.sumM < p.k || last < 0 {
		return
	}
	b := &p.slots[last]
	if b.rate == 0 {
		return
	}
	slack := int32(p.sumM - p.k)
	if slack <= 0 {
		return
	}
	t := math.Inf(1)
	// crossAt(b, y) is at least its straight-line estimate or, y running,
	// b's fin (where it stops looking): a candidate whose bound is not below
	// the earliest crossing so far cannot lower it and is not searched; nor
	// one whose bound is not below the pending timer (timerAt), since
	// setCrossingTimer arms only an instant before it (and does nothing
	// else): the decision's own pair mostly gives that timer's instant
	// again, and its search (~110 instructions) went for nothing.
	// Running jobs' keys, as keyAt computes them: rate (their scale, with
	// crossings on) × max(fin − now, 0).
	for _, bi := range p.visit() {
		if p.sb[bi].nRun == 0 || p.bneed[bi] > slack {
			continue
		}
		y := p.sb[bi].last // largest (fin, arrival): kept (runLast) or walked to
		if !p.sb[bi].lastOK {
			y = p.runTail(int(bi))
		}
		if ys := &p.slots[y]; y != last && ys.rate < b.rate {
			est := p.crossEst(b, ys, now)
			if bound := minInstant(t, p.timerAt); est >= bound && b.fin >= bound {
				continue
			}
			t = minInstant(t, p.crossFrom(b, ys, est))
		}
	}
	if p.stopper >= 0 {
		t = p.crossStopper(b, last, slack, now, t)
	}
	p.setCrossingTimer(s, now, t)
}

// crossStopper is the last candidate of armCrossingSRPT and
// armCrossingRuns: the job that stopped the packing (PackStop) while
// servers idle, which may cross b once it fits; t is the earliest
// crossing so far, and the result the timer's instant (p.stopper ≥ 0:
// the callers test it, so that the usual decision makes no call).
func (p *Policy) crossStopper(b *slot, last, slack int32, now, t float64) float64 {
	if i := p.stopper; i != last && p.idle > 0 {
		if y := &p.slots[i]; y.need <= slack && y.rate < b.rate {
			if est := p.crossEst(b, y, now); est < minInstant(t, p.timerAt) {
				t = minInstant(t, p.crossFrom(b, y, est))
			}
		}
	}
	return t
}

// armCrossingRuns is armCrossingSRPT on ServerFilling's treap path with
// the runSets (usesFront; each bucket's last running job is sb.last), where
// it passes over the buckets after b's only: a running job's rate is its
// class's scale, need/k computed as need × (1/k), so it is below b's
// exactly when its need is (distinct needs up to k give distinct products:
// they differ by at least 1/need relatively, far more than a rounding), and
// the buckets are numbered by need, largest first, so the buckets up to
// b's hold no candidate. At k = 2048 past saturation (BenchmarkLevels) b
// is the wide job (need 128) at 97% of the decisions, and its bucket's
// test there (its need against the slack, either way) was mispredicted at
// about one decision in two (cachegrind). The same candidates in the same
// sequence as armCrossingSRPT's, so the same timer. The wide path keeps
// armCrossingSRPT as it was: with the cut in that function, one-or-all's
// -SRPT (the wide path, its code unchanged) took ~1% more CPU time.
func (p *Policy) armCrossingRuns(s *sdk.System, now float64, last int32) {
	if p.sumM < p.k || last < 0 {
		return
	}
	b := &p.slots[last]
	slack := int32(p.sumM - p.k)
	if b.rate == 0 || slack <= 0 {
		return
	}
	t := math.Inf(1)
	for bi := int(b.bucket) + 1; bi < len(p.sb); bi++ { // (see armCrossingSRPT for the bounds)
		sb := &p.sb[bi]
		if sb.nRun == 0 || p.bneed[bi] > slack {
			continue
		}
		y := sb.last
		if ys := &p.slots[y]; ys.rate < b.rate {
			bound := minInstant(t, p.timerAt)
			d, r := p.crossGap(b, ys, now)
			if b.fin >= bound && estAtLeast(now, d, r, bound) {
				continue
			}
			est := estOf(now, d, r)
			if est >= bound && b.fin >= bound {
				continue
			}
			t = minInstant(t, p.crossFrom(b, ys, est))
		}
	}
	if p.stopper >= 0 {
		t = p.crossStopper(b, last, slack, now, t)
	}
	p.setCrossingTimer(s, now, t)
}

// The treaps: a bucket's waiting jobs ordered by (key, arrival index), the
// general path's heap order, and its running jobs ordered by (fin, arrival
// index), where fin = since + age is the instant the job would complete if
// it ran alone: its remaining size is need/k × (fin − now), so while it runs
// fin is fixed and orders the bucket's running jobs as their keys do (the
// invariant above). Each is a binary search tree through nodes of their own
// (Policy.tn, indexed like the slots; l, r) that is a heap on random
// priorities (so O(log n) deep in expectation), with subtree sizes (sz) for
// order-statistics lookups. The priorities come from a fixed-seed generator
// and only shape the trees: no decision depends on them. A job is in at most
// one treap, so it has one node.
//
// A node also holds its job's place in its treap's order, as a pair (v, id)
// that every order compares ascending (tKey): v is the key, the fin or −fin
// and id the arrival index or its negation, copied when the job enters the
// treap (tInsert; tSetKeys for a run joined whole, divisorseams.go). Neither
// changes while the job is in that treap: a waiting job's key is frozen, a
// running job's fin is set by setRun before it is placed and fixed while it
// runs (stopRun comes after its removal), and a running job of a constant
// rank (modeKey on the rising-rank path) does not move, so keyAt leaves its
// key alone. A descent so reads one 32-byte node per level instead of two
// slots (88 bytes each, and at the L = 5000 rate of BenchmarkLevels the
// slots of 1500 jobs no longer fit in L1 while their nodes nearly do), and
// compares with the inserted or removed job's pair held in registers.

// Orders of the treaps (tLess). This path uses modeKey for waiting jobs and
// modeFall for running ones; the rising-rank path (gittinsrise.go) all three.
const (
	modeKey  uint8 = iota // (key, arrival): waiting jobs, the general path's heap order; running jobs of a constant rank
	modeFall              // (fin, arrival): running jobs of a rank that never rises
	modeRise              // (fin, arrival) descending: running jobs of a rank that never falls
)

// tnode is a job's node in the treap it is in (see above).
type tnode struct {
	v    float64 // the order's key (tKey)
	id   int64   // the arrival tie-break (tKey)
	l, r int32   // children (-1: none)
	sz   int32   // subtree size
	pri  uint32  // heap priority
}

// tKey is job x's pair in the order mode, compared ascending (nodeBefore):
// (key, id), (fin, id), or (−fin, −id) for the descending modeRise. Negation
// is exact and keeps equality (−0 = 0), so the pairs order the jobs as
// tLess does.
func (p *Policy) tKey(x int32, mode uint8) (float64, int64) {
	sl := &p.slots[x]
	switch mode {
	case modeKey:
		return sl.key, sl.id
	case modeFall:
		return sl.fin, sl.id
	}
	return -sl.fin, -sl.id
}

// tSetKeys copies the pairs of run's jobs, which join a treap of order
// mode as a subtree or one by one (joinFront, joinBack), into their nodes.
// One loop per mode: on twoClass2048 past saturation DivisorFilling moves
// tens of jobs per arrival this way.
func (p *Policy) tSetKeys(run []int32, mode uint8) {
	slots, tn := p.slots, p.tn
	switch mode {
	case modeKey:
		for _, x := range run {
			sl, n := &slots[x], &tn[x]
			n.v, n.id = sl.key, sl.id
		}
	case modeFall:
		for _, x := range run {
			sl, n := &slots[x], &tn[x]
			n.v, n.id = sl.fin, sl.id
		}
	default:
		for _, x := range run {
			sl, n := &slots[x], &tn[x]
			n.v, n.id = -sl.fin, -sl.id
		}
	}
}

// nodeBefore reports whether node a precedes the pair (v, id).
func nodeBefore(a *tnode, v float64, id int64) bool {
	return a.v < v || a.v == v && a.id < id
}

// tLess orders two jobs of one treap in the order mode, from their slots
// (for jobs not in a treap yet, or in one: the nodes' pairs agree).
func (p *Policy) tLess(a, b int32, mode uint8) bool {
	// Written out rather than calling heapLess for modeKey: the call
	// would put tLess over the compiler's inlining budget.
	sa, sb := &p.slots[a], &p.slots[b]
	switch mode {
	case modeKey: // heapLess's order
		return sa.key < sb.key || sa.key == sb.key && sa.id < sb.id
	case modeFall:
		return sa.fin < sb.fin || sa.fin == sb.fin && sa.id < sb.id
	}
	return sa.fin > sb.fin || sa.fin == sb.fin && sa.id > sb.id
}

func (p *Policy) tSize(t int32) int32 {
	if t < 0 {
		return 0
	}
	return p.tn[t].sz
}

// tSizeIn is tSize on the nodes tn (a local copy of p.tn in a loop).
func tSizeIn(tn []tnode, t int32) int32 {
	if t < 0 {
		return 0
	}
	return tn[t].sz
}

func (p *Policy) tFix(t int32) {
	n := &p.tn[t]
	n.sz = 1 + p.tSize(n.l) + p.tSize(n.r)
}

// tSplit splits t into the jobs before the pair (v, id) and the others.
func (p *Policy) tSplit(t int32, v float64, id int64) (int32, int32) {
	if t < 0 {
		return -1, -1
	}
	n := &p.tn[t]
	if nodeBefore(n, v, id) {
		l, r := p.tSplit(n.r, v, id)
		n.r = l
		p.tFix(t)
		return t, r
	}
	l, r := p.tSplit(n.l, v, id)
	n.l = r
	p.tFix(t)
	return l, t
}

// tMerge joins a and b, every job of a before every job of b.
func (p *Policy) tMerge(a, b int32) int32 {
	if a < 0 {
		return b
	}
	if b < 0 {
		return a
	}
	na, nb := &p.tn[a], &p.tn[b]
	if na.pri > nb.pri {
		na.r = p.tMerge(na.r, b)
		p.tFix(a)
		return a
	}
	nb.l = p.tMerge(a, nb.l)
	p.tFix(b)
	return b
}

// tGrow makes room for node x (the nodes grow with the slots).
func (p *Policy) tGrow(x int32) {
	n := max(int(x)+1, len(p.slots))
	p.tn = append(p.tn, make([]tnode, n-len(p.tn))...)
}

// tInsert adds x to t in the order mode and returns the new root and x's
// rank (the number of jobs before it).
func (p *Policy) tInsert(t, x int32, mode uint8) (int32, int32) {
	return p.tPlace(t, x, mode, true)
}

// tAdd is tInsert without the rank, for callers that do not use it (the
// running treaps): the rank reads the left child's size at every level the
// descent goes right, a node that the descent does not otherwise visit.
func (p *Policy) tAdd(t, x int32, mode uint8) int32 {
	t, _ = p.tPlace(t, x, mode, false)
	return t
}

// tPlace is tInsert, counting x's rank only if ranked: down the search
// path while the nodes outrank x's priority, then x takes the place of the
// subtree there, split at x (expected O(1) in size). When x precedes the
// whole subtree the split is skipped (it would leave every node as it is,
// one recursive call per level of the subtree's left spine): a job
// preempted or arriving under SRPT mostly goes first among its bucket's
// waiting jobs (at the L = 5000 rate of BenchmarkLevels, 394 k of 412 k
// waiting insertions).
func (p *Policy) tPlace(t, x int32, mode uint8, ranked bool) (int32, int32) {
	if int(x) >= len(p.tn) {
		p.tGrow(x)
	}
	tn := p.tn // (a local: stores through n would make the compiler reload p.tn)
	pri := p.nextPri()
	v, id := p.tKey(x, mode)
	rank := int32(0)
	link := &t
	front := true // x precedes every node passed so far
	for *link >= 0 {
		n := &tn[*link]
		if n.pri <= pri {
			break
		}
		n.sz++
		if nodeBefore(n, v, id) {
			if ranked {
				rank += 1 + tSizeIn(tn, n.l)
			}
			link = &n.r
			front = false
		} else {
			link = &n.l
		}
	}
	l, r := int32(-1), *link
	if !front || r >= 0 && nodeBefore(&tn[p.tFirst(r)], v, id) {
		l, r = p.tSplit(*link, v, id)
		if ranked {
			rank += p.tSize(l)
		}
	}
	tn[x] = tnode{v: v, id: id, l: l, r: r, sz: 1 + p.tSize(l) + p.tSize(r), pri: pri}
	*link = x
	return t, rank
}

// nextPri is the next treap priority (xorshift32 from a fixed seed).
func (p *Policy) nextPri() uint32 {
	p.seed ^= p.seed << 13
	p.seed ^= p.seed >> 17
	p.seed ^= p.seed << 5
	return p.seed
}

// tAppend adds x, which follows every job of t in the order mode, to t:
// down the right spine while the nodes outrank x's priority, where the
// subtree left below becomes x's left one (every job in it precedes x, so
// there is nothing to split). The treap is the one tInsert would make.
func (p *Policy) tAppend(t, x int32, mode uint8) int32 {
	if int(x) >= len(p.tn) {
		p.tGrow(x)
	}
	tn := p.tn // (a local: stores through n would make the compiler reload p.tn)
	pri := p.nextPri()
	v, id := p.tKey(x, mode)
	link := &t
	for *link >= 0 {
		n := &tn[*link]
		if n.pri <= pri {
			break
		}
		n.sz++
		link = &n.r
	}
	l := *link
	tn[x] = tnode{v: v, id: id, l: l, r: -1, sz: 1 + p.tSize(l), pri: pri}
	*link = x
	return t
}

// tDelete removes x (in t) from t and returns the new root (its node holds
// its place in t's order, whatever the mode).
func (p *Policy) tDelete(t, x int32, _ uint8) int32 {
	tn := p.tn
	xn := &tn[x]
	v, id := xn.v, xn.id
	link := &t
	for *link != x {
		n := &tn[*link]
		n.sz--
		if nodeBefore(n, v, id) {
			link = &n.r
		} else {
			link = &n.l
		}
	}
	*link = p.tMerge(xn.l, xn.r)
	return t
}

// tDeleteMin removes the first job of t (not empty) and returns the new root.
func (p *Policy) tDeleteMin(t int32) int32 {
	tn := p.tn
	link := &t
	for {
		n := &tn[*link]
		if n.l < 0 {
			*link = n.r
			return t
		}
		n.sz--
		link = &n.l
	}
}

// tDeleteFirst removes x from t if x is t's first job and reports whether
// it was: down the left spine without a comparison, the sizes lowered on
// the way (and raised again if x is not there). Running jobs of one need
// run at one rate, so under SRPT the job that completes is its bucket's
// first running one, as a rule (every one of the 208 k completions at the
// L = 5000 rate of BenchmarkLevels); tDelete compares at every level.
func (p *Policy) tDeleteFirst(t, x int32) (int32, bool) {
	tn := p.tn
	link := &t
	for tn[*link].l >= 0 {
		n := &tn[*link]
		n.sz--
		link = &n.l
	}
	if *link == x {
		*link = tn[x].r
		return t, true
	}
	for u := t; u != *link; u = tn[u].l {
		tn[u].sz++
	}
	return t, false
}

// tDeleteLast removes the last job of t (not empty) and returns the new root
// and the new last job (-1 if none). The last job has no right child, so
// its left subtree takes its place, and the new last is that subtree's last
// or, if it is empty, the job above.
func (p *Policy) tDeleteLast(t int32) (int32, int32) {
	tn := p.tn
	link, up := &t, int32(-1)
	for {
		n := &tn[*link]
		if n.r < 0 {
			l := n.l
			*link = l
			if l >= 0 {
				return t, p.tLast(l)
			}
			return t, up
		}
		n.sz--
		up = *link
		link = &n.r
	}
}

// tSelect returns the job of rank r (0-based) in t.
func (p *Policy) tSelect(t, r int32) int32 {
	tn := p.tn
	for {
		n := &tn[t]
		ls := tSizeIn(tn, n.l)
		switch {
		case r < ls:
			t = n.l
		case r == ls:
			return t
		default:
			r -= ls + 1
			t = n.r
		}
	}
}

// tFirst returns the first job of t (not empty).
func (p *Policy) tFirst(t int32) int32 {
	for l := p.tn[t].l; l >= 0; l = p.tn[t].l {
		t = l
	}
	return t
}

// tLast returns the last job of t (not empty).
func (p *Policy) tLast(t int32) int32 {
	for r := p.tn[t].r; r >= 0; r = p.tn[t].r {
		t = r
	}
	return t
}
