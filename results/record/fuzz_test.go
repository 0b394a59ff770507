package record

import (
	"testing"

	"github.com/msjfarm/msjfarm/sweep"
)

// FuzzDecode: decoding a stored result never panics, and a record it
// accepts is of the task it is stored for (its task's id, and the task's
// content hashes to it). Seed corpus: testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"task":{"id":"t"},"error":"x"}`), "t")
	f.Fuzz(func(t *testing.T, data []byte, task string) {
		r, err := Decode(data, task)
		if err != nil {
			return
		}
		if r.Task.ID != task || sweep.TaskID(r.Task) != task {
			t.Fatalf("accepted a record of %q (hash %q) for task %q", r.Task.ID, sweep.TaskID(r.Task), task)
		}
		_ = r.Failed()
	})
}
