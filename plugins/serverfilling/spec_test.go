package serverfilling

import (
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestSpecs: names, declared capabilities and parameter schemas of the
// family, and a run through sdk.Spec.Run with parameters.
func TestSpecs(t *testing.T) {
	want := map[string]struct {
		sizeAware bool
		params    []string
	}{
		"serverfilling":          {false, []string{"packing"}},
		"serverfilling-srpt":     {true, []string{"crossings", "packing"}},
		"serverfilling-gittins":  {false, []string{"packing"}},
		"divisorfilling":         {false, []string{"backfill"}},
		"divisorfilling-srpt":    {true, []string{"crossings", "backfill"}},
		"divisorfilling-gittins": {false, []string{"backfill"}},
	}
	if len(Policies) != len(want) {
		t.Fatalf("%d policies, want %d", len(Policies), len(want))
	}
	w := namedWorkload(t, "powers-of-two", 1)
	for _, sp := range Policies {
		wt, ok := want[sp.Name]
		if !ok {
			t.Errorf("unexpected policy %q", sp.Name)
			continue
		}
		info := sim.Describe(sp.New())
		if info.Preemption != sim.PreemptResume || info.SizeAware != wt.sizeAware {
			t.Errorf("%s: preemption %v, size-aware %v", sp.Name, info.Preemption, info.SizeAware)
		}
		if err := sim.ValidateSchema(sp.Params()); err != nil {
			t.Errorf("%s: schema: %v", sp.Name, err)
		}
		var names []string
		params := map[string]any{}
		for _, p := range sp.Params() {
			names = append(names, p.Name)
			params[p.Name] = false
			if p.Type == sim.String {
				params[p.Name] = p.Enum[len(p.Enum)-1]
			}
		}
		if !slices.Equal(names, wt.params) {
			t.Errorf("%s: params %v, want %v", sp.Name, names, wt.params)
		}
		if _, err := sp.Run(w, params, sim.Config{Seed: 1, Arrivals: 2000}); err != nil {
			t.Errorf("%s: run with %v: %v", sp.Name, params, err)
		}
		if slices.Contains(names, "packing") {
			_, err := sp.Run(w, map[string]any{"packing": "first-fit"}, sim.Config{Seed: 1, Arrivals: 10})
			if err == nil || !strings.Contains(err.Error(), "packing") {
				t.Errorf("%s: packing=first-fit: error %v, want one naming the parameter", sp.Name, err)
			}
		}
		if _, err := sp.Run(w, map[string]any{"bogus": 1}, sim.Config{Seed: 1, Arrivals: 10}); err == nil {
			t.Errorf("%s: an unknown parameter was accepted", sp.Name)
		}
	}
}
