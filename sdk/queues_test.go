package sdk

import (
	"math/rand/v2"
	"testing"
)

// TestFIFOModel drives a FIFO through random pushes, pops and resets,
// growing it through many doublings with its contents wrapped round the
// ring, and checks it against a slice at every step: length, front, every
// position by At, the order of pops, and that no ring slot outside the
// queued jobs still points at a job (a stale pointer would keep a finished
// replication's jobs alive).
func TestFIFOModel(t *testing.T) {
	jobs := make([]Job, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	var q FIFO
	var model []*Job
	next := 0
	for step := 0; step < 200000; step++ {
		switch r := rng.IntN(100); {
		case r < 1 && step%1000 == 0:
			q.Reset()
			model = model[:0]
		case r < 55 && len(model) < len(jobs)-1:
			j := &jobs[next%len(jobs)]
			next++
			q.Push(j)
			model = append(model, j)
		default:
			got := q.Pop()
			var want *Job
			if len(model) > 0 {
				want, model = model[0], model[1:]
			}
			if got != want {
				t.Fatalf("step %d: Pop = %p, want %p", step, got, want)
			}
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, want %d", step, q.Len(), len(model))
		}
		if f := q.Front(); (len(model) == 0 && f != nil) || (len(model) > 0 && f != model[0]) {
			t.Fatalf("step %d: Front wrong", step)
		}
		if step%97 == 0 || len(q.buf) > 0 && q.n == len(q.buf) {
			for i, j := range model {
				if q.At(i) != j {
					t.Fatalf("step %d: At(%d) wrong", step, i)
				}
			}
			live := 0
			for _, j := range q.buf {
				if j != nil {
					live++
				}
			}
			if live != len(model) {
				t.Fatalf("step %d: %d non-nil ring slots for %d queued jobs", step, live, len(model))
			}
		}
	}
	if len(q.buf) < 1024 {
		t.Fatalf("the ring never grew past %d slots: the test did not exercise growth", len(q.buf))
	}
}
