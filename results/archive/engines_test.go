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
