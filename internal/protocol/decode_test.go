package protocol_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestDecodeTaskMsg: the campaign's own message decodes; one whose task
// was altered, or that sits on another task's subject, is an integrity
// error carrying the task it claims; a malformed one is a plain error.
func TestDecodeTaskMsg(t *testing.T) {
	f, err := sweep.Parse([]byte("name: x\nworkload: one-or-all\nreplications: 2\nrun: {arrivals: 100}\npolicies: [fcfs]\naxes: {load: [0.5]}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	tk := c.Tasks[0]
	msg := func(task sweep.Task) []byte {
		b, err := json.Marshal(protocol.TaskMsg{Campaign: c.ID, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	subj := protocol.TaskSubject(c.ID, tk.ID)
	if tm, err := protocol.DecodeTaskMsg(subj, msg(tk)); err != nil || tm.Task.ID != tk.ID {
		t.Fatalf("the campaign's message: %v", err)
	}
	forged := tk
	forged.Seed++
	for name, in := range map[string]struct {
		subject string
		data    []byte
	}{
		"altered content":  {subj, msg(forged)},
		"another subject":  {protocol.TaskSubject(c.ID, c.Tasks[1].ID), msg(tk)},
		"another campaign": {protocol.TaskSubject("other", tk.ID), msg(tk)},
	} {
		tm, err := protocol.DecodeTaskMsg(in.subject, in.data)
		var ie *protocol.TaskIntegrityError
		if !errors.As(err, &ie) || tm == nil || tm.Task.ID != tk.ID {
			t.Errorf("%s: err %v, message %v; want an integrity error with the claimed task", name, err, tm)
		}
	}
	for _, bad := range []string{"", "{", `{"campaign":"","task":{"id":""}}`, `{"campaign":"c"}`} {
		_, err := protocol.DecodeTaskMsg(subj, []byte(bad))
		var ie *protocol.TaskIntegrityError
		if err == nil || errors.As(err, &ie) {
			t.Errorf("%q: err %v, want a malformed-message error", bad, err)
		}
	}
}
