package jobring

import (
	"math/rand/v2"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestRingMatchesSlice drives a Ring and a plain slice with the same random
// pushes and pops, long enough for the ring to grow several times while
// wrapped round, and requires the same jobs in the same order.
func TestRingMatchesSlice(t *testing.T) {
	jobs := make([]sim.Job, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	var r Ring
	var want []*sim.Job
	next := 0
	for step := 0; step < 20000; step++ {
		// Push with probability 0.55 so that the queue drifts upwards
		// through the 16 → 4096 doublings with pops interleaved.
		if next < len(jobs) && (len(want) == 0 || rng.Float64() < 0.55) {
			r.Push(&jobs[next])
			want = append(want, &jobs[next])
			next++
		} else if len(want) > 0 {
			if len(want) > 3 {
				r.Prefetch(3) // must stay inside the queue: no panic
			}
			if got := r.Pop(); got != want[0] {
				t.Fatalf("step %d: popped job %p, want %p", step, got, want[0])
			}
			want = want[1:]
		}
		if r.Len() != len(want) {
			t.Fatalf("step %d: Len() = %d, want %d", step, r.Len(), len(want))
		}
	}
	if next != len(jobs) {
		t.Fatalf("only %d of %d jobs pushed: the walk did not reach the largest ring", next, len(jobs))
	}
	r.Reset()
	if r.Len() != 0 {
		t.Fatalf("Len() after Reset = %d", r.Len())
	}
	r.Push(&jobs[0])
	if got := r.Pop(); got != &jobs[0] {
		t.Fatalf("after Reset: popped %p, want %p", got, &jobs[0])
	}
}
