// Command msjfarm-policy-bad is a test plugin for sdk/check: next to a
// good FCFS, policies that each fail one conformance check.
package main

import (
	"math/rand/v2"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	sdk.Serve("bad", "0.0.1", append(append([]sdk.Spec{}, fcfs.Policies...), []sdk.Spec{
		{Name: "nondeterministic", Doc: "random fit from the global (unseeded) generator", New: func() sdk.Policy { return &nondet{} }},
		{Name: "bad-schema", Doc: "a default outside its own bounds", New: func() sdk.Policy { return &badSchema{} }},
		{Name: "starver", Doc: "never starts a job that needs more than one server", New: func() sdk.Policy { return &starver{} }},
		{Name: "one-or-all-only", Doc: "declines every workload but one-or-all", New: func() sdk.Policy { return &picky{} }},
		{Name: "half-described", Doc: "reports two counters, describes one", New: func() sdk.Policy { return &halfDescribed{} }},
		{Name: "Bad_Name", Doc: "a name that is not lower-case-hyphenated", New: func() sdk.Policy { return &fcfs.FCFS{} }},
	}...))
}

type nondet struct{ q sdk.ClassQueues }

func (p *nondet) Init(s *sdk.System) error           { p.q.Reset(len(s.Classes())); return nil }
func (p *nondet) Arrive(s *sdk.System, j *sdk.Job)   { p.q.Push(j); p.fill(s) }
func (p *nondet) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }
func (p *nondet) fill(s *sdk.System) {
	for {
		var fit []int
		for c := range p.q.Q {
			if h := p.q.Q[c].Front(); h != nil && h.Need() <= s.Free() {
				fit = append(fit, c)
			}
		}
		if len(fit) == 0 {
			return
		}
		s.Start(p.q.Pop(fit[rand.IntN(len(fit))])) // wrong: not s.Rand()
	}
}

type badSchema struct{ fcfs.FCFS }

func (p *badSchema) Params() []sdk.Param {
	return []sdk.Param{{Name: "depth", Type: sdk.Int, Default: 0, Min: sdk.Bound(1), Max: sdk.Bound(10)}}
}
func (p *badSchema) Configure(sdk.Values) error { return nil }

type starver struct{ q sdk.FIFO }

func (p *starver) Init(*sdk.System) error { p.q.Reset(); return nil }
func (p *starver) Arrive(s *sdk.System, j *sdk.Job) {
	if j.Need() > 1 {
		return // left waiting for ever
	}
	p.q.Push(j)
	p.fill(s)
}
func (p *starver) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }
func (p *starver) fill(s *sdk.System) {
	for j := p.q.Front(); j != nil && j.Need() <= s.Free(); j = p.q.Front() {
		s.Start(p.q.Pop())
	}
}

type picky struct{ fcfs.FCFS }

func (p *picky) Init(s *sdk.System) error {
	if s.Workload().Name() != "one-or-all" {
		return errNotOneOrAll
	}
	return p.FCFS.Init(s)
}

type initError string

func (e initError) Error() string { return string(e) }

const errNotOneOrAll = initError("defined for one-or-all only")

// halfDescribed reports two counters and describes only the first.
type halfDescribed struct{ fcfs.FCFS }

func (p *halfDescribed) Counters() []sdk.Counter {
	return []sdk.Counter{{Name: "described", Value: 1}, {Name: "forgotten", Value: 2}}
}
func (p *halfDescribed) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{{Name: "described", Label: "a described counter"}}
}
