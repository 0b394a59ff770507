package sim

import (
	"cmp"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestEventListOrder drives the event heap through random pushes, pops,
// suspensions and resumptions, at sizes from a few entries to hundreds,
// with many tied times, and checks every pop against a reference: the
// pending live events sorted by (t, seq), the order the engine's results
// depend on. Pops are lazy (see eventHeap), so the sequence mixes pop then
// push (the root's hole filled by the push), pop then pop, and pop then
// resume. A suspended entry stays in the heap, stale, until it is resumed
// (re-keyed in place, to a time before or after its old one) or reaches the
// root, where ready drops it, or until a compaction drops all stale entries
// at once (in ready: at the first event after a burst of preemptions such
// as a wide job's arrival makes, or at a stale root): the reference only ever
// holds live events, so a stale entry popped, or a resumed one out of
// place, fails the check. Some pushes are made as System.Start makes a
// preempting policy's (newSlot and rise), the rest through push.
func TestEventListOrder(t *testing.T) {
	for _, track := range []bool{false, true} {
		r := rng.Derive(3, 9)
		h := eventHeap{track: track}
		type ref struct {
			t   float64
			seq uint64
			j   *Job
		}
		var pending []ref
		var suspended []*Job
		now := 0.0
		target := 0 // the size the sequence drifts towards, changed now and then
		pops, suspends, resumes, compactions, rootCompactions, largest := 0, 0, 0, 0, 0, 0
		rises := 0 // pushes made as System.Start makes them
		// startPush pushes as System.Start does when asked (newSlot and
		// rise, when the heap allows it), or through push.
		startPush := func(h *eventHeap, at float64, j *Job, asStart bool) {
			if asStart {
				if i, ok := h.newSlot(j); ok {
					rise(h.ev, i, at, j)
					rises++
					return
				}
			}
			h.push(at, j)
		}
		for step := 0; step < 200000; step++ {
			if step%5000 == 0 {
				target = []int{5, 40, 100, 300, 20, 140, 2}[step/5000%7]
			}
			largest = max(largest, h.len())
			// One phase in seven suspends most of what runs, as a
			// preempting policy's burst of preemptions does, so that the
			// stale entries outnumber the live ones and are compacted.
			suspendP := 0.1
			if step/5000%7 == 4 {
				suspendP = 0.6
			}
			switch u := r.Float64(); {
			case track && u < 0.003 && len(pending) > 2*compactMin:
				// A wide job's arrival: all but a few of the running
				// jobs preempted at once, in no order, with no pop in
				// between, so that the stale entries crowd the heap and
				// the next ready compacts.
				for len(pending) > 2 {
					k := r.IntN(len(pending))
					j := pending[k].j
					h.suspend(j)
					pending = slices.Delete(pending, k, k+1)
					suspended = append(suspended, j)
					suspends++
				}
			case len(pending) < target && u < 0.7 || len(pending) == 0 && len(suspended) == 0:
				// Times on a coarse grid so that ties are frequent.
				at := now + float64(r.IntN(8))*0.25
				j := &Job{}
				startPush(&h, at, j, u < 0.35)
				pending = append(pending, ref{at, j.evSeq, j})
			case track && u < suspendP && len(pending) > 0:
				k := r.IntN(len(pending))
				e := pending[k]
				h.suspend(e.j)
				pending = slices.Delete(pending, k, k+1)
				suspended = append(suspended, e.j)
				suspends++
			case track && u < suspendP+0.1 && len(suspended) > 0:
				// Mostly one suspended lately, whose entry is more
				// likely still in the heap than an old one's.
				k := r.IntN(len(suspended))
				if u < suspendP+0.08 {
					k = len(suspended) - 1 - r.IntN(min(len(suspended), 4))
				}
				j := suspended[k]
				suspended = slices.Delete(suspended, k, k+1)
				if !j.suspended {
					// Its stale entry reached the root and was dropped:
					// a start pushes a new entry, as the engine's does.
					at := now + float64(r.IntN(8))*0.25
					startPush(&h, at, j, u < suspendP+0.05)
					pending = append(pending, ref{at, j.evSeq, j})
					break
				}
				at := now + float64(r.IntN(8))*0.25
				h.resume(at, j)
				pending = append(pending, ref{at, j.evSeq, j})
				resumes++
			default:
				stale, crowded := h.stale, h.crowded()
				ready := h.ready()
				if crowded && h.stale != 0 {
					t.Fatalf("step %d: ready left %d stale entries of %d after a burst", step, h.stale, len(h.ev))
				}
				if stale >= compactMin && h.stale == 0 {
					if crowded {
						compactions++
					} else {
						rootCompactions++
					}
				}
				if !ready {
					if len(pending) != 0 {
						t.Fatalf("step %d: ready() false with %d events pending", step, len(pending))
					}
					continue
				}
				slices.SortFunc(pending, func(a, b ref) int {
					return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.seq, b.seq))
				})
				// next settles a pending pop; some pops come without
				// it, so that pop after pop is exercised too.
				if u < 0.85 {
					if got := h.next(); got != pending[0].t {
						t.Fatalf("step %d: next() = %v, want %v", step, got, pending[0].t)
					}
				}
				e := h.pop()
				if e.j != pending[0].j || e.t != pending[0].t {
					t.Fatalf("step %d: popped (%v, seq %d), want (%v, seq %d)", step, e.t, e.j.evSeq, pending[0].t, pending[0].seq)
				}
				now = e.t
				pending = pending[1:]
				pops++
			}
			if h.len() != len(pending) {
				t.Fatalf("step %d: %d events, want %d", step, h.len(), len(pending))
			}
			if track {
				for i, e := range h.ev {
					if i == 0 && h.hole {
						continue // popped, not an event
					}
					if int(e.j.heapIdx) != i {
						t.Fatalf("step %d: heapIdx %d at %d", step, e.j.heapIdx, i)
					}
					// The heap property, stale entries included (their
					// keys stay consistent with their places).
					if p := h.parentOf(i); i > 0 && !(p == 0 && h.hole) && before(e, h.ev[p]) {
						t.Fatalf("step %d: entry %d (%v) before its parent (%v)", step, i, e.t, h.ev[p].t)
					}
				}
			}
		}
		t.Logf("track=%v: largest %d, %d pops, %d suspensions, %d resumptions, %d compactions (%d at a stale root), %d pushes as Start's", track, largest, pops, suspends, resumes, compactions, rootCompactions, rises)
		if largest < 200 || pops == 0 || (track && (suspends == 0 || resumes == 0 || compactions == 0 || rootCompactions == 0 || rises == 0)) {
			t.Fatalf("track=%v: the sequence did not exercise the heap: largest %d, %d pops, %d suspensions, %d resumptions, %d compactions (%d at a stale root), %d pushes as Start's",
				track, largest, pops, suspends, resumes, compactions, rootCompactions, rises)
		}
	}
}

// parentOf (the tests' heap checks) is the index of entry i's parent (i > 0) in h, whatever its
// shape.
func (h *eventHeap) parentOf(i int) int {
	if h.track {
		return parent(i)
	}
	return (i - 1) / 2
}

// TestCrowdedShare pins where a burst of preemptions makes the next ready
// compact: when the stale entries are more than a third of the heap (and
// at least compactMin). At four in five, as it was, the SRPT and Gittins
// orders over Borg cell B left most stale entries to reach the root one
// by one, each a pop's sink (see crowded).
func TestCrowdedShare(t *testing.T) {
	for _, c := range []struct {
		live, suspended int
		want            bool
	}{
		{30, 10, false}, // a third: not yet
		{30, 11, true},  // 11 of 30: over a third
		{30, 29, true},
		{12, 5, false}, // over a third, but fewer than compactMin
		{12, compactMin, true},
	} {
		h := eventHeap{track: true}
		jobs := make([]*Job, c.live)
		for i := range jobs {
			jobs[i] = &Job{}
			h.push(float64(i%7), jobs[i])
		}
		for _, j := range jobs[:c.suspended] {
			h.suspend(j)
		}
		if got := h.crowded(); got != c.want {
			t.Errorf("%d entries, %d stale: crowded() = %v, want %v", c.live, c.suspended, got, c.want)
		}
		if !h.ready() {
			t.Fatalf("%d entries, %d stale: no event ready", c.live, c.suspended)
		}
		if c.want && (h.stale != 0 || len(h.ev) != c.live-c.suspended) {
			t.Errorf("%d entries, %d stale: ready left %d entries, %d stale; want %d, none", c.live, c.suspended, len(h.ev), h.stale, c.live-c.suspended)
		}
	}
}
