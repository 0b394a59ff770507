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

// Version is the plugin version of the built-in families, as their
// per-family binaries (plugins/<family>/cmd) and msjfarm's own self-served
// plugins (ServeFamily) report it.
const Version = "0.1.0"

// Family is one built-in policy family: what its plugin binary
// msjfarm-policy-<Name> serves.
type Family struct {
	Name       string
	Policies   []sdk.Spec
	References []sdk.Reference
}

// families lists every built-in policy family, in the order their binaries
// are documented.
var families = []Family{
	{Name: "fcfs", Policies: fcfs.Policies},
	{Name: "backfill", Policies: backfill.Policies},
	{Name: "balanced", Policies: balanced.Policies},
	{Name: "nmsr", Policies: nmsr.Policies},
	{Name: "killsmart", Policies: killsmart.Policies},
	{Name: "firstfit", Policies: firstfit.Policies},
	{Name: "msf", Policies: msf.Policies},
	{Name: "quickswap", Policies: quickswap.Policies},
	{Name: "serverfilling", Policies: serverfilling.Policies},
	{Name: "maxweight", Policies: maxweight.Policies},
	{Name: "srpt", Policies: srpt.Policies, References: srpt.References},
}

// Families returns the built-in families.
func Families() []Family { return append([]Family(nil), families...) }

// FamilyOf returns the family serving a built-in policy or reference model
// (case-insensitive).
func FamilyOf(policy string) (string, bool) {
	for _, f := range families {
		for _, s := range f.Policies {
			if strings.EqualFold(s.Name, policy) {
				return f.Name, true
			}
		}
		for _, r := range f.References {
			if strings.EqualFold(r.Name, policy) {
				return f.Name, true
			}
		}
	}
	return "", false
}

// ServeFamily serves a built-in family as a plugin (sdk.Serve, exactly as
// its binary msjfarm-policy-<name> does) and does not return; it returns
// an error only for an unknown family. msjfarm re-executes itself with a
// hidden subcommand that calls it, so that the built-in policies cross the
// plugin boundary without any separately built binary (as under go run).
func ServeFamily(name string) error {
	for _, f := range families {
		if f.Name == name {
			sdk.Serve(f.Name, Version, f.Policies, f.References...)
			return nil
		}
	}
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.Name
	}
	return fmt.Errorf("unknown built-in family %q (known: %s)", name, strings.Join(names, ", "))
}

// Names returns the names of the built-in policies and reference models,
// sorted.
func Names() []string {
	all := All()
	out := make([]string, len(all))
	for i, e := range all {
		out[i] = e.Name
	}
	return out
}

// All returns every built-in policy and reference model, sorted by name, as
// the plugin binaries serve them (so an in-process run and a plugin run of
// the same name run the same code the same way).
func All() []wire.Entry {
	var out []wire.Entry
	for _, f := range families {
		for _, s := range f.Policies {
			out = append(out, wire.Entry{Name: s.Name, Doc: s.Doc, New: func() sim.Policy { return s.New() }})
		}
		for _, r := range f.References {
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
