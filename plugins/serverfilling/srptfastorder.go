package serverfilling

import (
	"math"

	"github.com/msjfarm/msjfarm/sdk"
)

// The order of the SRPT and Gittins orderings (engine version 0.5.0), one
// definition shared by the general path (decide) and the O(C · log n) path
// (srptfast.go), so that the two take the same decisions by construction.
//
// Why a new rule. Until 0.4.0 keys within 1e-13 × max(1, now) of each other
// counted as tied (then the faster first, then arrival). That relation is
// not transitive (a ≈ b and b ≈ c with a and c apart), so the general
// path's insertion sort and merge produced an order that depended on the
// order M had at the previous decision, and no structure keyed by exact
// values (the SRPT path's treaps) could reproduce it: forced onto Borg
// cell B, seed 4, the two paths parted at t = 49339. The tolerance existed
// for the crossing timers: at the instant computed for a crossing, the
// recomputed keys could still be a rounding error apart in the old order,
// the decision then changed nothing and asked for the same instant again.
//
// The rule. Jobs are ordered lexicographically by
//
//	(key now, rate descending, fin ascending while running, arrival index)
//
// compared exactly (less). A lexicographic order of exact values is a total
// order, transitive whatever the rounding. Its parts:
//
//   - key: SRPT: need/k × remaining duration; Gittins: need/k × rank. A
//     waiting job's key is frozen. A running job's key is a function of one
//     number fixed while it runs, fin, and of the instant t only:
//     SRPT need/k × max(fin − t, 0), fin the instant its remaining size
//     would reach 0; Gittins need/k × G(t − fin), fin the instant its
//     attained service was 0 (G its class's rank function). Floating-point
//     subtraction, multiplication and max are monotone, so for two running
//     jobs of one need (SRPT) or one class (Gittins, G never rising) a
//     smaller fin gives a key ≤ at every instant: their order, ties
//     included, is (fin, arrival) for as long as both run, which is the
//     order the SRPT path's running treaps keep. (Before 0.5.0 the key was
//     computed as need/k × (remaining at the last start − (t − start)),
//     which rounding can invert between two jobs of one need by one ulp.)
//   - fin is set at a start so that the key does not rise there: SRPT, fin
//     = start + remaining duration, lowered by ulps while need/k × (fin −
//     start) exceeds the frozen key; Gittins, fin = start − attained
//     service, lowered while t − fin is below the attained service. So a
//     job started ahead of a waiting job of its need stays ahead of it
//     (running jobs come first at equal keys, below), which the SRPT path's
//     invariant needs (per need: running jobs, then waiting ones).
//   - rate (SRPT with crossings): need/k while running, 0 while waiting: at
//     equal keys the faster first, the order just after the instant, which
//     is what the continuous-time policy serves; every running job is then
//     ahead of every waiting one of equal key.
//   - fin while running, +Inf while waiting: among running jobs of one rate
//     the order above; a running job ahead of a waiting one of equal key
//     also with crossings off (rates all 0).
//   - arrival index: the rest (S: ties "arbitrarily"), and the only
//     tie-break among waiting jobs, which is the waiting heap's and
//     treaps' (key, arrival) order.
//
// Crossings without a tolerance. A crossing timer is set at crossAt: the
// first floating-point instant, from the straight-line estimate on, at
// which the recomputed keys put the overtaking job ahead, so the decision
// taken then sees the crossing in the same arithmetic and a decision never
// asks for its own instant again (the overtaking job is behind at the
// decision). Both paths arm the ServerFilling timer from the same
// candidates: per need bucket its running job of largest (fin, arrival),
// the one of that bucket that a faster job overtakes first (one rate, the
// largest key), plus the first job that did not fit; see armCrossing.
//
// Gittins orderings keep rate 0, and need the fin part only: equal ranks at
// different ages (flat stretches of a rank table, ranks held constant past
// its grid) are ordered by age, the older first, then by arrival.

// keyAt is slot sl's key at instant t: frozen while waiting, else a
// function of fin and t (see above).
func (p *Policy) keyAt(sl *slot, t float64) float64 {
	if !sl.moving {
		return sl.key
	}
	c := &p.cls[sl.class]
	switch p.ord {
	case SRPTOrder:
		return c.scale * clamp0(sl.fin-t)
	case GittinsOrder:
		if !c.rank.constant {
			return c.scale * c.rank.at(t-sl.fin)
		}
	}
	return sl.key
}

// less orders slots a and b at the instant their keys were last set: the
// total order above.
func (p *Policy) less(a, b int32) bool {
	sa, sb := &p.slots[a], &p.slots[b]
	if sa.key != sb.key {
		return sa.key < sb.key
	}
	if sa.rate != sb.rate {
		return sa.rate > sb.rate
	}
	if sa.moving != sb.moving {
		return sa.moving
	}
	if sa.moving && sa.fin != sb.fin {
		return sa.fin < sb.fin
	}
	return sa.id < sb.id
}

// setRun records that sl starts now: since, fin (see above), rate. It is
// a function of the job's state at the instant only, so calling it twice
// (the SRPT path prepares a start before the engine call) gives the same.
func (p *Policy) setRun(s *sdk.System, sl *slot, now float64) {
	sl.since = now
	sl.key0 = sl.key
	c := &p.cls[sl.class]
	switch {
	case p.ord == SRPTOrder:
		sl.moving = true
		sl.fin = finNear(now+s.Remaining(sl.j), now, c.scale, sl.key)
		if p.crossings {
			sl.rate = c.scale
		}
	case p.ord == GittinsOrder && !c.rank.constant:
		sl.moving = true
		fin := now - sl.age
		for now-fin < sl.age {
			fin = nextDown(fin)
		}
		sl.fin = fin
	}
}

// finAtMost is the largest fin ≤ fin0 at which the key need/k × (fin −
// now), clamped at 0, is at most key (≥ 0): fin0 lowered one ulp at a time
// while the key it gives exceeds key. That key is monotone in fin, so the
// ulps are counted by galloping and bisection over the bit patterns (in
// the order of the values for fin ≥ 0) instead of one by one: the same
// fin, in O(log) steps. It matters: a job preempted and restarted
// thousands of times (20 preemptions per arrival on Borg cell B) has had
// fin lowered at each start, the engine's remaining duration has not, and
// the gap grows to thousands of ulps; stepping through them was 600 of
// ServerFilling-SRPT's 1800 cpu-ns/event there.
func finAtMost(fin0, now, scale, key float64) float64 {
	if scale*clamp0(fin0-now) <= key {
		return fin0
	}
	if fin0 <= 0 { // not expected: instants are ≥ 0
		for scale*clamp0(fin0-now) > key {
			fin0 = nextDown(fin0)
		}
		return fin0
	}
	// Bit patterns: hi gives a key above key, lo one at most key (the
	// pattern 0 is +0, where the key is 0 since now ≥ 0).
	hi := math.Float64bits(fin0)
	lo := uint64(0)
	for step := uint64(1); step < hi; step *= 2 {
		if f := math.Float64frombits(hi - step); scale*clamp0(f-now) <= key {
			lo = hi - step
			break
		}
		hi -= step
	}
	// The bisection moves lo or hi to mid through masks of the test's
	// flag, without a branch: which way it goes is a coin toss (at the
	// L = 5000 rate of BenchmarkLevels, where restarted jobs' gaps run to
	// many ulps, the branch was mispredicted ~0.3 M times a replication).
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok := uint64(bit(scale*clamp0(math.Float64frombits(mid)-now) <= key))
		lo += (mid - lo) & -ok
		hi -= (hi - mid) & (ok - 1)
	}
	return math.Float64frombits(lo)
}

// finNear is finAtMost with its two usual answers taken without a branch:
// fin0 itself or one ulp below it (on BenchmarkLevels' L = 5000 rate, as
// on Borg cell B, each about half the starts of restarted jobs, so a
// branch between them was mispredicted at about half the starts). Which of
// the two is a flag the compiler sets without a jump; the rest (one ulp
// below still gives a key above key) take finFar (srptwide.go), which
// guesses the answer from now + key/scale before it searches. The same answer as
// finAtMost: fin0 if its key is at most key, else the largest fin below
// it whose key is, which is one ulp down if that one's is. (fin0 > 0
// whenever its key exceeds key ≥ 0, since then fin0 > now ≥ 0, so the
// pattern one below is the next float down; the test keeps a −0 or 0 out.)
// startSeam (srptwide.go) writes the same out in its loop.
func finNear(fin0, now, scale, key float64) float64 {
	down := uint64(0)
	if scale*clamp0(fin0-now) > key {
		down = 1
	}
	if f := math.Float64frombits(math.Float64bits(fin0) - down); scale*clamp0(f-now) <= key && (fin0 > 0 || down == 0) {
		return f
	}
	return finFar(fin0, now, scale, key)
}

// clamp0 is math.Max(d, 0) for the d it is given, differences of finite
// instants, which are never NaN: a branch the compiler inlines instead of
// math.Max's call (keyAt runs per running job of M at every decision of
// the general path). −0 gives +0, as math.Max does.
func clamp0(d float64) float64 {
	if d > 0 {
		return d
	}
	return 0
}

// minInstant is math.Min(t, c) for instants, which are never NaN (nor
// −0): a comparison the compiler inlines instead of math.Min's assembly
// call (armCrossingSRPT takes it per candidate, at every decision).
func minInstant(t, c float64) float64 {
	if c < t {
		return c
	}
	return t
}

// nextDown is math.Nextafter(x, −Inf), inlined for x > 0 (one bit
// pattern down, which is what Nextafter computes there).
func nextDown(x float64) float64 {
	if x > 0 {
		return math.Float64frombits(math.Float64bits(x) - 1)
	}
	return math.Nextafter(x, math.Inf(-1))
}

// stopRun records that sl stops running now (preempted): its key, already
// refreshed to now, is frozen; Gittins: its attained service is the one
// that key was computed from.
func (p *Policy) stopRun(sl *slot, now float64) {
	if p.ord == GittinsOrder && sl.moving {
		sl.age = now - sl.fin
	}
	sl.moving = false
	sl.rate = 0
}

// aheadAt reports whether running job b, faster than y, is ahead of y at
// instant t (keys recomputed then; equal keys: the faster first).
func (p *Policy) aheadAt(b, y *slot, t float64) bool {
	return p.keyAtSRPT(b, t) <= p.keyAtSRPT(y, t)
}

// keyAtSRPT is keyAt under the SRPT order, the same arithmetic in a
// function short enough to inline: crossing timers (aheadAt, crossAt) are
// armed only under that order (kinetic), at every decision of the SRPT
// paths, and keyAt's call was 3% of ServerFilling-SRPT's instructions at
// the L = 5000 rate of BenchmarkLevels.
func (p *Policy) keyAtSRPT(sl *slot, t float64) float64 {
	if !sl.moving {
		return sl.key
	}
	return p.cls[sl.class].scale * clamp0(sl.fin-t)
}

// refreshSRPT sets running SRPT job sl's key to its value at now (keyAt's
// SRPT case without keyAt's tests: the callers know sl runs under SRPT).
// The decision passes call it on the last running job of each bucket.
func (p *Policy) refreshSRPT(sl *slot, now float64) {
	sl.key = p.cls[sl.class].scale * clamp0(sl.fin-now)
}

// crossAt is the instant of the crossing timer for b overtaking y (b
// running, faster than y, behind y now): the first floating-point instant
// from the straight-line estimate on at which aheadAt holds. From the
// estimate, where the computed keys are within a few rounding errors of
// each other, it steps one ulp at a time; once y's key is 0 (y running past
// its fin: the lines meet below 0, y completes first) b is ahead exactly
// from its own fin on, so that is the answer. Being the first instant from
// a start that is monotone in y's key, it is monotone in y among the
// running jobs of one bucket (a later fin: a key ≥ at every instant), which
// is why the last of each bucket is the only candidate armCrossing needs.
// Past 256 steps (not expected) it doubles its step so as to end anyway:
// from b's fin on b is ahead of any slower job.
func (p *Policy) crossAt(b, y *slot, now float64) float64 {
	return p.crossFrom(b, y, p.crossEst(b, y, now))
}

// crossEst is crossAt's straight-line estimate, where its search starts: a
// lower bound of crossAt's answer unless y runs (then crossAt may stop at
// b's fin).
func (p *Policy) crossEst(b, y *slot, now float64) float64 {
	d, r := p.crossGap(b, y, now)
	return estOf(now, d, r)
}

// crossGap is the numerator and the denominator of crossEst's quotient:
// the keys' gap now and the rates' difference.
func (p *Policy) crossGap(b, y *slot, now float64) (d, r float64) {
	return p.keyAtSRPT(b, now) - p.keyAtSRPT(y, now), b.rate - y.rate // (finite keys, b.rate > y.rate)
}

// estOf is crossEst from crossGap's d and r (the same operations).
func estOf(now, d, r float64) float64 { return now + clamp0(d/r) }

// estAtLeast reports that estOf(now, d, r) ≥ bound without its division
// (false: not known; r > 0). armCrossingRuns skips a candidate whose
// estimate is not below the pending timer (92% of them at the L = 5000
// rate of BenchmarkLevels), and the division's latency was most of the
// estimate's cost there. Why a true answer is exact, with ε = 2^−53 and
// g = bound − now > 0 (if bound ≤ now: estOf ≥ now ≥ bound, clamp0 being
// ≥ 0 and rounding monotone): G = fl(g) ≥ g(1−ε) and P = fl(G·r) ≥
// G·r(1−ε), so g·r ≤ P/(1−ε)²; the test's right side, P + P·2^−40 (the
// product exact while P ≥ 2^−900) rounded once, is at least
// P(1 + 2^−40)(1−ε) ≥ P/(1−ε)³, so d > g·r/(1−ε); then q = fl(d/r) ≥
// (d/r)(1−ε) > g > 0, clamp0 leaves q, now + q > bound, and fl(now + q)
// ≥ bound since bound is a float. A fused multiply-add only makes a side
// more exact; P = +Inf (no timer pending) fails the test.
// TestEstAtLeast checks it near the boundary.
func estAtLeast(now, d, r, bound float64) bool {
	if bound <= now {
		return true
	}
	P := (bound - now) * r
	return P >= 0x1p-900 && d > P+P*0x1p-40
}

// crossFrom is crossAt's search from its estimate at.
func (p *Policy) crossFrom(b, y *slot, at float64) float64 {
	step := 0.0
	for n := 0; !p.aheadAt(b, y, at); n++ {
		switch {
		case y.moving && at >= y.fin:
			return b.fin
		case n < 256:
			at = math.Nextafter(at, math.Inf(1))
		default:
			if step == 0 {
				step = math.Nextafter(at, math.Inf(1)) - at
			}
			step *= 2
			at += step
		}
	}
	return at
}

// movingClass reports whether sl's key moves while it runs (SRPT; Gittins
// of a class whose rank is not constant).
func (p *Policy) movingClass(sl *slot) bool {
	return p.ord == SRPTOrder || p.ord == GittinsOrder && !p.cls[sl.class].rank.constant
}
