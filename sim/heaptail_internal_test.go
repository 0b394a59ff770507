package sim

import (
	"testing"
	"unsafe"
)

// tailCheck is the reorder policy (many preemptions and restarts per
// decision, so that the event list compacts often) checking, after every
// decision, what compact's uncleared tail holds.
type tailCheck struct {
	*reorder
	foreign int // entries (live or past len) whose job is not the pool's
	tail    int // decisions with a non-nil entry past len(ev)
}

func (p *tailCheck) Arrive(s *System, j *Job)   { p.reorder.Arrive(s, j); p.check(s) }
func (p *tailCheck) Complete(s *System, j *Job) { p.reorder.Complete(s, j); p.check(s) }

// check counts the entries of the event list's whole array, up to its
// capacity, whose job lies in none of the pool's chunks.
func (p *tailCheck) check(s *System) {
	ev := s.events.ev
	all := ev[:cap(ev)]
	for i, e := range all {
		if e.j == nil {
			continue
		}
		if i >= len(ev) {
			p.tail++
		}
		if !inPool(&s.pool, e.j) {
			p.foreign++
		}
	}
}

// inPool reports whether j is one of the Jobs of p's chunks.
func inPool(p *jobPool, j *Job) bool {
	x := uintptr(unsafe.Pointer(j))
	for _, c := range p.chunks {
		lo := uintptr(unsafe.Pointer(&c[0]))
		if x >= lo && x < lo+uintptr(len(c))*unsafe.Sizeof(c[0]) {
			return true
		}
	}
	return false
}

// TestHeapTailInPool: compact leaves the dropped entries past the event
// list's length uncleared, which keeps no Job alive only because every
// entry's job, live or dropped, is one of the pool's, whose chunks live as
// long as the System. The test runs a preempting policy past saturation
// and checks, after every decision, every entry of the list's whole array
// (it fails if a job or timer entry came from elsewhere, e.g. Jobs made
// with new instead of the pool: it does), and that the array past the
// length did hold entries (settle's popped slots and compact's dropped
// ones, neither cleared).
func TestHeapTailInPool(t *testing.T) {
	p := &tailCheck{reorder: &reorder{batch: true}}
	cfg := Config{Seed: 7, Warmup: 500, Arrivals: 5000, MaxInSystem: 400}
	r, err := Run(movesWorkload(4), p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Preemptions == 0 || p.tail == 0 {
		t.Fatalf("not exercised: %d preemptions, %d decisions with a tail", r.Preemptions, p.tail)
	}
	if p.foreign > 0 {
		t.Fatalf("%d entries point to Jobs outside the pool", p.foreign)
	}
}
