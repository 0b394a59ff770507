package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/storage"
)

// Storage back-off: the first retry of an unavailable store comes after
// backoffMin, each later one twice as late, up to backoffMax. A store that
// comes back is noticed within backoffMax by the probe (sooner by a held
// write whose turn comes first).
var (
	backoffMin = time.Second
	backoffMax = 30 * time.Second
)

// errStopping is returned by withStorage when the worker's hard stop came
// while storage was still unavailable.
var errStopping = errors.New("worker stopping while storage is unavailable")

// storageHealth is the worker's shared view of its store. A storage
// operation that fails for unavailability (storage.IsUnavailable) marks it
// down; a successful write, or the probe, marks it up. While it is down
// the fetch loop takes no new tasks, and tasks already held keep their
// messages alive and wait. The transitions are logged once each, with the
// reason and the outage's length, never each retry: through the worker's
// structured log when it has one (msjfarm worker always does, so an
// operator sees why the farm paused without -v), else through Logf.
type storageHealth struct {
	store storage.Store
	log   *slog.Logger
	logf  func(string, ...any)
	name  string

	mu     sync.Mutex
	down   bool
	since  time.Time
	reason string
	up     chan struct{} // closed while healthy; a fresh one while down
	upAt   time.Time     // when it last came back
	stop   context.Context
}

func newStorageHealth(st storage.Store, name string, log *slog.Logger, logf func(string, ...any)) *storageHealth {
	up := make(chan struct{})
	close(up)
	return &storageHealth{store: st, name: name, log: log, logf: logf, up: up, stop: context.Background()}
}

// say logs a transition at level.
func (h *storageHealth) say(level slog.Level, format string, args ...any) {
	if h.log != nil {
		h.log.Log(context.Background(), level, fmt.Sprintf(format, args...))
		return
	}
	h.logf(format, args...)
}

// Up returns a channel that is closed while storage is healthy.
func (h *storageHealth) Up() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// Down records that err (an unavailability) happened to an operation
// started at started. The first one of an outage is logged and starts the
// probe; an operation that started before the store was last seen back
// (a slow call that timed out across the recovery) is no news.
func (h *storageHealth) Down(err error, started time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down || started.Before(h.upAt) {
		return
	}
	h.down, h.since, h.reason = true, time.Now(), storage.Reason(err)
	h.up = make(chan struct{})
	h.say(slog.LevelWarn, "worker %s: storage %s unavailable (%s): %v; pausing: no new tasks, finished results held in memory "+
		"and retried with back-off (%v to %v), task messages kept alive", h.name, h.store.URL(), h.reason, err, backoffMin, backoffMax)
	go h.probe(h.stop)
}

// State is why the store is unavailable and since when ("" while it is
// available), for the worker's heartbeat.
func (h *storageHealth) State() (reason string, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return "", time.Time{}
	}
	return h.reason, h.since.UTC()
}

// OK records a successful write: the store is back.
func (h *storageHealth) OK() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return
	}
	h.down, h.upAt = false, time.Now()
	close(h.up)
	h.say(slog.LevelInfo, "worker %s: storage %s is back after %v (it was unavailable: %s); resuming",
		h.name, h.store.URL(), time.Since(h.since).Round(100*time.Millisecond), h.reason)
}

// probe writes and deletes a small object with back-off until it
// succeeds, the outage ends otherwise, or ctx ends. It is what resumes a
// worker that holds no result (nothing else of it writes while it waits).
func (h *storageHealth) probe(ctx context.Context) {
	for delay := backoffMin; ; delay = min(2*delay, backoffMax) {
		select {
		case <-ctx.Done():
			return
		case <-h.Up():
			return
		case <-time.After(delay):
		}
		ictx, cancel := ioCtx()
		err := storage.CheckWritable(ictx, h.store)
		cancel()
		if err == nil {
			h.OK()
			return
		}
	}
}

// setStop makes the probe end with ctx (the worker's lifetime).
func (h *storageHealth) setStop(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stop = ctx
}

// withStorage runs op, a storage call made for the task of msg, until it
// succeeds or fails for a reason other than unavailability, and returns
// that outcome. While the store is unavailable it marks the worker's
// storage down, keeps msg alive (InProgress), and retries with capped
// exponential back-off, at once when the store is seen back; so an outage
// costs the task time, never a delivery and never a finished result.
// write says whether op writes: only a successful write proves the store
// healthy (a read-only disk still serves reads). At the hard stop it
// gives up with errStopping.
func (w *Worker) withStorage(hard context.Context, msg jetstream.Msg, write bool, op func(ctx context.Context) error) error {
	// The message is kept alive from the first call on: a call to a store
	// that has just gone away can itself take longer than AckWait (the
	// S3 client retries a refused connection inside the call).
	defer w.keepAlive(msg)()
	waited := false
	for delay := backoffMin; ; delay = min(2*delay, backoffMax) {
		started := time.Now()
		ictx, cancel := ioCtx()
		err := op(ictx)
		cancel()
		if err == nil && write {
			w.health.OK()
		}
		if !storage.IsUnavailable(err) {
			return err
		}
		w.health.Down(err, started)
		if !waited {
			waited = true
			w.Stats.StorageWaits.Add(1)
		}
		if hard.Err() != nil {
			return fmt.Errorf("%w: %w", errStopping, err)
		}
		t := time.NewTimer(delay)
		select {
		case <-hard.Done():
		case <-t.C:
		case <-w.health.Up():
		}
		t.Stop()
	}
}

// keepAlive sends InProgress for msg every AckWait/3 (at most every 2 s,
// so that onTick, if set, runs promptly) until the returned function is
// called, so that a message waiting for storage or a replication is not
// redelivered. A call shorter than that sends nothing. stop waits for a
// tick in progress. It is a timer rather than a goroutine with a ticker:
// a short task makes three or four of these calls, none of which ticks.
func (w *Worker) keepAlive(msg jetstream.Msg, onTick ...func()) (stop func()) {
	every := min(max(w.ackWait/3, 20*time.Millisecond), 2*time.Second)
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		_ = msg.InProgress()
		for _, f := range onTick {
			f()
		}
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
