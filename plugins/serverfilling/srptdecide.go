package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

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
	if p.carried(now) {
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
		pre, starts = p.exchangeRun(s, sb, x, y, now, pre, starts)
	}
	return pre, starts
}

// exchangeRun is exchangeRuns's swap: running job x (the bucket's last)
// waits, waiting job y (its first) runs.
//
//go:noinline
func (p *Policy) exchangeRun(s *sdk.System, sb *sbucket, x, y int32, now float64, pre, starts []int32) ([]int32, []int32) {
	p.waitDeleteMin(sb)
	p.toWaiting(x, now)
	p.setRun(s, &p.slots[y], now)
	p.runAppend(y)
	return append(pre, x), append(starts, y)
}
