package serverfilling

// srptcarry.go's carry on the wide path kept through the repair's changes
// of M where the argument allows it, and made where M's last job waits
// (eleventh round, srptw50), as mid47's carryAdd and evictRuns keep it on
// the runSets' path.
//
// Why. On Borg cell B at ρ = 0.95 a replication made ~201 k full passes
// of lastMWide (~680 instructions each over ~12 occupied buckets) besides
// 613 k carried steps: 50 k right after the repair added M's least outside
// job, 41 k after it evicted M's last job while it ran, 9 k at a first
// step whose carried L was due to be evicted (the carry's test then
// declined that step), 52 k at a first step after a pass that found M's last job
// waiting (no record then), 41 k after growM. And a carried step looks
// the least outside job up (firstOutWide) when φ is not above L's key:
// with the first cut below, 43.5 k first steps whose φ an arrival had
// lowered and 38.8 k steps after an addition did.
//
// The cuts, in the argument's terms (srptcarry.go: while L runs, every job
// of M other than L has a key at most κ or is a running job of L's bucket
// that ran at the pass, ahead of L; every job outside M has a key at least
// φ):
//
//   - An addition (carryAddWide): the least outside job o joins M with its
//     key; every other job of M is as before, so the claim holds with κ
//     raised to o's key, and φ still bounds the keys outside M, which lost
//     o (carryAdd's argument, on the wide path); φ is made the least key
//     outside M again when the step's look-up gives it (carryAddWide).
//   - An eviction of L while it runs (evictWide), when the record names L
//     (the step's pass made it, the same index and arrival index): L leaves
//     M and becomes waiting with its key now; its bucket's new last running
//     job y (sToWaiting takes L from the end of the running jobs) then
//     holds the place L held in the claim, since every other running job
//     of L's bucket is ahead of y. If y's key, refreshed as the pass
//     refreshes it, exceeds κ, the claim holds with y for L, κ as it was,
//     and φ lowered to L's frozen key if that is below (L is now outside
//     M; an evicted job's key is at least y's, so this decides nothing,
//     but keeps φ a bound). Else the record is cleared.
//   - A carried step due to evict L (carriedStep): the carry's test less
//     its test of M's total. L's key above κ makes L M's last job whatever
//     M's total (the claim), the job the pass would return; the repair then
//     evicts L exactly when M's total less L's need reaches k, which it
//     tests itself, and the eviction (L runs) reads neither second nor
//     first. The runSets' path takes the same step (srptcarry.go).
//   - A record made by a pass whose last job waits (carryFromWide), used
//     once the seams have started it (fromWait).
//   - An arrival that lands outside M below φ named as the least job
//     outside M (outsideArrival), so that a carried step needs no look-up.
//
// Each test compares the operands the pass compares (the refreshed keys,
// κ as a key the pass left), without tolerance, so the step answers the
// pass's last job. The crossing timer's record (wLast, wSK) is set from
// the carry as before (carriedWide): κ still bounds the key now of every
// candidate other than L, which is what crossNone needs. Counted on Borg
// cell B at ρ = 0.95 (one replication, throwaway counters, a shadow record
// beside main's code): after an addition the record would have carried at
// 38.8 k of 49.9 k steps (11.1 k were due to evict L), after an eviction
// y's key exceeded κ at 9.2 k of 40.5 k, after a waiting last the test of
// fromWait held at 51.8 k of 52.1 k; the shadow named the pass's last
// every time. With all of them: 201 k → 89 k full passes a replication,
// and 47 k calls of firstOutWide (32.7 → 17.7 M instructions).

// wideCarry reports whether lastMWide makes and reads the carry: the wide
// path with more than carryBuckets occupied buckets (carriedWide).
func (p *Policy) wideCarry() bool { return p.wide && len(p.occ) > carryBuckets }

// carryAddWide is carryAdd on the wide path: κ raised to the key of o, the
// least outside job, which the repair adds to M (see above). With no
// record (x < 0) κ is not read.
//
// φ then becomes the least key outside M when this step's firstOutWide
// found o (the step carried: second is carriedPass; a carried step whose
// φ exceeded L's key adds nothing): o was the least of the buckets' first
// jobs outside M, wPhi2 the least of the others', and o's bucket's next
// job outside M is the one after o, so the least of those two keys is the
// least key outside M once o joins it. Without it φ stayed at o's key,
// not above L's, and the next step looked the least one up again; after
// an addition the next step carried at 38.8 k steps a replication on
// Borg cell B at ρ = 0.95, and the least outside job then followed L at
// every one. After a full pass (no wPhi2 of this step) φ is left at o's
// key: a bound still, and the next step looks up.
func (p *Policy) carryAddWide(o, second int32) {
	c := &p.carry
	os := &p.slots[o]
	c.kap = max(c.kap, os.key)
	if second != carriedPass {
		return
	}
	phi := p.wPhi2
	sb := &p.sb[os.bucket]
	if i := int(sb.nRun+sb.w) + 1; i < len(sb.seq) { // o is seq[nRun+w]
		phi = min(phi, p.slots[sb.seq[i]].key)
	}
	c.phi = phi
}

// evictWide is the repair's eviction of M's last job last while it runs,
// on the wide path with more than carryBuckets occupied buckets (where
// lastMWide records the carry): the same moves as decideSRPT's own
// eviction (toWaiting, the evicted list, M's total and the outside count),
// with the record moved to the bucket's new last running job when the
// argument above allows it, else cleared. (One-or-all keeps decideSRPT's
// inline eviction: the call cost it 5 M instructions a replication.)
func (p *Policy) evictWide(last int32, now float64, evicted []int32) []int32 {
	ls := &p.slots[last]
	c := &p.carry
	keep := c.x == last && c.id == ls.id
	c.x = -1
	sb := p.toWaiting(last, now) // M's last: it lands just after M's waiting jobs
	evicted = append(evicted, last)
	p.sumM -= int(ls.need)
	p.nOut++
	if keep && sb.nRun > 0 {
		y := sb.seq[sb.nRun-1]
		ys := &p.slots[y]
		p.refreshSRPT(ys, now)
		if ys.key > c.kap {
			c.x, c.id = y, ys.id
			c.phi = min(c.phi, ls.key)
		}
	}
	return evicted
}

// fromWait is lastMWide's look, before carriedStep, at a record made
// with L waiting (wFromWait; carryFromWide): while L still waits it stays
// (carriedStep declines it); once L runs, with the recorded arrival
// index, as its bucket's last running job with no waiting job of M in its
// bucket, it becomes a record of the usual form (srptcarry.go's claim
// then holds, see carryFromWide); otherwise it is cleared.
func (p *Policy) fromWait() {
	c := &p.carry
	if c.x < 0 {
		p.wFromWait = false
		return
	}
	l := &p.slots[c.x]
	if l.id == c.id && !l.moving && !l.serve {
		return
	}
	p.wFromWait = false
	if sb := &p.sb[l.bucket]; l.id != c.id || !l.moving || sb.w != 0 || sb.seq[sb.nRun-1] != c.x {
		c.x = -1
	}
}

// carryFromWide is carryFrom (srptcarry.go) on the wide path, which also
// records a full pass's last L when L waits (wFromWait), for the step
// that finds it running. Borg cell B at ρ = 0.95: 70 k of a replication's
// 201 k full passes found M's last job waiting, and the next decision's
// first step passed again at 52 k of them; at 51.8 k of those L had been
// started by the seams in between and was its bucket's last running job,
// with no waiting job of M in its bucket and its key above κ (32.7 k; at
// the other 19.2 k its eviction was due).
//
// Why the test (fromWait's, then carriedStep's) then gives the pass's
// last. At the pass, every job of M
// other than L is a candidate other than L (key ≤ κ), at or before its
// bucket's candidate (key ≤ κ, the running jobs of L's bucket included),
// or a waiting job of L's bucket ahead of L. The jobs of M in the other
// buckets keep keys ≤ κ afterwards, as srptcarry.go's claim argues for
// them (running keys fall, waiting keys are frozen, a start keeps the key
// at or below the frozen one, a preempted job's key is its running key,
// an arrival joins M only ahead of its bucket's last waiting job of M, an
// addition raises κ, every other change of M clears the record). At the
// test L runs and is the last running job of its bucket, which has no
// waiting job of M: every other job of M in L's bucket runs, ahead of L
// in the running order, so precedes it in less (its key now at most L's,
// and at equal keys the same rate and the (fin, arrival) order). Every
// job of M in the other buckets has a key ≤ κ < L's. So L is M's last
// job, the pass's answer, whatever M's total (carriedStep). An
// eviction of L moves the record to L's bucket's new last running job y
// (evictWide): L leaves M and the bucket still has no waiting job of M
// (L lands outside it), so the same holds with y for L. The crossing
// timer's record (carriedWide: wLast = L, wSK = κ) needs κ to bound the
// key now of every other bucket's last running job, which it does.
func (p *Policy) carryFromWide(last, second, first int32) {
	if last < 0 {
		p.carry.x = -1
		return
	}
	p.record(last, second, first)
	p.wFromWait = !p.slots[last].moving
}

// outsideArrival is sInsertWaiting's update for arrival x when it lands
// outside M: φ lowered to its key, as before, and, when that key is below
// φ, x named the least job outside M (wNew) with the old φ as the bound
// on the others' keys (wPhi2), so that a carried first step of the next
// decision, whose φ (x's key) is then not above L's, needs no look-up of
// the least outside job: carriedWide returns x, and carryAddWide makes the
// bound φ again when the repair adds x.
//
// Why x is the least. The name is read only at the first step of the next
// decision, and only when that step carries (lastMWide clears it at every
// call). A record alive then was alive at x's arrival: a record is made
// or moved only by a decision's repair after its first step, and every
// decision between x's arrival and its read would have cleared the name
// at its first step. While the record lives, φ is at most every key
// outside M (srptcarry.go), so x, with a key below φ, precedes every job
// outside M then; a later arrival outside M either has a key below x's,
// and takes the name, or a key at least x's and a later arrival index,
// so follows x, and lowers the others' bound to its key if below; one
// that joins M, a start or a completion takes no job from outside M, and
// no decision comes between. So at the read x is the least job outside M
// in less, firstOutWide's first, with φ its key (firstOutWide's φ), and
// wPhi2 a bound on every other key outside M. Counted on Borg cell B at
// ρ = 0.95: 43.5 k first steps a replication carried with φ not above
// L's key, and every one of them added the least outside job.
func (p *Policy) outsideArrival(x int32) {
	k := p.slots[x].key
	if c := &p.carry; k < c.phi {
		p.wPhi2, p.wNew = c.phi, x+1
		c.phi = k
	} else {
		p.wPhi2 = min(p.wPhi2, k)
	}
}
