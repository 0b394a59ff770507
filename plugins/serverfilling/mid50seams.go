package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

// applySeamsRuns is the decision's takes (takes, on the counts nRun + w)
// and applySeams on ServerFilling's treap path under SRPT with the
// runSets (p.runs != nil, usesFront), in one pass over the buckets: the
// same takes, moves and exchange tests, in the same order, with the
// bucket loop's usual case written out. At k = 2048 past saturation
// (BenchmarkLevels, the L = 5000 rate) each decision passes over both
// buckets, and at nearly every bucket the count of running jobs is
// already its take and the exchange loop stops at its first look; the
// counts' loop, takes, applySeams, seamSingles and exchangeRuns together
// ran ~210 instructions a bucket for that, most of it the calls'
// arguments and spills and the tests of the other paths (cachegrind: 185 M
// of the 1250 M instructions of the policy and sim there; 145 M in one
// pass).
//
// Exactness. The takes: takes' arithmetic bucket by bucket on the same
// operands (bneed, the count, the servers left, the PackStop cut: once a
// bucket is cut, the later ones take 0 and leave rem as it is, as takes'
// clear and break do), with the cut and the servers left kept in p.cut
// and p.rem as the pass goes, ending as takes stores them (nothing in the
// moves reads them, see below); the count of bucket b is read after the
// moves of the buckets before it, which leave it as it was (a bucket's
// moves, one at a time or as runs, and its exchanges keep its nRun + w,
// and touch no other bucket), and nothing in the moves reads p.take,
// p.cut or p.rem (setStopper reads them after the pass). The
// seams, bucket by bucket: applySeams skips a bucket whose count is its
// take and which lacks a waiting or a running job; otherwise it makes the
// moves (seamMovesRuns: the runs moved at once, each only when the count
// and the take differ by seamRun or more, a preempted one after a flush of
// the front, a started one taking the front's jobs first, the jobs and the
// order the flush would give (startRunBlocks), then
// seamSingles' preemptions and starts one at a time, none when they are
// equal), then exchangeRuns' loop, whose test needs a waiting and a
// running job. So with the count equal to the take there is nothing but
// that loop, and without a waiting or a running job there is no loop.
// The loop is exchangeRuns' (the bucket's last running job x, its key
// refreshed, against its least waiting job y: the front's last, else
// wAtKept's rank 0; while y precedes x, exchangeRun swaps them). The
// same refreshes, the same lookups (wAtKept's kept ranks move the same
// way), the same comparisons on the same operands and the same moves in
// the same order.
//
// The lists are built in p.next and p.starts, not in locals, and
// seamMovesRuns and exchangeRun append to them there: carried in locals
// and passed to and from the calls, their six words were spilled and
// reloaded at each bucket and in the moves' loops (24 M instructions at
// the L = 5000 rate of BenchmarkLevelsH2, 1.9%); p.cut and p.rem serve
// as the pass's own for the same reason (6 M more).
func (p *Policy) applySeamsRuns(s *sdk.System, now float64) (pre, starts []int32) {
	p.next, p.starts = p.next[:0], p.starts[:0]
	sbs, bneed := p.sb, p.bneed[:len(p.sb)]
	p.rem, p.cut = p.k, int32(len(sbs))
	stop, cutAll := p.packing == PackStop, false
	for b := range sbs {
		sb := &sbs[b]
		t := 0
		if !cutAll { // takes' step for bucket b
			n := int(bneed[b])
			t = int(sb.nRun + sb.w)
			if t*n > p.rem {
				t = p.rem / n
				p.cut = min(p.cut, int32(b))
				cutAll = stop // the later buckets take 0
			}
			p.rem -= t * n
		}
		if t := int32(t); sb.nRun != t {
			p.seamMovesRuns(s, sb, b, t, now)
		}
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
			p.exchangeRun(s, sb, x, y, now)
		}
	}
	return p.next, p.starts
}

// seamMovesRuns is applySeams' moves on bucket sb (index b) of the
// runSets' path, whose count of running jobs is not its take t: the runs
// moved at once and seamSingles' preemptions and starts one at a time,
// appended to p.next and p.starts (applySeamsRuns' lists), without the
// exchanges (applySeamsRuns makes them). Its two loops are
// seamSingles' with toWaiting and runAppend in their runSets' forms
// (runsWaitLast, runsAdd: the same moves); seamSingles keeps its own
// because sharing them as a function the compiler does not inline cost
// DivisorFilling-SRPT on borg-b-pow2, whose seamSingles runs them at most
// decisions, 74 M instructions (+0.22%).
func (p *Policy) seamMovesRuns(s *sdk.System, sb *sbucket, b int, t int32, now float64) {
	if sb.nRun-t >= seamRun {
		p.next = p.preemptRunBlocks(sb, b, t, now, p.next)
		sb.kept = [2]struct{ r, x int32 }{}
	}
	if t-sb.nRun >= seamRun {
		p.starts = p.startRunBlocks(s, sb, b, t-sb.nRun, now, p.starts)
		sb.kept = [2]struct{ r, x int32 }{}
	}
	rs := &p.runs[b]
	for sb.nRun > t {
		x := p.runLast(sb, now) // (its key refreshed)
		p.runsWaitLast(sb, rs, x)
		sb.w++
		p.next = append(p.next, x)
	}
	for sb.nRun < t {
		sb.w--
		x := p.wAtKept(sb, 0)
		p.waitDeleteMin(sb)
		p.setRun(s, &p.slots[x], now)
		p.runsAdd(sb, rs, x)
		p.starts = append(p.starts, x)
	}
}

// startsMixed reports whether applySeamsRuns' starts (the decision's, on
// the runSets' path) come from more than one bucket: only then does the
// engine's order need the sort (decideSRPT's engine calls). A bucket's
// starts are appended at its one visit, after those of the buckets before
// it, so they come from one bucket exactly when the first and the last do.
//
// Why one bucket's starts are already in the order the sort gives
// (cmpWas(false): key0, the key the job waited with, then the arrival
// index; a total order, so the sort's result is that one list). They are
// appended in that order: the runs started at once are the bucket's first
// waiting jobs in the waiting order (key, arrival), the single starts each
// its least waiting job at the time, and an exchange starts the least
// waiting job y too. Between two such starts the bucket's waiting jobs
// lose the one started and gain at most the running job x an exchange
// preempts (preemptions at the seams and starts there exclude each other:
// the count of running jobs is above its take or below it), and that x
// follows y in the waiting order: the exchange is taken when less(y, x),
// which at equal keys is false (x runs: with crossings its rate exceeds
// y's 0, without them it is moving and y is not), so y's key is below
// x's key, now x's frozen one. So each start is at or after the one
// before in the waiting order, and key0 is the key it waited with
// (setRun, startRunBlocks). At BenchmarkLevelsH2's L = 5000 rate the sort
// of sorted lists (a wide job's completion starts up to 128 narrow ones)
// was 27.8 M instructions (cmpWas and slices' sort), 2% of the run's.
func (p *Policy) startsMixed(starts []int32) bool {
	n := len(starts)
	return n > 1 && p.slots[starts[0]].bucket != p.slots[starts[n-1]].bucket
}
