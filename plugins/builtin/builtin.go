// Package builtin is the catalogue of the policies that ship with msjfarm,
// for in-process use (the engine's tests, `msjfarm simulate`, benchmarks).
// The same specs are served by the per-family plugin binaries; here they are
// the wire's entries, the form the plugin server runs them in.
package builtin

import (
	"fmt"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/backfill"
	"github.com/msjfarm/msjfarm/plugins/balanced"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/plugins/killsmart"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/nmsr"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/plugins/serverfilling"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
)

// families lists every built-in policy family's specs.
var families = [][]sdk.Spec{
	fcfs.Policies,
	backfill.Policies,
	balanced.Policies,
	nmsr.Policies,
	killsmart.Policies,
	firstfit.Policies,
	msf.Policies,
	quickswap.Policies,
	serverfilling.Policies,
	maxweight.Policies,
	srpt.Policies,
}

// references lists the built-in reference models.
var references = [][]sdk.Reference{
	srpt.References,
}

// All returns every built-in policy and reference model, sorted by name, as
// the plugin binaries serve them (so an in-process run and a plugin run of
// the same name run the same code the same way).
func All() []wire.Entry {
	var out []wire.Entry
	for _, f := range families {
		for _, s := range f {
			out = append(out, wire.Entry{Name: s.Name, Doc: s.Doc, New: func() sim.Policy { return s.New() }})
		}
	}
	for _, f := range references {
		for _, r := range f {
			out = append(out, wire.Entry{Name: r.Name, Doc: r.Doc, Reference: r.Run})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a built-in policy or reference model by name
// (case-insensitive).
func Lookup(name string) (wire.Entry, error) {
	var names []string
	for _, s := range All() {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return wire.Entry{}, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(names, ", "))
}

// Catalog is the built-in policies as a sweep.Catalog.
type Catalog struct{}

// Schema returns the parameter schema of a built-in policy (none for a
// reference model).
func (Catalog) Schema(policy string) ([]sim.Param, error) {
	s, err := Lookup(policy)
	if err != nil {
		return nil, err
	}
	return s.Params(), nil
}

// maxCheckServers bounds the systems CheckWorkload tries: a policy may
// allocate per server in Init, and the check runs in the process that
// expands the sweep (the coordinator), which must not be the one to run
// out of memory for an absurd k; the worker reports such a task instead.
const maxCheckServers = 1 << 20

// CheckWorkload (sweep.WorkloadChecker) configures the policy with params
// and runs it for one arrival on w, so that a parameter outside the range
// this workload allows (MSFQ's threshold beyond k−1) is refused when the
// sweep is expanded, not by every task at run time. A reference model
// takes no parameters and is not run.
func (Catalog) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	e, err := Lookup(policy)
	if err != nil {
		return err
	}
	if e.New == nil || w.Servers > maxCheckServers {
		return nil
	}
	_, err = sim.RunFresh(w, func() (sim.Policy, error) {
		p := e.New()
		if err := sim.Configure(p, params); err != nil {
			return nil, err
		}
		return p, nil
	}, sim.Config{Seed: 1, Arrivals: 1, DrainLimit: 1})
	return err
}
