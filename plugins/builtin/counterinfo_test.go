package builtin_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestCounterInfo: every built-in policy that reports counters describes
// each of them (a label, so that no figure shows a raw name), and its
// descriptions pass the check the worker applies to a plugin's
// (wire.CheckCounterInfo). Each policy runs a short replication on the
// workloads it applies to, one-or-all (MSFQ's phases) and borg-b (many
// classes: Kill-Smart's per-class counters), to see the counters it
// actually reports.
func TestCounterInfo(t *testing.T) {
	const axisMax = 36 // what the report's column-width figure shows in full
	for _, e := range builtin.All() {
		if err := wire.CheckCounterInfo(e.CounterInfo()); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
	labels := map[string]string{} // "policy counter" → label
	for _, name := range []string{"one-or-all", "borg-b"} {
		w := simtest.Named(t, name, rateAt(t, name, 0.5))
		for _, e := range builtin.All() {
			if e.New == nil {
				continue
			}
			info := e.CounterInfo()
			if err := (builtin.Catalog{}).CheckWorkload(e.Name, nil, w); err != nil {
				continue // does not apply to this workload
			}
			res, err := e.Run(w, nil, sim.Config{Seed: 1, Warmup: 200, Arrivals: 2000})
			if err != nil {
				t.Fatalf("%s on %s: %v", e.Name, name, err)
			}
			for _, c := range res.Counters {
				d, ok := info.Lookup(c.Name)
				if !ok || d.Label == c.Name {
					t.Errorf("%s on %s: counter %s is not described", e.Name, name, c.Name)
				}
				labels[e.Name+" "+c.Name] = d.AxisLabel()
				if n := utf8.RuneCountInString(d.AxisLabel()); !strings.Contains(c.Name, "/") && n > axisMax {
					t.Errorf("%s: counter %s: axis label %q has %d characters, more than fit a column figure's axis (%d)",
						e.Name, c.Name, d.AxisLabel(), n, axisMax)
				}
			}
		}
	}
	// The examples: MSFQ's phases named, a per-class counter
	// labelled with its class.
	for key, want := range map[string]string{
		"msfq phase1_mean":                        "mean duration of phase 1 (time)",
		"msfq phase4_fraction":                    "fraction of time in phase 4",
		"nmsr stability_margin":                   "stability margin",
		"killsmart-multiclass preempted_fraction": "jobs preempted",
	} {
		if got, ok := labels[key]; !ok || got != want {
			t.Errorf("%s: label %q (reported: %v), want %q", key, got, ok, want)
		}
	}
	perClass := 0
	for key, l := range labels {
		if _, class, ok := strings.Cut(key, "preempted_fraction/"); ok {
			perClass++
			if want := "jobs preempted, class " + class; l != want {
				t.Errorf("%s: label %q, want %q", key, l, want)
			}
		}
	}
	if perClass == 0 {
		t.Error("no per-class counter was reported (Kill-Smart multi-class on borg-b)")
	}
}
