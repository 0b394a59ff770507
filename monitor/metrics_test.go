package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// TestObserveTask: outcomes are counted by label; only successful
// replications feed the wall-time histogram and the event counters; a
// plugin crash (wrapped, as the worker reports it) counts as a crash and
// other plugin errors do not.
func TestObserveTask(t *testing.T) {
	m := NewMetrics()
	task := &sweep.Task{ID: "t1", Policy: "msf"}
	m.ObserveTask(worker.TaskEvent{Task: task, Outcome: worker.OutcomeDone, Wall: 2 * time.Second, Events: 1000})
	m.ObserveTask(worker.TaskEvent{Task: task, Outcome: worker.OutcomeError, Wall: time.Second,
		Err: fmt.Errorf("attempt 1: %w", &pluginhost.Error{Kind: pluginhost.ErrCrash, Msg: "exit 2"})})
	m.ObserveTask(worker.TaskEvent{Task: task, Outcome: worker.OutcomeError, Wall: time.Second,
		Err: &pluginhost.Error{Kind: pluginhost.ErrDeadline, Msg: "slow"}})
	if v := testutil.ToFloat64(m.workerTasks.WithLabelValues(worker.OutcomeDone)); v != 1 {
		t.Errorf("done %v", v)
	}
	if v := testutil.ToFloat64(m.workerTasks.WithLabelValues(worker.OutcomeError)); v != 2 {
		t.Errorf("error %v", v)
	}
	if v := testutil.ToFloat64(m.pluginCrashes); v != 1 {
		t.Errorf("crashes %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.events); v != 1000 {
		t.Errorf("events %v", v)
	}
	if v := testutil.ToFloat64(m.eventsRate); v != 500 {
		t.Errorf("events per second %v, want 500", v)
	}
	if n := testutil.CollectAndCount(m.wall); n != 1 {
		t.Errorf("wall histogram series %d, want 1 (msf)", n)
	}
	h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1})
	defer h.Close()
	m.PluginStarts(h)
	m.PluginStarts(h) // a second call is ignored, not a duplicate registration
	if n, err := testutil.GatherAndCount(m.Registry, "msjfarm_plugin_process_starts_total"); err != nil || n != 1 {
		t.Errorf("plugin starts: %d series, %v", n, err)
	}
}

type failingStore struct{ storage.Store }

func (failingStore) Put(context.Context, string, []byte) error { return errors.New("disk full") }

// TestInstrumentStore: writes are timed by operation, failed ones counted.
func TestInstrumentStore(t *testing.T) {
	m := NewMetrics()
	st, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := m.InstrumentStore(st)
	ctx := context.Background()
	if err := s.Put(ctx, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutIfAbsent(ctx, "b", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if data, err := s.Get(ctx, "a"); err != nil || string(data) != "x" {
		t.Fatalf("read through the wrapper: %q %v", data, err)
	}
	if err := m.InstrumentStore(failingStore{st}).Put(ctx, "c", nil); err == nil {
		t.Fatal("the wrapper hid an error")
	}
	if v := testutil.ToFloat64(m.storeErrors.WithLabelValues("put")); v != 1 {
		t.Errorf("put errors %v, want 1", v)
	}
	if v := testutil.ToFloat64(m.storeErrors.WithLabelValues("put_if_absent")); v != 0 {
		t.Errorf("put_if_absent errors %v", v)
	}
	if n := testutil.CollectAndCount(m.storeWrite); n != 2 {
		t.Errorf("timed operations %d, want 2 (put, put_if_absent)", n)
	}
}

type statStore struct {
	storage.Store
	err error
}

func (s *statStore) Stat(context.Context, string) (storage.Info, error) { return storage.Info{}, s.err }

// TestHealth: /healthz answers while the process lives; /readyz only while
// storage answers (ErrNotFound is an answer) and Options.Ready agrees.
func TestHealth(t *testing.T) {
	st := &statStore{err: storage.ErrNotFound}
	ready := false
	srv, err := New(Options{Store: st, Ready: func() bool { return ready }})
	if err != nil {
		t.Fatal(err)
	}
	srv.storeTTL = 0
	h := srv.Handler()
	code := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code
	}
	if c := code("/healthz"); c != 200 {
		t.Errorf("/healthz %d", c)
	}
	if c := code("/readyz"); c != 503 {
		t.Errorf("/readyz before ready: %d", c)
	}
	ready = true
	if c := code("/readyz"); c != 200 {
		t.Errorf("/readyz ready: %d", c)
	}
	st.err = errors.New("connection refused")
	if c := code("/readyz"); c != 503 {
		t.Errorf("/readyz with storage down: %d", c)
	}
	if c := code("/healthz"); c != 200 {
		t.Errorf("/healthz with storage down: %d", c)
	}
	// Without a coordinator there is no page.
	if c := code("/api/campaigns"); c != 404 {
		t.Errorf("/api/campaigns on a worker: %d", c)
	}
}

// TestInstrumentedStoreWalks: the coordinator's instrumented store still
// walks its keys a page at a time (storage.Walker), with every key.
func TestInstrumentedStoreWalks(t *testing.T) {
	ctx := context.Background()
	base, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"campaigns/c/results/a.json", "campaigns/c/results/b.json", "campaigns/c/spec.yaml"} {
		if err := base.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	st := NewMetrics().InstrumentStore(base)
	if _, ok := st.(storage.Walker); !ok {
		t.Fatalf("%T is not a storage.Walker", st)
	}
	n := 0
	if err := storage.Walk(ctx, st, "campaigns/c/results/", func(string) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("Walk: %d keys, %v; want 2", n, err)
	}
}
