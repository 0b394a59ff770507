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
