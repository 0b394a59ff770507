package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
)

// batchReplay is movesReplay making each run of consecutive preemptions
// or starts at an instant with one engine call (System.PreemptJobs,
// System.StartJobs), as engineCallsRuns makes a decision's: the move floor
// of the batched calls.
type batchReplay struct {
	movesReplay
	js []*sdk.Job
}

func (r *batchReplay) Arrive(s *sdk.System, j *sdk.Job) {
	for int64(len(r.jobs)) <= j.ID() {
		r.jobs = append(r.jobs, nil)
	}
	r.jobs[j.ID()] = j
	r.callback(s, sim.TraceArrive, j.ID())
}

func (r *batchReplay) Complete(s *sdk.System, j *sdk.Job) {
	r.jobs[j.ID()] = nil
	r.callback(s, sim.TraceComplete, j.ID())
}

func (r *batchReplay) Timer(s *sdk.System, _ int) { r.apply(s) }

// callback is movesReplay.callback with this replay's apply.
func (r *batchReplay) callback(s *sdk.System, k sim.TraceKind, id int64) {
	if r.pos >= len(r.ms) {
		return
	}
	if m := r.ms[r.pos]; m.kind() != k || m.id() != id {
		if r.err == nil {
			r.err = fmt.Errorf("replay diverged at %v: callback %v job %d, recorded %v job %d", s.Now(), k, id, m.kind(), m.id())
		}
		r.ms = r.ms[:r.pos]
		return
	}
	r.pos++
	r.apply(s)
}

// apply carries out the moves recorded at this instant, a run of one kind
// per call, and sets a timer for the next group if no callback precedes it.
func (r *batchReplay) apply(s *sdk.System) {
	now := s.Now()
	for r.pos < len(r.ms) && r.ms[r.pos].t == now {
		k := r.ms[r.pos].kind()
		if k != sim.TraceStart && k != sim.TracePreempt {
			return // a callback at the same instant: its own moves follow it
		}
		r.js = r.js[:0]
		for ; r.pos < len(r.ms) && r.ms[r.pos].t == now && r.ms[r.pos].kind() == k; r.pos++ {
			r.js = append(r.js, r.jobs[r.ms[r.pos].id()])
		}
		if k == sim.TraceStart {
			s.StartJobs(r.js)
		} else {
			s.PreemptJobs(r.js)
		}
	}
	if r.pos < len(r.ms) {
		if k := r.ms[r.pos].kind(); k == sim.TraceStart || k == sim.TracePreempt {
			s.SetTimer(r.ms[r.pos].t, 0)
		}
	}
}

// TestMovesReplayBatched: the batched replay reproduces the recorded run
// (same response times to the bit, same preemptions), as TestMovesReplay
// checks for the one-call-each replay.
func TestMovesReplayBatched(t *testing.T) {
	checkReplays(t, floorCases[:2], func(ms []move) (sim.Policy, *movesReplay) {
		rp := &batchReplay{movesReplay: movesReplay{ms: ms}}
		return rp, &rp.movesReplay
	})
}

// BenchmarkMoveFloorBatched is BenchmarkMoveFloor's floor with the moves
// made as engineCallsRuns makes them, a run of one kind per engine call
// (floor/…), beside the one-call-each replay (floor1/…), on issue #35's
// two settings, for the SRPT and Gittins members.
func BenchmarkMoveFloorBatched(b *testing.B) {
	for _, c := range floorCases[:2] {
		w, arrivals := c.w(b), c.arrivals
		for _, sp := range Policies {
			if sp.New().(*Policy).proc == DivisorFilling && !dividesAll(w) || sp.Name == "serverfilling" || sp.Name == "divisorfilling" {
				continue
			}
			cfg := sim.Config{Seed: 1, Warmup: arrivals / 10, Arrivals: arrivals}
			_, ms := recordMoves(b, w, sp.New(), cfg)
			b.Run(c.name+"/floor1/"+sp.Name, func(b *testing.B) {
				rp := &movesReplay{ms: ms}
				benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
				if rp.err != nil {
					b.Fatal(rp.err)
				}
			})
			b.Run(c.name+"/floor/"+sp.Name, func(b *testing.B) {
				rp := &batchReplay{movesReplay: movesReplay{ms: ms}}
				benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
				if rp.err != nil {
					b.Fatal(rp.err)
				}
			})
		}
	}
}
