package archive

import (
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestMixedEngines: a policy whose results come from two engine versions
// (workers of two msjfarm versions on one campaign) is named with both;
// one version per policy, failed records and records without a version
// give no warning. A probe's campaign finished 24/24 with rows of engines
// 0.7.4 and 0.7.5 in its manifest, its means pooling both, and nothing
// said so.
func TestMixedEngines(t *testing.T) {
	rec := func(pol, engine string, failed bool) *record.Record {
		r := &record.Record{Task: sweep.Task{Policy: pol}, Result: &sim.Result{Engine: engine}}
		if failed {
			r.Error = "boom"
		}
		return r
	}
	e := engines{}
	e.add(map[string]*record.Record{"a": rec("msf", "0.7.4", false), "b": rec("msf", "0.7.5", false),
		"c": rec("fcfs", "0.7.4", false), "d": nil})
	e.add(map[string]*record.Record{"e": rec("fcfs", "0.9.9", true), "f": rec("fcfs", "", false), "g": rec("msf", "0.7.4", false)})
	w := e.warnings()
	if len(w) != 1 || !strings.HasPrefix(w[0], "policy msf: results of engine versions 0.7.4, 0.7.5 are pooled") {
		t.Errorf("warnings %q, want one for msf naming 0.7.4 and 0.7.5", w)
	}
}

// TestMixedEnginesManifest: the manifest's provenance rows say the same
// for readers of the stored summary: a policy listed under two engines
// (a rolling upgrade of the workers) is warned of, with what to do.
func TestMixedEnginesManifest(t *testing.T) {
	m := &Manifest{Policies: []PolicyProvenance{
		{Policy: "fcfs", Engine: "0.7.4", Results: 56}, {Policy: "fcfs", Engine: "0.7.5", Results: 49},
		{Policy: "msf", Engine: "0.7.5", Results: 105}, {Policy: "msf", Results: 1}}}
	w := MixedEngines(m)
	if len(w) != 1 || !strings.HasPrefix(w[0], "policy fcfs: results of engine versions 0.7.4, 0.7.5 are pooled") ||
		!strings.Contains(w[0], "into a store that does not hold these results") {
		t.Errorf("warnings %q", w)
	}
	if MixedEngines(nil) != nil {
		t.Error("a campaign without a manifest")
	}
}
