package serverfilling

import (
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The decision's passes over the buckets on ServerFilling's treap path
// under SRPT (usesFront: the running jobs are runSets, srptrun.go, so each
// bucket's last running job is always sb.last once flushPending has run).
// lastM, firstOut and seamSingles's exchanges go through runLast, wAtKept
// and a closure for each candidate; at k = 2048 past saturation
// (BenchmarkLevels, the L = 5000 rate) those calls were ~150 M of the
// ~1500 M instructions, most of it call overhead and the path tests runLast
// and wAtKept make for the other paths. The functions here are the same
// passes with those tests taken once: the same candidates, compared by less
// in the same sequence, the same keys refreshed (a running job's key is
// keyAt's, set on the job), wAtKept called for the ranks past the front as
// before (so its kept ranks move the same way). Only the instructions
// differ.

// lastFirstRuns is lastM and firstOut's first for this path in one pass:
// M's last job and the latest of the other candidates (lastM's second),
// and the least job outside M (-1: none). The decision asks for first when
// M's last cannot leave, nine times in ten there; computing it beforehand
// reads the front's entry or the kept rank, nothing that changes M.
// lastM's put is written out twice: as a function (top2) the compiler
// would not inline it (cost 169), and its calls were ~3% of the
// instructions at the L = 5000 rate.
//
// When the last decision's M boundary carries over (srptcarry.go), last is
// the carried job, second is carriedPass, and only first is looked up;
// otherwise the pass's answer is recorded for the next decision.
func (p *Policy) lastFirstRuns(now float64) (last, second, first int32) {
	if p.carriedStep(now) {
		if x := p.carry.x; p.sumM-int(p.slots[x].need) >= p.k {
			return x, carriedPass, -1 // the step evicts x (first is not read)
		}
		return p.carry.x, carriedPass, p.firstCarried()
	}
	last, second, first = -1, -1, -1
	for b := range p.sb {
		sb := &p.sb[b]
		n := int32(len(sb.front))
		if w := sb.w; w > 0 {
			var c int32
			if w <= n { // wAtKept's front case, rank w−1
				c = sb.front[n-w]
			} else {
				c = p.wAtKept(sb, w-1)
			}
			switch { // top2, by hand (the compiler will not inline it)
			case last < 0 || p.less(last, c):
				last, second = c, last
			case second < 0 || p.less(second, c):
				second = c
			}
		}
		if sb.nRun > 0 {
			c := sb.last
			p.refreshSRPT(&p.slots[c], now)
			switch {
			case last < 0 || p.less(last, c):
				last, second = c, last
			case second < 0 || p.less(second, c):
				second = c
			}
		}
		if sb.w < n+p.tSize(sb.root) { // firstOut's pass: a job outside M
			var c int32
			if sb.w < n {
				c = sb.front[n-1-sb.w]
			} else {
				c = p.wAtKept(sb, sb.w)
			}
			if first < 0 || p.less(c, first) {
				first = c
			}
		}
	}
	p.carryFrom(last, second, first)
	return last, second, first
}

// exchangeRuns is seamSingles's exchange loop for this path: while the
// bucket's least waiting job precedes its last running one, they swap.
// The swap is a function of its own, not inlined: the loop mostly stops at
// its first look, and with the swap's calls in it that look paid for the
// registers they spill.
func (p *Policy) exchangeRuns(s *sdk.System, sb *sbucket, now float64, pre, starts []int32) ([]int32, []int32) {
	for sb.w > 0 && sb.nRun > 0 {
		x := sb.last
		p.refreshSRPT(&p.slots[x], now)
		var y int32
		if n := len(sb.front); n > 0 {
			y = sb.front[n-1]
		} else {
			y = p.wAtKept(sb, 0)
		}
		if !p.less(y, x) {
			break
		}
		p.next, p.starts = pre, starts // (exchangeRun appends to them)
		p.exchangeRun(s, sb, x, y, now)
		pre, starts = p.next, p.starts
	}
	return pre, starts
}

// exchangeRun is exchangeRuns's swap: running job x (the bucket's last)
// waits, waiting job y (its first) runs, x appended to p.next and y to
// p.starts (applySeamsRuns' lists), as waitDeleteMin, toWaiting(x),
// setRun(y) and runAppend(y) make it, with the path's tests taken once
// (runsWaitLast, runsAdd): x's key is already refreshed at now (the
// callers' test refreshed it).
//
// Why. At the L = 5000 rate of BenchmarkLevelsH2 a replication makes
// ~150 k exchanges (the arriving job cuts in ahead of its bucket's last
// running one), and toWaiting, runRemove, keyAt, waitInsert and runAppend
// test the path and look the bucket up again at each; with those taken
// once here and in the single moves of evictMove and seamMovesRuns, that
// row is 28 M instructions (2.1%) fewer.
//
//go:noinline
func (p *Policy) exchangeRun(s *sdk.System, sb *sbucket, x, y int32, now float64) {
	p.waitDeleteMin(sb)
	rs := &p.runs[p.slots[x].bucket]
	p.runsWaitLast(sb, rs, x)
	p.setRun(s, &p.slots[y], now)
	p.runsAdd(sb, rs, y)
	p.next, p.starts = append(p.next, x), append(p.starts, y)
}

// evictRuns is the repair's eviction of M's last job x when it runs, on
// this path (decideSRPT, after lastFirstRuns gave x, by its pass or by the
// carry, srptcarry.go), together with the eviction steps that would follow
// at once: those of x's bucket's next running jobs. It returns evicted
// with them appended, in the order the steps would have appended them, and
// leaves srptcarry.go's record on the bucket's new last running job.
//
// Why. On twoClass2048H2 past saturation (BenchmarkLevelsH2, the L = 5000
// rate) a short wide job (need 128) that arrives ahead of M's end makes M
// evict up to 128 running narrow jobs, one repair step each, and each step
// took the full pass (lastFirstRuns, with carryFrom: the eviction cleared
// the carry). There 154 k of the 666 k repair steps of a replication are
// such evictions (15 k on exponential durations), 145 k of them of need-1
// jobs, in runs of up to 128, after which the step that ends the repair
// took the pass again.
//
// Exactness. x is the record's L (a full pass records its last job when
// it runs, a carried step read it there), so the record's claim holds:
// every job of M other than x has a key at most κ or is a running job of
// x's bucket, ahead of x. Once x is evicted (toWaiting: it waits, outside
// M, with its key now; M's total falls by its need), the claim holds with
// y, the bucket's new last running job, in x's place: y is one of those
// running jobs and every other one is ahead of it. So if y's key, refreshed
// as the pass refreshes it, exceeds κ, y follows every other job of M (less
// compares keys first), so is M's last job and the pass's last (the
// latest of a set of M's jobs that holds y, its bucket's last running
// job); the step then evicts y exactly when M's total less y's need (x's:
// one bucket) still reaches k. evictCount tests just that, with the same
// comparisons on the same operands as the pass and the step, and stops
// otherwise, leaving the next step to the repair loop. The record then
// names y (or none if the bucket has no running job left), with the same
// κ, and φ lowered to the least key of the evicted jobs, which are now
// outside M: the claim holds for y as shown, and the next step's carried
// test (carriedStep) refreshes y's key and compares it with κ again. What
// the skipped passes did besides is not read: the other buckets' running
// keys they would refresh are already at this instant, and their wAtKept
// calls only move the kept ranks (the same answers either way). If the
// record does not name x (not expected), x alone is evicted and the
// record cleared, as before this loop.
func (p *Policy) evictRuns(x int32, now float64, evicted []int32) []int32 {
	sl := &p.slots[x]
	b := sl.bucket
	sb := &p.sb[b]
	need := int(sl.need)
	c := &p.carry
	held := c.x == x && c.id == sl.id // (else x alone)
	m := int32(1)
	if held {
		m = p.evictCount(&p.runs[b], c.kap, need, now)
	}
	n0 := len(evicted)
	evicted = p.evictMove(sb, b, m, now, evicted)
	phi := c.phi
	for _, y := range evicted[n0:] {
		phi = min(phi, p.slots[y].key)
	}
	p.sumM -= int(m) * need
	p.nOut += int(m)
	if !held || sb.nRun == 0 {
		c.x = -1
		return evicted
	}
	y := &p.slots[sb.last]
	*c = carry{sb.last, y.id, c.kap, phi}
	return evicted
}

// evictCount is the number of rs's last running jobs evictRuns evicts:
// the last one, then each one before it, its key refreshed, while that key
// exceeds kap and M's total less the need of those counted so far and of
// that job still reaches k (see evictRuns). The one that stops the count,
// if any, has its key refreshed, as the loop of one eviction at a time
// left it.
func (p *Policy) evictCount(rs *runSet, kap float64, need int, now float64) int32 {
	m, sum := int32(1), p.sumM-need
	for bi := len(rs.blk) - 1; bi >= 0; bi-- {
		blk := rs.blk[bi]
		lo, hi := blk.lo, blk.hi
		if bi == len(rs.blk)-1 {
			hi-- // the last job, counted
		}
		for j := hi - 1; j >= lo; j-- {
			if sum-need < p.k {
				return m
			}
			y := &p.slots[blk.e[j].x]
			p.refreshSRPT(y, now)
			if !(y.key > kap) {
				return m
			}
			m++
			sum -= need
		}
	}
	return m
}

// evictMove moves bucket b's last m running jobs to its waiting jobs, as
// m toWaiting calls, the last job first, would, and appends them to
// evicted in that order. A run of at least evictRun jobs leaves the runSet
// at once (runCutTail, the same jobs; preemptRunBlocks does the same at
// the seams), its keys frozen with toWaiting's arithmetic (freezeRunSRPT:
// scale × clamp0(fin − now), the bucket's one scale, and the flags
// stopRun clears); then they join the waiting jobs as waitInsert would,
// the last job first, as toWaiting does: at once when they all precede
// the bucket's waiting jobs (frontRun), else one at a time.
//
// Why. One toWaiting per job walked the runSet's last block and reset
// the bucket's last job per job: on BenchmarkLevelsH2 at the L = 5000 rate
// (154 k evicted jobs, 112 k of them in runs of evictRun or more)
// runRemove, toWaiting, runDelete and keyAt took 22 M instructions more
// than the cut and the freeze (5 M).
func (p *Policy) evictMove(sb *sbucket, b int32, m int32, now float64, evicted []int32) []int32 {
	if m < evictRun {
		rs := &p.runs[b]
		for range m {
			x := sb.last
			p.refreshSRPT(&p.slots[x], now) // toWaiting's keyAt
			p.runsWaitLast(sb, rs, x)       // M's last: it lands just after M's waiting jobs
			evicted = append(evicted, x)
		}
		return evicted
	}
	rs := &p.runs[b]
	n0 := len(evicted)
	evicted = p.runCutTail(rs, sb.nRun-m, evicted)
	run := evicted[n0:] // in the running order: the last job last
	sorted := p.freezeRunSRPT(run, now)
	sb.nRun -= m
	sb.last = rs.last()
	if !sorted || !p.frontRun(sb, run, evicted) {
		for i := len(run) - 1; i >= 0; i-- { // the last job first
			p.waitInsert(sb, run[i])
		}
	}
	slices.Reverse(run)
	return evicted
}

// frontRun puts run (frozen waiting jobs not in sb, in the waiting order
// (key, arrival)) among sb's waiting jobs as waitInsert, called for each
// job from the last to the first, would, when run's last job precedes
// every waiting job of sb, and reports whether it did (else nothing is
// changed). buf is scratch space (run is its tail).
//
// Then the jobs waitInsert gets each precede every job in sb: the first
// starts an empty front (the treap's first job follows it) or joins a
// front that is not full at its end; a full front sends its largest job
// to the treap (tInsert) and takes it. So the front ends as the frontCap
// least of run and the front's jobs (in descending order), the others go
// to the treap, each ahead of every job there: they join it as one subtree
// in front of it (tBuild, tMerge). The same jobs in the same places, in
// O(frontCap + run) instead of a shift and, past frontCap, a treap descent
// per job; the treap's shape differs (it decides nothing) and the kept
// ranks are forgotten (wAtKept walks again).
//
// Why. The evicted runs precede every waiting job of their bucket, as a
// rule (M's evicted narrow jobs had the least keys among the bucket's
// waiting ones): on BenchmarkLevelsH2 at the L = 5000 rate, half of a run
// of 128 went through the full front into the treap one descent each.
func (p *Policy) frontRun(sb *sbucket, run, buf []int32) bool {
	hi := &p.slots[run[len(run)-1]]
	f := sb.front
	switch n := len(f); {
	case n > 0:
		if e := &p.slots[f[n-1]]; !pairBefore(hi.key, hi.id, e.key, e.id) {
			return false
		}
	case sb.root >= 0:
		if e := &p.tn[p.tFirst(sb.root)]; !pairBefore(hi.key, hi.id, e.v, e.id) {
			return false
		}
	}
	n0 := len(buf)
	for i := len(f) - 1; i >= 0; i-- { // the front ascending, after run
		buf = append(buf, f[i])
	}
	all := buf[n0-len(run):] // run, then the front: ascending
	keep := min(len(all), frontCap)
	f = f[:0]
	for i := keep - 1; i >= 0; i-- {
		f = append(f, all[i])
	}
	sb.front = f
	if rest := all[keep:]; len(rest) > 0 {
		t := p.tBuild(rest)
		p.tSetKeys(rest, modeKey)
		sb.root = p.tMerge(t, sb.root)
	}
	sb.kept = [2]struct{ r, x int32 }{}
	return true
}

// evictRun is the least run evictMove moves at once.
const evictRun = 8
