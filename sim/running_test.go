package sim_test

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// lister is a preemptive FCFS that keeps its own list of the jobs it has
// in service and, from its listFrom-th arrival on, checks System.Running
// against it at every callback. The engine builds its list at the first
// call, mid-run, and keeps it from then on through starts, departures and
// preemptions (every fifth arrival preempts the oldest running job).
type lister struct {
	t        *testing.T
	q        []*sim.Job
	run      []*sim.Job
	arrivals int
	listFrom int
	checks   int
}

func (p *lister) Preemption() sim.Preemption { return sim.PreemptResume }
func (p *lister) Init(*sim.System) error {
	p.q, p.run, p.arrivals, p.checks = nil, nil, 0, 0
	return nil
}

func (p *lister) Arrive(s *sim.System, j *sim.Job) {
	p.arrivals++
	p.q = append(p.q, j)
	if p.arrivals%5 == 0 && len(p.run) > 0 {
		old := p.run[0]
		s.Preempt(old)
		p.run = p.run[1:]
		p.q = append([]*sim.Job{old}, p.q...)
	}
	p.fill(s)
}

func (p *lister) Complete(s *sim.System, j *sim.Job) {
	p.run = slices.DeleteFunc(p.run, func(r *sim.Job) bool { return r == j })
	p.fill(s)
}

func (p *lister) fill(s *sim.System) {
	for len(p.q) > 0 && p.q[0].Need() <= s.Free() {
		s.Start(p.q[0])
		p.run = append(p.run, p.q[0])
		p.q = p.q[1:]
	}
	if p.arrivals < p.listFrom {
		return
	}
	p.checks++
	got := slices.Clone(s.Running())
	want := slices.Clone(p.run)
	byID := func(a, b *sim.Job) int { return int(a.ID() - b.ID()) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if !slices.Equal(got, want) {
		p.t.Fatalf("arrival %d: Running() has %d jobs, the policy runs %d", p.arrivals, len(got), len(want))
	}
}

// TestRunningListedLazily: the running list, built at the policy's first
// call and kept from then on, is the set of jobs in service; and a run
// that never asks gives the same result as one that does.
func TestRunningListedLazily(t *testing.T) {
	w := single(4, 3.2, expD(1))
	never, err := sim.Run(w, &lister{t: t, listFrom: 1 << 30}, sim.Config{Seed: 5, Arrivals: 20000})
	if err != nil {
		t.Fatal(err)
	}
	p := &lister{t: t, listFrom: 3000}
	asked, err := sim.Run(w, p, sim.Config{Seed: 5, Arrivals: 20000})
	if err != nil {
		t.Fatal(err)
	}
	if p.checks < 10000 {
		t.Fatalf("only %d checks", p.checks)
	}
	if never.Overall.MeanResponse != asked.Overall.MeanResponse || never.Preemptions != asked.Preemptions {
		t.Fatalf("asking for the running jobs changed the run: E[T] %v vs %v", never.Overall.MeanResponse, asked.Overall.MeanResponse)
	}
}
