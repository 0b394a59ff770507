package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

// The wide path's takes under PackStop found from the end of the occupied
// buckets (applySeamsWide chooses between this and takesWide). A file of
// its own, after srptwide.go, so that the wide path's other functions
// keep their places relative to each other: placed in the middle of
// srptwide.go, it had one-or-all, which never runs it, read 2-4% slower
// in CPU at the same instruction count (cachegrind's first-level
// instruction misses there 4.7 → 6.5 M: code placement).

// takesFromCut is takesWide under PackStop when M's total exceeds k (so
// that some bucket is cut), finding the cut from the end of the occupied
// list instead of from its start. On Borg cell B at ρ = 0.95 the cut sits
// ~3.5 buckets from the end of ~11 occupied ones (the narrow needs hold
// most of M), and the buckets before it, which all fit, list a move only
// when one has a waiting job of M (17% of the decisions): a pass from the
// start spent ~21 instructions on each of them to learn what two sums
// tell. run is the servers M's running jobs hold (runNeed: Σ nRun × need
// over the buckets).
//
// Why it is takesWide's answer. With S = sumM = Σ c × need (c = nRun + w,
// M's jobs in the bucket, over the occupied buckets in their order) and
// D = S − k > 0, takesWide's cut is the first bucket j whose prefix sum
// through it, P_j, exceeds k (each bucket before it fits: c × need ≤ rem
// = k − P_{j−1}). P_j = S − Suf_{>j} (Suf: the sum of c × need over the
// buckets after), so j is the first with Suf_{>j} < D; Suf_{>j} does not
// grow with j and is 0 at the last bucket, so going down from the end, j
// is the first bucket whose Suf_{≥j} = Suf_{>j} + c_j × need_j is at
// least D (it is at the first bucket: Suf_{≥0} = S ≥ D). Then the servers
// left before the cut are k − P_{j−1} = Suf_{≥j} − D, and the cut's take,
// the servers left and cut are takesWide's, in the same integer
// arithmetic. Each bucket before the cut takes c; takesWide lists it when
// w ≠ 0, and the w of those buckets are all 0 exactly when their running
// jobs' servers, run − Σ_{≥j} nRun × need, equal their jobs of M's,
// P_{j−1} = S − Suf_{≥j} (w ≥ 0 and need > 0 in every bucket); else they
// are listed by a pass over them that reads only w. The buckets after the
// cut take 0 and are listed, as by takesWide, when they run jobs. The list
// keeps the occupied order.
func (p *Policy) takesFromCut(run int32, mv []int32) []int32 {
	occ, sbs := p.occ, p.sb
	bneed := p.bneed[:len(sbs)]
	d := int32(p.sumM - p.k)
	j := len(occ) - 1
	suf, runAfter := int32(0), int32(0)
	var b, n, c, need int32
	for ; ; j-- {
		b = occ[j]
		sb := &sbs[b]
		n, need = sb.nRun, bneed[b]
		c = n + sb.w
		if suf += c * need; suf >= d {
			break
		}
		runAfter += n * need
	}
	remBefore := suf - d
	t := remBefore / need
	m := 0
	if run-runAfter-n*need != int32(p.sumM)-suf { // a bucket before the cut has a waiting job of M
		for _, fb := range occ[:j] {
			if sb := &sbs[fb]; sb.w != 0 {
				mv[m], mv[m+1] = fb, sb.nRun+sb.w
				m += 2
			}
		}
	}
	if n != t || t != 0 && t != c {
		mv[m], mv[m+1] = b, t
		m += 2
	}
	if runAfter != 0 { // the later buckets take 0: those running jobs are listed
		for _, ab := range occ[j+1:] {
			if sbs[ab].nRun != 0 {
				mv[m], mv[m+1] = ab, 0
				m += 2
			}
		}
	}
	p.cut, p.rem = b, int(remBefore-t*need)
	return mv[:m]
}

// runNeed is the servers the wide path's running jobs hold at a decision's
// takes: the engine's busy servers, less those of the jobs the repair
// evicted (toWaiting: no longer running here, the engine told later, in
// engineCallsRuns). Every other change of the running jobs reaches the
// engine at once: a completion before the policy hears of it, an arrival
// started at once (startPending) in its start, and each decision's moves
// within the decision.
func (p *Policy) runNeed(s *sdk.System, evicted []int32) int32 {
	run := int32(s.Busy())
	for _, x := range evicted {
		run -= int32(p.slots[x].need)
	}
	return run
}
