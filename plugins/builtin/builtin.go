// Package builtin is the catalogue of the policies that ship with msjfarm,
// for in-process use (the engine's tests, `msjfarm simulate`, benchmarks).
// The same specs are served by the per-family plugin binaries.
package builtin

import (
	"fmt"
	"sort"
	"strings"

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

// All returns every built-in policy spec, sorted by name.
func All() []sdk.Spec {
	var out []sdk.Spec
	for _, f := range families {
		out = append(out, f...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a built-in policy by name (case-insensitive).
func Lookup(name string) (sdk.Spec, error) {
	var names []string
	for _, s := range All() {
		if strings.EqualFold(s.Name, name) {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return sdk.Spec{}, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(names, ", "))
}

// Catalog is the built-in policies as a sweep.Catalog.
type Catalog struct{}

// Schema returns the parameter schema of a built-in policy.
func (Catalog) Schema(policy string) ([]sim.Param, error) {
	s, err := Lookup(policy)
	if err != nil {
		return nil, err
	}
	return s.Params(), nil
}
