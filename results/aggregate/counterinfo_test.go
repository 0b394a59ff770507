package aggregate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestCounterDescriptions: a counter metric carries the label, unit, kind
// and doc of its records' descriptions into summary.json and summary_long;
// without descriptions (records written before them), or with descriptions
// that fail the worker's check (a record altered in storage), it carries
// none and outputs fall back to the column name.
func TestCounterDescriptions(t *testing.T) {
	good := sim.CounterInfos{{Name: "phase1_time", Label: "mean duration of phase 1", Unit: "time", Kind: sim.KindTime,
		Doc: "phase 1: serving k-server jobs until none remain"}}
	for _, c := range []struct {
		name        string
		info        sim.CounterInfos
		label, unit string
	}{
		{"described", good, "mean duration of phase 1", "time"},
		{"old record", nil, "", ""},
		{"altered", sim.CounterInfos{{Name: "phase1_time", Label: "=cmd|' /C calc'!A0"}}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tasks, rec := fixture()
			rec["C-r0"].CounterInfo = c.info
			pts := Summarize(tasks, rec)
			m, ok := pts[2].Metric("counter_phase1_time")
			if !ok {
				t.Fatal("no counter_phase1_time")
			}
			if m.Label != c.label || m.Unit != c.unit {
				t.Fatalf("label %q unit %q, want %q %q", m.Label, m.Unit, c.label, c.unit)
			}
			if c.label == "" {
				return
			}
			if m.Kind != sim.KindTime || m.Doc != good[0].Doc || m.DisplayName() != "mean duration of phase 1 (time)" {
				t.Errorf("metric %+v, display %q", m, m.DisplayName())
			}
			// summary.json round-trips them.
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var back Metric
			if err := json.Unmarshal(b, &back); err != nil || back.Label != m.Label || back.Unit != m.Unit || back.Kind != m.Kind || back.Doc != m.Doc {
				t.Errorf("JSON %s read back as %+v (%v)", b, back, err)
			}
			// summary_long: the row of the counter has them.
			var buf bytes.Buffer
			if err := LongTable(pts).WriteCSV(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), ",mean duration of phase 1,time,phase 1: serving k-server jobs until none remain,") {
				t.Errorf("summary_long has no described counter row:\n%s", buf.String())
			}
		})
	}
}
