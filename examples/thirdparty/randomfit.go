// Package randomfit is an example of a scheduling policy written outside the
// msjfarm repository: its own module, importing only msjfarm's SDK. It shows
// everything a third party needs — a type with Init, Arrive and Complete, a
// parameter schema, and a main (cmd/msjfarm-policy-randomfit) that calls
// sdk.Serve.
//
// Random-Fit: whenever servers free up or a job arrives, among the classes
// whose oldest waiting job fits in the idle servers, pick one uniformly at
// random (the policy's own stream, System.Rand(), so runs are reproducible
// and the job sequence is untouched) and start that class's head; repeat
// until no class head fits. It is non-preemptive and size-blind, and it is
// work-conserving over class heads (never idles a server a class head could
// use). A decision costs O(#classes).
//
// Parameter "greedy-oldest" (probability, default 0): with this
// probability start the oldest fitting head instead of a random one; 1 is
// First-Fit over class heads.
package randomfit

import "github.com/msjfarm/msjfarm/sdk"

// Policies is what the plugin serves.
var Policies = []sdk.Spec{{
	Name: "random-fit",
	Doc:  "Random-Fit: start the head of a uniformly random class whose head fits; repeat while one fits.",
	New:  func() sdk.Policy { return &RandomFit{} },
}}

// RandomFit keeps per-class FIFOs.
type RandomFit struct {
	q      sdk.ClassQueues
	fit    []int // scratch: classes whose head fits
	greedy float64
}

// Params is the schema.
func (p *RandomFit) Params() []sdk.Param {
	return []sdk.Param{{
		Name: "greedy-oldest", Type: sdk.Float, Default: 0.0, Min: sdk.Bound(0), Max: sdk.Bound(1),
		Doc: "probability of starting the oldest fitting head instead of a random one",
	}}
}

// Configure reads the resolved parameters.
func (p *RandomFit) Configure(v sdk.Values) error {
	p.greedy = v.Float("greedy-oldest")
	return nil
}

// Init resets the queues for the workload's classes.
func (p *RandomFit) Init(s *sdk.System) error {
	p.q.Reset(len(s.Classes()))
	p.fit = p.fit[:0]
	return nil
}

// Arrive queues j and starts what fits.
func (p *RandomFit) Arrive(s *sdk.System, j *sdk.Job) { p.q.Push(j); p.fill(s) }

// Complete starts what fits in the freed servers.
func (p *RandomFit) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }

func (p *RandomFit) fill(s *sdk.System) {
	for {
		p.fit = p.fit[:0]
		oldest, oldestID := -1, int64(-1)
		for c := range p.q.Q {
			h := p.q.Q[c].Front()
			if h == nil || h.Need() > s.Free() {
				continue
			}
			p.fit = append(p.fit, c)
			if oldest < 0 || h.ID() < oldestID {
				oldest, oldestID = c, h.ID()
			}
		}
		if len(p.fit) == 0 {
			return
		}
		c := oldest
		if p.greedy == 0 || (p.greedy < 1 && s.Rand().Float64() >= p.greedy) {
			c = p.fit[s.Rand().IntN(len(p.fit))]
		}
		s.Start(p.q.Pop(c))
	}
}
