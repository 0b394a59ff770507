package sdk

import (
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

// The interfaces declared here have the engine's method sets exactly: each
// converts to the engine's and back (a compile error otherwise), so a policy
// written against sdk is found by the engine's capability assertions and
// nothing the engine calls is missing from the author's view.
var (
	_ sim.Policy           = Policy(nil)
	_ Policy               = sim.Policy(nil)
	_ sim.Preemptor        = Preemptor(nil)
	_ Preemptor            = sim.Preemptor(nil)
	_ sim.SizeAware        = SizeAware(nil)
	_ SizeAware            = sim.SizeAware(nil)
	_ sim.TimerHandler     = TimerHandler(nil)
	_ TimerHandler         = sim.TimerHandler(nil)
	_ sim.Measurer         = Measurer(nil)
	_ Measurer             = sim.Measurer(nil)
	_ sim.CounterReporter  = CounterReporter(nil)
	_ CounterReporter      = sim.CounterReporter(nil)
	_ sim.CycleReporter    = CycleReporter(nil)
	_ CycleReporter        = sim.CycleReporter(nil)
	_ sim.CounterDescriber = CounterDescriber(nil)
	_ CounterDescriber     = sim.CounterDescriber(nil)
	_ sim.Configurable     = Configurable(nil)
	_ Configurable         = sim.Configurable(nil)
)

// fifo is a minimal policy with one parameter, to check what Serve hands the
// server.
type fifo struct {
	q     FIFO
	limit int
}

func (p *fifo) Params() []Param {
	return []Param{{Name: "limit", Type: Int, Default: 3, Min: Bound(1)}}
}
func (p *fifo) Configure(v Values) error   { p.limit = v.Int("limit"); return nil }
func (p *fifo) Init(*System) error         { p.q.Reset(); return nil }
func (p *fifo) Arrive(s *System, j *Job)   { p.q.Push(j); p.fill(s) }
func (p *fifo) Complete(s *System, _ *Job) { p.fill(s) }
func (p *fifo) fill(s *System) {
	for j := p.q.Front(); j != nil && j.Need() <= s.Free(); j = p.q.Front() {
		s.Start(p.q.Pop())
	}
}

// Serve's entries: policies first, in order, then the reference models; a
// policy runs as Spec.Run does, a reference model through its Run, and a
// spec without New stays without one (the server reports it).
func TestEntries(t *testing.T) {
	spec, _ := workload.Named("four-class")
	w, err := spec.Build(2)
	if err != nil {
		t.Fatal(err)
	}
	var refCfg sim.Config
	ref := Reference{Name: "ref", Doc: "a reference", Run: func(w *sim.Workload, cfg sim.Config) (*sim.Result, error) {
		refCfg = cfg
		return &sim.Result{Workload: "ref"}, nil
	}}
	pol := Spec{Name: "fifo", Doc: "first in first out", New: func() Policy { return &fifo{} }}
	es := entries([]Spec{pol, {Name: "broken"}}, []Reference{ref})
	if len(es) != 3 || es[0].Name != "fifo" || es[0].Doc != pol.Doc || es[1].Name != "broken" || es[2].Name != "ref" {
		t.Fatalf("entries %+v", es)
	}
	if es[1].New != nil || es[1].Reference != nil || es[2].New != nil || es[2].Reference == nil {
		t.Errorf("entry kinds: broken %+v, ref %+v", es[1], es[2])
	}
	if got := es[0].Params(); !reflect.DeepEqual(got, pol.Params()) || len(got) != 1 || got[0].Name != "limit" {
		t.Errorf("schema %v", got)
	}
	cfg := sim.Config{Seed: 5, Warmup: 100, Arrivals: 2000}
	a, err := es[0].Run(w, map[string]any{"limit": 2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pol.Run(w, map[string]any{"limit": 2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the served entry and Spec.Run differ")
	}
	if _, err := pol.Run(w, map[string]any{"limit": 0}, cfg); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("limit 0: %v", err)
	}
	if r, err := es[2].Run(w, nil, cfg); err != nil || r.Workload != "ref" || refCfg.Seed != 5 {
		t.Errorf("reference: %v, %v, cfg %+v", r, err, refCfg)
	}
	if _, err := es[2].Run(w, map[string]any{"limit": 2}, cfg); err == nil || !strings.Contains(err.Error(), "no parameters") {
		t.Errorf("reference with a parameter: %v", err)
	}
}
