package protocol

import (
	"testing"

	"github.com/msjfarm/msjfarm/sweep"
)

// FuzzDecodeTaskMsg: decoding a task message never panics, and a message
// it accepts is what its subject and id say (the subject names its
// campaign and task, and the task hashes to its id). Seed corpus:
// testdata/fuzz/FuzzDecodeTaskMsg.
func FuzzDecodeTaskMsg(f *testing.F) {
	f.Add("msjfarm.tasks.c.t", []byte(`{"campaign":"c","task":{"id":"t"}}`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		tm, err := DecodeTaskMsg(subject, data)
		if err != nil {
			return
		}
		c, id, ok := ParseTaskSubject(subject)
		if !ok || c != tm.Campaign || id != tm.Task.ID || tm.Campaign == "" {
			t.Fatalf("accepted %q on subject %q", tm.Task.ID, subject)
		}
		if got := sweep.TaskID(tm.Task); got != tm.Task.ID {
			t.Fatalf("accepted task %s hashing to %s", tm.Task.ID, got)
		}
	})
}
