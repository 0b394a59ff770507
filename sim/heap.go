package sim

import (
	"math"
	"math/bits"
	"unsafe"
)

// event is an entry of the future-event list: the time and the job it
// belongs to. A departure's job is the job in service; a policy timer gets
// an engine-internal Job of its own (state stateTimer, the tag in id) from
// the same pool, so that every entry has the same two words and its
// tie-break key (Job.evSeq) in the same place.
type event struct {
	t float64
	j *Job
}

// eventHeap is the future-event list: a min-heap of the pending
// departures and timers on (t, seq), where seq (Job.evSeq) is the insertion
// order, so ties in t are broken first-in first-out. The order is total, so
// any correct priority queue pops the same sequence.
//
// Its shape follows track: binary for a policy that never preempts, 4-ary
// for one that may (track set). In a tracked heap every level a pop's hole
// sinks through, and every level a restart's departure rises past, moves
// an entry and writes its job's heapIdx, a store into a Job struct that is
// usually cold, and a preempting policy's heap is deep (stale entries up to
// a third of it, see compact): 4-ary halves the levels for three
// comparisons a level instead of one, made without branches (earliest).
// On Borg cell B at ρ = 0.95 ServerFilling-SRPT's heap holds ~170
// entries at a sink, whose hole now sinks 3.5 levels on average (~7 in a
// binary heap); at BenchmarkLevels' L = 5000 rate ~1380 entries, 5.1
// levels (~10). Untracked heaps write no heapIdx and stay binary: a
// first version, 4-ary for every heap, cost BenchmarkCatalog's FCFS, MSF,
// First-Fit and ServerFilling rows 1.2% more instructions in all.
//
// What a heap of running jobs costs is instructions per level and branches
// the processor cannot predict (which child is earlier, whether a new
// departure rises past its parent), so: entries are two words (16 bytes;
// the tie-break key lives in the Job and is read only on a tie, which is
// rare); a pop sinks its hole to a leaf choosing the earliest child by
// integer arithmetic instead of branches (times are never negative, so
// their IEEE-754 bits order as integers: a binary heap takes the borrow
// of a subtraction, a 4-ary one the signs of differences); a push
// compares times only, since a new entry has the largest seq and loses
// every tie. A sorted array for small lists (pop O(1), push by a
// branch-free binary search and a memmove) was tried: 3% fewer
// instructions on MSF over one-or-all, but no faster in time, so not kept.
// It is written out rather than through container/heap to keep interface
// calls off the per-event path, and it is deliberately not the project's
// generic heap (sim/heapq), which moves 40-byte items and is compiled per
// GC shape.
//
// Departure entries keep their job's heapIdx current (only when track is
// set: a policy that never preempts never reads it, and with track unset
// the heap never writes it, which saves a store into a cold Job at every
// level). A preemption does not take its job's departure out: it suspends
// it (the job's suspended flag, O(1)), and the entry stays where it is, a
// stale entry dropped when it reaches the root (ready), or with all the
// others when they fill most of the heap or are a quarter of it when one
// reaches the root (compact). If the job is
// started again first, its entry is re-keyed in place (resume: the new
// time and a new seq, moved down or up from where it was), so a job has at
// most one entry and the heap holds at most the jobs in the system and the
// timers. Every entry keeps a key consistent with its place, so the
// (t, seq) order of the live entries, and with it every result, is exactly
// that of removing the entry at the preemption and pushing a new one at the
// restart, as the heap did before (where that removal, through cold Job
// structs, was the largest part of a preempting policy's move cost; see
// BenchmarkMoveFloor in plugins/serverfilling). A resumed job
// starts later than it was due to depart (its new departure is the old one
// plus the time it waited), so its entry usually moves down a few levels,
// not the whole height.
type eventHeap struct {
	ev    []event
	seq   uint64
	stale int // entries of suspended jobs (track only)
	// stalePops counts the stale roots dropped since the last compaction.
	stalePops int
	track     bool // keep Job.heapIdx current (the policy may preempt)
	hole      bool // ev[0] was popped; it is not an event any more
}

// len is the number of live events (stale entries are not events).
func (h *eventHeap) len() int {
	n := len(h.ev) - h.stale
	if h.hole {
		n--
	}
	return n
}

// ready reports whether an event is pending, first dropping the stale
// entries at the root, so that next and pop then see a live event. Without
// track there are no stale entries and nothing is settled, keeping the
// root's hole for the push that usually follows.
func (h *eventHeap) ready() bool {
	if !h.track {
		return h.len() > 0
	}
	if h.crowded() {
		h.compact()
	}
	for {
		if h.hole {
			h.settle()
		}
		if len(h.ev) == 0 || !h.ev[0].j.suspended {
			return len(h.ev) > 0
		}
		// A stale root is dropped by a pop's O(log n). Once the stale
		// roots dropped since the last compaction have cost as much as a
		// compaction (n entries against log n per pop) and stale entries
		// are one in four of the heap or more, all of them go at once
		// instead (see compact).
		if h.stale >= compactMin && 4*h.stale >= len(h.ev) &&
			h.stalePops*bits.Len(uint(len(h.ev))) >= len(h.ev) {
			h.compact()
			continue
		}
		h.stalePops++
		h.ev[0].j.suspended = false
		h.stale--
		h.hole = true // drop it as a pop does
	}
}

// suspend marks running job j's departure entry stale (a preemption; track
// must be set).
func (h *eventHeap) suspend(j *Job) {
	j.suspended = true
	h.stale++
}

// crowded reports whether the stale entries are more than a third of the
// heap (and at least compactMin): a burst of preemptions, such as a wide
// job's start makes, left them so. ready asks it once per event and
// compacts. (At four in five, as it was, the stale entries of the SRPT and
// Gittins orders over Borg cell B mostly reached the root one by one, each
// costing a pop's sink: ServerFilling-SRPT sank the hole 911 k times per
// replication of BenchmarkLoads at ρ = 0.95, 450 k at one in three, and
// made 3.8% fewer instructions; see docs/design.md.)
// Preempt used to ask it at each preemption (10–20 per event on the SRPT
// and Gittins orders over Borg cell B and one-or-all), which cost ~10
// instructions each, and its compaction in the middle of a burst dropped
// the entries of jobs that the same decision then restarted: they were
// pushed again instead of re-keyed in place (see BenchmarkMoveFloor in
// plugins/serverfilling and docs/design.md).
func (h *eventHeap) crowded() bool {
	return h.stale >= compactMin && 2*h.stale > len(h.ev)-h.stale
}

// compactMin is the fewest stale entries worth a compaction. Small, so that
// a small heap (one-or-all's ~20 running jobs) does not grow several levels
// deeper with stale entries: at 32, ServerFilling over one-or-all at λ = 7
// cost ~8% more per event than with eager removal, at 8 ~6% less (loaded
// runs, BenchmarkLoads); the Borg cell B and one-or-all move floors did not
// change.
const compactMin = 8

// compact drops every stale entry and rebuilds the heap from the live ones
// (Floyd's bottom-up construction, O(n)). It runs when the stale entries
// are over a third of the heap at an event (crowded), or a quarter of it
// when one reaches the root (ready) after enough stale roots were dropped since the
// last compaction to have paid for one (n entries against log₂ n per pop:
// DivisorFilling at k = 2048, whose preempted jobs mostly restart soon and
// are cheaper re-keyed in place than pushed again, ran 7–9% slower without
// that condition), so its cost is O(1) per stale entry dropped,
// where dropping each at the root would be a pop's O(log n) (on the SRPT
// and Gittins orders over Borg cell B, 86% of the preempted jobs wait past
// their old departure: without compaction nothing was gained; with the
// second rule ServerFilling-SRPT there spent 146 M instructions in sinks
// per replication of BenchmarkLoads instead of 810 M, and one-or-all, where
// the first rule does most, was unchanged).
// crowded's share was four in five until the fifth round of issue #35
// (an earlier engine, with a binary heap and one call per move, cost
// 10–20% more per event on Borg cell B's move floor, BenchmarkMoveFloor,
// compacting at one stale entry in two or one in three). With this
// engine one in three cut ServerFilling-SRPT's instructions on Borg cell
// B by 3.8% (one in five the same, one in two 3.3%, every event with
// compactMin stale entries 3.1%), changed nothing on one-or-all or at
// BenchmarkLevels' rates, and cost DivisorFilling-SRPT at k = 2048
// (borgBPow2) 0.6% more (its larger heap's rebuilds). The pop order is
// the (t, seq) order whatever the heap's shape, so results do not change.
func (h *eventHeap) compact() {
	if h.hole {
		h.settle()
	}
	ev := h.ev
	n := 0
	for _, e := range ev {
		if e.j.suspended {
			e.j.suspended = false // it has no entry now: its start pushes one
			continue
		}
		e.j.heapIdx = int32(n)
		ev[n] = e
		n++
	}
	// The dropped tail ev[n:] is not cleared. Its entries point only to
	// Jobs of this System's pool, which keeps every chunk it allocated
	// (jobPool.chunks) as long as the heap lives, so they keep nothing
	// alive that is not already; and no slot past len(ev) is read before
	// a push writes it (settle leaves its popped slot the same way). The
	// clear was a memclrHasPointers call at every compaction: without it
	// ServerFilling-SRPT makes 0.1% fewer instructions over one-or-all at
	// λ = 7 and 0.5% fewer over Borg cell B at ρ = 0.95, and its CPU time
	// is 0–2% lower (docs/design.md).
	h.ev, h.stale, h.stalePops = ev[:n], 0, 0
	for i := (n - 2) / arity; n > 1 && i >= 0; i-- {
		h.down(i)
	}
}

// resume gives suspended job j's entry, still in the heap, the new time t
// and a new seq, and moves it to its place.
func (h *eventHeap) resume(t float64, j *Job) {
	if h.hole {
		h.settle()
	}
	j.suspended = false
	h.stale--
	h.seq++
	j.evSeq = h.seq
	i := int(j.heapIdx)
	if p := parent(i); i > 0 && t < h.ev[p].t {
		rise(h.ev, i, t, j)
		return
	}
	h.fall(i, t, j)
}

// fall places the re-keyed entry (t, j) at or below i, where it was (a
// resume, track set). It has the largest seq, so it passes every child at
// an earlier or equal time and its own seq is never read; the earlier
// child is chosen as sink chooses it. (down, which resume used, read the
// entry's seq and compared with branches at every level.)
func (h *eventHeap) fall(i int, t float64, j *Job) {
	ev := h.ev
	n := len(ev)
	slot := &ev[i]
	for {
		l := firstChild(i)
		if l >= n {
			break
		}
		c := earliest(ev, l)
		down := &ev[c]
		e := *down
		if e.t > t {
			break
		}
		*slot = e
		e.j.heapIdx = int32(i)
		slot, i = down, c
	}
	*slot = event{t, j}
	j.heapIdx = int32(i)
}

// next is the time of the earliest event; ready must have reported one.
func (h *eventHeap) next() float64 {
	if h.hole {
		h.settle()
	}
	return h.ev[0].t
}

// settle completes a pending pop: the last entry fills the root's hole.
func (h *eventHeap) settle() {
	h.hole = false
	n := len(h.ev) - 1
	if n > 0 {
		h.popDown(n)
	}
	h.ev = h.ev[:n]
}

// before reports whether a comes before b in the (t, seq) order.
func before(a, b event) bool {
	return a.t < b.t || (a.t == b.t && a.j.evSeq < b.j.evSeq)
}

// push adds j's event at time t (t >= 0, not NaN). After a pop it takes
// the root's hole: the hole sinks to a leaf and the new entry rises from
// there (Floyd's method, as in popDown), the heap keeping its size.
func (h *eventHeap) push(t float64, j *Job) {
	h.seq++
	j.evSeq = h.seq
	var i int
	if h.hole {
		h.hole = false
		i = h.sink(len(h.ev))
	} else {
		h.ev = append(h.ev, event{t, j})
		i = len(h.ev) - 1
	}
	if h.track {
		rise(h.ev, i, t, j)
		return
	}
	pushUp(h.ev, i, t, j)
}

// newSlot is the first half of a tracked push that System.Start makes
// itself (rise is the second): when track is set, there is no hole and ev
// has room, it gives j the next seq, adds a slot at the end of ev without
// writing it and returns its index and true; otherwise it does nothing
// and returns false, and push is the way.
func (h *eventHeap) newSlot(j *Job) (int, bool) {
	n := len(h.ev)
	if !h.track || h.hole || n == cap(h.ev) {
		return 0, false
	}
	h.seq++
	j.evSeq = h.seq
	h.ev = h.ev[:n+1]
	return n, true
}

// rise places the new entry (t, j) at or above slot i of a tracked
// (4-ary) heap, keeping heapIdx current; pushUp is the untracked one.
// Restarts make most of a tracked heap's pushes, and System.Start and
// StartJobs push them through it directly when the heap has no hole and
// room: no call (it inlines), the moved entry's job read from the copy,
// and ev[i], the new slot, written once, where the entry stops.
func rise(ev []event, i int, t float64, j *Job) {
	slot := &ev[i] // the hole, addressed so that a level checks one bound
	for i > 0 {
		p := parent(i)
		up := &ev[p]
		e := *up
		if !(t < e.t) {
			break
		}
		*slot = e
		e.j.heapIdx = int32(i)
		slot, i = up, p
	}
	*slot = event{t, j}
	j.heapIdx = int32(i)
}

// pushUp places the new entry (t, j) at or above leaf i of an untracked
// (binary) heap; rise is its tracked counterpart. It has the largest seq,
// so it rises only past strictly later times.
func pushUp(ev []event, i int, t float64, j *Job) {
	slot := &ev[i] // the hole (see rise)
	for i > 0 {
		p := int(uint(i-1) >> 1)
		up := &ev[p]
		if !(t < up.t) {
			break
		}
		*slot = *up
		slot, i = up, p
	}
	*slot = event{t, j}
}

// pop returns the earliest event and leaves its place as the root's hole
// (see eventHeap); ready must have reported one.
func (h *eventHeap) pop() event {
	if h.hole {
		h.settle()
	}
	h.hole = true
	return h.ev[0]
}

// popDown fills the root's hole with the last entry h.ev[n] (Floyd's
// bottom-up deletion): the hole first sinks to a leaf, and the last entry
// then rises from there, usually by no level at all since it was a leaf
// itself.
func (h *eventHeap) popDown(n int) {
	last := h.ev[n]
	i := h.sink(n)
	h.ev[i] = last
	if h.track {
		h.up(i)
		return
	}
	upBinary(h.ev, i)
}

// arity is the number of children of an entry in a tracked heap (see
// eventHeap).
const arity = 4

// parent is the index of entry i's parent (i > 0) in a tracked heap.
func parent(i int) int { return int(uint(i-1) / arity) }

// firstChild is the index of entry i's first child in a tracked heap.
func firstChild(i int) int { return arity*i + 1 }

// earlier is the index of the earlier (in (t, seq) order) of the children
// l and l+1 of a level of an untracked (binary) heap (l alone if l+1 is
// past ev), chosen by the borrow of an integer subtraction instead of a
// branch: times are never negative, so their IEEE-754 bits order as
// unsigned integers. It inlines into sink.
func earlier(ev []event, l int) int {
	r := l + 1
	if r >= len(ev) {
		return l
	}
	tl, tr := math.Float64bits(ev[l].t), math.Float64bits(ev[r].t)
	_, borrow := bits.Sub64(tr, tl, 0) // 1 if tr < tl
	if tr == tl && ev[r].j.evSeq < ev[l].j.evSeq {
		return r
	}
	return l + int(borrow)
}

// earliest is the index of the earliest (in (t, seq) order) of the
// children of a level, the first of which is l (the last level may have
// fewer than arity). With four children it chooses without branches:
// times are never negative, so their IEEE-754 bits order as integers, and
// the sign of the difference of two of them is a mask that selects the
// earlier (each pair's earlier, then the earlier of the pairs'). If two
// of the times it compared were equal the seqs decide (earliestTie,
// rare): a tie at the earliest time is always one of those compared,
// within the pair that holds it or between the two pairs' earlier
// entries. Used by fall and down; sink4 has it written out (it does not
// inline, and a call per level cost a pop more than the levels it saved).
// (Its first form took the borrows of unsigned subtractions, which the
// compiler kept on the stack, and tested the three equalities with three
// branches: see sink4.)
func earliest(ev []event, l int) int {
	if l+arity > len(ev) {
		return earliestTie(ev, l)
	}
	q := (*[arity]event)(ev[l : l+arity])
	t0, t1 := int64(math.Float64bits(q[0].t)), int64(math.Float64bits(q[1].t))
	t2, t3 := int64(math.Float64bits(q[2].t)), int64(math.Float64bits(q[3].t))
	d01, d23 := t0^t1, t2^t3
	m01, m23 := (t1-t0)>>63, (t3-t2)>>63 // all ones if t1 < t0 (t3 < t2)
	ta, tb := t0^d01&m01, t2^d23&m23     // each pair's earlier time
	if min(uint64(d01), uint64(d23), uint64(ta^tb)) == 0 {
		return earliestTie(ev, l)
	}
	ia, ib := m01&1, 2+m23&1
	return l + int(ia^(ia^ib)&((tb-ta)>>63))
}

// earliestTie is earliest by (t, seq) comparisons: for the last level's
// fewer children and for ties in t.
func earliestTie(ev []event, l int) int {
	c := l
	for r := l + 1; r < l+arity && r < len(ev); r++ {
		if before(ev[r], ev[c]) {
			c = r
		}
	}
	return c
}

// sink moves the root's hole down to a leaf of the first n entries, each
// level moving up the earliest of its children, and returns the hole's
// index.
func (h *eventHeap) sink(n int) int {
	if h.track {
		return h.sink4(n)
	}
	ev := h.ev[:n]
	if n < 2 {
		return 0
	}
	i, slot := 0, &ev[0] // the hole (see rise)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := earlier(ev, l)
		down := &ev[c]
		*slot = *down
		slot, i = down, c
	}
	return i
}

// sink4 is sink in a tracked heap (four children an entry). Its levels
// with four children choose the earliest as earliest does, written out.
// Only the last level can have fewer children, and it is taken after the
// loop, so that the loop's exit test is not mispredicted at every sink
// whose depth differs from the last one's (at BenchmarkLevels' L = 5000
// rate, 4 or 5 levels: 0.73 M mispredictions in sink4 per replication
// before, 0.25 M after).
//
// A level's four children are addressed from the array's base (the loop
// runs while l <= n-4, so they are ev[l:l+4], inside ev: no bounds
// check), and their times' bits are read as integers through a view of
// the same 64 bytes as eight words (a time at each even word; Go loads
// math.Float64bits of a float64 field into a floating-point register and
// then moves it). The pair's earlier time and the pairs' earlier one are
// chosen by masks as in earliest, and the child's index is made from the
// chosen pair's mask and the pairs' comparison (m&1 | mab&2). At the
// L = 5000 rate of BenchmarkLevelsH2 that is 67 instructions a level
// instead of 79 (sink4, 1.14 M levels in 226 k sinks per replication:
// 90.1 → 76.6 M); the heap's depth grows with L, so this is a cut in
// what grows with L, not per event (docs/design.md).
func (h *eventHeap) sink4(n int) int {
	ev := h.ev[:n]
	if n < 2 {
		return 0
	}
	i, slot := 0, &ev[0] // the hole (see rise)
	base := unsafe.Pointer(unsafe.SliceData(ev))
	for {
		l := firstChild(i)
		if l > n-arity {
			break
		}
		p := unsafe.Add(base, l*int(unsafe.Sizeof(event{})))
		q := (*[arity]event)(p)
		var t0, t1, t2, t3 int64
		if unsafe.Sizeof(event{}) == 16 { // 64-bit pointers (a constant: one branch compiles)
			w := (*[2 * arity]int64)(p) // q's times' bits at w[0], w[2], w[4], w[6]
			t0, t1, t2, t3 = w[0], w[2], w[4], w[6]
		} else {
			// 32-bit: an event is 12 bytes (a time and a 4-byte
			// pointer); w[2] there read half a time and half a pointer,
			// and the heap lost its order (caught under qemu-arm).
			t0, t1 = int64(math.Float64bits(q[0].t)), int64(math.Float64bits(q[1].t))
			t2, t3 = int64(math.Float64bits(q[2].t)), int64(math.Float64bits(q[3].t))
		}
		d01, d23 := t0^t1, t2^t3
		m01, m23 := (t1-t0)>>63, (t3-t2)>>63 // all ones if t1 < t0 (t3 < t2)
		ta, tb := t0^d01&m01, t2^d23&m23     // each pair's earlier time
		mab := (tb - ta) >> 63               // all ones if tb < ta
		m := m01 ^ (m01^m23)&mab             // the chosen pair's mask
		o := uint64(m&1 | mab&2)
		if min(uint64(d01), uint64(d23), uint64(ta^tb)) == 0 {
			o = uint64(earliestTie(ev, l) - l)
		}
		down := &q[o&(arity-1)]
		*slot = *down
		slot.j.heapIdx = int32(i)
		slot, i = down, l+int(o)
	}
	if l := firstChild(i); l < n { // fewer than four children
		c := earliestTie(ev, l)
		*slot = ev[c]
		slot.j.heapIdx = int32(i)
		i = c
	}
	return i
}

// up and down move the entry at i of a tracked heap by a hole: the entry
// is held aside while the entries it passes move one level each, and it is
// written once where it stops. (down is compact's only, up popDown's.)
func (h *eventHeap) up(i int) {
	ev := h.ev
	e := ev[i]
	for i > 0 {
		p := parent(i)
		if !before(e, ev[p]) {
			break
		}
		ev[i] = ev[p]
		ev[i].j.heapIdx = int32(i)
		i = p
	}
	ev[i] = e
	e.j.heapIdx = int32(i)
}

// upBinary is up in an untracked (binary) heap.
func upBinary(ev []event, i int) {
	e := ev[i]
	for i > 0 {
		p := int(uint(i-1) >> 1)
		if !before(e, ev[p]) {
			break
		}
		ev[i] = ev[p]
		i = p
	}
	ev[i] = e
}

func (h *eventHeap) down(i0 int) bool {
	ev := h.ev
	i, n := i0, len(ev)
	e := ev[i]
	for {
		l := firstChild(i)
		if l >= n {
			break
		}
		c := earliest(ev, l)
		if !before(ev[c], e) {
			break
		}
		ev[i] = ev[c]
		ev[i].j.heapIdx = int32(i)
		i = c
	}
	ev[i] = e
	e.j.heapIdx = int32(i)
	return i > i0
}
