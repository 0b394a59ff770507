package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/nats-io/nats.go"
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
	// Its heartbeats say it is paused on its store, and why.
	beats := make(chan protocol.Heartbeat, 64)
	sub, err := nc.Subscribe(protocol.HeartbeatWildcard, func(m *nats.Msg) {
		var hb protocol.Heartbeat
		if json.Unmarshal(m.Data, &hb) == nil {
			select {
			case beats <- hb:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for st.writes.Load() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // four AckWaits
	for seen := false; !seen; {
		select {
		case hb := <-beats:
			if seen = hb.StorageDown != ""; seen && (hb.StorageDownSince.IsZero() || !strings.Contains(hb.StorageDown, "refused")) {
				t.Errorf("heartbeat %+v", hb)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no heartbeat said the store was down")
		}
	}
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

// pinsDown fails like the plugin runner does when storage is down while
// it reads the campaign's plugin pins, until up is set; then it runs the
// task in process.
type pinsDown struct {
	up    atomic.Bool
	calls atomic.Int64
	st    storage.Store
}

func (r *pinsDown) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	r.calls.Add(1)
	if !r.up.Load() {
		return nil, fmt.Errorf("reading plugin pins: %w", &storage.Error{Op: "get", Key: "campaigns/camp/plugins.json", Store: r.st.URL(),
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})
	}
	return worker.InProcess{}.Run(ctx, t, progress)
}

// TestRunnerStorageErrorWaits: a runner that cannot read what a task
// needs from storage (the plugin pins) makes the worker wait, not spend
// the task's deliveries: with MaxDeliver 2 and an outage of several
// AckWaits the task still runs once storage is back.
func TestRunnerStorageErrorWaits(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 500 * time.Millisecond}, ts[:1])
	r := &pinsDown{st: st}
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Runner: r, Concurrency: 1, FetchWait: 100 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	time.Sleep(2500 * time.Millisecond) // five AckWaits
	r.up.Store(true)
	deadline := time.Now().Add(40 * time.Second)
	for w.Stats.Done.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w.Stats.Done.Load() != 1 || w.Stats.Retried.Load() != 0 || w.Stats.Failed.Load() != 0 || w.Stats.StorageWaits.Load() != 1 || r.calls.Load() < 2 {
		t.Fatalf("done %d retried %d failed %d storage waits %d runner calls %d", w.Stats.Done.Load(), w.Stats.Retried.Load(),
			w.Stats.Failed.Load(), w.Stats.StorageWaits.Load(), r.calls.Load())
	}
}

// failOnce fails its first call with a task error, then blocks until
// its context ends.
type failOnce struct {
	calls  atomic.Int64
	second chan struct{}
}

func (r *failOnce) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	if r.calls.Add(1) == 1 {
		return nil, errors.New("policy exploded on attempt 1")
	}
	close(r.second)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunningStateKeepsPreviousError: the running state of a redelivered
// task carries its previous attempt's error, so that a worker killed on
// the last attempt leaves the coordinator's max-deliveries record with
// that error, not "none reported".
func TestRunningStateKeepsPreviousError(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, h, st := queued(t, protocol.Layout{MaxDeliver: 3, AckWait: 5 * time.Second}, ts[:1])
	r := &failOnce{second: make(chan struct{})}
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Runner: r, Concurrency: 1, FetchWait: 100 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	select {
	case <-r.second:
	case <-time.After(20 * time.Second):
		t.Fatal("no second attempt")
	}
	var st2 protocol.TaskState
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if e, err := h.TaskStates.Get(ctx, protocol.TaskKey("camp", ts[0].ID)); err == nil {
			_ = json.Unmarshal(e.Value(), &st2)
			if st2.State == protocol.StateRunning && st2.Attempt == 2 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if st2.State != protocol.StateRunning || st2.Attempt != 2 || !strings.Contains(st2.Error, "policy exploded on attempt 1") {
		t.Fatalf("state of attempt 2: %+v", st2)
	}
}

// sleepOn runs the real replication and then sleeps d on the task slow.
type sleepOn struct {
	slow string
	d    time.Duration
}

func (r sleepOn) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	out, err := worker.InProcess{}.Run(ctx, t, progress)
	if t.ID == r.slow {
		time.Sleep(r.d)
	}
	return out, err
}

// TestRunningStateAfterASecond: a first attempt is reported running only
// once it has run for a second. Of two tasks run side by side, the one
// taking 1.5 s goes running → done; the one taking milliseconds writes
// done alone (one task-state write instead of two).
func TestRunningStateAfterASecond(t *testing.T) {
	ts := tasks(t, 2000, 0)
	nc, h, st := queued(t, protocol.Layout{}, ts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wa, err := h.TaskStates.WatchAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Concurrency: 2, FetchWait: 100 * time.Millisecond,
		Logf: t.Logf, Runner: sleepOn{slow: ts[0].ID, d: 1500 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	seen := map[string][]string{} // task id → its states in order
	timeout := time.After(60 * time.Second)
	for len(seen[ts[0].ID]) == 0 || seen[ts[0].ID][len(seen[ts[0].ID])-1] != protocol.StateDone ||
		len(seen[ts[1].ID]) == 0 || seen[ts[1].ID][len(seen[ts[1].ID])-1] != protocol.StateDone {
		select {
		case e := <-wa.Updates():
			if e == nil {
				continue
			}
			var s protocol.TaskState
			if err := json.Unmarshal(e.Value(), &s); err != nil {
				t.Fatal(err)
			}
			_, id, _ := strings.Cut(e.Key(), ".")
			seen[id] = append(seen[id], s.State)
		case <-timeout:
			t.Fatalf("both tasks not done in 60 s: states %v", seen)
		}
	}
	cancel()
	<-done
	if got := strings.Join(seen[ts[0].ID], ","); got != "running,done" {
		t.Errorf("task of 1.5 s: states %s, want running,done", got)
	}
	if got := strings.Join(seen[ts[1].ID], ","); got != "done" {
		t.Errorf("task of milliseconds: states %s, want done", got)
	}
}
