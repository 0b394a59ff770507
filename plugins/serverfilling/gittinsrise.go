package serverfilling

import (
	"github.com/msjfarm/msjfarm/sdk"
)

// The rising-rank path: ServerFilling-Gittins when some class's rank rises
// with age (hyperexponential, Weibull of shape < 1), mixed with classes of
// constant or falling rank, when no class needs more than k/2 servers (the
// reasoning of initSRPT applies: a decision around a wide job moves many
// narrow ones, each a few treap operations here) and k ≥ 128 (below, the
// general path's pass over M is cheaper; measurements at initRise).
// O(C² · log n) per event (C classes, n jobs in system: O(C log n) descent
// steps of O(C) each) plus O(log n) per start and preemption; no pass over
// M, nothing that grows with the number of jobs but the treaps' depth. The
// starts and preemptions are the policy's own: past saturation a rising
// rank rotates jobs (the Gittins policy is then close to
// foreground–background), several per event, and the per-event cost grows
// with them (BenchmarkLevelsH2High reports preemptions/arrival). The design
// is the one written out at the top of gittins.go.
//
// The treaps are the per-class running ones and the per-need waiting ones:
// C + B (B ≤ C need buckets), written 2C below.
//
// The sequences. Every job is running or waiting. A waiting job's key is
// frozen, so each need bucket's waiting jobs sit in a treap on (key,
// arrival), the general path's heap order. Running jobs of one class share
// one rank function G and age at the same rate, and their key at instant t
// is need/k × G(t − fin) with fin fixed while they run (srptfastorder.go),
// so they sit in one treap per class ordered by fin: ascending (the oldest
// first) when G never rises, descending (the youngest first) when it never
// falls, arrival order when it is constant (frozen key). Along each treap
// the keys at any instant are non-decreasing, because the computed G is
// monotone in the age (gittins.go: the H2 and Weibull forms are written so
// that each floating-point operation takes the previous result alone). The
// exact order of srptfastorder.go is (key, moving first, fin, arrival):
// every treap is in that order except a rising class's treap inside a run
// of equal keys (equal fins, or ages so close or so old that the computed
// ranks coincide, the H2 plateau), which is in reverse order there (fin
// descending, then arrival descending, so that reversing the run gives fin
// ascending, then arrival).
//
// The search (riseCut). M is the shortest prefix of the order whose needs
// sum to at least k: its last job b is the least job x with Σ need ×
// #(jobs ≤ x) ≥ k. It is found in two selections over the 2C treaps, each
// a simultaneous descent (riseSelect): at each step the roots of the
// current subtrees of all treaps are compared; if the jobs up to every
// root already weigh k, the largest root is a candidate and its right part
// goes, otherwise the smallest root and its left part are below b and go.
// Each step descends one treap one level: O(C log n) steps of O(C) each.
//  1. By key alone (ties between treaps by treap index, inside a treap by
//     position), which is an order every treap follows: the key of b.
//     Each treap's range of jobs of that key is read off the gap the
//     descent left in it when the jobs beside the gap have other keys
//     (riseKeyRange), and counted by one more descent otherwise.
//  2. Among the jobs of that key (one range per treap, reversed for a
//     rising class), by the exact order: b itself, and per treap how many
//     of its jobs are in M. Skipped when one treap holds every job of that
//     key (the usual case), or one running treap of a moving class and one
//     other treap do (a rank's plateau, riseTieSplit): the count is then
//     arithmetic.
//
// The served set is, per need bucket, the first take[b] of the bucket's
// jobs in M (takes, from the per-bucket counts); a bucket served neither
// whole nor not at all is one more search of the same kind over its
// treaps, restricted to M. Then the running jobs beyond their class's
// served prefix are preempted and the waiting jobs inside their bucket's
// prefix start, O(log n) each, and the engine calls are made in the
// general path's order (the jobs that left M, the other preemptions, the
// starts, each in the order at the decision instant: cmpWas).
//
// Keys of running jobs are computed at the decision instant with the
// general path's arithmetic (keyAt), once per job and decision (a stamp
// per slot), so the comparisons are the general path's, and the decisions
// are identical (TestRisePathEquivalent). Shortcuts: an arrival that fits
// while every job runs starts at once, and a completion while every job
// runs decides nothing, as in the general path.

// riseState is the rising-rank path's state.
type riseState struct {
	rmode  []uint8 // per class: its running treap's order
	rroot  []int32 // per class: running jobs
	wroot  []int32 // per need bucket: waiting jobs
	nWait  int     // waiting jobs
	sumAll int     // total need of the jobs in system

	pend []int32 // started by the every-job-runs shortcut, not yet in their treap

	stamp uint32   // decision counter
	kst   []uint32 // per slot: the decision its key was last computed at

	vs, sub              []gview
	pre, evicted, starts []int32
}

// gview is one treap seen by a search.
type gview struct {
	root, n int32
	w       int64 // weight of each job (its need)
	rev     bool  // a rising class: ranges of equal keys are in reverse order
	bucket  int32
	cls     int32 // running treap of this class; -1: waiting treap of bucket
	src     int32 // bucket searches: index of the view in riseState.vs

	// Candidates: the first capN jobs of the treap (by key; at the cut
	// key, the first ones in the exact order).
	capN int32

	// Descent state: current subtree, jobs before it (in the descent's
	// orientation), candidates [rlo, rhi) in that orientation, and pre jobs
	// before them all in the order.
	cur, off, rlo, rhi, pre int32
	acc                     int64   // its weight up to cur (riseSelect)
	key                     float64 // cur's key at the decision instant

	// The descent's gap (riseKeyRange): whether it went down from the
	// root, the last job it passed on the right side (pred: the job
	// before the gap, -1 if none) and on the left side (succ: the job after
	// it), and, when the view's root became best, the job after that root
	// among its ancestors (esucc).
	gap               bool
	pred, succ, esucc int32

	// Result of riseCut: [lo, hi) are the treap positions of the jobs of
	// the cut key, c of them (in the exact order) are at or before the cut.
	lo, hi, c int32
	// Served: the same triple for the bucket's served prefix.
	slo, shi, sc int32
}

// riseMinK is the fewest servers for which the rising-rank path is taken.
const riseMinK = 128

// initRise sets the rising-rank path up (Init, after initSRPT). Like the
// SRPT path it is taken only when no class needs more than k/2 servers,
// and only from riseMinK servers up: the general path's work per event is
// |M| ≤ k cheap steps, this path's a few dozen treap steps and rank
// evaluations whatever k. Measured with BenchmarkRisePathChoice
// (ServerFilling-Gittins, H2 durations of C² = 10, need 1 and a wide need,
// ρ = 0.97, cpu-ns/event, 10^5 arrivals), rise / general: k = 2048 with
// the wide need k/4: 2951 / 16900, k/2: 4615 / 17236, k: 35098 / 24926;
// wide need k/4 at k = 512: 1744 / 4950, 256: 1539 / 2621, 128: 1396 /
// 1523, 64: 1248 / 930, 32: 1125 / 552. The decisions are the same
// either way.
func (p *Policy) initRise() {
	p.gr = nil
	if p.proc != ServerFilling || p.ord != GittinsOrder || p.monotone || p.fastSRPT || p.static ||
		p.exhaustive || p.allPairs || p.general {
		return
	}
	maxNeed := int32(0)
	for _, c := range p.cls {
		if r := c.rank; !r.constant && !r.nonIncreasing && !r.nonDecreasing {
			return // a rank table that is not monotone: the general path
		}
		maxNeed = max(maxNeed, c.need)
	}
	if !p.forceFast && (2*int(maxNeed) > p.k || p.k < riseMinK) {
		return
	}
	g := &riseState{}
	for _, c := range p.cls {
		m := modeKey
		switch {
		case c.rank.constant:
		case c.rank.nonIncreasing:
			m = modeFall
		default:
			m = modeRise
		}
		g.rmode = append(g.rmode, m)
		g.rroot = append(g.rroot, -1)
	}
	g.wroot = make([]int32, p.nBuckets)
	for b := range g.wroot {
		g.wroot[b] = -1
	}
	p.seed = 0x9e3779b9
	p.gr = g
}

// gkey is job i's key at the decision instant now (computed once per
// decision for a running job of a moving rank).
func (p *Policy) gkey(i int32, now float64) float64 {
	sl := &p.slots[i]
	if !sl.moving {
		return sl.key
	}
	if g := p.gr; g.kst[i] != g.stamp {
		g.kst[i] = g.stamp
		sl.key = p.keyAt(sl, now)
	}
	return sl.key
}

func (p *Policy) arriveRise(s *sdk.System, i int32) {
	g := p.gr
	sl := &p.slots[i]
	if g.nWait == 0 && g.sumAll+int(sl.need) <= p.k {
		// Every job runs and j fits too: all are served whatever the order.
		// Its place among the running jobs is needed only at the next
		// decision (flushed there), so a job that arrives and completes
		// while every job runs costs O(1), as on the general path.
		g.sumAll += int(sl.need)
		p.start(s, sl, s.Now())
		g.pend = append(g.pend, i)
		sl.pend = int32(len(g.pend))
		return
	}
	g.sumAll += int(sl.need)
	g.wroot[sl.bucket] = p.tAdd(g.wroot[sl.bucket], i, modeKey)
	g.nWait++
	p.decideRise(s)
}

func (p *Policy) completeRise(s *sdk.System, i int32) {
	g := p.gr
	sl := &p.slots[i]
	if sl.pend > 0 { // never placed: swap it out of the pending list
		k := sl.pend - 1
		last := g.pend[len(g.pend)-1]
		g.pend[k] = last
		p.slots[last].pend = k + 1
		g.pend = g.pend[:len(g.pend)-1]
	} else {
		g.rroot[sl.class] = p.tDelete(g.rroot[sl.class], i, g.rmode[sl.class])
	}
	g.sumAll -= int(sl.need)
	p.release(i)
	if g.nWait == 0 {
		return // every job runs: still all served
	}
	p.decideRise(s)
}

func (p *Policy) riseRunInsert(i int32) {
	g := p.gr
	c := p.slots[i].class
	g.rroot[c] = p.tAdd(g.rroot[c], i, g.rmode[c])
}

// decideRise is decide for this path (see the comment at the top).
func (p *Policy) decideRise(s *sdk.System) {
	now := s.Now()
	g := p.gr
	if g.stamp++; g.stamp == 0 { // wrapped: no stamp may look current
		clear(g.kst)
		g.stamp = 1
	}
	if n := len(p.slots); len(g.kst) < n {
		g.kst = append(g.kst, make([]uint32, n-len(g.kst))...)
	}
	for _, i := range g.pend {
		p.slots[i].pend = 0
		p.riseRunInsert(i)
	}
	g.pend = g.pend[:0]

	// 1. M.
	vs := g.vs[:0]
	for c := range p.cls {
		r := g.rroot[c]
		vs = append(vs, gview{root: r, n: p.tSize(r), w: int64(p.cls[c].need), rev: g.rmode[c] == modeRise,
			bucket: p.cls[c].bucket, cls: int32(c)})
	}
	for b, r := range g.wroot {
		vs = append(vs, gview{root: r, n: p.tSize(r), w: int64(p.bneed[b]), bucket: int32(b), cls: -1})
	}
	for i := range vs {
		vs[i].capN = vs[i].n
	}
	if g.sumAll < p.k {
		for i := range vs { // M is every job
			v := &vs[i]
			v.lo, v.hi, v.c = v.n, v.n, 0
		}
	} else {
		p.riseCut(vs, int64(p.k), now)
	}

	// 2. The takes, and the served prefix of each bucket.
	cnt := p.counts
	clear(cnt)
	for i := range vs {
		cnt[vs[i].bucket] += vs[i].lo + vs[i].c
	}
	take := p.takes(cnt)
	for i := range vs {
		v := &vs[i]
		v.slo, v.shi, v.sc = v.lo, v.hi, v.c
		if take[v.bucket] == 0 {
			v.slo, v.shi, v.sc = 0, 0, 0
		}
	}
	for b := range p.nBuckets {
		if take[b] == 0 || take[b] == cnt[b] {
			continue
		}
		sub := g.sub[:0]
		for i := range vs {
			if v := vs[i]; v.bucket == int32(b) {
				v.src = int32(i)
				v.capN = v.lo + v.c // the bucket's jobs in M
				sub = append(sub, v)
			}
		}
		p.riseCut(sub, int64(take[b])*int64(p.bneed[b]), now)
		for _, v := range sub {
			d := &vs[v.src]
			d.slo, d.shi, d.sc = v.lo, v.hi, v.c
		}
		g.sub = sub[:0]
	}

	// 3. Collect the moves: running jobs outside their served prefix
	// (evicted if outside M too), waiting jobs inside it.
	pre, evicted, starts := g.pre[:0], g.evicted[:0], g.starts[:0]
	for i := range vs {
		v := &vs[i]
		if v.cls < 0 {
			for range v.slo + v.sc {
				x := p.tFirst(g.wroot[v.bucket])
				g.wroot[v.bucket] = p.tDeleteMin(g.wroot[v.bucket])
				starts = append(starts, x)
			}
			g.nWait -= int(v.slo + v.sc)
			continue
		}
		// Treap positions: served and in M (see gview).
		var sv, in [2][2]int32
		if v.rev {
			sv = [2][2]int32{{0, v.slo}, {v.shi - v.sc, v.shi}}
			in = [2][2]int32{{0, v.lo}, {v.hi - v.c, v.hi}}
		} else {
			sv = [2][2]int32{{0, v.slo + v.sc}, {0, 0}}
			in = [2][2]int32{{0, v.lo + v.c}, {0, 0}}
		}
		out := complement(sv, v.n)
		notM := complement(in, v.n)
		for _, a := range out {
			for _, b := range in {
				if lo, hi := max(a[0], b[0]), min(a[1], b[1]); lo < hi {
					pre = p.riseCollect(v.root, 0, lo, hi, pre)
				}
			}
			for _, b := range notM {
				if lo, hi := max(a[0], b[0]), min(a[1], b[1]); lo < hi {
					evicted = p.riseCollect(v.root, 0, lo, hi, evicted)
				}
			}
		}
	}

	// 4. Apply: preemptions (key frozen at now) to the waiting treaps,
	// then the starts to the running treaps.
	for _, l := range [2][]int32{evicted, pre} {
		for _, x := range l {
			sl := &p.slots[x]
			p.gkey(x, now)
			g.rroot[sl.class] = p.tDelete(g.rroot[sl.class], x, g.rmode[sl.class])
			p.stopRun(sl, now)
			g.wroot[sl.bucket] = p.tAdd(g.wroot[sl.bucket], x, modeKey)
			g.nWait++
		}
	}
	for _, x := range starts {
		p.setRun(s, &p.slots[x], now) // the engine call below
		p.riseRunInsert(x)
	}

	// 5. Engine calls in the general path's order.
	p.engineCalls(s, evicted, pre, starts)
	g.vs, g.pre, g.evicted, g.starts = vs[:0], pre[:0], evicted[:0], starts[:0]
}

// complement returns the positions of [0, n) outside two disjoint sorted
// intervals (empty ones allowed).
func complement(iv [2][2]int32, n int32) [3][2]int32 {
	a, b := iv[0], iv[1]
	if b[0] >= b[1] {
		b = [2]int32{n, n}
	}
	if a[0] >= a[1] {
		a = [2]int32{0, 0}
	}
	if a[0] > b[0] {
		a, b = b, a
	}
	return [3][2]int32{{0, a[0]}, {a[1], b[0]}, {b[1], n}}
}

// riseCollect appends the jobs at treap positions [a, b) of t (whose first
// job is at position off) in treap order.
func (p *Policy) riseCollect(t, off, a, b int32, out []int32) []int32 {
	if t < 0 || a >= b {
		return out
	}
	nd := &p.tn[t]
	pos := off + p.tSize(nd.l)
	if a < pos {
		out = p.riseCollect(nd.l, off, a, min(b, pos), out)
	}
	if a <= pos && pos < b {
		out = append(out, t)
	}
	if pos+1 < b {
		out = p.riseCollect(nd.r, pos+1, max(a, pos+1), b, out)
	}
	return out
}

// riseCut finds the least candidate job x in the order such that the
// candidates up to x weigh at least target (there is one), and leaves in
// each view lo, hi (the treap positions of the jobs of x's key) and c
// (how many of them are candidates at or before x).
func (p *Policy) riseCut(vs []gview, target int64, now float64) {
	for i := range vs {
		v := &vs[i]
		v.pre, v.rlo, v.rhi = 0, 0, v.capN
	}
	e, ev, _ := p.riseSelect(vs, target, false, now)
	kc := p.slots[e].key
	rest := target // target less the weight of the candidates below kc
	tied, only := 0, -1
	for i := range vs {
		v := &vs[i]
		v.lo, v.hi = p.riseKeyRange(v, i == ev, kc, now)
		ln := min(v.hi, v.capN) - v.lo // candidates of key kc: the first ln of them
		v.pre = v.lo
		v.rlo = v.lo
		if v.rev {
			v.rlo = v.n - v.hi // reversed: the range [lo, hi) read from its end
		}
		v.rhi = v.rlo + ln
		v.c = 0
		rest -= v.w * int64(v.lo)
		if ln > 0 {
			tied++
			only = i
		}
	}
	if tied == 1 {
		// One treap holds every candidate of key kc (the usual case): the
		// cut is the first of them that brings the weight to target.
		v := &vs[only]
		v.c = int32((rest + v.w - 1) / v.w)
		return
	}
	if p.riseTieSplit(vs, rest) {
		return
	}
	e, bv, bc := p.riseSelect(vs, target, true, now)
	for i := range vs {
		if i == bv {
			vs[i].c = bc
		} else {
			vs[i].c = p.riseCountTie(&vs[i], e, now)
		}
	}
}

// riseTieSplit is the descent among the jobs of the cut key (riseSelect
// with ties, then riseCountTie per view) done by arithmetic when one view
// of moving jobs and one of others hold all the candidates of that key:
// less puts a moving job before a frozen one of equal key (their rates are
// 0 under the Gittins order), so every candidate of the first view comes
// before every one of the second, and the cut is the first candidate that
// brings the weight to target, rest short of it at the key. It reports
// whether it set the views' c. On H2 past saturation a cut among the
// narrow jobs is most often on their rank's plateau (h2Plateau), a key
// shared by the running jobs there and the ones preempted there: at
// BenchmarkLevelsH2's L = 1300 and 5000 rates (seed 1), 85% and 77% of the
// decisions had a tie, every one of this kind. Two frozen views (equal
// keys, ordered by arrival across treaps) take the descent.
func (p *Policy) riseTieSplit(vs []gview, rest int64) bool {
	mv, fv := -1, -1
	for i := range vs {
		v := &vs[i]
		switch {
		case v.rhi <= v.rlo:
		case v.cls >= 0 && p.gr.rmode[v.cls] != modeKey: // a running treap of a class whose rank moves
			if mv >= 0 {
				return false
			}
			mv = i
		case fv >= 0:
			return false
		default:
			fv = i
		}
	}
	if mv < 0 || fv < 0 {
		return false
	}
	m, f := &vs[mv], &vs[fv]
	if all := m.w * int64(m.rhi-m.rlo); rest > all {
		m.c = m.rhi - m.rlo
		f.c = int32((rest - all + f.w - 1) / f.w)
	} else {
		m.c = int32((rest + m.w - 1) / m.w)
	}
	return true
}

// orient returns t's children in the order of a descent (swapped when
// rev).
func (p *Policy) orient(t int32, rev bool) (l, r int32) {
	nd := &p.tn[t]
	if rev {
		return nd.r, nd.l
	}
	return nd.l, nd.r
}

// riseSelect is the simultaneous descent (see the comment at the top):
// the least candidate e with Σ_v w_v·(pre_v + #(candidates of v ≤ e)) ≥
// target, its view and how many candidates of its view are ≤ e. ties:
// compare by the exact order (less; every candidate has the same key, and
// rev views are read backwards); otherwise by (key, view index).
//
// Why it is right. Let b be the answer. A job leaves on the left only when
// the weight up to it is below target (so it is before b, when b has not
// been found yet), on the right when it follows a candidate already found
// (so it follows b, or b was found). The test uses lb: the candidates up to
// each current root plus those gone on the left. If lb ≥ target the
// largest root r has weight ≥ lb up to it, unless r < b, in which case
// everything counted in lb is before b and lb is at most the weight before
// b, below target: so r ≥ b and is a candidate. If lb < target, the
// smallest root r has at most lb − (the other roots) up to it (roots
// beyond a found candidate were dropped first), so r < b.
func (p *Policy) riseSelect(vs []gview, target int64, ties bool, now float64) (best int32, bv int, bc int32) {
	sel := riseSel{best: -1, bv: -1, ties: ties, now: now}
	var lb int64
	for i := range vs {
		v := &vs[i]
		v.cur, v.off = v.root, 0
		if v.rhi <= v.rlo {
			v.cur, v.off = -1, v.rlo
		}
		v.gap, v.pred, v.succ = v.cur >= 0, -1, -1
		v.acc = p.riseNorm(v, i, &sel)
		lb += v.acc
	}
	for {
		// The largest and the smallest current root.
		var mx, mn int
		if ties {
			mx, mn = p.riseExtremesTie(vs)
		} else {
			mx, mn = riseExtremesKey(vs)
		}
		if mx < 0 {
			return sel.best, sel.bv, bc
		}
		if lb >= target {
			v := &vs[mx]
			l, _ := p.orient(v.cur, ties && v.rev)
			sel.best, sel.bestKey, sel.bv = v.cur, v.key, mx
			bc = v.off + p.tSize(l) - v.rlo + 1
			v.esucc, v.succ, v.cur = v.succ, v.cur, l
			// A new best: every root beyond it goes. Only v's can be: best
			// was the largest root, so every other view's root is before it
			// and that view stays as it was.
			a := p.riseNorm(v, mx, &sel)
			lb += a - v.acc
			v.acc = a
		} else {
			v := &vs[mn]
			l, r := p.orient(v.cur, ties && v.rev)
			v.off += p.tSize(l) + 1
			v.pred, v.cur = v.cur, r
			a := p.riseNorm(v, mn, &sel)
			lb += a - v.acc
			v.acc = a
		}
	}
}

// riseSel is riseSelect's state that riseNorm reads: the best candidate so
// far (best, -1 if none; its key and view) and the descent's order (ties)
// and instant. Passed by pointer, it keeps riseNorm's arguments few.
type riseSel struct {
	best    int32
	bv      int
	bestKey float64
	now     float64
	ties    bool
}

// riseExtremesKey is riseSelect's largest and smallest current root
// outside ties, by (key, view index): -1, -1 if no view has one. Each view
// keeps its root's key (riseNorm), so the scan reads no slot; and as views
// are scanned in index order, a later view is larger on an equal key and
// not smaller, which is viewKeyBefore with the indices folded in.
func riseExtremesKey(vs []gview) (mx, mn int) {
	mx, mn = -1, -1
	var kmx, kmn float64
	for i := range vs {
		v := &vs[i]
		if v.cur < 0 {
			continue
		}
		if mx < 0 {
			mx, mn, kmx, kmn = i, i, v.key, v.key
			continue
		}
		if kmx <= v.key {
			mx, kmx = i, v.key
		}
		if v.key < kmn {
			mn, kmn = i, v.key
		}
	}
	return mx, mn
}

// riseExtremesTie is riseExtremesKey in the exact order (less), for the
// descent among the jobs of one key.
func (p *Policy) riseExtremesTie(vs []gview) (mx, mn int) {
	mx, mn = -1, -1
	for i := range vs {
		v := &vs[i]
		if v.cur < 0 {
			continue
		}
		if mx < 0 || p.less(vs[mx].cur, v.cur) {
			mx = i
		}
		if mn < 0 || p.less(v.cur, vs[mn].cur) {
			mn = i
		}
	}
	return mx, mn
}

// viewKeyBefore is riseSelect's order outside ties: by key, then view.
func viewKeyBefore(ka float64, ia int, kb float64, ib int) bool {
	return ka < kb || ka == kb && ia < ib
}

// riseNorm brings view v's (index i) root into its candidates and before
// the best candidate (s), keeping the root's key in v.key, and returns the
// weight of v's candidates up to the root, or gone on the left if none is
// left.
func (p *Policy) riseNorm(v *gview, i int, s *riseSel) int64 {
	rev := s.ties && v.rev
	for v.cur >= 0 {
		l, r := p.orient(v.cur, rev)
		op := v.off + p.tSize(l)
		if op < v.rlo {
			v.off, v.pred, v.cur = op+1, v.cur, r
			continue
		}
		if op >= v.rhi {
			v.succ, v.cur = v.cur, l
			continue
		}
		v.key = p.gkey(v.cur, s.now)
		if s.best >= 0 && (s.ties && p.less(s.best, v.cur) || !s.ties && viewKeyBefore(s.bestKey, s.bv, v.key, i)) {
			v.succ, v.cur = v.cur, l
			continue
		}
		return v.w * int64(v.pre+op-v.rlo+1)
	}
	return v.w * int64(v.pre+max(0, v.off-v.rlo))
}

// riseKeyRange is riseCountKeys(v.root, kc, now) read off the gap the
// key descent (riseSelect, not ties) that found the cut job e of key kc
// left in view v (isBest: e's view): the jobs before the gap are before e
// and those after it follow e (for e's view, e is the job after its gap).
// Keys being non-decreasing along the treap, if the job before the gap
// has a key below kc and the one after it (after e, for e's view) a key
// above, the jobs of key kc are none (e alone) and the counts are the
// gap's position, with no descent. Otherwise (a job of key kc beside the
// gap, the usual case only for tied keys, or a descent that did not go
// down) it counts.
func (p *Policy) riseKeyRange(v *gview, isBest bool, kc float64, now float64) (lo, hi int32) {
	if v.n == 0 {
		return 0, 0
	}
	if !v.gap || v.rlo != 0 || v.pre != 0 || v.pred >= 0 && !(p.gkey(v.pred, now) < kc) {
		return p.riseCountKeys(v.root, kc, now)
	}
	lo, hi = v.off, v.off
	next := v.succ
	if isBest { // next is e: the job after e is the first of its right subtree, or else esucc
		hi++
		next = v.esucc
		if r := p.tn[v.succ].r; r >= 0 {
			next = p.tFirst(r)
		}
	}
	if next >= 0 && !(p.gkey(next, now) > kc) {
		return p.riseCountKeys(v.root, kc, now)
	}
	return lo, hi
}

// riseCountKey is the number of jobs of treap t whose key now is below kv
// (le: at most kv): a prefix, keys being non-decreasing along every treap.
func (p *Policy) riseCountKey(t int32, kv float64, le bool, now float64) int32 {
	n := int32(0)
	for t >= 0 {
		nd := &p.tn[t]
		if k := p.gkey(t, now); k < kv || le && k == kv {
			n += 1 + p.tSize(nd.l)
			t = nd.r
		} else {
			t = nd.l
		}
	}
	return n
}

// riseCountKeys is riseCountKey below kv and at most kv in one descent:
// the two paths are one until a job of key kv, where they part (with
// distinct keys, the usual case, they never do).
func (p *Policy) riseCountKeys(t int32, kv float64, now float64) (lt, le int32) {
	for t >= 0 {
		nd := &p.tn[t]
		switch k := p.gkey(t, now); {
		case k < kv:
			n := 1 + p.tSize(nd.l)
			lt, le = lt+n, le+n
			t = nd.r
		case k == kv:
			lt += p.riseCountKey(nd.l, kv, false, now)
			le += 1 + p.tSize(nd.l) + p.riseCountKey(nd.r, kv, true, now)
			return lt, le
		default:
			t = nd.l
		}
	}
	return lt, le
}

// riseCountTie is the number of candidates of view v (the [rlo, rhi) range
// riseCut set) before job e in the exact order.
func (p *Policy) riseCountTie(v *gview, e int32, now float64) int32 {
	if v.rhi <= v.rlo {
		return 0
	}
	p.gkey(e, now)
	t, off := v.root, int32(0)
	for t >= 0 {
		l, r := p.orient(t, v.rev)
		op := off + p.tSize(l)
		yes := op < v.rlo
		if !yes && op < v.rhi {
			p.gkey(t, now)
			yes = p.less(t, e)
		}
		if yes {
			off, t = op+1, r
		} else {
			t = l
		}
	}
	return max(0, min(off, v.rhi)-v.rlo)
}
