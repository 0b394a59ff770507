package sim

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
)

// reorder is a preemptive policy that moves many jobs per decision, as
// the SRPT orders of ServerFilling do: at every arrival and completion it
// serves the jobs in order of (remaining size, arrival) that fit, greedily,
// preempting the running jobs left out and starting the waiting ones
// taken. batch makes its moves through PreemptJobs and StartJobs, one call
// per kind (with in, through PreemptJobsIn and StartJobsIn, as indices
// into a table of its jobs in the reverse of the order it serves them, so
// that a list's indices are neither 0, 1, 2, ... nor in the table's
// order); otherwise through Preempt and Start, one call per job. After
// every decision it records the engine's state (snap), so that the two
// ways can be compared move for move.
type reorder struct {
	batch bool
	in    bool
	list  bool // ask for the running jobs (System.Running) from the start
	// any hands the engine each batch of preemptions reversed when
	// PreemptionsCommute says the order does not matter.
	any   bool
	jobs  []*Job
	tab   []*Job // with in: jobs reversed
	pre   []*Job
	start []*Job
	snaps []string
	// failAt > 0 makes the failAt-th decision move one job too many: it
	// starts a job that does not fit (failStart) or preempts a waiting
	// one.
	failAt    int
	failStart bool
	decisions int
}

func (p *reorder) Init(*System) error         { return nil }
func (p *reorder) Preemption() Preemption     { return PreemptResume }
func (p *reorder) SizeAware() bool            { return true }
func (p *reorder) Arrive(s *System, j *Job)   { p.jobs = append(p.jobs, j); p.decide(s) }
func (p *reorder) Complete(s *System, j *Job) { p.drop(j); p.decide(s) }
func (p *reorder) drop(j *Job) {
	p.jobs = slices.DeleteFunc(p.jobs, func(x *Job) bool { return x == j })
}

// decide serves the jobs in (remaining, arrival) order, greedily.
func (p *reorder) decide(s *System) {
	if p.list {
		s.Running()
	}
	keys := make(map[*Job]float64, len(p.jobs))
	for _, j := range p.jobs {
		keys[j] = s.Remaining(j)
	}
	slices.SortFunc(p.jobs, func(a, b *Job) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a.ID(), b.ID())
	})
	free := s.Servers()
	take := make(map[*Job]bool, len(p.jobs))
	for _, j := range p.jobs {
		if j.Need() <= free {
			take[j] = true
			free -= j.Need()
		}
	}
	p.pre, p.start = p.pre[:0], p.start[:0]
	for i := len(p.jobs) - 1; i >= 0; i-- { // the last in the order first
		if j := p.jobs[i]; j.Running() && !take[j] {
			p.pre = append(p.pre, j)
		}
	}
	for _, j := range p.jobs {
		if !j.Running() && take[j] {
			p.start = append(p.start, j)
		}
	}
	p.decisions++
	if p.decisions == p.failAt {
		p.spoil()
	}
	switch {
	case p.batch && p.in:
		p.tab = append(p.tab[:0], p.jobs...)
		slices.Reverse(p.tab)
		s.PreemptJobsIn(p.tab, p.indices(p.pre))
		s.StartJobsIn(p.tab, p.indices(p.start))
	case p.batch && p.any && s.PreemptionsCommute():
		rev := slices.Clone(p.pre)
		slices.Reverse(rev)
		s.PreemptJobs(rev)
		s.StartJobs(p.start)
	case p.batch:
		s.PreemptJobs(p.pre)
		s.StartJobs(p.start)
	default:
		for _, j := range p.pre {
			s.Preempt(j)
		}
		for _, j := range p.start {
			s.Start(j)
		}
	}
	h := &s.events
	if err := checkHeap(h); err != nil {
		panic(fmt.Sprintf("t=%v: %v", s.now, err))
	}
	p.snaps = append(p.snaps, fmt.Sprintf("t=%v busy=%d run=%d tagged=%d pre=%d stale=%d seq=%d ev=%d hole=%v",
		s.now, s.busy, s.nRun, s.taggedRunning, s.preemptions, h.stale, h.seq, len(h.ev), h.hole))
	for _, j := range p.start {
		p.snaps = append(p.snaps, fmt.Sprintf(" start %d seq=%d at=%d rem=%v", j.id, j.evSeq, j.heapIdx, j.remaining))
	}
	for _, j := range p.pre {
		p.snaps = append(p.snaps, fmt.Sprintf(" pre %d rem=%v n=%d", j.id, j.remaining, j.preempted))
	}
}

// indices is the index in p.tab of each job of js.
func (p *reorder) indices(js []*Job) []int32 {
	ids := make([]int32, len(js))
	for k, j := range js {
		ids[k] = int32(slices.Index(p.tab, j))
	}
	return ids
}

// checkHeap checks the event list: a heap in (t, seq) order, every
// entry's job knowing its place, and stale the number of entries of
// suspended jobs.
func checkHeap(h *eventHeap) error {
	stale := 0
	for i, e := range h.ev {
		if i == 0 && h.hole {
			continue
		}
		if int(e.j.heapIdx) != i {
			return fmt.Errorf("entry %d: its job says %d", i, e.j.heapIdx)
		}
		if p := h.parentOf(i); i > 0 && !(p == 0 && h.hole) && before(e, h.ev[p]) {
			return fmt.Errorf("entry %d (t=%v) before its parent (t=%v)", i, e.t, h.ev[p].t)
		}
		if e.j.suspended {
			stale++
		}
	}
	if stale != h.stale {
		return fmt.Errorf("%d stale entries, counted %d", stale, h.stale)
	}
	return nil
}

// spoil adds a move the engine must refuse in the middle of the lists.
func (p *reorder) spoil() {
	if p.failStart {
		for _, j := range p.jobs {
			if !j.Running() && !slices.Contains(p.start, j) {
				p.start = slices.Insert(p.start, len(p.start)/2, j)
				return
			}
		}
		return
	}
	for _, j := range p.jobs {
		if !j.Running() {
			p.pre = slices.Insert(p.pre, len(p.pre)/2, j)
			return
		}
	}
}

// movesWorkload has deterministic sizes besides exponential and
// hyperexponential ones, so that departures tie and the event list's
// sequence numbers decide their order.
func movesWorkload(rate float64) *Workload {
	e := dist.Must(dist.NewExponential(1))
	h := dist.Must(dist.NewHyperExp(2, 10))
	d := dist.Must(dist.NewDeterministic(1))
	return &Workload{Name: "moves", Servers: 10, ArrivalRate: rate, Classes: []Class{
		{Name: "a", Need: 1, Share: 0.4, Service: e}, {Name: "b", Need: 3, Share: 0.2, Service: h},
		{Name: "c", Need: 2, Share: 0.2, Service: d}, {Name: "d", Need: 10, Share: 0.05, Service: e},
		{Name: "e", Need: 1, Share: 0.1, Service: d}, {Name: "f", Need: 7, Share: 0.05, Service: h},
	}}
}

// TestMoveBatches: PreemptJobs and StartJobs, and PreemptJobsIn and
// StartJobsIn, leave the engine exactly as
// the same moves made one call each (busy servers, jobs and measured jobs
// in service, preemptions, the event list's stale entries, sequence
// numbers and length, each moved job's sequence number, place in the
// event list and remaining size, after every decision; the event list a
// heap whose entries know their places, checkHeap), and the runs'
// results are the same, over loads from light to past saturation, with
// and without the list of running jobs (their one-call-each fallback).
func TestMoveBatches(t *testing.T) {
	for _, rate := range []float64{1, 2.5, 4} {
		for _, list := range []bool{false, true} {
			w, cfg, one, r1 := oneCallEach(t, rate, list)
			if r1.Preemptions == 0 {
				t.Fatalf("rate %v: no preemptions", rate)
			}
			for _, in := range []bool{false, true} {
				all := &reorder{list: list, batch: true, in: in}
				sameMoves(t, fmt.Sprintf("rate %v list %v in %v", rate, list, in), w, cfg, one, r1, all)
			}
		}
	}
}

// TestPreemptionsCommute: where PreemptionsCommute says so, a decision's
// preemptions handed to the engine reversed leave it exactly as the same
// moves made one call each, in the decision's order (the same snapshots
// after every decision, the same results), over loads from light to past
// saturation; with a list of the running jobs it says no. With an
// observer it says no, and there the order does show: the reversed batch
// gives another trace (the reason it must say no).
func TestPreemptionsCommute(t *testing.T) {
	for _, rate := range []float64{1, 2.5, 4} {
		for _, list := range []bool{false, true} {
			w, cfg, one, r1 := oneCallEach(t, rate, list)
			rev := &reorder{list: list, batch: true, any: true}
			sameMoves(t, fmt.Sprintf("rate %v list %v reversed", rate, list), w, cfg, one, r1, rev)
		}
	}
	var s System
	s.info.Preemption = PreemptResume
	if !s.PreemptionsCommute() {
		t.Fatal("resume, no observer, no list: says the order matters")
	}
	s.listRunning = true
	if s.PreemptionsCommute() {
		t.Fatal("with the running list: says the order does not matter")
	}
	s.listRunning = false
	s.obs = func(TraceRecord) {}
	if s.PreemptionsCommute() {
		t.Fatal("with an observer: says the order does not matter")
	}
	var tr [2][]TraceRecord
	for i, p := range []*reorder{{batch: true}, {batch: true, any: true}} {
		cfg := Config{Seed: 3, Warmup: 100, Arrivals: 2000}
		cfg.Observer = func(r TraceRecord) { tr[i] = append(tr[i], r) }
		if _, err := Run(movesWorkload(2.5), p, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(tr[0], tr[1]) {
		t.Fatal("with an observer the reversed batch was used: PreemptionsCommute said yes")
	}
	s.obs = nil
	s.info.Preemption = PreemptRestart
	if s.PreemptionsCommute() {
		t.Fatal("preempt-restart: says the order does not matter")
	}
}

// oneCallEach runs reorder one call per move on movesWorkload(rate), as
// the batched runs' reference.
func oneCallEach(t *testing.T, rate float64, list bool) (*Workload, Config, *reorder, *Result) {
	t.Helper()
	w := movesWorkload(rate)
	cfg := Config{Seed: 7, Warmup: 500, Arrivals: 5000, MaxInSystem: 400}
	one := &reorder{list: list}
	r1, err := Run(w, one, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w, cfg, one, r1
}

// sameMoves runs p on w and fails unless it leaves the engine as one's
// run (whose result is r1) did after every decision, with the same
// results.
func sameMoves(t *testing.T, label string, w *Workload, cfg Config, one *reorder, r1 *Result, p *reorder) {
	t.Helper()
	r2, err := Run(w, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDiff(one.snaps, p.snaps); i >= 0 {
		t.Fatalf("%s: after %d records, one call each %q, batched %q", label, i, at(one.snaps, i), at(p.snaps, i))
	}
	a, b := fmt.Sprintf("%v %v %v %v %v", r1.Overall, r1.Preemptions, r1.Events, r1.MeanInSystem, r1.Classes),
		fmt.Sprintf("%v %v %v %v %v", r2.Overall, r2.Preemptions, r2.Events, r2.MeanInSystem, r2.Classes)
	if a != b {
		t.Fatalf("%s: results differ:\n%s\n%s", label, a, b)
	}
}

// TestMoveBatchesTrace: with an observer (the one-call-each fallback) the
// batched moves' trace is the one-call-each trace.
func TestMoveBatchesTrace(t *testing.T) {
	w := movesWorkload(2.5)
	var tr [2][]TraceRecord
	for i, batch := range []bool{false, true} {
		cfg := Config{Seed: 3, Warmup: 100, Arrivals: 2000}
		cfg.Observer = func(r TraceRecord) { tr[i] = append(tr[i], r) }
		if _, err := Run(w, &reorder{batch: batch}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(tr[0], tr[1]) {
		t.Fatalf("traces differ (%d and %d records)", len(tr[0]), len(tr[1]))
	}
}

// TestMoveBatchesRefuse: a batch with a move the engine refuses (a start
// that does not fit, a preemption of a waiting job) fails the run with
// the error the same moves made one call each give.
func TestMoveBatchesRefuse(t *testing.T) {
	for _, failStart := range []bool{true, false} {
		var msg [3]string
		for i, batch := range []bool{false, true, true} {
			p := &reorder{batch: batch, in: i == 2, failAt: 3000, failStart: failStart}
			_, err := Run(movesWorkload(4), p, Config{Seed: 2, Arrivals: 5000})
			if err == nil {
				t.Fatalf("failStart %v batch %v in %v: no error", failStart, batch, p.in)
			}
			msg[i] = err.Error()
		}
		if msg[0] != msg[1] || msg[0] != msg[2] {
			t.Fatalf("failStart %v: one call each %q, batched %q, indexed %q", failStart, msg[0], msg[1], msg[2])
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return -1
}

func at(a []string, i int) string {
	if i < len(a) {
		return a[i]
	}
	return "(none)"
}
