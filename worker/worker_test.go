package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

func tasks(t *testing.T, arrivals int64, deadline time.Duration) []sweep.Task {
	t.Helper()
	f := &sweep.File{Name: "w", Seed: 1, Workload: "one-or-all", Axes: map[string][]any{"arrival_rate": {2}},
		Policies: []any{"fcfs"}, Replications: 2, Run: sweep.RunSpec{RunConfig: wire.RunConfig{Arrivals: arrivals, Warmup: 10}, Deadline: deadline}}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Tasks
}

// queued starts an embedded NATS server with the farm's layout l, opens a
// local store, and queues ts as tasks of campaign "camp".
func queued(t *testing.T, l protocol.Layout, ts []sweep.Task) (*nats.Conn, *protocol.Handles, storage.Store) {
	t.Helper()
	_, nc := natstest.ConnectEmbedded(t)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	h, err := protocol.Setup(ctx, js, l)
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		data, _ := json.Marshal(protocol.TaskMsg{Campaign: "camp", Task: tk})
		if _, err := js.Publish(ctx, protocol.TaskSubject("camp", tk.ID), data); err != nil {
			t.Fatal(err)
		}
	}
	return nc, h, st
}

func TestInProcess(t *testing.T) {
	ts := tasks(t, 2000, 0)
	out, err := worker.InProcess{}.Run(context.Background(), &ts[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	p := out.Provenance
	if out.Result.Arrivals != 2000 || p.Runner != "in-process" || p.PluginSHA256 == "" || p.CPU <= 0 {
		t.Fatalf("outcome %+v", p)
	}
	// Same task, same result (the seed is in the task).
	again, _ := worker.InProcess{}.Run(context.Background(), &ts[0], nil)
	if again.Result.Overall.MeanResponse != out.Result.Overall.MeanResponse {
		t.Fatal("not deterministic")
	}
	// A context ending stops a long replication early.
	long := tasks(t, 1e7, 0) // progress (and so cancellation) every 1e5 arrivals
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = worker.InProcess{}.Run(ctx, &long[0], nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	// A policy this runner does not have is not this worker's to run:
	// passed on to another worker (a plugin's, on a farm), not failed.
	bad := ts[0]
	bad.Policy = "nope"
	var ns *worker.NotServedError
	if _, err := (worker.InProcess{}).Run(context.Background(), &bad, nil); !errors.As(err, &ns) || errors.As(err, new(*worker.PermanentError)) {
		t.Fatalf("err %v", err)
	}
}

// TestDeadlineRecordsFailure: a task over its run.deadline fails each
// attempt; the last attempt writes a failed record and terminates it.
func TestDeadlineRecordsFailure(t *testing.T) {
	ts := tasks(t, 1e7, 100*time.Millisecond)
	nc, h, st := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 5 * time.Second}, ts[:1])
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 1, FetchWait: 100 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	data := runUntilStored(t, wctx, cancel, w, st, ts[0].ID, 20*time.Second)
	var r record.Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if !r.Failed() || !strings.Contains(r.Error, "run.deadline 100ms exceeded") || !strings.Contains(r.Error, "attempt 2 of 2") {
		t.Fatalf("record error %q", r.Error)
	}
	if w.Stats.Retried.Load() != 1 || w.Stats.Failed.Load() != 1 {
		t.Fatalf("retried %d failed %d", w.Stats.Retried.Load(), w.Stats.Failed.Load())
	}
	e, err := h.TaskStates.Get(ctx, protocol.TaskKey("camp", ts[0].ID))
	if err != nil || !strings.Contains(string(e.Value()), `"failed"`) {
		t.Fatalf("task state %v", err)
	}
	if si, _ := h.Tasks.Info(ctx); si.State.Msgs != 0 {
		t.Fatalf("%d messages left", si.State.Msgs)
	}
}

// holdFirst runs the real in-process replication, then holds the first
// task's outcome until a second task has started (or 10 s have passed).
type holdFirst struct {
	n       atomic.Int32
	second  chan struct{}
	started chan string
}

func (h *holdFirst) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	k := h.n.Add(1)
	h.started <- t.ID
	if k == 2 {
		close(h.second)
	}
	out, err := worker.InProcess{}.Run(ctx, t, progress)
	if k == 1 {
		select {
		case <-time.After(10 * time.Second):
		case <-h.second:
		}
	}
	return out, err
}

// TestSlotHandedOnAt99: with one slot, the next task starts once the
// running replication reports 99% of its arrivals, before it returns; the
// first task's result is still written and acked.
func TestSlotHandedOnAt99(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, _, st := queued(t, protocol.Layout{}, ts)
	ctx := context.Background()
	h := &holdFirst{started: make(chan string, 4), second: make(chan struct{})}
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 1, FetchWait: 100 * time.Millisecond,
		Logf: t.Logf, Runner: h})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t0 := time.Now()
	first, second := <-h.started, <-h.started
	if time.Since(t0) > 5*time.Second { // without the hand-on: 10 s
		t.Fatalf("second task started %v after the first: the slot was not handed on before the first returned", time.Since(t0))
	}
	for time.Now().Before(t0.Add(20 * time.Second)) {
		if w.Stats.Done.Load() == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first, second} {
		if _, err := st.Stat(ctx, storage.ResultKey("camp", id)); err != nil {
			t.Errorf("result of %s: %v", id, err)
		}
	}
	if n := w.Stats.Done.Load(); n != 2 {
		t.Fatalf("%d tasks done, want 2", n)
	}
}

// runUntilStored runs w until the result of task tid is stored (or
// within, a ceiling), stops it, and returns the stored bytes (nil if none
// came).
func runUntilStored(t *testing.T, wctx context.Context, cancel context.CancelFunc, w *worker.Worker, st storage.Store, tid string, within time.Duration) []byte {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	deadline := time.Now().Add(within)
	var data []byte
	for time.Now().Before(deadline) {
		var err error
		if data, err = st.Get(context.Background(), storage.ResultKey("camp", tid)); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return data
}

// storeReading reads a storage object with the run's context before the
// replication, as the plugin runner reads the campaign's plugin pins.
type storeReading struct{ st storage.Store }

func (r storeReading) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	if _, err := r.st.Get(ctx, storage.ManifestKey("camp")); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("reading plugin pins: %w", err)
	}
	return worker.InProcess{}.Run(ctx, t, p)
}

// TestTinyDeadlineIsNotAnOutage: a run.deadline that expires during the
// storage read before the replication (1 ns) is the task's deadline. It
// was taken for the store being down: the worker paused, waited for the
// store, ran the task again, and so on for ever.
func TestTinyDeadlineIsNotAnOutage(t *testing.T) {
	ts := tasks(t, 1e5, time.Nanosecond)
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 5 * time.Second}, ts[:1])
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Runner: storeReading{st}, Concurrency: 1,
		FetchWait: 100 * time.Millisecond, RetryDelay: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	data := runUntilStored(t, wctx, cancel, w, st, ts[0].ID, time.Minute)
	var r record.Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("no failure recorded within a minute (%d storage waits): %v: %s", w.Stats.StorageWaits.Load(), err, data)
	}
	if !r.Failed() || !strings.Contains(r.Error, "run.deadline 1ns exceeded") {
		t.Fatalf("record error %q", r.Error)
	}
}

// TestFetchFailureBackOff: a worker whose server lost its task stream (a
// NATS restart with its JetStream store wiped) is answered at once,
// "no responders", and logged it 7,400 times a second (48 MB in minutes).
// It now waits a second between fetches and logs the same error once a
// minute: over 3 s, a handful of fetches and one line.
func TestFetchFailureBackOff(t *testing.T) {
	nc, _, st := queued(t, protocol.Layout{}, nil)
	var mu sync.Mutex
	var lines []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Name: "w", Concurrency: 1, FetchWait: 200 * time.Millisecond,
		Logf: func(format string, a ...any) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf(format, a...))
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if err := js.DeleteStream(ctx, protocol.TaskStream); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	time.Sleep(3 * time.Second)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	var fetch []string
	for _, l := range lines {
		if strings.Contains(l, "fetch:") {
			fetch = append(fetch, l)
		}
	}
	if pulls := w.Stats.Pulls.Load(); pulls < 2 || pulls > 6 || len(fetch) != 1 || !strings.Contains(fetch[0], "(trying again every second)") {
		t.Fatalf("%d fetches in 3 s, %d lines logged of them, want 2–6 and 1:\n%s", pulls, len(fetch), strings.Join(fetch[:min(len(fetch), 5)], "\n"))
	}
}

// TestNotServedFailsAfterMaxHeld: a task no worker of the farm can run
// (here a policy no runner has) is passed on until it has been held
// NotServedMaxHeld in all, then failed by the worker holding it, saying
// why: not passed around for ever. With the bound at 0 the first worker
// fails it.
func TestNotServedFailsAfterMaxHeld(t *testing.T) {
	old := worker.NotServedMaxHeld
	worker.NotServedMaxHeld = 0
	t.Cleanup(func() { worker.NotServedMaxHeld = old })
	ts := tasks(t, 2000, 0)
	ts[0].Policy = "nope"
	ts[0].ID = sweep.TaskID(ts[0])
	nc, _, st := queued(t, protocol.Layout{}, ts[:1])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Name: "w", Concurrency: 1, FetchWait: 200 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	for deadline := time.Now().Add(time.Minute); w.Stats.Failed.Load() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the task was not failed")
		}
	}
	cancel()
	<-done
	rec, _, err := record.Read(context.Background(), st, "camp", ts[0].ID)
	if err != nil || !strings.Contains(rec.Error, "no worker that can run it took it within 0s: this worker cannot run the task (another may): unknown policy") {
		t.Fatalf("record %+v, %v", rec, err)
	}
}
