package record

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestDecodeV1: records written before Provenance was typed (a
// map[string]string) decode into it field by field. The in-process record
// was written by the worker of that version; the failure records have the
// exact shape the coordinator and the worker wrote for failures.
func TestDecodeV1(t *testing.T) {
	started, _ := time.Parse(time.RFC3339Nano, "2026-11-23T20:38:05.045964039Z")
	for _, tc := range []struct {
		file   string
		failed bool
		want   Provenance
	}{
		{"v1-inprocess.json", false, Provenance{Runner: "in-process", Plugin: "builtin", PluginVersion: "0.1.0",
			PluginSHA256: "e5222607954c9b69b8866c5c97fc13a2d7dc7ee5065cb3b57a874aa92bc414e9", Engine: "0.1.0",
			MsjfarmVersion: "0.1.0", Host: "vm", Worker: "vm-24652", Attempt: 1, Started: started,
			WallSeconds: 0.045033, CPUSeconds: 0.017265}},
		{"v1-failed-coordinator.json", true, Provenance{RecordedBy: "coordinator", Host: "coordhost", Deliveries: 5}},
		{"v1-failed-worker.json", true, Provenance{Host: "vm", Worker: "vm-1", Attempt: 3}},
	} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var r Record
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r.Provenance != tc.want {
			t.Errorf("%s: provenance\n%+v, want\n%+v", tc.file, r.Provenance, tc.want)
		}
		if r.Failed() != tc.failed || r.Task.ID != "01279a2832039be50aebd5c0" {
			t.Errorf("%s: failed %v, task %q", tc.file, r.Failed(), r.Task.ID)
		}
		if !tc.failed && (r.Result == nil || r.Result.Overall.Count == 0) {
			t.Errorf("%s: result not decoded: %+v", tc.file, r.Result)
		}
		// Readers of the earlier version decode provenance as a string map:
		// what this version writes must still be one, with the same values.
		out, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		var old, now struct {
			Provenance map[string]string `json:"provenance"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &now); err != nil {
			t.Fatalf("%s: re-encoded provenance is not a string map: %v\n%s", tc.file, err, out)
		}
		if len(old.Provenance) != len(now.Provenance) {
			t.Errorf("%s: provenance keys %v, want %v", tc.file, now.Provenance, old.Provenance)
		}
		for k, v := range old.Provenance {
			if now.Provenance[k] != v {
				t.Errorf("%s: provenance %s = %q, want %q", tc.file, k, now.Provenance[k], v)
			}
		}
		// And a second round trip is stable.
		var r2 Record
		if err := json.Unmarshal(out, &r2); err != nil {
			t.Fatal(err)
		}
		out2, _ := json.Marshal(&r2)
		if !bytes.Equal(out, out2) {
			t.Errorf("%s: round trip not stable:\n%s\n%s", tc.file, out, out2)
		}
	}
}

// TestEmptyProvenanceOmitted: a record without provenance has no
// provenance key, as with the map before.
func TestEmptyProvenanceOmitted(t *testing.T) {
	out, err := json.Marshal(&Record{Error: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("provenance")) {
		t.Errorf("empty provenance encoded: %s", out)
	}
}

func TestSeconds(t *testing.T) {
	if got := Seconds(1234567891 * time.Nanosecond); got != 1.234568 {
		t.Errorf("Seconds = %v, want 1.234568", got)
	}
}
