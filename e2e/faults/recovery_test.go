//go:build faults

package faults_test

import (
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
)

// TestRecovery pins the definition of the table's recovery column.
func TestRecovery(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(start, wall float64) *record.Record {
		return &record.Record{Result: &sim.Result{}, Provenance: record.Provenance{
			Started: t0.Add(time.Duration(start * float64(time.Second))), WallSeconds: wall}}
	}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	w := window{start: at(10), end: at(20), inFlight: map[string]bool{"a": true}}
	for _, c := range []struct {
		name   string
		recs   map[string]*record.Record
		doneAt time.Time
		want   string
	}{
		{"in-flight task finishes last", map[string]*record.Record{"a": rec(25, 3), "b": rec(20.5, 1)}, at(40), "8.0 s"},
		{"first completion after the end is later", map[string]*record.Record{"a": rec(9, 2), "b": rec(24, 1)}, at(40), "5.0 s"},
		{"everything finished during the fault", map[string]*record.Record{"a": rec(9, 2), "b": rec(12, 1)}, at(33), "13.0 s"},
		{"in-flight task lost", map[string]*record.Record{"b": rec(24, 1)}, at(40), "never (1 in-flight task(s) without a result)"},
		{"in-flight task failed", map[string]*record.Record{"a": {Error: "x"}, "b": rec(24, 1)}, at(40), "never (1 in-flight task(s) without a result)"},
		{"campaign done during the fault", map[string]*record.Record{"a": rec(9, 2), "b": rec(12, 1)}, at(15), "0 s (campaign done during the fault)"},
		{"never done", map[string]*record.Record{"a": rec(9, 2)}, time.Time{}, "never (campaign not done)"},
	} {
		if got := recovery(c.recs, c.doneAt, w); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
