package worker_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// flakyStore fails every write with a refused connection (a storage
// *Error, as a real store reports it) while down is set.
type flakyStore struct {
	storage.Store
	down   atomic.Bool
	writes atomic.Int64 // failed writes
}

func (s *flakyStore) refused(op, key string) error {
	s.writes.Add(1)
	return &storage.Error{Op: op, Key: key, Store: s.URL(),
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
}

func (s *flakyStore) Put(ctx context.Context, key string, data []byte) error {
	if s.down.Load() {
		return s.refused("put", key)
	}
	return s.Store.Put(ctx, key, data)
}

func (s *flakyStore) PutIfAbsent(ctx context.Context, key string, data []byte) (bool, error) {
	if s.down.Load() {
		return false, s.refused("putifabsent", key)
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

// TestHeldResultSurvivesOutage: a result finished while storage refuses
// writes is held (the message kept alive past several AckWaits) and
// written when storage returns: one run, no retry, no delivery spent.
func TestHeldResultSurvivesOutage(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, h, local := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 500 * time.Millisecond}, ts[:1])
	st := &flakyStore{Store: local}
	st.down.Store(true)
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 1, FetchWait: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for st.writes.Load() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // four AckWaits
	st.down.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for w.Stats.Done.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Stats.Done.Load() != 1 || w.Stats.Retried.Load() != 0 || w.Stats.Failed.Load() != 0 || w.Stats.Duplicates.Load() != 0 || w.Stats.StorageWaits.Load() < 1 {
		t.Fatalf("done %d retried %d failed %d duplicates %d storage waits %d", w.Stats.Done.Load(), w.Stats.Retried.Load(),
			w.Stats.Failed.Load(), w.Stats.Duplicates.Load(), w.Stats.StorageWaits.Load())
	}
	if _, err := local.Stat(ctx, storage.ResultKey("camp", ts[0].ID)); err != nil {
		t.Fatal(err)
	}
	e, err := h.TaskStates.Get(ctx, protocol.TaskKey("camp", ts[0].ID))
	if err != nil || e.Value() == nil {
		t.Fatal(err)
	}
	if si, _ := h.Tasks.Info(ctx); si.State.Msgs != 0 {
		t.Fatalf("%d messages left", si.State.Msgs)
	}
}

// TestHeldResultReleasedAtHardStop: a worker stopping while it holds a
// result for unavailable storage keeps trying through its grace period,
// then gives the message back (released), never recording a failure.
func TestHeldResultReleasedAtHardStop(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, h, local := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 2 * time.Second}, ts[:1])
	st := &flakyStore{Store: local}
	st.down.Store(true)
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	const grace = 1500 * time.Millisecond
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 1, FetchWait: 100 * time.Millisecond,
		Grace: grace, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for st.writes.Load() < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	stop := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(stop); took < grace {
		t.Errorf("gave up %v after the stop, before the %v grace period", took, grace)
	}
	if w.Stats.Released.Load() != 1 || w.Stats.Failed.Load() != 0 || w.Stats.Retried.Load() != 0 || w.Stats.Done.Load() != 0 {
		t.Fatalf("released %d failed %d retried %d done %d", w.Stats.Released.Load(), w.Stats.Failed.Load(), w.Stats.Retried.Load(), w.Stats.Done.Load())
	}
	if _, err := local.Stat(ctx, storage.ResultKey("camp", ts[0].ID)); err == nil {
		t.Fatal("a result was stored while storage was down")
	}
	e, err := h.TaskStates.Get(ctx, protocol.TaskKey("camp", ts[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"released"`; !strings.Contains(string(e.Value()), want) {
		t.Fatalf("task state %s, want %s", e.Value(), want)
	}
	// The message is back in the queue for another worker.
	if si, _ := h.Tasks.Info(ctx); si.State.Msgs != 1 {
		t.Fatalf("%d messages in the stream, want 1", si.State.Msgs)
	}
}
