package coordinator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

type env struct {
	t     *testing.T
	url   string
	nc    *nats.Conn
	store storage.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	url, nc := natstest.ConnectEmbedded(t)
	st, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, url: url, nc: nc, store: st}
}

// startCoordinator runs a coordinator until the returned stop is called
// (or the test ends).
func (e *env) startCoordinator(layout protocol.Layout) (*coordinator.Coordinator, func()) {
	e.t.Helper()
	return e.startCoordinatorWith(coordinator.Options{Layout: layout})
}

// startCoordinatorWith is startCoordinator with more options (Conn, Store,
// Reconcile and, unless set, Logf are the environment's).
func (e *env) startCoordinatorWith(o coordinator.Options) (*coordinator.Coordinator, func()) {
	e.t.Helper()
	o.Conn, o.Store, o.Reconcile = e.nc, e.store, 500*time.Millisecond
	if o.Logf == nil {
		o.Logf = e.t.Logf
	}
	co, err := coordinator.New(context.Background(), o)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("coordinator.Run: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	select {
	case <-co.Ready():
	case err := <-done:
		e.t.Fatalf("coordinator.Run: %v", err)
	}
	return co, stop
}

// objectsWritten lists st's objects but the store's identity, which the
// coordinator writes as it starts (storage.ID): what submissions wrote.
func objectsWritten(st storage.Store) ([]string, error) {
	keys, err := st.List(context.Background(), "")
	return slices.DeleteFunc(keys, func(k string) bool { return k == storage.IDKey }), err
}

// runWorkerOn starts a worker named name (2 slots) on store st, which
// need not be the environment's; done receives its Run's error, and
// cancel stops it.
func (e *env) runWorkerOn(st storage.Store, name string) (w *worker.Worker, done <-chan error, cancel func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(ctx, worker.Options{Conn: e.nc, Store: st, Name: name, Concurrency: 2, FetchWait: 200 * time.Millisecond, Logf: e.t.Logf})
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	e.t.Cleanup(cancel)
	return w, errc, cancel
}

func (e *env) startWorker(o worker.Options) (*worker.Worker, func()) {
	e.t.Helper()
	o.Conn, o.Store = e.nc, e.store
	if o.FetchWait == 0 {
		o.FetchWait = 200 * time.Millisecond
	}
	o.Logf = e.t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(ctx, o)
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.t.Errorf("worker.Run: %v", err)
			}
		})
	}
	e.t.Cleanup(stop)
	return w, stop
}

func loadSpec(t *testing.T, path string) *sweep.File {
	t.Helper()
	f, err := sweep.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// countRunner counts runs per task and delegates to InProcess.
type countRunner struct {
	mu   sync.Mutex
	runs map[string]int
	next worker.Runner
}

func (c *countRunner) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[t.ID]++
	c.mu.Unlock()
	next := c.next
	if next == nil {
		next = worker.InProcess{}
	}
	return next.Run(ctx, t, p)
}

func (c *countRunner) total() (n int, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.runs {
		n += v
		if v > max {
			max = v
		}
	}
	return n, max
}

func waitDone(t *testing.T, co *coordinator.Coordinator, id string, d time.Duration) *protocol.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	s, err := co.Wait(ctx, id)
	if err != nil {
		st, _ := co.Status(context.Background(), id)
		t.Fatalf("waiting for %s: %v (status %+v)", id, err, st)
	}
	return s
}

// Complexity 45: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestCampaignEndToEnd(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	var log1, log2 syncBuf
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1", Runner: &cr, RunLog: &log1})
	e.startWorker(worker.Options{Concurrency: 2, Name: "w2", Runner: &cr, RunLog: &log2})
	f := loadSpec(t, "testdata/small.yaml")
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != 6 || r.Published != 6 || r.Points != 2 {
		t.Fatalf("submit reply %+v, want 6 tasks published, 2 points", r)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs: %d total, max %d per task; want 6 and 1", n, mx)
	}
	// Every result is a Record with provenance.
	keys, err := e.store.List(ctx, storage.ResultsPrefix(r.Campaign))
	if err != nil || len(keys) != 6 {
		t.Fatalf("results: %v, %v", keys, err)
	}
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(r.Campaign, k)
		rec, _, err := record.Read(ctx, e.store, r.Campaign, tid)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Failed() || rec.Provenance.Runner != "in-process" || rec.Provenance.PluginSHA256 == "" ||
			rec.Provenance.Host == "" || rec.Task.ID+".json" != k[strings.LastIndex(k, "/")+1:] {
			t.Fatalf("record %s: provenance %v error %q", k, rec.Provenance, rec.Error)
		}
	}
	sum, err := e.store.Get(ctx, storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(sum), "\n"); lines != 3 { // header + 2 points
		t.Fatalf("summary.csv has %d lines:\n%s", lines, sum)
	}
	var m archive.Manifest
	data, err := e.store.Get(ctx, storage.ManifestKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.State != "done" || m.Tasks != 6 || m.Version != archive.ManifestVersion || m.TaskListSHA256 != listHash(r.Campaign, e.store, t) || len(m.PointOrder) != 2 || len(m.Policies) != 1 || m.Policies[0].Results != 6 ||
		m.Policies[0].PluginSHA256 == "" || len(m.Hosts) == 0 || m.Finished.IsZero() || m.Sweep == nil {
		t.Fatalf("manifest: %s", data)
	}
	if _, err := e.store.Get(ctx, storage.CampaignSpecKey(r.Campaign)); err != nil {
		t.Fatal(err)
	}
	// The report is stored with the campaign, and the manifest says where.
	for _, name := range []string{"index.html", "summary.csv", "summary.json", "manifest.json", "mean_response.svg"} {
		if _, err := e.store.Stat(ctx, storage.ReportPrefix(r.Campaign)+name); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
	if m.Report != storage.ReportPrefix(r.Campaign)+"index.html" || m.Precision != nil {
		t.Fatalf("manifest report %q, precision %+v", m.Report, m.Precision)
	}
	// Both workers took part (4 slots, 6 tasks of similar length)... not
	// guaranteed, so only check the logs add up.
	if got := strings.Count(log1.String()+log2.String(), "done "); got != 6 {
		t.Fatalf("run logs show %d completions:\n%s%s", got, log1.String(), log2.String())
	}
	// Re-submitting publishes nothing and runs nothing.
	r2, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Campaign != r.Campaign || r2.Published != 0 || r2.AlreadyDone != 6 {
		t.Fatalf("resubmit reply %+v", r2)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	time.Sleep(300 * time.Millisecond)
	if n, _ := cr.total(); n != 6 {
		t.Fatalf("resubmit ran %d tasks again", n-6)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	f := loadSpec(t, "testdata/small.yaml")
	f.Seed = 1<<63 + 12345 // not representable as float64
	c1, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := coordinator.SpecYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sweep.Parse(y, "yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	c2, err := sweep.Expand(g, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	// JSON, as in the KV campaign state.
	data, _ := json.Marshal(f)
	var h sweep.File
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	c3, err := sweep.Expand(&h, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID != c2.ID || c1.ID != c3.ID || c1.Tasks[5].ID != c2.Tasks[5].ID || c1.Tasks[5].ID != c3.Tasks[5].ID {
		t.Fatalf("ids differ: %s %s %s\n%s", c1.ID, c2.ID, c3.ID, y)
	}
}

func TestInvalidSweepWritesNothing(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	f := loadSpec(t, "testdata/small.yaml")
	f.Policies = []any{"no-such-policy"}
	if _, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f}); err == nil {
		t.Fatal("want a validation error")
	}
	// Through the API too.
	var rep protocol.SubmitReply
	err := protocol.Request(context.Background(), e.nc, protocol.APISubmit, protocol.SubmitRequest{Spec: f}, &rep)
	if err == nil || !strings.Contains(err.Error(), "no-such-policy") {
		t.Fatalf("API error %v", err)
	}
	if keys, _ := objectsWritten(e.store); len(keys) != 0 {
		t.Fatalf("stored %v", keys)
	}
}

// failRunner always fails.
type failRunner struct{ n atomic.Int64 }

func (f *failRunner) Run(context.Context, *sweep.Task, func(int64, int64)) (*worker.Outcome, error) {
	f.n.Add(1)
	return nil, errors.New("boom")
}

func TestFailingTaskRetriedThenRecorded(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{MaxDeliver: 3})
	var fr failRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &fr, RetryDelay: 10 * time.Millisecond})
	f := loadSpec(t, "testdata/small.yaml")
	f.Replications = 1
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.Done != 0 || s.Failed != 2 || len(s.Errors) != 2 || !strings.Contains(s.Errors[0], "boom") {
		t.Fatalf("status %+v", s)
	}
	if got := fr.n.Load(); got != 6 { // 2 tasks × MaxDeliver 3
		t.Fatalf("%d attempts, want 6", got)
	}
	sum, err := e.store.Get(context.Background(), storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary of a failed campaign:\n%s", sum)
}

func TestMaxDeliveriesAdvisoryRecordsFailure(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{MaxDeliver: 2, AckWait: 300 * time.Millisecond})
	f := loadSpec(t, "testdata/small.yaml")
	f.Replications, f.Axes = 1, map[string][]any{"arrival_rate": {2}}
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	// A "worker" that takes the task and dies every time: fetch, never ack.
	js, _ := jetstream.New(e.nc)
	cons, err := js.Consumer(context.Background(), protocol.TaskStream, protocol.WorkerConsumer)
	if err != nil {
		t.Fatal(err)
	}
	deliveries := 0
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, _ := co.Status(context.Background(), r.Campaign)
		if st.Complete() {
			break
		}
		b, err := cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for range b.Messages() {
			deliveries++
		}
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.Failed != 1 || !strings.Contains(s.Errors[0], "not acknowledged after 2 deliveries") {
		t.Fatalf("status %+v", s)
	}
	if deliveries != 2 {
		t.Fatalf("%d deliveries, want 2", deliveries)
	}
	info, _ := js.Stream(context.Background(), protocol.TaskStream)
	if si, _ := info.Info(context.Background()); si.State.Msgs != 0 {
		t.Fatalf("%d messages left in the stream", si.State.Msgs)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	var s protocol.Status
	if err := protocol.Request(context.Background(), e.nc, protocol.APICancel, protocol.StatusRequest{Campaign: r.Campaign}, &s); err != nil {
		t.Fatal(err)
	}
	if s.State != protocol.CampaignCancelled {
		t.Fatalf("status %+v", s)
	}
	js, _ := jetstream.New(e.nc)
	st, _ := js.Stream(context.Background(), protocol.TaskStream)
	if si, _ := st.Info(context.Background()); si.State.Msgs != 0 {
		t.Fatalf("%d messages left after cancel", si.State.Msgs)
	}
	if err := protocol.Request(context.Background(), e.nc, protocol.APIStatus, protocol.StatusRequest{Campaign: "nope"}, &s); err == nil {
		t.Fatal("status of an unknown campaign: want an error")
	}
	// Resubmitting resumes it.
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if _, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f}); err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
}

// blockRunner blocks every run until its context ends, unless released.
type blockRunner struct {
	started chan string
}

func (b *blockRunner) Run(ctx context.Context, t *sweep.Task, _ func(int64, int64)) (*worker.Outcome, error) {
	b.started <- t.ID
	<-ctx.Done()
	return nil, fmt.Errorf("stopped: %w", ctx.Err())
}

func TestCoordinatorRestartAndWorkerRelease(t *testing.T) {
	e := newEnv(t)
	co, stop := e.startCoordinator(protocol.Layout{AckWait: 2 * time.Second})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	// A worker takes two tasks and blocks; stopping it releases them.
	br := &blockRunner{started: make(chan string, 10)}
	_, stopW := e.startWorker(worker.Options{Concurrency: 2, Runner: br})
	<-br.started
	<-br.started
	stop() // the coordinator goes away mid-campaign
	stopW()
	// A new coordinator resumes; a normal worker finishes everything once.
	co2, _ := e.startCoordinator(protocol.Layout{AckWait: 2 * time.Second})
	var cr countRunner
	var runLog syncBuf
	w, _ := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr, RunLog: &runLog})
	// Wait on the campaign's completion, not a wall-clock deadline: the
	// campaign is reported running until its report is stored, and
	// rendering the report under -race on a loaded machine took 25 s of
	// the 30 s this test used to allow (issue #19). The ceiling only
	// bounds a hang.
	s := waitDone(t, co2, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != 6 || s.Finished.IsZero() {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs %d (max %d per task), want 6 and 1\n%s", n, mx, runLog.String())
	}
	if w.Stats.Done.Load() != 6 {
		t.Fatalf("worker stats %+v", w.Stats.Done.Load())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listHash is the hash of the task list of the archived campaign id (the
// manifest's task_list_sha256).
func listHash(id string, st storage.Store, t *testing.T) string {
	t.Helper()
	a, err := archive.Load(context.Background(), st, id, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, task := range a.Tasks {
		h.Write([]byte(task.ID + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}
