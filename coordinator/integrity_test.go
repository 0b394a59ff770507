package coordinator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestForgedTaskRefused publishes, before the submit, a message for one of
// the campaign's task ids whose task has another arrival rate (with the
// id the coordinator's first publish will use, so that JetStream would
// drop the real one as a duplicate). The worker must refuse it, the
// coordinator must report the refusal naming the message, publish the
// real task again, and every stored result must be of the campaign's own
// task, each run once.
func TestForgedTaskRefused(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	f := loadSpec(t, "testdata/small.yaml")
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	real := camp.Tasks[0]
	forged := real
	forged.ArrivalRate = 7 // the id is kept: it now lies about the content
	data, err := json.Marshal(protocol.TaskMsg{Campaign: camp.ID, Task: forged})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(e.nc)
	if _, err := js.Publish(context.Background(), protocol.TaskSubject(camp.ID, real.ID), data,
		jetstream.WithMsgID(protocol.MsgID(camp.ID, real.ID, 1))); err != nil {
		t.Fatal(err)
	}
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	var cr countRunner
	w, _ := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != len(camp.Tasks) || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	if len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0], real.ID) ||
		!strings.Contains(s.Rejected[0], "message 1 on "+protocol.TaskSubject(camp.ID, real.ID)) ||
		!strings.Contains(s.Rejected[0], "hashes to") {
		t.Fatalf("rejections %q, want one naming message 1 of task %s", s.Rejected, real.ID)
	}
	if n, mx := cr.total(); n != len(camp.Tasks) || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, len(camp.Tasks))
	}
	if w.Stats.Terminated.Load() != 1 {
		t.Fatalf("worker terminated %d messages, want 1 (the forged one)", w.Stats.Terminated.Load())
	}
	for _, tk := range camp.Tasks {
		rec, _, err := record.Read(context.Background(), e.store, camp.ID, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Task.ArrivalRate != tk.ArrivalRate || rec.Failed() {
			t.Fatalf("task %s: stored record has arrival rate %v (want %v), error %q", tk.ID, rec.Task.ArrivalRate, tk.ArrivalRate, rec.Error)
		}
	}
}

// TestForeignRecordIgnored stores, under one task's result key, a record
// of an altered task (as a worker of another version, or anyone with
// write access to storage, could) and a file that is not a record. The
// coordinator must not count either: it moves them aside and runs those
// tasks, and the summary is of the campaign's own tasks.
func TestForeignRecordIgnored(t *testing.T) {
	e := newEnv(t)
	f := loadSpec(t, "testdata/small.yaml")
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	altered := camp.Tasks[0]
	altered.ArrivalRate = 7
	foreign, _ := json.Marshal(record.Record{Task: altered, Error: "forged"})
	if err := e.store.Put(ctx, storage.ResultKey(camp.ID, camp.Tasks[0].ID), foreign); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Put(ctx, storage.ResultKey(camp.ID, camp.Tasks[1].ID), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != len(camp.Tasks) || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != len(camp.Tasks) || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, len(camp.Tasks))
	}
	for i, tk := range camp.Tasks {
		if _, _, err := record.Read(ctx, e.store, camp.ID, tk.ID); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	for i := range 2 {
		if got, err := e.store.Get(ctx, coordinator.RejectedKey(camp.ID, camp.Tasks[i].ID)); err != nil || len(got) == 0 {
			t.Fatalf("task %d: the rejected object was not kept aside: %v", i, err)
		}
	}
}

// TestForgedResultKey: a party that may publish task messages (NATS
// credentials, no storage ones) sends, for campaign B's tasks, one message
// whose result_key is one character (every worker that drew it panicked:
// a poison message for the farm) and one whose result_key names campaign
// A's stored result of another task (the worker referenced it as B's
// task's, and B's finalisation then moved A's result out of the store);
// and a reference of B's to A's result is planted in the store directly,
// as the old worker wrote it. The first message is refused and the real
// task published again; the second's key is ignored and its task runs;
// the planted reference is put aside, not A's result; A keeps every
// result and B's are all of B's own tasks.
func TestForgedResultKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	_, stopA := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	fa := loadSpec(t, "testdata/small.yaml")
	ra, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fa})
	if err != nil {
		t.Fatal(err)
	}
	campA, err := sweep.Expand(fa, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, ra.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Failed != 0 {
		t.Fatalf("campaign A: %+v", s)
	}
	refOf := func(c, tid string) string {
		data, err := e.store.Get(ctx, storage.ResultKey(c, tid))
		if err != nil {
			t.Fatal(err)
		}
		k, ok := record.ParseRef(data)
		if !ok {
			t.Fatalf("campaign %s task %s: no reference to a stored result: %s", c, tid, data)
		}
		return k
	}
	aKeys := map[string]string{}
	for _, tk := range campA.Tasks {
		aKeys[tk.ID] = refOf(campA.ID, tk.ID)
	}
	// No worker draws the forged messages before campaign B exists.
	stopA()

	fb := loadSpec(t, "testdata/small.yaml")
	fb.Seed++
	campB, err := sweep.Expand(fb, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(e.nc)
	forge := func(tk sweep.Task, key string) {
		data, err := json.Marshal(protocol.TaskMsg{Campaign: campB.ID, Task: tk, ResultKey: key})
		if err != nil {
			t.Fatal(err)
		}
		// The id of the coordinator's first publication: the real
		// message is dropped as its duplicate.
		if _, err := js.Publish(ctx, protocol.TaskSubject(campB.ID, tk.ID), data,
			jetstream.WithMsgID(protocol.MsgID(campB.ID, tk.ID, 1))); err != nil {
			t.Fatal(err)
		}
	}
	forge(campB.Tasks[0], "a")
	forge(campB.Tasks[1], aKeys[campA.Tasks[2].ID])
	planted := campB.Tasks[3]
	if err := e.store.Put(ctx, storage.ResultKey(campB.ID, planted.ID), record.RefJSON(aKeys[campA.Tasks[4].ID])); err != nil {
		t.Fatal(err)
	}
	rb, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fb})
	if err != nil {
		t.Fatal(err)
	}
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	s := waitDone(t, co, rb.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != len(campB.Tasks) || s.Failed != 0 {
		t.Fatalf("campaign B: %+v", s)
	}
	if len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0], campB.Tasks[0].ID) || !strings.Contains(s.Rejected[0], "not a content key") {
		t.Fatalf("rejections %q, want the one-character result_key's; status %+v", s.Rejected, s)
	}
	for _, tk := range campB.Tasks {
		if rec, _, err := record.Read(ctx, e.store, campB.ID, tk.ID); err != nil || rec.Failed() {
			t.Fatalf("campaign B task %s: %v", tk.ID, err)
		}
	}
	for _, tk := range campA.Tasks {
		if _, err := e.store.Stat(ctx, storage.StoredResultKey(aKeys[tk.ID])); err != nil {
			t.Fatalf("campaign A's result of task %s is gone: %v", tk.ID, err)
		}
		if rec, _, err := record.Read(ctx, e.store, campA.ID, tk.ID); err != nil || rec.Task.ID != tk.ID {
			t.Fatalf("campaign A task %s: %v", tk.ID, err)
		}
	}
	// The worker never wrote the reference the forged key asked for.
	if _, err := e.store.Stat(ctx, coordinator.RejectedKey(campB.ID, campB.Tasks[1].ID)); err == nil {
		t.Fatal("the worker referenced campaign A's result as task 1's (the coordinator put it aside)")
	}
	if got, err := e.store.Get(ctx, coordinator.RejectedKey(campB.ID, planted.ID)); err != nil || !strings.Contains(string(got), aKeys[campA.Tasks[4].ID]) {
		t.Fatalf("the planted reference was not put aside: %q, %v", got, err)
	}
}
