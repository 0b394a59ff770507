package serverfilling

import (
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// The running jobs of a bucket on ServerFilling's treap path under SRPT
// (usesFront) as a blocked sorted array instead of a treap: blocks of up to
// runCap jobs, each holding its jobs' fins and slot ids in two arrays in
// the running order (fin, arrival), the blocks in order, and the first fin
// of every block in one contiguous slice (runSet.first) for the search.
//
// Why. Past saturation at k = 2048 (BenchmarkLevels, the L = 5000 rate,
// ~1300 running jobs in the need-1 bucket) the running treap's costs were
// its walks: a start landing inside the order (about a third of the starts,
// nearly all far from either end) descended ~14 dependent nodes and split
// below (tPlace, tSplit: 15% of the CPU profile), a completion walked the
// left spine (tDeleteFirst), and each level was a likely first-level miss.
// Here a start is a binary search over ~20 contiguous block fins, one over
// the block's own fins (no slot read but for equal fins), and a shift of at
// most runCap/2 entries; a completion takes its block's first entry (lo
// moves: no shift); a preemption its last; the last job is one load. The
// order is the treap's, so every decision is the same.
//
// Each block keeps its jobs in e[lo:hi], with room on both sides: an
// insertion shifts the shorter side when it can, a full block is split in
// halves (but a job after a full last block starts a new block), an empty
// one is dropped (its storage kept for reuse). The places
// outside the span hold sentinels, fin −Inf before lo and +Inf from hi on
// (every change of lo or hi writes them: newBlock, popLast, runDelete,
// runSplit, runCutTail), so that a block's 64 fins ascend and inBlock
// counts them without testing the span.

// runCap is the most jobs a block holds.
const runCap = 64

// runBlock is one block of a runSet (see above).
type runBlock struct {
	lo, hi int32
	e      [runCap]runEntry
}

// runEntry is a job of a runBlock: its fin and slot, side by side so that
// a shift is one memmove.
type runEntry struct {
	fin float64
	x   int32
}

// runSet is one bucket's running jobs (see above).
type runSet struct {
	blk   []*runBlock // in order, none empty
	first []float64   // first[b]: blk[b]'s first fin
	spare []*runBlock // dropped blocks, for reuse
	n     int32
}

// initRuns sets the runSets up (initSRPT, after the buckets) when the
// path uses them, and marks every bucket's last running job as known
// (none): runAppend and runRemove keep it from then on.
func (p *Policy) initRuns() {
	p.runs = nil
	if !p.usesFront() {
		return
	}
	p.runs = make([]runSet, p.nBuckets)
	for b := range p.sb {
		p.sb[b].last, p.sb[b].lastOK = -1, true
	}
}

// entryBefore reports whether the running job x of fin f precedes the pair
// (v, id) in the running order: its arrival index is read only on a tie.
func (p *Policy) entryBefore(f float64, x int32, v float64, id int64) bool {
	return f < v || f == v && p.slots[x].id < id
}

// last is the set's last job (-1: none).
func (rs *runSet) last() int32 {
	n := len(rs.blk)
	if n == 0 {
		return -1
	}
	b := rs.blk[n-1]
	return b.e[b.hi-1].x
}

// newBlock is a block for n jobs at [0, n), which the caller writes, with
// the +Inf sentinel from n on (reused if one was dropped).
func (rs *runSet) newBlock(n int32) *runBlock {
	var b *runBlock
	if k := len(rs.spare); k > 0 {
		b = rs.spare[k-1]
		rs.spare = rs.spare[:k-1]
	} else {
		b = new(runBlock)
	}
	b.lo, b.hi = 0, n
	b.unset(n, runCap, 1)
	return b
}

// pushBlock appends a block holding e alone after the set's last one.
func (rs *runSet) pushBlock(e runEntry) {
	b := rs.newBlock(1)
	b.e[0] = e
	rs.blk = append(rs.blk, b)
	rs.first = append(rs.first, e.fin)
}

// unset writes the sentinel of sign sign (+1 after the span, −1 before it)
// into places [from, to) of b, which the span has just left.
func (b *runBlock) unset(from, to int32, sign int) {
	inf := math.Inf(sign)
	es := b.e[from:to]
	for k := range es {
		es[k].fin = inf
	}
}

// dropBlock removes the empty block bi.
func (rs *runSet) dropBlock(bi int) {
	rs.spare = append(rs.spare, rs.blk[bi])
	copy(rs.blk[bi:], rs.blk[bi+1:])
	rs.blk = rs.blk[:len(rs.blk)-1]
	copy(rs.first[bi:], rs.first[bi+1:])
	rs.first = rs.first[:len(rs.first)-1]
}

// runBlockOf is the block where the pair (v, id) belongs: the last one
// whose first job precedes it (or, with incl, is it), else 0 (rs is not
// empty). It counts instead of searching, in two passes without a
// branch: the fins first[3], first[7], ... below v give the group of four
// where the count ends (every fin before it is below v), then that
// group's first three are counted. The loads within a pass do not wait on
// each other, where each step of a binary search waits on the one before:
// at the L = 5000 rate of BenchmarkLevels (a few dozen blocks) runBlockOf
// is 27 -> 32 M instructions for about 2% less CPU time. The fins equal
// to v, next in the order, are then stepped over while their block's
// first job is ahead (rare: a tie on the fin).
func (p *Policy) runBlockOf(rs *runSet, v float64, id int64, incl bool) int {
	first := rs.first
	n := len(first)
	c0, c1 := 0, 0
	k := 3
	for ; k+4 < n; k += 8 {
		c0 += bit(first[k] < v)
		c1 += bit(first[k+4] < v)
	}
	if k < n {
		c0 += bit(first[k] < v)
	}
	g := (c0 + c1) * 4 // first[:g] all below v; first[g+3] (if any) not
	base := g
	for d := range 3 {
		x := g + d
		base += bit(x < n) & bit(first[min(x, n-1)] < v)
	}
	for base < len(first) && first[base] == v && p.firstAhead(rs, base, id, incl) {
		base++
	}
	return max(base-1, 0)
}

// firstAhead reports whether block bi's first job, of the fin searched
// for, precedes the arrival index id (or, with incl, is it).
func (p *Policy) firstAhead(rs *runSet, bi int, id int64, incl bool) bool {
	b := rs.blk[bi]
	fid := p.slots[b.e[b.lo].x].id
	return fid < id || incl && fid == id
}

// inBlock is the index in b of the first job that does not precede the
// pair (v, id) (b.hi if none). It counts instead of searching, as
// runBlockOf does, in two passes of fixed length without a branch, over
// the whole array: with the sentinels (−Inf before lo, +Inf from hi on;
// v is a finite fin) the 64 fins ascend, and the places below v are
// [0, lo) and the span's fins below v, so their count is the index
// sought but for ties. The fins at e[7], e[15], ..., e[55] below v give
// the group of eight where the count ends (c: e[:8c] all below v, e[8c+7]
// not unless c = 7), then that group's eight are counted; the fins equal
// to v whose arrival index is below id are then stepped over (rare: a tie
// on the fin). The loads within a pass do not wait on each other, where
// each of a binary search's six steps waited on the one before, a likely
// first-level miss each (a block is 16 lines).
//
// Why the sentinels: the count over the span alone tested each place
// against hi and masked its index (~10 instructions a place, 15 places);
// at the L = 5000 rate of BenchmarkLevelsH2, 204 k searches (the
// exchanges' starts) took 45 M instructions here.
func (p *Policy) inBlock(b *runBlock, v float64, id int64) int32 {
	e := &b.e
	c := bit(e[7].fin < v) + bit(e[15].fin < v) + bit(e[23].fin < v) + bit(e[31].fin < v) +
		bit(e[39].fin < v) + bit(e[47].fin < v) + bit(e[55].fin < v)
	g := (*[8]runEntry)(e[c*8 : c*8+8])
	base := c*8 + bit(g[0].fin < v) + bit(g[1].fin < v) + bit(g[2].fin < v) + bit(g[3].fin < v) +
		bit(g[4].fin < v) + bit(g[5].fin < v) + bit(g[6].fin < v) + bit(g[7].fin < v)
	for hi := int(b.hi); base < hi && e[base].fin == v && p.slots[e[base].x].id < id; {
		base++
	}
	return int32(base)
}

// runInsert adds running job i (fin set) to rs in its place.
//
// A job after the set's last one, whose block is full (lo = 0, hi =
// runCap), starts a new last block, where a split would halve that block
// and then append: the runs started at once (startRunBlocks) come in that
// way, 64 at a time, and at the L = 5000 rate of BenchmarkLevelsH2 their
// ~14 k splits a replication, each moving 32 jobs and writing 32
// sentinels, left the tail's blocks half full (5 M instructions more).
func (p *Policy) runInsert(rs *runSet, i int32) {
	sl := &p.slots[i]
	v, id := sl.fin, sl.id
	rs.n++
	nb := len(rs.blk)
	if nb == 0 {
		rs.pushBlock(runEntry{v, i})
		return
	}
	bi := nb - 1
	b := rs.blk[bi]
	j := b.hi // after the last job: about half the starts
	if e := &b.e[j-1]; p.entryBefore(e.fin, e.x, v, id) {
		if j < runCap {
			b.e[j] = runEntry{v, i}
			b.hi++
			return
		}
		if b.lo == 0 { // full: i starts a new last block
			rs.pushBlock(runEntry{v, i})
			return
		}
	} else {
		bi = p.runBlockOf(rs, v, id, false)
		b = rs.blk[bi]
		j = p.inBlock(b, v, id)
	}
	if b.hi-b.lo == runCap {
		bi, j = p.runSplit(rs, bi, j)
		b = rs.blk[bi]
	}
	if b.hi < runCap && (b.lo == 0 || b.hi-j <= j-b.lo) {
		copy(b.e[j+1:b.hi+1], b.e[j:b.hi])
		b.hi++
	} else { // no room on the right, or the left side is shorter
		copy(b.e[b.lo-1:j-1], b.e[b.lo:j])
		b.lo--
		j--
	}
	b.e[j] = runEntry{v, i}
	if j == b.lo {
		rs.first[bi] = v
	}
}

// runSplit splits the full block bi in halves (the second half into a new
// block after it, at its start) and returns where index j of bi went.
func (p *Policy) runSplit(rs *runSet, bi int, j int32) (int, int32) {
	b := rs.blk[bi]
	mid := b.lo + runCap/2
	n := b.hi - mid
	nb := rs.newBlock(n)
	copy(nb.e[:n], b.e[mid:b.hi])
	b.unset(mid, b.hi, 1)
	b.hi = mid
	rs.blk = append(rs.blk, nil)
	copy(rs.blk[bi+2:], rs.blk[bi+1:])
	rs.blk[bi+1] = nb
	rs.first = append(rs.first, 0)
	copy(rs.first[bi+2:], rs.first[bi+1:])
	rs.first[bi+1] = nb.e[0].fin
	if j > mid {
		return bi + 1, j - mid
	}
	return bi, j
}

// runDelete takes running job i out of rs.
func (p *Policy) runDelete(rs *runSet, i int32) {
	if b := rs.blk[len(rs.blk)-1]; b.e[b.hi-1].x == i { // the last: a preemption, as a rule
		rs.popLast()
		return
	}
	rs.n--
	bi, b := 0, rs.blk[0]
	if b.e[b.lo].x == i { // the first: a completion, as a rule
		b.e[b.lo].fin = math.Inf(-1)
		b.lo++
		if b.hi == b.lo {
			rs.dropBlock(0)
		} else {
			rs.first[0] = b.e[b.lo].fin
		}
		return
	}
	sl := &p.slots[i]
	bi = p.runBlockOf(rs, sl.fin, sl.id, true)
	b = rs.blk[bi]
	j := p.inBlock(b, sl.fin, sl.id)
	if b.hi-1-j <= j-b.lo {
		copy(b.e[j:b.hi-1], b.e[j+1:b.hi])
		b.hi--
		b.e[b.hi].fin = math.Inf(1)
	} else {
		copy(b.e[b.lo+1:j+1], b.e[b.lo:j])
		b.e[b.lo].fin = math.Inf(-1)
		b.lo++
	}
	switch {
	case b.hi == b.lo:
		rs.dropBlock(bi)
	case j <= b.lo:
		rs.first[bi] = b.e[b.lo].fin
	}
}

// runsAdd is runAppend on the runSets' path (usesFront): job i, started
// (setRun), joins bucket sb's runSet rs, without runAppend's tests for the
// other paths (its callers know the path).
func (p *Policy) runsAdd(sb *sbucket, rs *runSet, i int32) {
	sb.nRun++
	p.slots[i].serve = true
	p.runInsert(rs, i)
	sb.last = rs.last()
}

// runsRemove is runRemove on the runSets' path (usesFront): running job
// i (slot sl) leaves bucket sb's runSet rs.
func (p *Policy) runsRemove(sb *sbucket, rs *runSet, sl *slot, i int32) {
	p.runDelete(rs, i)
	sb.last = rs.last()
	sb.nRun--
	sl.serve = false
}

// runsWaitLast is toWaiting on the runSets' path for bucket sb's last
// running job x (rs's last), whose key the caller has refreshed at the
// instant (toWaiting's keyAt would give the same): runRemove's and
// stopRun's work, then waitInsert's with the front, without the tests for
// the other paths.
func (p *Policy) runsWaitLast(sb *sbucket, rs *runSet, x int32) {
	rs.popLast()
	sb.last = rs.last()
	sb.nRun--
	xs := &p.slots[x]
	xs.serve, xs.moving, xs.rate = false, false, 0
	p.frontInsert(sb, x)
}

// popLast takes rs's last job out of rs (rs is not empty).
func (rs *runSet) popLast() {
	rs.n--
	bi := len(rs.blk) - 1
	b := rs.blk[bi]
	b.hi--
	b.e[b.hi].fin = math.Inf(1)
	if b.hi == b.lo {
		rs.dropBlock(bi)
	}
}

// runCutTail removes rs's jobs past its first keep and appends them to buf
// in order.
func (p *Policy) runCutTail(rs *runSet, keep int32, buf []int32) []int32 {
	m := rs.n - keep
	if m <= 0 {
		return buf
	}
	bi, cnt := len(rs.blk), int32(0)
	for cnt < m {
		bi--
		cnt += rs.blk[bi].hi - rs.blk[bi].lo
	}
	b := rs.blk[bi]
	cut := b.lo + cnt - m // b's jobs from cut on leave
	buf = appendJobs(buf, b.e[cut:b.hi])
	for _, c := range rs.blk[bi+1:] {
		buf = appendJobs(buf, c.e[c.lo:c.hi])
	}
	rs.spare = append(rs.spare, rs.blk[bi+1:]...)
	b.unset(cut, b.hi, 1)
	b.hi = cut
	end := bi + 1
	if b.hi == b.lo {
		rs.spare = append(rs.spare, b)
		end = bi
	}
	clear(rs.blk[end:])
	rs.blk, rs.first = rs.blk[:end], rs.first[:end]
	rs.n = keep
	return buf
}

// runJobs appends rs's jobs in order to buf (tests).
func (rs *runSet) runJobs(buf []int32) []int32 {
	for _, b := range rs.blk {
		buf = appendJobs(buf, b.e[b.lo:b.hi])
	}
	return buf
}

// appendJobs appends the slots of es to buf.
func appendJobs(buf []int32, es []runEntry) []int32 {
	for _, e := range es {
		buf = append(buf, e.x)
	}
	return buf
}

// preemptRunBlocks is preemptRun for a bucket whose running jobs are a
// runSet (usesFront): the same jobs preempted, their keys frozen the same
// way, and joined to the waiting jobs: at the front when the run, in the
// waiting order, precedes every waiting job (frontRun, as evictMove's
// runs), else to the waiting treap as preemptRun joins them (the front
// flushed into it, then joinFront, given the run as a treap in its order).
// The same waiting jobs in the same order either way (srptfront.go).
//
// Why. At the L = 5000 rate of BenchmarkLevelsH2 a wide job's start
// preempts up to 128 narrow running jobs at once (2.8 k runs a
// replication), which precede the bucket's waiting ones as a rule; the
// flush, tBuild and joinFront took 45 M instructions there.
func (p *Policy) preemptRunBlocks(sb *sbucket, b int, keep int32, now float64, pre []int32) []int32 {
	n0 := len(pre)
	pre = p.runCutTail(&p.runs[b], keep, pre)
	run := pre[n0:]
	sorted := p.freezeRunSRPT(run, now)
	m := int32(len(run))
	sb.nRun -= m
	sb.w += m
	if !sorted || !p.frontRun(sb, run, pre) {
		if len(sb.front) > 0 {
			p.frontFlush(sb) // (there is one group: usesFront)
		}
		t := p.tBuild(run) // (by position: joinFront splits it by rank)
		sb.root = p.joinFront(sb.root, t, run, modeKey, sorted)
	}
	sb.last = p.runs[b].last()
	return pre
}

// startRunBlocks is startRun for a bucket whose running jobs are a runSet:
// the first m waiting jobs start, their fins set as setRun does, each
// placed in the runSet (after its last job, as a rule). They are the
// front's jobs (srptfront.go), from its end, then the treap's first ones:
// the jobs and the order that the front flushed into the treap and the
// treap's first m would give (every job of the front precedes every job of
// the treap), without the flush's insertions (at the L = 5000 rate of
// BenchmarkLevelsH2, where a wide job's completion restarts up to 128
// narrow ones and the front holds the first 64 of those its start
// evicted, the flushes were 17 M instructions).
func (p *Policy) startRunBlocks(s *sdk.System, sb *sbucket, b int, m int32, now float64, starts []int32) []int32 {
	n0 := len(starts)
	if f := sb.front; len(f) > 0 {
		k := len(f) - min(int(m), len(f)) // the front keeps f[:k]
		for i := len(f) - 1; i >= k; i-- {
			starts = append(starts, f[i])
		}
		sb.front = f[:k]
	}
	if r := m - int32(len(starts)-n0); r > 0 {
		var head int32
		head, sb.root = p.tSplitRank(sb.root, r)
		starts = p.tCollect(head, starts)
	}
	run := starts[n0:]
	slots := p.slots
	scale := p.cls[slots[run[0]].class].scale // setRun for an SRPT job, inlined
	rs := &p.runs[b]
	// runInsert's usual case, the job after the set's last one in a last
	// block with room, is tested here against the last job's pair held in
	// locals (lb: the last block, nil when full or none): the run is in the
	// waiting order, so its fins mostly ascend (at the L = 5000 rate of
	// BenchmarkLevelsH2, 388 k of its 399 k jobs go at the end, and the
	// calls were 18 M instructions).
	lb, lf, lid := p.runEnd(rs)
	for _, x := range run {
		sl := &slots[x]
		sl.since, sl.key0 = now, sl.key
		f := finNear(now+s.Remaining(sl.j), now, scale, sl.key)
		sl.fin, sl.moving, sl.serve = f, true, true
		if p.crossings {
			sl.rate = scale
		}
		if lb != nil && (lf < f || lf == f && lid < sl.id) {
			lb.e[lb.hi] = runEntry{f, x}
			lb.hi++
			rs.n++
			lf, lid = f, sl.id
			if lb.hi == runCap {
				lb = nil
			}
			continue
		}
		p.runInsert(rs, x)
		lb, lf, lid = p.runEnd(rs)
	}
	sb.w -= m
	sb.nRun += m
	sb.last = rs.last()
	return starts
}

// runEnd is rs's last block and its last job's pair (fin, arrival index),
// or a nil block when rs is empty or that block is full.
func (p *Policy) runEnd(rs *runSet) (*runBlock, float64, int64) {
	n := len(rs.blk)
	if n == 0 {
		return nil, 0, 0
	}
	b := rs.blk[n-1]
	if b.hi == runCap {
		return nil, 0, 0
	}
	e := &b.e[b.hi-1]
	return b, e.fin, p.slots[e.x].id
}

// tBuild makes a treap of run's jobs in run's order (by position; the
// nodes' pairs are left to the caller, joinFront sets them) in one pass:
// the tree tAppend would make job by job, without walking down its right
// spine for each. stk holds that spine, each node with the position of its
// subtree's first job, so that a node's size is known when a later one of
// higher priority takes it as its left subtree (or at the end).
func (p *Policy) tBuild(run []int32) int32 {
	if len(run) == 0 {
		return -1
	}
	if n := int(slices.Max(run)); n >= len(p.tn) {
		p.tGrow(int32(n))
	}
	tn := p.tn
	stk := p.tstk[:0]
	for k, x := range run {
		pri := p.nextPri()
		l, from := int32(-1), int32(k)
		for len(stk) > 0 {
			top := stk[len(stk)-1]
			if tn[top.x].pri > pri {
				break
			}
			tn[top.x].sz = int32(k) - top.from
			l, from = top.x, top.from
			stk = stk[:len(stk)-1]
		}
		tn[x] = tnode{l: l, r: -1, pri: pri}
		if len(stk) > 0 {
			tn[stk[len(stk)-1].x].r = x
		}
		stk = append(stk, tstkEntry{x, from})
	}
	for _, e := range stk {
		tn[e.x].sz = int32(len(run)) - e.from
	}
	p.tstk = stk[:0]
	if len(stk) == 0 {
		return -1
	}
	return stk[0].x
}

// tstkEntry is a node of tBuild's right spine and the position of its
// subtree's first job.
type tstkEntry struct{ x, from int32 }
