package serverfilling

import (
	"math/bits"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The static-order ServerFilling path: the Gittins order when every class's
// rank is constant (exponential durations, Weibull of shape 1, H2 with equal
// rates). Arrival order, the other static order, takes the plain path
// (plain.go, this path specialised to a single key group); the code below
// handles it too, as one group. O(C) per event at most (C classes; usually
// a bucket or two, see below) plus O(1) per start, preemption, and job
// entering or leaving M, never a pass over M.
//
// In both orders a job's key never changes (its arrival index; its class's
// constant rank × need/k), so the order is static: the classes fall into
// key groups (arrival order: one group), the groups are ordered by key and
// within a group the jobs by arrival index, so a new job always goes to
// the end of its group. A cell is a (key group, need bucket) pair; its jobs
// in arrival order are a contiguous run of its bucket's order, which is the
// cells of the bucket in group order. The policy keeps:
//   - per group, its jobs in arrival order (a linked list through stl,
//     below), and M as the groups before M's last job's group plus a prefix
//     of that group up to M's last job; M's total need; per bucket and per
//     cell, the number of jobs in M;
//   - per cell, its jobs in arrival order (a second linked list), the number
//     served and a cursor on the first unserved one.
//
// The jobs of a bucket in M are a prefix of the bucket's order (M is a
// prefix of the order), the served ones a prefix of those (the takes serve
// the first jobs of each bucket), so within each cell the served jobs are a
// prefix too, and the cells of a bucket are served whole up to one. An
// arrival ahead of M's end joins M and M drops jobs at its end while it
// stays full without them; a completion (of a job of M) lets M extend
// forward. A decision computes the takes from M's counts per bucket,
// spreads each over the bucket's cells in group order, and moves the cell
// cursors, each step one start or preemption.
//
// To keep the decision trace identical to the general path's, the jobs to
// preempt are told to the engine first those that left M (evicted), then
// the others, each in the order, then the jobs to start in the order
// (each cell's run is in that order, and the runs are listed in group
// order; see decideStatic).
//
// Incrementally (as plain.go does): a bucket's take depends only on its
// count in M and on the servers the buckets before it left, so a decision
// starts at the first bucket whose count changed since the last one, visits
// only the buckets with jobs in M, and stops at the first bucket past the
// last changed one that finds the same servers left as last time (stakes):
// every take from there on is unchanged, and after a decision every cell
// serves exactly its take, so only the cells of the buckets visited can
// move. On Borg cell B (26 classes) most
// events change one narrow bucket near the end of the need order, and a
// decision visits a bucket or two instead of all 26 buckets and cells.
// A job is kept only in a flat per-slot array of 32-byte links that also
// hold the job, its cell and its need (stl; no Policy.slots record): a
// move reads one link.

type cell struct {
	head, tail int32 // the cell's jobs in arrival order
	cur        int32 // first unserved job (-1: none)
	served     int32
	inM        int32 // jobs of the cell in M
	group      int32 // its key group
	bucket     int32 // its need bucket
}

// stBucket is a need bucket of the static path.
type stBucket struct {
	rem, aft int32 // servers left before and after it at the last decision that visited it (see stakes)
	inM      int32 // its jobs in M
	need     int32
	c0, c1   int32 // its cells in group order: cells[c0:c1]
}

type group struct {
	head, tail int32 // the group's jobs in arrival order
}

// stLink is a slot's job, its neighbours in its group's (prev, next) and
// its cell's (bprev, bnext) arrival order (-1: none), its cell and its
// need: all the static path keeps of a job (it has no slot in
// Policy.slots), 32 bytes.
type stLink struct {
	j                        *sdk.Job
	prev, next, bprev, bnext int32
	cell, need               int32
}

// staticOrder reports whether the policy's keys never change.
func (p *Policy) staticOrder() bool {
	switch p.ord {
	case ArrivalOrder:
		return true
	case GittinsOrder:
		for _, c := range p.cls {
			if !c.rank.constant {
				return false
			}
		}
		return true
	}
	return false
}

// divAsServerFilling reports whether the policy is DivisorFilling-Gittins
// with backfill whose needs are exactly k and 1, where it makes
// ServerFilling-Gittins' choices, so that with ranks that are constant it
// runs on ServerFilling's static path (initStatic) instead of the
// one-or-all slices (divisoronek.go), which cost more per event
// (docs/design.md). Here is why the choices are the same. Let
// J1, J2, ... be the jobs in the order (one order for both procedures:
// key, then arrival) and n their number.
//
// DivisorFilling takes M = J1..J_min(n,k) and the recursion with its
// backfill (dsOneK; divFill on the general path): if M holds a job of
// need k, it serves the first of them alone (k servers); otherwise it
// serves every job of M (all of need 1, at most k of them; with backfill
// on, also when the literal recursion would leave them waiting).
//
// ServerFilling takes the shortest prefix M' with total need ≥ k (every
// job if none) and serves M' by descending need, ties by the order, until
// the next does not fit (packing stop; with needs k and 1, a divisibility
// chain, skip packs the same). (a) If a job of need k is among J1..Jk, let
// Jw be the first: the w − 1 < k jobs before it need w − 1 < k servers, so
// M' = J1..Jw; Jw is packed first and takes all k servers, and the next
// (need 1, if w > 1) does not fit: Jw alone. (b) Otherwise J1..Jk (or every
// job, if n < k) all have need 1: M' is those k (their total reaches k at
// the k-th, not before) or all n < k jobs, and all fit: every one.
//
// Both serve the same set at every decision, and both decide at arrivals
// and completions only (a constant rank crosses nothing). Off: with
// backfill off (the literal recursion serves no job of an M of fewer than
// k/6 jobs of need 1, where ServerFilling serves them), with other needs,
// and for the tests' general path (general) and the one-or-all slices
// (noSFGate).
func (p *Policy) divAsServerFilling() bool {
	return p.proc == DivisorFilling && p.ord == GittinsOrder && p.backfill && !p.general && !p.noSFGate &&
		p.nBuckets == 2 && int(p.bneed[0]) == p.k && p.bneed[1] == 1
}

// initStatic builds the groups and cells (Init, after the buckets).
func (p *Policy) initStatic() {
	p.static = (p.proc == ServerFilling || p.divAsServerFilling()) && !p.exhaustive && p.pl == nil && p.staticOrder()
	if !p.static {
		return
	}
	var keys []float64
	if p.ord == GittinsOrder {
		for _, c := range p.cls {
			keys = append(keys, c.rank0)
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
	} else {
		keys = []float64{0}
	}
	p.groups = make([]group, len(keys))
	for g := range p.groups {
		p.groups[g] = group{-1, -1}
	}
	// Cells by bucket, each bucket's in group order: a bucket's cells are
	// p.cells[c0:c1].
	p.cells = p.cells[:0]
	p.stB = p.stB[:0]
	for b := range p.nBuckets {
		c0 := int32(len(p.cells))
		for g, key := range keys {
			x := int32(-1)
			for ci := range p.cls {
				c := &p.cls[ci]
				if int(c.bucket) != b || p.ord == GittinsOrder && c.rank0 != key {
					continue
				}
				if x < 0 {
					x = int32(len(p.cells))
					p.cells = append(p.cells, cell{head: -1, tail: -1, cur: -1, group: int32(g), bucket: int32(b)})
				}
				c.group, c.cell = int32(g), x
			}
		}
		// No job: every take is 0 and every bucket finds all k servers left.
		p.stB = append(p.stB, stBucket{rem: int32(p.k), aft: int32(p.k), need: p.bneed[b], c0: c0, c1: int32(len(p.cells))})
	}
	p.gLast, p.mLast = -1, -1
	p.preRuns, p.startRuns = make([]run, len(p.cells)), make([]run, len(p.cells))
	clear(p.stl)
	p.stl = p.stl[:0]
	p.stAct = append(p.stAct[:0], make([]uint64, (p.nBuckets+63)/64)...)
	p.stLo, p.stHi = int32(p.nBuckets), -1
}

// link gives job j, of class c, a slot (its Idx) at the end of its group's
// and its cell's lists, and returns it.
func (p *Policy) link(j *sdk.Job, c *classInfo) int32 {
	i, ok := popFree(&p.free)
	if !ok {
		i = int32(len(p.stl))
		p.stl = append(p.stl, stLink{})
	}
	j.Idx = int(i)
	g, x := &p.groups[c.group], &p.cells[c.cell]
	// Field by field: a struct literal is built on the stack and copied,
	// and the copy's 16-byte loads stalled on the fields' 4-byte stores.
	l := &p.stl[i]
	l.j = j
	l.prev, l.next, l.bprev, l.bnext = g.tail, -1, x.tail, -1
	l.cell, l.need = c.cell, c.need
	if g.tail >= 0 {
		p.stl[g.tail].next = i
	} else {
		g.head = i
	}
	g.tail = i
	if x.tail >= 0 {
		p.stl[x.tail].bnext = i
	} else {
		x.head = i
	}
	x.tail = i
	if x.cur < 0 {
		x.cur = i // every earlier job of the cell is served
	}
	return i
}

// popFree takes the last of the free slots (false: none).
func popFree(free *[]int32) (int32, bool) {
	n := len(*free)
	if n == 0 {
		return -1, false
	}
	i := (*free)[n-1]
	*free = (*free)[:n-1]
	return i, true
}

// unlink removes served slot i, a job of M, from M, its cell's served
// jobs and both lists (M's last job moves back), and frees it.
func (p *Policy) unlink(i int32) {
	if p.mLast == i {
		p.mLastBack()
	}
	l := &p.stl[i]
	x := &p.cells[l.cell]
	x.served--
	p.leave(x, l.need)
	g := &p.groups[x.group]
	if l.prev >= 0 {
		p.stl[l.prev].next = l.next
	} else {
		g.head = l.next
	}
	if l.next >= 0 {
		p.stl[l.next].prev = l.prev
	} else {
		g.tail = l.prev
	}
	if l.bprev >= 0 {
		p.stl[l.bprev].bnext = l.bnext
	} else {
		x.head = l.bnext
	}
	if l.bnext >= 0 {
		p.stl[l.bnext].bprev = l.bprev
	} else {
		x.tail = l.bprev
	}
	l.j = nil
	p.free = append(p.free, i)
}

// mLastBack moves M's last job one back in the order (-1 if none).
func (p *Policy) mLastBack() {
	if prev := p.stl[p.mLast].prev; prev >= 0 {
		p.mLast = prev
		return
	}
	for g := p.gLast - 1; g >= 0; g-- {
		if t := p.groups[g].tail; t >= 0 {
			p.gLast, p.mLast = g, t
			return
		}
	}
	p.gLast, p.mLast = -1, -1
}

// afterM is the job just after M's end in the order (-1 if none).
func (p *Policy) afterM() int32 {
	if p.mLast >= 0 {
		if nx := p.stl[p.mLast].next; nx >= 0 {
			return nx
		}
	}
	for g := p.gLast + 1; g < int32(len(p.groups)); g++ {
		if h := p.groups[g].head; h >= 0 {
			return h
		}
	}
	return -1
}

func (p *Policy) enterM(i int32) {
	l := &p.stl[i]
	p.enter(&p.cells[l.cell], l.need)
}

// enter puts a job of cell x and of the given need into M.
func (p *Policy) enter(x *cell, need int32) {
	b := x.bucket
	p.sumM += int(need)
	p.stB[b].inM++
	p.stAct[b>>6] |= 1 << (b & 63)
	x.inM++
	p.dirtyBucket(b)
}

func (p *Policy) leaveM(i int32) {
	l := &p.stl[i]
	p.leave(&p.cells[l.cell], l.need)
}

// leave takes a job of cell x and of the given need out of M.
func (p *Policy) leave(x *cell, need int32) {
	p.sumM -= int(need)
	p.stB[x.bucket].inM--
	x.inM--
	p.dirtyBucket(x.bucket)
}

// dirtyBucket notes that bucket b's count in M changed since the last
// decision.
func (p *Policy) dirtyBucket(b int32) {
	p.stLo = min(p.stLo, b)
	p.stHi = max(p.stHi, b)
}

func (p *Policy) arriveStatic(s *sdk.System, j *sdk.Job) {
	c := &p.cls[j.Class()]
	i, g := p.link(j, c), c.group
	switch {
	case p.sumM < p.k: // M is every job: i joins it (at the end if its group is last)
		p.enter(&p.cells[c.cell], c.need)
		if g >= p.gLast {
			p.gLast, p.mLast = g, i
		}
	case g < p.gLast: // ahead of M's end: joins
		p.enter(&p.cells[c.cell], c.need)
	default:
		return // behind a full M: nothing changes
	}
	// M is the shortest prefix reaching k: drop the jobs at its end that it
	// no longer needs.
	for p.sumM-int(p.stl[p.mLast].need) >= p.k {
		x := p.mLast
		p.mLastBack()
		p.leaveM(x)
	}
	p.decideStatic(s)
}

func (p *Policy) completeStatic(s *sdk.System, i int32) {
	p.unlink(i)
	for p.sumM < p.k {
		nx := p.afterM()
		if nx < 0 {
			break
		}
		p.gLast, p.mLast = p.cells[p.stl[nx].cell].group, nx
		p.enterM(nx)
	}
	p.decideStatic(s)
}

// decideStatic applies the takes of M's counts by moving the cell cursors.
//
// Each cell's moves are a run of its list, so ascending in arrival index,
// and stakes lists the runs in group order: concatenated, they are
// already in the order (group, then arrival) except where runs of one
// group from several cells (buckets) meet, which needs two classes of
// different needs with equal keys. Those decisions take decideSorted; in
// the others every job is told to the engine as its cell's list is
// walked, with no list of moves in between.
//
// The engine calls are made in small functions of their own (preemptCell,
// startCell, kept out of line): Go keeps no register across a call, and in
// this function's loops a dozen live values were reloaded from the stack
// after each start or preemption.
func (p *Policy) decideStatic(s *sdk.System) {
	np, ns := p.stakes()
	if np+ns == 0 {
		return
	}
	preR, startR := p.preRuns[:np], p.startRuns[:ns]
	npre, evict := int32(0), int32(0) // preemptions, and of them the jobs that left M
	merge := false                    // two runs of one key group: they interleave
	for k, r := range preR {
		npre += r.n
		evict += r.ev
		merge = merge || k > 0 && preR[k-1].g == r.g
	}
	for k := 1; k < ns; k++ {
		merge = merge || startR[k-1].g == startR[k].g
	}
	if merge {
		p.decideSorted(s, preR, startR, npre, evict)
		return
	}
	stl := p.stl
	split := evict > 0 && evict < npre
	if split {
		// The jobs that left M first (the general path preempts them
		// before packing M), then the others, each part in the order. In
		// a run the jobs that left M are its last ones.
		for _, r := range preR {
			if r.ev > 0 {
				x := &p.cells[r.off]
				preemptCell(s, stl, p.cellBack(x, r.ev), x.cur)
			}
		}
	}
	for _, r := range preR {
		x := &p.cells[r.off]
		first, stop := p.cellBack(x, r.n), x.cur
		if split && r.ev > 0 {
			stop = p.cellBack(x, r.ev)
		}
		preemptCell(s, stl, first, stop)
		x.cur, x.served = first, x.served-r.n
	}
	for _, r := range startR {
		x := &p.cells[r.off]
		x.cur = startCell(s, stl, x.cur, r.n)
		x.served += r.n
	}
}

// preemptCell preempts the jobs of a cell's list from slot i on, up to
// slot stop (excluded; -1: to the end). Kept out of line: see
// decideStatic.
//
//go:noinline
func preemptCell(s *sdk.System, stl []stLink, i, stop int32) {
	for i != stop {
		l := &stl[i]
		i = l.bnext
		s.Preempt(l.j)
	}
}

// startCell starts n ≥ 1 jobs of a cell's list from slot i on and returns
// the slot after the last (-1: none). Kept out of line: see decideStatic.
//
//go:noinline
func startCell(s *sdk.System, stl []stLink, i, n int32) int32 {
	// The next job is read before the call: after it, only what the loop
	// kept on the stack is reloaded, not a link as well.
	l := &stl[i]
	j := l.j
	for ; n > 1; n-- {
		l = &stl[l.bnext]
		next := l.j
		s.Start(j)
		j = next
	}
	s.Start(j)
	return l.bnext
}

// cellBack is the job back places before cell x's first unserved one
// (back ≥ 1; the cell's job at position served − back), walked from
// whichever end of its list is nearer.
func (p *Policy) cellBack(x *cell, back int32) int32 {
	stl := p.stl
	if pos := x.served - back; pos < back {
		i := x.head
		for ; pos > 0; pos-- {
			i = stl[i].bnext
		}
		return i
	}
	i := x.cur
	if i < 0 {
		i, back = x.tail, back-1
	}
	for ; back > 0; back-- {
		i = stl[i].bprev
	}
	return i
}

// decideSorted is decideStatic where runs of one key group from several
// cells meet: the moves are listed, those stretches sorted (sortRuns) and
// the lists told to the engine. That is what a sort by the whole
// comparator gives (a total order), without the O(m log m) sort.
func (p *Policy) decideSorted(s *sdk.System, preR, startR []run, npre, evict int32) {
	stl := p.stl
	pre, parts := p.next[:0], p.partRuns[:0]
	if evict > 0 && evict < npre {
		for _, r := range preR { // the jobs that left M first, as above
			if r.ev > 0 {
				pre, parts = p.listRun(pre, parts, r, p.cellBack(&p.cells[r.off], r.ev), r.ev)
			}
		}
		ne := len(parts)
		for _, r := range preR {
			if m := r.n - r.ev; m > 0 {
				pre, parts = p.listRun(pre, parts, r, p.cellBack(&p.cells[r.off], r.n), m)
			}
		}
		p.sortRuns(pre[:evict], parts[:ne])
		p.sortRuns(pre, parts[ne:])
	} else {
		for _, r := range preR {
			pre, parts = p.listRun(pre, parts, r, p.cellBack(&p.cells[r.off], r.n), r.n)
		}
		p.sortRuns(pre, parts)
	}
	for _, i := range pre {
		s.Preempt(stl[i].j)
	}
	for _, r := range preR {
		x := &p.cells[r.off]
		x.cur = p.cellBack(x, r.n)
		x.served -= r.n
	}
	starts := p.starts[:0]
	parts = parts[:0]
	for _, r := range startR {
		x := &p.cells[r.off]
		starts, parts = p.listRun(starts, parts, r, x.cur, r.n)
		x.cur = stl[starts[len(starts)-1]].bnext
		x.served += r.n
	}
	p.sortRuns(starts, parts)
	for _, i := range starts {
		s.Start(stl[i].j)
	}
	p.next, p.starts, p.partRuns = pre[:0], starts[:0], parts[:0]
}

// listRun appends n jobs of run r's cell list from slot i on to js, and
// their stretch of js to parts.
func (p *Policy) listRun(js []int32, parts []run, r run, i, n int32) ([]int32, []run) {
	parts = append(parts, run{off: int32(len(js)), n: n, g: r.g})
	for ; n > 0; n-- {
		js = append(js, i)
		i = p.stl[i].bnext
	}
	return js, parts
}

// run is one cell's stretch of a decision's moves, of key group g: n
// moves, ev of them (at its end) of jobs that left M; off is the cell
// (decideStatic) or the stretch's offset in a list of moves (sortRuns).
type run struct {
	off, n, ev, g int32
}

// sortRuns puts js in the order (staticCmp), given that js is the
// concatenation of runs, each in the order, in ascending group: only
// where consecutive runs share a group is anything out of order.
func (p *Policy) sortRuns(js []int32, runs []run) {
	for lo := 0; lo < len(runs); {
		hi := lo + 1
		for hi < len(runs) && runs[hi].g == runs[lo].g {
			hi++
		}
		if hi-lo > 1 {
			end := runs[hi-1].off + runs[hi-1].n
			slices.SortFunc(js[runs[lo].off:end], p.staticCmp)
		}
		lo = hi
	}
}

// staticCmp is the order: key group, then arrival index.
func (p *Policy) staticCmp(a, b int32) int {
	la, lb := &p.stl[a], &p.stl[b]
	ga, gb := p.cells[la.cell].group, p.cells[lb.cell].group
	if ga != gb {
		return int(ga - gb)
	}
	if la.j.ID() < lb.j.ID() {
		return -1
	}
	return 1
}

// stakes brings the takes (see takes) up to date from the first bucket
// whose count in M changed since the last decision, spreads each
// recomputed take over its bucket's cells in group order, and lists the
// cells whose served count must change, each as a run of preemptions
// (preRuns[:np]) or of starts (startRuns[:ns]), in group order. Only
// buckets with jobs in M are visited (stAct; an empty
// bucket takes nothing and leaves the servers as they were), from the
// servers left after the last such bucket before the first changed one
// (aft), and it stops at the first bucket past every changed one that
// finds the servers left before it as the last decision did (rem; -1
// once PackStop has stopped): from there on every take is the same.
//
// stAct is exact at every decision: a bucket's count only changes through
// enterM (which sets its bit) and leaveM, and either marks the bucket
// changed, so the pass visits it and clears its bit if it emptied. Its
// rem and aft are those of the last pass that visited it, and a pass
// that stopped before it left the servers reaching it unchanged.
func (p *Policy) stakes() (np, ns int) {
	lo, hi, nb := p.stLo, p.stHi, int32(p.nBuckets)
	p.stLo, p.stHi = nb, -1
	if lo >= nb {
		return 0, 0
	}
	stop := p.packing == PackStop
	rem := int32(p.k)
	if b := p.activeBefore(lo); b >= 0 {
		rem = p.stB[b].aft
	}
	act := p.stAct
	wi := int(lo >> 6)
	word := act[wi] &^ (1<<(lo&63) - 1)
	for {
		for word != 0 {
			b := int32(wi<<6 | bits.TrailingZeros64(word))
			word &= word - 1
			bk := &p.stB[b]
			if b > hi && rem == bk.rem {
				return np, ns
			}
			bk.rem = rem
			c := bk.inM
			t := c
			if rem >= 0 {
				n := bk.need
				if t*n > rem {
					t = rem / n
					rem -= t * n
					if stop {
						rem = -1
					}
				} else {
					rem -= t * n
				}
			} else {
				t = 0
			}
			bk.aft = rem
			for xi := bk.c0; xi < bk.c1; xi++ {
				x := &p.cells[xi]
				w := min(t, x.inM)
				t -= w
				if w < x.served {
					// The cell's jobs in M and its served jobs are
					// prefixes of its list, so the preempted jobs that
					// left M are the run's last served − max(w, inM).
					np = addRun(p.preRuns, np, xi, x.served-w, max(0, x.served-max(w, x.inM)), x.group)
				} else if w > x.served {
					ns = addRun(p.startRuns, ns, xi, w-x.served, 0, x.group)
				}
			}
			if c == 0 {
				act[b>>6] &^= 1 << (b & 63)
			}
		}
		if wi++; wi == len(act) {
			return np, ns
		}
		word = act[wi]
	}
}

// addRun inserts the run of n moves of cell x (ev of them of jobs that
// left M; group g) into runs[:k], in group order (few runs: by insertion),
// and returns k+1.
func addRun(runs []run, k int, x, n, ev, g int32) int {
	n0 := k
	for ; k > 0 && runs[k-1].g > g; k-- {
		runs[k] = runs[k-1]
	}
	r := &runs[k]
	r.off, r.n, r.ev, r.g = x, n, ev, g
	return n0 + 1
}

// activeBefore is the last bucket before lo with jobs in M at the last
// decision (-1: none).
func (p *Policy) activeBefore(lo int32) int32 { return int32(lastBefore(p.stAct, int(lo))) }
