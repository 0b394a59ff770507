package serverfilling

import "github.com/msjfarm/msjfarm/sdk"

// The DivisorFilling fast path: DivisorFilling under arrival order (policy
// divisorfilling, backfill on or off) in O(C · log k) per recursion level
// (C distinct needs), never a pass over M.
//
// M. Under arrival order M (the first k jobs) is a prefix of the arrival
// order that loses jobs only to completions, as on the plain path: an
// arrival joins M if M has fewer than k jobs (then M is every job) and
// otherwise waits in a FIFO behind it; a completion pulls the FIFO's head
// into M. So M is kept as on the plain path (plain.go, embedded): per need
// bucket its jobs in arrival order, a linked list with a cursor on the
// first unserved one.
//
// Why per-bucket counts suffice (divisor.go): every list the recursion
// works on is, per bucket, a contiguous range of ranks [lo, hi) in the
// bucket's jobs in M (arrival order), and the jobs it serves of a bucket
// are the first of that range. At the top the list is M ([0, inM) per
// bucket). "The first kk jobs" of a list cuts each range at the same
// arrival position; Cases 2 and 3 keep some buckets' ranges whole; Case 1
// serves, per bucket in descending need, the first jobs of its range; Case
// 3's extraction recurses on Mr and then removes what the recursion
// served, which is the front of each of Mr's ranges (by induction, every
// job of a list is unserved when the recursion reaches it, so the served
// ones of a bucket are exactly ranks [lo, srv)). So a decision's outcome
// is srv per bucket: the first srv jobs of the bucket's jobs in M are
// served; backfill (first fit over M in arrival order) only extends those
// prefixes, since once a job of need n does not fit no later one of need
// n fits. Applying it moves each bucket's cursor, as plain.move does.
//
// The one operation that needs positions is "the first kk jobs of a list"
// when the list has more than kk: a Fenwick tree over M's positions
// (arrival order, a position given to each job as it enters M, compacted
// when they run out) counts each bucket's jobs up to a position, and one
// descent finds the largest position up to which the list has at most kk
// jobs, all buckets at once (the count of a list up to a position is a
// monotone function of the per-bucket prefix counts, which the descent
// carries). Backfill is at most C such descents, weighted by need: with
// the buckets whose need fits in the servers left (S, largest need nmax),
// first fit serves every job of S in arrival order as long as at least
// nmax servers stay free, then the next job of S, after which S loses at
// least its largest bucket.
//
// Cost per decision: O(C) per recursion level plus O(C · log k) per
// truncation (at most one per level; Case 3 extractions recurse up to p
// times, p the largest prime factor of kk), O(C² · log k) for backfill,
// plus O(1) per start, preemption and job entering M; a position
// compaction costs O(C · k) once per at least k jobs entering M. An
// arrival behind a full M is one push; with backfill on, while every job
// is in M and served, an arrival that fits just starts and a completion
// changes nothing (the general path's shortcuts). TestDivisorFastPathExact
// compares traces with the general path event for event.
//
// Measured (BenchmarkLevelsDivisorFilling, two classes at k = 2048,
// cpu-ns/event, medians of 3 on a shared machine), fast / general: L ≈ 10:
// 76 / 65, 100: 78 / 79, 500: 85 / 119, 1470: 229 / 13354, 2100: 261 /
// 16108, 3500: 262 / 13530, 4600: 263 / 13825. The step between 500 and
// 1470 is the engine's starts and preemptions, 0.5 per event below
// saturation and 4 to 6 above (a wide job's start preempts up to 128
// narrow ones); the path's own cost is flat. At L ≈ 10 every event takes a
// shortcut on both paths, and this one also keeps the tree (two O(log k)
// updates per job).

// dfast is the state of the DivisorFilling fast path (nil when the policy
// takes another).
type dfast struct {
	plain // M per need bucket, the FIFO behind M, move and byArrival

	nb       int     // buckets
	m        int     // jobs in M
	backfill bool    // parameter backfill
	need     []int32 // per bucket
	bOf      []int32 // per need 1..k: its bucket (-1: none)
	lpf      []int32 // largest prime factor of 0..k

	// Fenwick tree over M's positions 1..n (n a power of two, at least 2k):
	// tree[x*nb+b] counts bucket b's jobs in the positions it covers.
	n    int
	top  int     // last position given
	tree []int32 // (n+1)·nb
	at   []int32 // per position: its slot (-1: none)
	pos  []int32 // per slot: its position

	srv    []int32 // per bucket: jobs served by the decision being taken
	lo, hi []int32 // per recursion depth, nb entries each: the list's rank ranges
	acc    []int32 // scratch: per bucket, prefix counts during a descent
	cand   []int32 // scratch: buckets taking part in a descent
}

// initDivFast sets the fast path up if the policy is DivisorFilling under
// arrival order (Init, after the buckets and lpf).
func (p *Policy) initDivFast() {
	if p.ord != ArrivalOrder || p.proc != DivisorFilling || p.exhaustive || p.general {
		p.df = nil
		return
	}
	q := p.df
	if q == nil {
		q = &dfast{}
		p.df = q
	}
	nb := p.nBuckets
	q.k, q.sumM, q.nb, q.m, q.backfill = p.k, 0, nb, 0, p.backfill
	q.cb = q.cb[:0]
	for _, c := range p.cls {
		q.cb = append(q.cb, c.bucket)
	}
	q.bk = q.bk[:0]
	for b := range nb {
		q.bk = append(q.bk, pBucket{head: -1, tail: -1, cur: -1, need: p.bneed[b]})
	}
	clear(q.job)
	q.job, q.ln, q.free = q.job[:0], q.ln[:0], q.free[:0]
	q.out.reset()
	w := (nb + 63) / 64
	q.occ = append(q.occ[:0], make([]uint64, w)...)
	q.served = append(q.served[:0], make([]uint64, w)...)
	q.pre, q.starts, q.ents = make([]int32, p.k), make([]int32, p.k), q.ents[:0]

	q.need = append(q.need[:0], p.bneed...)
	q.bOf = make([]int32, p.k+1)
	for n := range q.bOf {
		q.bOf[n] = -1
	}
	for b, n := range q.need {
		q.bOf[n] = int32(b)
	}
	q.lpf = p.lpf
	q.n = 2
	for q.n < 2*p.k {
		q.n *= 2
	}
	q.top = 0
	q.tree = make([]int32, (q.n+1)*nb)
	q.at = make([]int32, q.n+1)
	q.pos = q.pos[:0]
	q.srv = make([]int32, nb)
	// Each recursive call divides kk by at least 2: depth ≤ log2 k + 1.
	depth := 2
	for x := p.k; x > 1; x /= 2 {
		depth++
	}
	q.lo, q.hi = make([]int32, depth*nb), make([]int32, depth*nb)
	q.acc, q.cand = make([]int32, nb), make([]int32, 0, nb)
}

func (q *dfast) arrive(s *sdk.System, j *sdk.Job) {
	if q.m >= q.k { // behind a full M: nothing changes
		r := &q.out
		if r.n == len(r.buf) {
			r.grow()
		}
		r.buf[(r.head+r.n)&(len(r.buf)-1)] = j
		r.n++
		return
	}
	all := q.allServed()
	q.admit(j) // M is every job and short of k: j joins it
	if all && q.sumM <= q.k {
		// Every job was served and j fits too: backfill serves them all,
		// so j just starts (the general path's shortcut). Its bucket's
		// earlier jobs are all served: j is the cursor.
		b := q.ln[j.Idx].b
		x := &q.bk[b]
		x.cur = -1
		x.served++
		q.served[b>>6] |= 1 << (b & 63)
		s.Start(j)
		return
	}
	q.decide(s)
}

// allServed reports whether every job in the system is in M and served:
// with backfill on, whenever no job waits behind M and M's total need is
// at most k (backfill then serves all of M, and the shortcuts of arrive
// and complete keep it so).
func (q *dfast) allServed() bool {
	return q.backfill && q.out.n == 0 && q.sumM <= q.k
}

func (q *dfast) complete(s *sdk.System, j *sdk.Job) {
	all := q.allServed()
	i := int32(j.Idx)
	ps := int(q.pos[i]) // before unlinkServed frees the slot
	b := q.unlinkServed(i)
	q.m--
	q.at[ps] = -1
	q.add(ps, int(b), -1)
	for r := &q.out; q.m < q.k && r.n > 0; {
		j := r.buf[r.head]
		r.buf[r.head] = nil
		r.head = (r.head + 1) & (len(r.buf) - 1)
		r.n--
		q.admit(j)
	}
	if !all { // else every other job is still served: nothing to decide
		q.decide(s)
	}
}

// admit appends j to M: to its bucket's list and at the next position.
func (q *dfast) admit(j *sdk.Job) {
	q.enter(j)
	i := int32(j.Idx)
	for int(i) >= len(q.pos) {
		q.pos = append(q.pos, 0)
	}
	if q.top == q.n {
		q.compact()
	}
	q.top++
	q.pos[i] = int32(q.top)
	q.at[q.top] = i
	q.add(q.top, int(q.ln[i].b), 1)
	q.m++
}

// add adds d to bucket b's count at position x.
func (q *dfast) add(x, b, d int) {
	nb := q.nb
	for ; x <= q.n; x += x & -x {
		q.tree[x*nb+b] += int32(d)
	}
}

// compact gives M's jobs positions 1..|M| in order and rebuilds the tree
// (linear time): at most k jobs are in M, so this happens once per at least
// n − k ≥ k admissions.
func (q *dfast) compact() {
	nb := q.nb
	clear(q.tree)
	w := 0
	for x := 1; x <= q.top; x++ {
		i := q.at[x]
		if i < 0 {
			continue
		}
		q.at[x] = -1
		w++
		q.at[w] = i
		q.pos[i] = int32(w)
		q.tree[w*nb+int(q.ln[i].b)]++
	}
	for x := w + 1; x <= q.top; x++ {
		q.at[x] = -1
	}
	for x := 1; x <= q.n; x++ {
		if y := x + x&-x; y <= q.n {
			for b := range nb {
				q.tree[y*nb+b] += q.tree[x*nb+b]
			}
		}
	}
	q.top = w
}

// decide computes srv per bucket (the recursion on M, then backfill) and
// applies it: preemptions, then starts, each in arrival order, as the
// general path calls them.
func (q *dfast) decide(s *sdk.System) {
	nb := q.nb
	lo, hi := q.lo[:nb], q.hi[:nb]
	for b := range nb {
		lo[b], hi[b], q.srv[b] = 0, q.bk[b].inM, 0
	}
	q.fill(0, q.k, 1)
	if q.backfill {
		q.fillFirstFit()
	}
	q.np, q.ns, q.preRuns, q.startRuns = 0, 0, 0, 0
	for b := range nb {
		if x := &q.bk[b]; x.served != q.srv[b] {
			q.move(x, b, q.srv[b])
		}
	}
	q.apply(s)
}

// fill is divFill (divisor.go) on the list held at depth d (per bucket the
// ranks [lo, hi) of its jobs in M), kk servers, needs divided by scale:
// it adds what it serves to srv. Every job of the list is unserved on
// entry, so srv[b] = lo[b] for every bucket the list holds.
func (q *dfast) fill(d, kk, scale int) {
	nb := q.nb
	lo, hi := q.lo[d*nb:(d+1)*nb], q.hi[d*nb:(d+1)*nb]
	tot := 0
	for b := range nb {
		tot += int(hi[b] - lo[b])
	}
	if tot > kk {
		q.firstK(lo, hi, kk)
		tot = kk
	}
	if tot == 0 || kk < 1 {
		return
	}
	ones := 0
	if b := q.bOf[scale]; b >= 0 {
		ones = int(hi[b] - lo[b])
	}
	if 6*ones >= kk {
		case1(q.need, q.bOf, q.srv, lo, hi, kk, scale)
		return
	}
	slo, shi := q.lo[(d+1)*nb:(d+2)*nb], q.hi[(d+1)*nb:(d+2)*nb]
	lp := int(q.lpf[kk])
	if lp <= 3 { // Case 2
		switch case2(q.need, lo, hi, slo, shi, scale) {
		case 2:
			q.fill(d+1, kk/2, scale*2)
		case 3:
			q.fill(d+1, kk/3, scale*3)
		}
		return
	}
	// Case 3.
	np := 0
	for b := range nb {
		if (int(q.need[b])/scale)%lp == 0 {
			np += int(hi[b] - lo[b])
		}
	}
	if lp*np >= kk {
		for b := range nb {
			slo[b], shi[b] = lo[b], lo[b]
			if (int(q.need[b])/scale)%lp == 0 {
				shi[b] = hi[b]
			}
		}
		q.fill(d+1, kk/lp, scale*lp)
		return
	}
	// Mr, in place: needs not divisible by lp and above 1.
	mr := 0
	for b := range nb {
		if n := int(q.need[b]) / scale; n%lp == 0 || n <= 1 {
			hi[b] = lo[b]
		}
		mr += int(hi[b] - lo[b])
	}
	sub := kk / lp
	for rep := 0; rep < lp && mr > 0; rep++ {
		copy(slo, lo)
		copy(shi, hi)
		q.fill(d+1, sub, scale)
		// What the extraction served is the front of each of Mr's ranges.
		mr = 0
		for b := range nb {
			if hi[b] > lo[b] {
				lo[b] = q.srv[b]
				mr += int(hi[b] - lo[b])
			}
		}
	}
}

// case1 is dfCase1 on per-bucket rank ranges [lo, hi) (needs divided by
// scale), adding to srv the jobs it serves: per bucket in descending need,
// the first jobs of its range while they fit, stopping at the first that
// does not; then the list's other jobs of need scale (bucket bOf[scale])
// while servers remain.
func case1(need, bOf, srv, lo, hi []int32, kk, scale int) {
	rem := kk
	for b := range lo {
		l := int(hi[b] - lo[b])
		if l == 0 {
			continue
		}
		n := int(need[b]) / scale
		t := l
		if t*n > rem {
			t = rem / n
		}
		srv[b] += int32(t)
		rem -= t * n
		if t < l {
			break
		}
	}
	if b := bOf[scale]; b >= 0 && rem > 0 {
		srv[b] += int32(min(int(hi[b]-srv[b]), rem))
	}
}

// firstK cuts the list (lo, hi) to its first kk jobs in arrival order (it
// has more): the largest position up to which it holds at most kk jobs,
// found by one descent of the tree carrying every bucket's prefix count.
func (q *dfast) firstK(lo, hi []int32, kk int) {
	nb := q.nb
	cand := q.cand[:0]
	for b := range nb {
		if hi[b] > lo[b] {
			cand = append(cand, int32(b))
		}
	}
	acc := q.acc
	for _, b := range cand {
		acc[b] = 0
	}
	pos := 0
	for bit := q.n; bit > 0; bit >>= 1 {
		x := pos + bit
		if x > q.n {
			continue
		}
		row := q.tree[x*nb : (x+1)*nb]
		t := 0
		for _, b := range cand {
			t += int(min(max(acc[b]+row[b], lo[b]), hi[b]) - lo[b])
		}
		if t <= kk {
			pos = x
			for _, b := range cand {
				acc[b] += row[b]
			}
		}
	}
	for _, b := range cand {
		hi[b] = min(max(acc[b], lo[b]), hi[b])
	}
	q.cand = cand
}

// fillFirstFit is fillFirstFit (serverfilling.go) on srv: first fit over
// M in arrival order into the servers the recursion left idle. With S the
// buckets with unserved jobs whose need fits (largest need nmax), first fit
// serves S's unserved jobs in arrival order while at least nmax servers
// stay free (one weighted descent), then the next one of S; then S shrinks
// (the servers left are fewer than nmax). At most C rounds.
func (q *dfast) fillFirstFit() {
	nb := q.nb
	rem := q.k
	for b := range nb {
		rem -= int(q.srv[b]) * int(q.need[b])
	}
	acc := q.acc
	for rem > 0 {
		cand := q.cand[:0]
		nmax := 0
		for b := range nb {
			if n := int(q.need[b]); n <= rem && q.srv[b] < q.bk[b].inM {
				cand = append(cand, int32(b))
				nmax = max(nmax, n)
			}
		}
		q.cand = cand
		if len(cand) == 0 {
			return
		}
		bound := rem - nmax
		for _, b := range cand {
			acc[b] = 0
		}
		pos := 0
		for bit := q.n; bit > 0; bit >>= 1 {
			x := pos + bit
			if x > q.n {
				continue
			}
			row := q.tree[x*nb : (x+1)*nb]
			t := 0
			for _, b := range cand {
				c := min(max(acc[b]+row[b], q.srv[b]), q.bk[b].inM) - q.srv[b]
				t += int(c) * int(q.need[b])
			}
			if t <= bound {
				pos = x
				for _, b := range cand {
					acc[b] += row[b]
				}
			}
		}
		left := false
		for _, b := range cand {
			c := min(max(acc[b], q.srv[b]), q.bk[b].inM) - q.srv[b]
			q.srv[b] += c
			rem -= int(c) * int(q.need[b])
			left = left || q.srv[b] < q.bk[b].inM
		}
		if !left {
			return // every job of S served
		}
		// The next job of S in arrival order: the least position among
		// each bucket's first unserved one.
		best, bestPos := int32(-1), q.n+1
		for _, b := range cand {
			if q.srv[b] < q.bk[b].inM {
				if x := q.nth(int(b), int(q.srv[b])); x < bestPos {
					best, bestPos = b, x
				}
			}
		}
		q.srv[best]++
		rem -= int(q.need[best])
	}
}

// nth returns the position of bucket b's job of rank r (0-based) in M.
func (q *dfast) nth(b, r int) int {
	nb := q.nb
	pos := 0
	for bit := q.n; bit > 0; bit >>= 1 {
		if x := pos + bit; x <= q.n && int(q.tree[x*nb+b]) <= r {
			pos = x
			r -= int(q.tree[x*nb+b])
		}
	}
	return pos + 1
}

// case2 is App. C.1's Case 2 on per-bucket rank ranges [lo, hi) (needs
// divided by scale): M2 = even needs, M3 = odd needs above 1; it writes
// the chosen set's ranges into [slo, shi) and returns the divisor to
// recurse with, 2 (M2, on a tie too) or 3 (M3), or 0 when M2 is chosen
// and empty (an empty set serves nothing).
func case2(need, lo, hi, slo, shi []int32, scale int) int {
	n2, n3 := 0, 0
	for b := range lo {
		l := int(hi[b] - lo[b])
		if l == 0 {
			continue
		}
		if n := int(need[b]) / scale; n%2 == 0 {
			n2 += l
		} else if n > 1 {
			n3 += l
		}
	}
	even := 2*n2 >= 3*n3
	for b := range lo {
		n := int(need[b]) / scale
		slo[b], shi[b] = lo[b], lo[b]
		if hi[b] > lo[b] && (even && n%2 == 0 || !even && n%2 == 1 && n > 1) {
			shi[b] = hi[b]
		}
	}
	switch {
	case !even:
		return 3
	case n2 > 0:
		return 2
	}
	return 0
}
