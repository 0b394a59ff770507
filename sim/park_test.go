package sim_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// plainFCFS is FCFS on a FIFO of Jobs: the reference the parking versions
// must reproduce exactly.
type plainFCFS struct{ q sdk.FIFO }

func (p *plainFCFS) Init(*sim.System) error             { p.q.Reset(); return nil }
func (p *plainFCFS) Arrive(s *sim.System, j *sim.Job)   { p.q.Push(j); p.fill(s) }
func (p *plainFCFS) Complete(s *sim.System, _ *sim.Job) { p.fill(s) }
func (p *plainFCFS) fill(s *sim.System) {
	for j := p.q.Front(); j != nil && j.Need() <= s.Free(); j = p.q.Front() {
		s.Start(p.q.Pop())
	}
}

// parkAllFCFS is FCFS that parks every job it queues, the arriving one
// included, and unparks the front to start it: a job that fits on arrival
// is parked and unparked inside its own Arrive, which must leave it counted
// as never having waited.
type parkAllFCFS struct {
	q    []sim.Parked
	most int // the longest the queue was
}

func (p *parkAllFCFS) Init(*sim.System) error { p.q = p.q[:0]; return nil }
func (p *parkAllFCFS) Arrive(s *sim.System, j *sim.Job) {
	p.q = append(p.q, sim.Parked{})
	s.Park(j, &p.q[len(p.q)-1])
	p.most = max(p.most, len(p.q))
	p.fill(s)
}
func (p *parkAllFCFS) Complete(s *sim.System, _ *sim.Job) { p.fill(s) }
func (p *parkAllFCFS) fill(s *sim.System) {
	for len(p.q) > 0 && s.Classes()[p.q[0].Class()].Need <= s.Free() {
		j := s.Unpark(&p.q[0])
		p.q = p.q[1:]
		s.Start(j)
	}
}

// TestParkSameResults: parking changes nothing a result shows. FCFS
// parking every queued job, FCFS on sdk.ParkingFIFO (which parks past
// sdk.ParkAfter jobs) and FCFS on a plain FIFO give identical results —
// means, P(wait) per class, series — and identical event traces. The
// cases: a stable mixed workload; the same overloaded so that the queue
// reaches several parked blocks; and a runaway queue stopped by
// MaxInSystem with measured jobs still parked, whose per-class count of
// undeparted jobs (the end-of-run census) must include them.
func TestParkSameResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    *sim.Workload
		cfg  sim.Config
	}{
		{"stable", simtest.Mixed(1.2), sim.Config{Seed: 3, Warmup: 2000, Arrivals: 40000, SeriesInterval: 50}},
		{"overloaded", simtest.Mixed(3), sim.Config{Seed: 4, Warmup: 100, Arrivals: 30000}},
		{"stopped", simtest.Named(t, "one-or-all", 7), sim.Config{Seed: 5, Warmup: 1000, Arrivals: 200000, MaxInSystem: 20000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, refEvs := simtest.Record(t, tc.w, &plainFCFS{}, tc.cfg)
			want, _ := json.Marshal(ref)
			all := &parkAllFCFS{}
			for _, p := range []sim.Policy{all, &fcfs.FCFS{}} {
				r, evs := simtest.Record(t, tc.w, p, tc.cfg)
				if got, _ := json.Marshal(r); string(got) != string(want) {
					t.Errorf("%T: result differs from plain FCFS:\n got %s\nwant %s", p, got, want)
				}
				if !reflect.DeepEqual(evs, refEvs) {
					t.Errorf("%T: event trace differs from plain FCFS", p)
				}
			}
			if tc.name != "stable" && all.most < sdk.ParkAfter+8000 {
				t.Fatalf("the queue reached %d jobs: too short for ParkingFIFO to park several blocks", all.most)
			}
			if tc.name == "stopped" {
				var undeparted int64
				for _, c := range ref.Classes {
					undeparted += c.Undeparted
				}
				if !ref.LowerBound || undeparted < 5000 {
					t.Fatalf("the run was meant to stop with thousands of measured jobs parked: lower bound %v, undeparted %d", ref.LowerBound, undeparted)
				}
			}
		})
	}
}

// parker misuses Park in the way its mode says (TestPolicyErrors).
type parker struct {
	mode string
	p    sim.Parked
}

func (*parker) Preemption() sim.Preemption { return sim.PreemptResume }
func (p *parker) Init(*sim.System) error   { return nil }
func (p *parker) Arrive(s *sim.System, j *sim.Job) {
	switch p.mode {
	case "running":
		s.Start(j)
		s.Park(j, &p.p)
	case "preempted":
		s.Start(j)
		s.Preempt(j)
		s.Park(j, &p.p)
	}
}
func (p *parker) Complete(*sim.System, *sim.Job) {}
