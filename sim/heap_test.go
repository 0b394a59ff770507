package sim

import (
	"cmp"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestEventListOrder drives the event heap through random pushes, pops and
// removals, at sizes from a few entries to hundreds, with many tied times,
// and checks every pop against a reference: the pending events sorted by
// (t, seq), the order the engine's results depend on. Pops are lazy (see
// eventHeap), so the sequence mixes pop then push (the root's hole filled
// by the push), pop then pop, and pop then next or remove.
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
		now := 0.0
		target := 0 // the size the sequence drifts towards, changed now and then
		pops, removes, largest := 0, 0, 0
		for step := 0; step < 200000; step++ {
			if step%5000 == 0 {
				target = []int{5, 40, 100, 300, 20, 140, 2}[step/5000%7]
			}
			largest = max(largest, h.len())
			switch u := r.Float64(); {
			case len(pending) < target && u < 0.7 || len(pending) == 0:
				// Times on a coarse grid so that ties are frequent.
				at := now + float64(r.IntN(8))*0.25
				j := &Job{}
				h.push(at, j)
				pending = append(pending, ref{at, j.evSeq, j})
			case track && u < 0.1:
				k := r.IntN(len(pending))
				e := pending[k]
				h.remove(e.j)
				pending = slices.Delete(pending, k, k+1)
				removes++
			default:
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
				}
			}
		}
		if largest < 200 || pops == 0 || (track && removes == 0) {
			t.Fatalf("track=%v: the sequence did not exercise the heap: largest %d, %d pops, %d removes", track, largest, pops, removes)
		}
	}
}
