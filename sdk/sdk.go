// Package sdk is what a scheduling-policy author imports: the policy
// interfaces, the types a policy reads, and (in the plugin layer) Serve.
//
// A policy is a type with three methods (Init, Arrive, Complete; see
// [Policy]) that starts waiting jobs with System.Start. Optional capability
// interfaces add preemption ([Preemptor]), size awareness ([SizeAware]),
// timers ([TimerHandler]), counters ([CounterReporter], [Measurer]) and
// parameters ([Configurable]). The engine enforces the model's invariants
// whatever a policy does.
package sdk

import (
	"fmt"

	"github.com/msjfarm/msjfarm/sim"
)

// The policy-facing types, re-exported so that a third party imports only
// this package.
type (
	Policy          = sim.Policy
	System          = sim.System
	Job             = sim.Job
	Class           = sim.Class
	Preemption      = sim.Preemption
	Preemptor       = sim.Preemptor
	SizeAware       = sim.SizeAware
	TimerHandler    = sim.TimerHandler
	Measurer        = sim.Measurer
	Counter         = sim.Counter
	CounterReporter = sim.CounterReporter
	Configurable    = sim.Configurable
	Param           = sim.Param
	ParamType       = sim.ParamType
	Values          = sim.Values
	FIFO            = sim.FIFO
	ClassQueues     = sim.ClassQueues
	NeedQueues      = sim.NeedQueues
)

// Preemption modes and parameter types.
const (
	NoPreemption   = sim.NoPreemption
	PreemptResume  = sim.PreemptResume
	PreemptRestart = sim.PreemptRestart

	Int    = sim.Int
	Float  = sim.Float
	Bool   = sim.Bool
	String = sim.String
)

// Bound returns a pointer to v, for Param.Min and Param.Max.
func Bound(v float64) *float64 { return sim.Bound(v) }

// Spec names one policy a plugin offers and how to make a fresh instance.
// New must return an unconfigured instance whose Params (if Configurable) is
// the schema.
//
// Reference, instead of New, marks a reference model that is not an engine
// policy (SRPT-1 on the resource-pooled single server, S §3.1): it is run in
// place of sim.Run, on the same job sequence (sim.NewJobStream), and takes no
// parameters.
type Spec struct {
	Name      string
	Doc       string
	New       func() Policy
	Reference func(w *sim.Workload, cfg sim.Config) (*sim.Result, error)
}

// Params returns the policy's parameter schema (nil for none).
func (s Spec) Params() []Param {
	if s.New == nil {
		return nil
	}
	return sim.Describe(s.New()).Params
}

// Run simulates one replication, each pass (two under MSER) on a fresh
// instance configured with params; for a reference model it runs the model.
func (s Spec) Run(w *sim.Workload, params map[string]any, cfg sim.Config) (*sim.Result, error) {
	if s.Reference != nil {
		if len(params) > 0 {
			return nil, fmt.Errorf("policy %s: a reference model takes no parameters", s.Name)
		}
		return s.Reference(w, cfg)
	}
	return sim.RunFresh(w, func() (Policy, error) {
		p := s.New()
		if err := sim.Configure(p, params); err != nil {
			return nil, fmt.Errorf("policy %s: %w", s.Name, err)
		}
		return p, nil
	}, cfg)
}
