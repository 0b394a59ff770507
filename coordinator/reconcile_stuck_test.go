package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// TestReconcileFailureShown: a NATS server whose JetStream store is too
// small for a campaign's task messages (max_file_store here; a full disk
// or an account's limit on a real farm) refuses most of them. The
// campaign stayed "running", 0 queued, and only the coordinator's log
// said why. Now its status says (Reconciling), counting the failures in
// a row; a worker that drains the stream makes room, each reconcile
// publishes more, and the campaign finishes with every task run once and
// the status clear.
func TestReconcileFailureShown(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true, JetStreamMaxStore: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { protocol.StopEmbedded(srv) })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	st, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, url: srv.ClientURL(), nc: nc, store: st}
	co, _ := e.startCoordinatorWith(coordinator.Options{})
	var rates []string
	for i := range 600 {
		rates = append(rates, strconv.FormatFloat(0.1+0.5*float64(i)/600, 'g', -1, 64))
	}
	f, err := sweep.Parse([]byte("name: full\nworkload: one-or-all\naxes:\n  arrival_rate: ["+strings.Join(rates, ", ")+"]\npolicies: [fcfs]\nreplications: 4\nrun: {arrivals: 200}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err == nil || !strings.Contains(err.Error(), "is created, but publishing its tasks failed") || !strings.Contains(err.Error(), "insufficient resources") {
		t.Fatalf("submit: %v", err)
	}
	list := co.List()
	if len(list) != 1 {
		t.Fatalf("campaigns %+v", list)
	}
	id := list[0].Campaign
	var s *protocol.Status
	for deadline := time.Now().Add(2 * time.Minute); ; {
		s, err = co.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.Reconciling, "times in a row") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("status: %+v", s)
	if !strings.Contains(s.Reconciling, "failed") {
		t.Fatalf("status says nothing of the refused messages: %+v", s)
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1", Runner: &cr})
	s = waitDone(t, co, id, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 2400 || s.Reconciling != "" {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 2400 || mx != 1 {
		t.Fatalf("runs: %d total, max %d per task; want 2400 and 1", n, mx)
	}
}

// TestTaskBucketLost: a NATS server that lost its JetStream state (a
// restart with the store wiped) closes the coordinator's watch of the
// task states; the coordinator stops saying so and what to do. It said
// "task-state watcher closed".
func TestTaskBucketLost(t *testing.T) {
	e := newEnv(t)
	co, err := coordinator.New(context.Background(), coordinator.Options{Conn: e.nc, Store: e.store, Reconcile: 500 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	<-co.Ready()
	js, _ := jetstream.New(e.nc)
	if err := js.DeleteKeyValue(ctx, protocol.TaskBucket); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "did it restart without its JetStream store?") {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the coordinator went on without its task-state bucket")
	}
}

// TestWorkerWithoutThePolicy: a farm with one worker that cannot run a
// campaign's policy (its plugin runner finds no binary for it and has no
// fallback: an in-process worker beside plugin workers is the same case)
// and one that can. The first passes its deliveries on as new messages
// (spending none of the task's five deliveries) instead of failing
// them: every task is done by the second, none failed. Before, each task
// the first drew failed for good ("attempt 1 of 5 on w6: unknown
// policy"); given back (Nak) instead, the idle first worker drew every
// redelivery first, and one task of 30 failed on a real farm.
func TestWorkerWithoutThePolicy(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	lacks, _ := e.startWorker(worker.Options{Concurrency: 2, Name: "lacks",
		Runner: &worker.PluginRunner{Host: pluginhost.New(pluginhost.Config{}), Dirs: []string{t.TempDir()}}})
	e.startWorker(worker.Options{Concurrency: 1, Name: "has", Runner: &cr})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs on the worker with the policy: %d, max %d a task; want 6 and 1", n, mx)
	}
	if lacks.Stats.Retried.Load() == 0 || lacks.Stats.Failed.Load() != 0 {
		t.Fatalf("the worker without the policy passed on %d tasks and failed %d; want some and none", lacks.Stats.Retried.Load(), lacks.Stats.Failed.Load())
	}
}

// TestFailedSubmitLeavesNothing: a submission the store refuses (a file
// where its specs/ directory goes: ENOTDIR, which holds even for root,
// as a full disk or a rotated key does) fails, and the coordinator does
// not list a campaign for it. It listed "(no name, no state) …
// 0001-01-01" for ever, which cancel called "campaign … is : nothing was
// cancelled". A later submission, once the store takes it, runs.
func TestFailedSubmitLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "specs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	st, err := storage.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e.store = st
	co, _ := e.startCoordinator(protocol.Layout{})
	f := loadSpec(t, "testdata/small.yaml")
	if _, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f}); err == nil || !strings.Contains(err.Error(), "storing the sweep spec") {
		t.Fatalf("submit to a store that refuses the spec: %v", err)
	}
	if list := co.List(); len(list) != 0 {
		t.Fatalf("campaigns listed after a failed submission: %+v", list)
	}
	if err := os.Remove(filepath.Join(dir, "specs")); err != nil {
		t.Fatal(err)
	}
	e.startWorker(worker.Options{Concurrency: 2, Name: "w"})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
}

// TestCampaignObjectsRestored: storage that lost a running campaign's own
// objects (its bucket deleted and made again) gets them back at the
// finalisation: the campaign finished "done", and results and report
// answered "unknown campaign", until it was submitted again.
func TestCampaignObjectsRestored(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	ctx := context.Background()
	gate := make(chan struct{})
	e.startWorker(worker.Options{Concurrency: 2, Name: "w", Runner: &countRunner{next: gatedRunner{gate}}})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := co.Status(ctx, r.Campaign)
	specKey := ""
	if keys, _ := e.store.List(ctx, protocol.SpecsPrefix); len(keys) == 1 {
		specKey = keys[0]
	}
	for _, k := range []string{storage.LayoutKey(r.Campaign), storage.CampaignSpecKey(r.Campaign), specKey} {
		if err := e.store.Delete(ctx, k); err != nil {
			t.Fatalf("%s: %v (status %+v)", k, err, st)
		}
	}
	close(gate)
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
	for _, k := range []string{storage.LayoutKey(r.Campaign), storage.CampaignSpecKey(r.Campaign), specKey} {
		if _, err := e.store.Stat(ctx, k); err != nil {
			t.Errorf("%s after the finalisation: %v", k, err)
		}
	}
	es, err := archive.List(ctx, e.store)
	if err != nil || len(es) != 1 || es[0].ID != r.Campaign || es[0].State != protocol.CampaignDone {
		t.Fatalf("campaigns in storage: %+v, %v", es, err)
	}
}

// gatedRunner runs in process once its gate is closed.
type gatedRunner struct{ gate chan struct{} }

func (g gatedRunner) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return worker.InProcess{}.Run(ctx, t, p)
}

// TestPausedWorkersShown: a worker whose heartbeats say its store is
// unavailable is listed in the status of every running campaign (and so
// by status, the progress and the live page) while its heartbeats say
// so, and no longer once one does not. A farm stalled on a full store
// read "99/105 done, 0 running, ETA 5s" for minutes.
func TestPausedWorkersShown(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 12, 2, 4, 50, 1, 0, time.UTC)
	beat := func(down string) {
		data, _ := json.Marshal(protocol.Heartbeat{Worker: "w2", Host: "node7", Slots: 2, StorageDown: down, StorageDownSince: since, Sent: time.Now()})
		if err := e.nc.Publish(protocol.HeartbeatSubject("w2"), data); err != nil {
			t.Fatal(err)
		}
		e.nc.Flush()
	}
	want := "worker w2 (node7): paused since 2026-12-02T04:50:01Z: its store is unavailable (no space left on device)"
	wait := func(paused bool) *protocol.Status {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			s, err := co.Status(context.Background(), r.Campaign)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(s.Paused) == 1 && strings.HasPrefix(s.Paused[0], want); got == paused || time.Now().After(deadline) {
				return s
			}
		}
	}
	beat("no space left on device")
	if s := wait(true); len(s.Paused) != 1 || !strings.HasPrefix(s.Problems()[0], want) {
		t.Fatalf("status %+v", s)
	}
	if l := co.List(); len(l) != 1 || len(l[0].Paused) != 1 {
		t.Fatalf("list %+v", l)
	}
	beat("")
	if s := wait(false); len(s.Paused) != 0 {
		t.Fatalf("status after the store came back: %+v", s)
	}
}

// TestMixedEnginesWarned: a campaign whose tasks workers of two engine
// versions ran (a rolling upgrade: here every other task's result is
// labelled engine 0.0.1, as an older worker's would be) is finalised with
// a warning in its manifest and the coordinator's log, naming the policy
// and the versions; only report said so before.
func TestMixedEnginesWarned(t *testing.T) {
	e := newEnv(t)
	var log procutil.Buffer
	co, _ := e.startCoordinatorWith(coordinator.Options{Layout: protocol.Layout{}, Logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }})
	e.startWorker(worker.Options{Concurrency: 2, Name: "w", Runner: olderEveryOther{}})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
	data, err := e.store.Get(context.Background(), storage.ManifestKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := "policy fcfs: results of engine versions 0.0.1, " + sim.Version + " are pooled"
	if !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) || !strings.Contains(log.String(), "warning: "+want) {
		t.Fatalf("manifest warnings %q\nlog:\n%s", m.Warnings, log.String())
	}
}

// olderEveryOther runs in process and labels every other task's result
// (by its id's last hex digit) as an older engine's.
type olderEveryOther struct{}

func (olderEveryOther) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	out, err := worker.InProcess{}.Run(ctx, t, p)
	if err == nil && t.ID[len(t.ID)-1]%2 == 0 {
		out.Result.Engine, out.Provenance.Engine = "0.0.1", "0.0.1"
	}
	return out, err
}
