package serverfilling

import "math"

// M's last job carried over from one decision to the next on
// ServerFilling's treap path under SRPT with the runSets (srptrun.go), and
// on the wide path with more than carryBuckets occupied buckets
// (lastMWide, carriedWide in srptwide.go).
//
// Why. At k = 2048 past saturation (BenchmarkLevels, the L = 1300 and
// L = 5000 rates) the repair loop's pass over the buckets (lastFirstRuns)
// finds M unchanged at 94-95% of the decisions, and its last job is
// nearly always the wide bucket's last running job. The pass looks up each
// bucket's last waiting job of M and last running job and compares them
// (refreshing the running ones' keys); the carry proves, from what the
// last decision's pass found and a few numbers, that the pass would answer
// the same last job, and skips those lookups and comparisons; a bound on
// the keys outside M (φ, below) skips the look-up of the least job outside
// M as well while no such job can precede M's last.
//
// The record. Every full pass (lastFirstRuns) records the M's last job L
// it found, if L runs, its arrival index, κ, the key of the latest other
// candidate S (lastM's second) as the pass left it (refreshed to the
// pass's instant t0 if S runs; -Inf without S), and φ, the key of the
// least job outside M (waiting: frozen; +Inf without one). Every repair
// step that changes M (growM, an eviction, the least outside job added)
// clears it, as does an arrival started at once while every job is served
// (startPending: it joins M running, with any key), except where carryAdd
// and evictRuns below, and carryAddWide and evictWide (srptw50carry.go),
// keep or move it, each with its own argument that the claim still holds.
// So a record read at a repair step was made by a pass, and every change
// of M since then either kept the claim (those functions) or was followed
// by a pass that recorded anew; every decision since then either carried
// it (below) or passed and recorded anew.
//
// The claim. While L runs, every job of M other than L has a key at most
// κ, or is a running job of L's bucket that ran at t0. At t0: a waiting job
// of M is at or before its bucket's last waiting job of M in the waiting
// order (key, arrival), and a running job at or before its bucket's last
// running job in the (fin, arrival) order (one rate: the keys in the same
// order); those are the pass's candidates, each other than L at or before
// S, so of key ≤ κ, but for L's bucket's running jobs. Afterwards: a
// running job's key, scale × clamp0(fin − t), never rises with t in
// floating point, and a waiting job's is frozen; a decision's seams start
// only waiting jobs of M (setRun's fin keeps the key at or below the
// frozen one), and preempt a bucket's last running jobs first, so none of
// L's bucket while L runs, and every other preempted job keeps its key; an
// arrival joins M only ahead of its bucket's last waiting job of M
// (arriveSRPT: rank < w), so with a key at most that job's; a completion
// only removes.
//
// The bound φ: every job outside M has a key at least φ. At the pass φ is
// the least such key (the key is less's first part). An arrival outside M
// (arriveSRPT: rank ≥ w) lowers φ to its key if needed; a decision's seams
// take waiting jobs of M only and put preempted jobs among the waiting
// ones with w raised by as many, so the jobs then outside M are the
// largest of the waiting jobs as many as were outside before, each at or
// after the least of those in the waiting order, so of key ≥ φ (a
// preempted job lands outside M only behind a job of equal key and a
// larger arrival index, the representational freedom of the comment at
// the top of srptfast.go); a start or a completion adds no job outside M.
// A carried step whose φ exceeds L's key now needs no look-up: every job
// outside M has a larger key than L, so follows it, and the repair adds
// none (first: -1); else it looks the least one up (firstRuns) and makes
// its key φ, the least key outside M again.
//
// The test (carriedStep, with the repair's own test of M's total). L
// still runs with the recorded arrival index: the slot of a completed
// job is zeroed (release), one handed to a later arrival has its index,
// and a job preempted by a decision's seams is not restarted there (every
// running job of its bucket is then ahead of it), so L has run since t0.
// Where M's total less L's need reaches k the repair evicts L, which runs,
// and that eviction reads neither second nor first (carriedStep); else
// the eviction (the only reader of second) is not taken. And L's key
// now, refreshed as the pass does, exceeds κ. Then every job of M other
// than L either has a smaller key, so precedes L in less (whose first part
// is the key), or is a running job of L's bucket that ran at t0 and
// precedes L in the running order, so in less. L is then the latest job
// of M, and the pass's last is the latest of a set of M's jobs that holds
// L (L is its bucket's last running job): the same job. The tests compare
// the operands the pass would (the refreshed keys) and uses no tolerance.
// The skipped pass would also have refreshed the other buckets' last
// running jobs' keys in their slots; every later reader in the decision
// refreshes or recomputes them first (exchangeRuns, seamSingles' runLast,
// toWaiting, armCrossingRuns' keyAtSRPT), and the next pass refreshes them
// again; its wAtKept calls would have moved the kept ranks, which only
// save walks (the same answers either way). A carried step leaves the
// record as it was: the claim holds with the same L and κ.

// carry is the record of the argument above (x < 0: none).
type carry struct {
	x   int32   // L
	id  int64   // L's arrival index
	kap float64 // κ
	phi float64 // φ
}

// carriedPass is lastFirstRuns' second when it carried M's last job (no
// second looked up; the repair's eviction, which reads second, is then
// not taken).
const carriedPass = -2

// carryFrom records a full pass's (last, second) for the next repair step
// (see above), or clears the record if last does not run.
func (p *Policy) carryFrom(last, second, first int32) {
	if last < 0 || !p.slots[last].moving {
		p.carry.x = -1
		return
	}
	p.record(last, second, first)
}

// record makes the carry's record of a full pass's last job last (≥ 0),
// its second and its first (see above; carryFrom, carryFromWide).
func (p *Policy) record(last, second, first int32) {
	kap := math.Inf(-1)
	if second >= 0 {
		kap = p.slots[second].key
	}
	p.carry = carry{last, p.slots[last].id, kap, p.keyOr(first)}
}

// keyOr is waiting job x's key, +Inf if x < 0 (no job).
func (p *Policy) keyOr(x int32) float64 {
	if x < 0 {
		return math.Inf(1)
	}
	return p.slots[x].key
}

// firstCarried is a carried step's first (see above): -1 when every job
// outside M has a key at least φ, above L's key now (carried refreshed
// it), so none precedes L; else firstRuns, whose key then becomes φ.
func (p *Policy) firstCarried() int32 {
	if p.carry.phi > p.slots[p.carry.x].key {
		return -1
	}
	f := p.firstRuns()
	p.carry.phi = p.keyOr(f)
	return f
}

// firstRuns is lastFirstRuns' first alone: the least job outside M (-1:
// none).
func (p *Policy) firstRuns() int32 {
	first := int32(-1)
	for b := range p.sb {
		sb := &p.sb[b]
		if sb.w < int32(len(sb.front))+p.tSize(sb.root) {
			// wAtKept's own front case: this runs at ~2.5% of carried
			// steps, so the pass's inline copy of it is not needed here.
			c := p.wAtKept(sb, sb.w)
			if first < 0 || p.less(c, first) {
				first = c
			}
		}
	}
	return first
}

// carriedStep is the test above, on the runSets' and the wide path, with
// M's total not tested: L still runs with the recorded arrival index and
// its key, refreshed to now (the pass refreshes it too: L is its bucket's
// last running job), exceeds κ, so L is M's last job (the claim above),
// the pass's last whatever M's total. The step then evicts L exactly when
// M's total less L's need reaches k, which the repair tests itself
// (lastFirstRuns on the runSets' path, decideSRPT's loop on the wide
// path), and the eviction (L runs) reads neither second nor first; it
// takes that step and the ones after it without a pass (evictRuns,
// evictWide).
func (p *Policy) carriedStep(now float64) bool {
	c := &p.carry
	if c.x < 0 {
		return false
	}
	l := &p.slots[c.x]
	if !l.moving || l.id != c.id {
		return false
	}
	p.refreshSRPT(l, now)
	return l.key > c.kap
}

// carryAdd is the record's update when the repair adds o, the least job
// outside M, which precedes M's last job (decideSRPT). On the runSets'
// path the record, if any, names that last job L (the step's pass made it,
// or the step carried it), and the claim holds with κ raised to o's key:
// o, now in M, has that key, every other job of M is as before, and φ
// still bounds the keys outside M, which lost o. So the next step's
// carried test needs no pass when L's key still exceeds κ (the usual case
// on BenchmarkLevelsH2, where the job added is a short wide job and the
// next step evicts narrow running ones, evictRuns). The wide path keeps
// it with carryAddWide (srptw50carry.go).
func (p *Policy) carryAdd(o int32) {
	if p.runs == nil {
		p.carry.x = -1
		return
	}
	p.carry.kap = max(p.carry.kap, p.slots[o].key)
}
