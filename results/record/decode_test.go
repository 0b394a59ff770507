package record

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestDecode: a record of its task decodes; one stored for another task,
// or whose task was altered after its id was computed, is an integrity
// error; bytes that are not a record are an error.
func TestDecode(t *testing.T) {
	tk := sweep.Task{Policy: "fcfs", Seed: 3, ArrivalRate: 2}
	tk.ID = sweep.TaskID(tk)
	enc := func(task sweep.Task) []byte {
		b, err := json.Marshal(Record{Task: task, Result: &sim.Result{}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if r, err := Decode(enc(tk), tk.ID); err != nil || r.Task.ID != tk.ID {
		t.Fatalf("own record: %v", err)
	}
	altered := tk
	altered.ArrivalRate = 7
	var ie *IntegrityError
	if _, err := Decode(enc(altered), tk.ID); !errors.As(err, &ie) {
		t.Errorf("altered task: %v, want an integrity error", err)
	}
	if _, err := Decode(enc(tk), "another"); !errors.As(err, &ie) {
		t.Errorf("stored under another id: %v, want an integrity error", err)
	}
	if _, err := Decode([]byte("{"), tk.ID); err == nil || errors.As(err, &ie) {
		t.Errorf("not JSON: %v, want a decoding error", err)
	}
}
