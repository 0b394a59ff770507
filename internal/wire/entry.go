package wire

import (
	"fmt"

	"github.com/msjfarm/msjfarm/sim"
)

// Entry is one thing a plugin serves, as the server and the in-process
// runner see it: an engine policy (New set) or a reference model that is not
// an engine policy (Reference set; SRPT-1 on the resource-pooled single
// server). sdk.Spec and sdk.Reference, the author-facing forms, become
// Entries in sdk.Serve; the built-in catalogue builds them the same way.
type Entry struct {
	Name string
	Doc  string
	// New returns a fresh, unconfigured policy instance whose Params (if
	// Configurable) is the schema.
	New func() sim.Policy
	// Reference runs the reference model in place of sim.Run, on the same
	// job sequence (sim.NewJobStream); it takes no parameters.
	Reference func(w *sim.Workload, cfg sim.Config) (*sim.Result, error)
}

// check reports an entry that is neither a policy nor a reference model, or
// both, or has no name.
func (e Entry) check() error {
	if e.Name == "" {
		return fmt.Errorf("a policy has no name")
	}
	if (e.New == nil) == (e.Reference == nil) {
		return fmt.Errorf("policy %s: exactly one of New and Reference must be set", e.Name)
	}
	return nil
}

// Params returns the policy's parameter schema (nil for none, and for a
// reference model).
func (e Entry) Params() []sim.Param {
	if e.New == nil {
		return nil
	}
	return sim.Describe(e.New()).Params
}

// CounterInfo returns the policy's description of its counters (nil for
// none, and for a reference model).
func (e Entry) CounterInfo() sim.CounterInfos {
	if e.New == nil {
		return nil
	}
	return sim.Describe(e.New()).CounterInfo
}

// CheckParams resolves params against the schema (sim.Resolve): unknown
// names, wrong types and out-of-range values are errors naming the
// parameter. A reference model takes none.
func (e Entry) CheckParams(params map[string]any) error {
	if e.Reference != nil {
		if len(params) > 0 {
			return fmt.Errorf("policy %s: a reference model takes no parameters", e.Name)
		}
		return nil
	}
	if _, err := sim.Resolve(e.Params(), params); err != nil {
		return fmt.Errorf("policy %s: %w", e.Name, err)
	}
	return nil
}

// Run configures a fresh instance with params and simulates one
// replication; for a reference model it runs the model.
func (e Entry) Run(w *sim.Workload, params map[string]any, cfg sim.Config) (*sim.Result, error) {
	if e.Reference != nil {
		if err := e.CheckParams(params); err != nil {
			return nil, err
		}
		return e.Reference(w, cfg)
	}
	// Each pass (two under MSER) gets a fresh instance, so a policy's Init
	// never has to undo an earlier pass.
	return sim.RunFresh(w, func() (sim.Policy, error) {
		p := e.New()
		if err := sim.Configure(p, params); err != nil {
			return nil, fmt.Errorf("policy %s: %w", e.Name, err)
		}
		return p, nil
	}, cfg)
}
