package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// stuckStore is a disk at its fsync limit: every write waits until open
// is closed, and the store counts how many wait at once.
type stuckStore struct {
	storage.Store
	open          chan struct{}
	waiting, peak atomic.Int64
}

func (s *stuckStore) wait() {
	n := s.waiting.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	<-s.open
	s.waiting.Add(-1)
}

func (s *stuckStore) Put(ctx context.Context, key string, data []byte) error {
	s.wait()
	return s.Store.Put(ctx, key, data)
}

func (s *stuckStore) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	s.wait()
	return s.Store.PutIfAbsent(ctx, key, data)
}

// countingRunner counts the replications started.
type countingRunner struct {
	worker.InProcess
	started atomic.Int64
}

func (r *countingRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	r.started.Add(1)
	return r.InProcess.Run(ctx, t, progress)
}

// shortTasks is n replications of one short task (200 arrivals, FCFS on
// one-or-all: well under a millisecond of simulation each).
func shortTasks(t *testing.T, n int) []sweep.Task {
	t.Helper()
	f := &sweep.File{Name: "w", Seed: 1, Workload: "one-or-all", Axes: map[string][]any{"arrival_rate": {2}},
		Policies: []any{"fcfs"}, Replications: n, Run: sweep.RunSpec{RunConfig: wire.RunConfig{Arrivals: 200, Warmup: 10}}}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Tasks
}

// TestStoreBackpressure: short tasks finish faster than a stuck store
// takes their results. A handler gives its slot back before it stores, so
// without a bound every queued task would be fetched and run and its
// result would wait in a goroutine of its own (on a real disk, an OS
// thread blocked in fsync: the worker of a 10^6-task campaign aborted at
// 4,256 of them). With 2 slots, at most 2 × 2 handlers are alive: four
// results wait and nothing more is fetched until the store moves; then
// every task is stored once.
func TestStoreBackpressure(t *testing.T) {
	const slots, bound = 2, 2 * 2
	queue := shortTasks(t, 20)
	nc, h, local := queued(t, protocol.Layout{MaxDeliver: 3, AckWait: 30 * time.Second}, queue)
	st := &stuckStore{Store: local, open: make(chan struct{})}
	r := &countingRunner{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Runner: r, Concurrency: slots,
		FetchWait: 50 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = w.Run(ctx) }()
	for deadline := time.Now().Add(2 * time.Minute); st.waiting.Load() < bound; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d results waiting for the store after 2 min, want %d", st.waiting.Load(), bound)
		}
	}
	// The bound is reached: the worker may now only wait. Give its fetch
	// loop many fetch waits to break it (a run takes well under a
	// millisecond), then check.
	time.Sleep(40 * 50 * time.Millisecond)
	if p, n := st.peak.Load(), r.started.Load(); p > bound || n > bound {
		t.Fatalf("with %d slots: %d results waited for the store at once and %d runs started, want at most %d",
			slots, p, n, bound)
	}
	close(st.open)
	for deadline := time.Now().Add(2 * time.Minute); w.Stats.Done.Load() < int64(len(queue)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks done 2 min after the store moved", w.Stats.Done.Load(), len(queue))
		}
	}
	cancel()
	wg.Wait()
	if w.Stats.Failed.Load() != 0 || w.Stats.Retried.Load() != 0 || w.Stats.Duplicates.Load() != 0 {
		t.Fatalf("failed %d retried %d duplicates %d", w.Stats.Failed.Load(), w.Stats.Retried.Load(), w.Stats.Duplicates.Load())
	}
	for _, tk := range queue {
		if _, err := local.Stat(context.Background(), storage.ResultKey("camp", tk.ID)); err != nil {
			t.Errorf("task %s: %v", tk.ID, err)
		}
	}
	if si, _ := h.Tasks.Info(context.Background()); si.State.Msgs != 0 {
		t.Fatalf("%d messages left", si.State.Msgs)
	}
}
