package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// ErrOtherStore is what Run returns when the coordinator's store (named
// by the lease holder and its messages, storage.ID) is not the worker's:
// the coordinator reads results from its own store, so every task this
// worker ran would be run for nothing, its result never found and the
// task published again (17,113 times a minute before the coordinator
// learnt to wait). A message is given back at once for a worker on the
// right store, and the worker stops: a misconfiguration, not a condition
// to wait out.
var ErrOtherStore = errors.New("this worker's storage is not its coordinator's")

// idCache caches the worker's store identity once read.
type idCache struct {
	mu sync.Mutex
	id string
}

// set replaces the identity kept (it was read again and changed).
func (s *idCache) set(id string) {
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
}

// get reads the identity the first time it succeeds and keeps it.
func (s *idCache) get(ctx context.Context, st storage.Store) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.id != "" {
		return s.id, nil
	}
	id, err := storage.ID(ctx, st)
	if err == nil {
		s.id = id
	}
	return id, err
}

// storeCheck is what becomes of a message as checkStore judges the store
// it names.
type storeCheck int

const (
	storeOK       storeCheck = iota // the worker's store: go on
	storeStopping                   // the hard stop came while waiting (storage, a coordinator): release
	storeWrong                      // the coordinator's store is not the worker's: give back, stop the worker
	storeStale                      // the worker's store is the coordinator's, not the message's: a leftover, terminated
)

// checkStore compares the store a message names (announced; "" from a
// coordinator that names none: not checked) with the worker's, waiting
// while storage is unavailable. When they differ, the store of the
// coordinator holding the lease decides: the worker's, and the message is
// a leftover of a coordinator that ran on another store (a campaign
// queued before the farm moved stores; storeStale), which stopping on
// would stop every worker of the farm in turn; another, and the worker
// is on the wrong store (storeWrong, ErrOtherStore). With no coordinator
// holding the lease the message is held, kept alive, until one does:
// giving it back would spend one of its deliveries each time, and a
// worker on the wrong store started while the coordinator was down failed
// every queued task in 75 s. Before concluding that the worker is on the
// wrong store, its store's identity is read again: one that changed
// (store-id deleted and made again) is said so. err says why for every
// result but storeOK.
func (w *Worker) checkStore(hard context.Context, msg jetstream.Msg, announced string) (storeCheck, error) {
	if announced == "" {
		return storeOK, nil
	}
	var mine string
	err := w.withStorage(hard, msg, false, func(ctx context.Context) error {
		var err error
		mine, err = w.storeID.get(ctx, w.o.Store)
		return err
	})
	switch {
	case errors.Is(err, errStopping):
		return storeStopping, err
	case err != nil:
		return storeWrong, fmt.Errorf("worker %s: checking that its storage is its coordinator's: %w", w.o.Name, err)
	case mine == announced:
		return storeOK, nil
	}
	holder, err := w.awaitHolder(hard, msg, announced, mine)
	if err != nil {
		return storeStopping, err
	}
	if holder != mine {
		ctx, cancel := ioCtx()
		fresh, err := storage.ID(ctx, w.o.Store)
		cancel()
		if err == nil && fresh != mine {
			w.storeID.set(fresh)
			if fresh == holder {
				return w.checkStore(hard, msg, announced)
			}
			return storeWrong, fmt.Errorf("worker %s: %w: the store's identity changed under this worker (its store-id object was deleted or rewritten: it was %s, it is %s), and the coordinator names store %s: restore %s into %s's store-id, or restart the coordinator and the workers", w.o.Name, ErrOtherStore, mine, fresh, holder, holder, w.o.Store.URL())
		}
	}
	switch holder {
	case mine:
		return storeStale, fmt.Errorf("messages of store %s, which the coordinator (on this worker's store %s) does not use, were left in the stream: terminated (a coordinator on that store publishes them again when it resumes their campaigns; submitted here, they run on this store)", announced, mine)
	case announced:
		return storeWrong, fmt.Errorf("worker %s: %w: the coordinator stores its campaigns' results in store %s, this worker's storage %s is store %s; the task was given back, and this worker stops: one of the two has the wrong --storage (or, if both name the same storage, its store-id object was replaced after the coordinator started: restore %s into it)", w.o.Name, ErrOtherStore, announced, w.o.Store.URL(), mine, announced)
	}
	return storeWrong, fmt.Errorf("worker %s: %w: the coordinator stores its campaigns' results in store %s, this worker's storage %s is store %s (the message names a third, %s); the task was given back, and this worker stops: one of the two has the wrong --storage", w.o.Name, ErrOtherStore, holder, w.o.Store.URL(), mine, announced)
}

// holderPoll is how often awaitHolder reads the lease.
const holderPoll = 2 * time.Second

// awaitHolder returns the store the coordinator holding the lease names,
// waiting (msg kept alive) while no coordinator holds it or its store
// cannot be read, and while a holder on another store than mine has not
// shown that it runs (liveHolder); errStopping at the hard stop.
func (w *Worker) awaitHolder(hard context.Context, msg jetstream.Msg, announced, mine string) (string, error) {
	defer w.keepAlive(msg)()
	for {
		ctx, cancel := ioCtx()
		holder, kv, e, err := w.holderStore(ctx)
		cancel()
		if err == nil && holder != "" {
			live, err := w.liveHolder(hard, holder, mine, kv, e)
			if err != nil {
				return "", fmt.Errorf("%w: waiting for a coordinator to judge a message of store %s", errStopping, announced)
			}
			if live {
				return holder, nil
			}
			continue
		}
		w.logOnce("worker %s: a message names store %s, not this worker's store %s, and no coordinator names its store now: the message is held until one does (giving it back would spend its deliveries)", w.o.Name, announced, mine)
		select {
		case <-hard.Done():
			return "", fmt.Errorf("%w: waiting for a coordinator to judge a message of store %s", errStopping, announced)
		case <-time.After(holderPoll):
		}
	}
}

// holderStore is the store identity the coordinator holding the lease
// names ("" when none holds it, or it names none), with the lease's
// bucket and entry.
func (w *Worker) holderStore(ctx context.Context) (string, jetstream.KeyValue, jetstream.KeyValueEntry, error) {
	kv, err := w.js.KeyValue(ctx, protocol.LeaseBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return "", nil, nil, nil
	}
	if err != nil {
		return "", nil, nil, err
	}
	e, err := kv.Get(ctx, protocol.LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil, nil, nil
	}
	if err != nil {
		return "", nil, nil, err
	}
	var h struct {
		StoreID string `json:"store_id"`
	}
	_ = json.Unmarshal(e.Value(), &h)
	return h.StoreID, kv, e, nil
}

// liveHolder reports whether the lease holder, whose store is holder, can
// be judged: on mine, at once; on another store, once it renews its lease
// (false when it lets it expire: the holder died, and its store says
// nothing about this worker's). A holder killed a moment before on the
// farm's old store stopped, for the lease's TTL, every worker started on
// the new one. Said once per holder while it waits.
func (w *Worker) liveHolder(ctx context.Context, holder, mine string, kv jetstream.KeyValue, e jetstream.KeyValueEntry) (bool, error) {
	if holder == mine {
		return true, nil
	}
	w.logOnce("worker %s: the coordinator holding the lease names store %s, not this worker's store %s; waiting up to twice the lease's TTL to see whether it runs", w.o.Name, holder, mine)
	life, err := protocol.LeaseLive(ctx, kv, e, holderPoll)
	return life != protocol.LeaseGone, err
}

// settleStore acts on a message checkStore did not pass (but at the hard
// stop): the worker stops (storeWrong) or the message is terminated
// (storeStale, logged once).
func (w *Worker) settleStore(msg jetstream.Msg, check storeCheck, err error) {
	if check == storeWrong {
		w.refuseStore(msg, err)
		return
	}
	_ = msg.TermWithReason("names another store than the coordinator's")
	w.Stats.Terminated.Add(1)
	w.logOnce("worker %s: %v", w.o.Name, err)
}

// logOnce logs a line the first time it is seen.
func (w *Worker) logOnce(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	w.logMu.Lock()
	seen := w.logged[line]
	if w.logged == nil {
		w.logged = map[string]bool{}
	}
	w.logged[line] = true
	w.logMu.Unlock()
	if !seen {
		w.o.Logf("%s", line)
	}
}

// refuseStore gives msg back at once (another worker takes it) and stops
// the worker with err (Run returns it).
func (w *Worker) refuseStore(msg jetstream.Msg, err error) {
	_ = msg.Nak()
	w.Stats.GivenBack.Add(1)
	if w.fatal.set(err) {
		w.o.Logf("%v", err)
	}
	if w.stop != nil {
		w.stop(err)
	}
}

// fatalErr is the first error that stopped the worker.
type fatalErr struct {
	mu    sync.Mutex
	first error
}

// set records err if it is the first, and reports whether it was.
func (f *fatalErr) set(err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first != nil {
		return false
	}
	f.first = err
	return true
}

func (f *fatalErr) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

// checkHolder is checkStore at the worker's start, against the coordinator
// holding the lease: a worker on another store stops before its first
// task (ErrOtherStore), once the holder has renewed its lease
// (liveHolder). Nothing is checked when no coordinator holds the lease, it
// names no store, either store cannot be read now, or the holder lets its
// lease expire: the messages are checked anyway.
func (w *Worker) checkHolder(ctx context.Context) error {
	io, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	holder, kv, e, err := w.holderStore(io)
	if err != nil || holder == "" {
		return nil
	}
	mine, err := w.storeID.get(io, w.o.Store)
	if err != nil || mine == holder {
		return nil
	}
	if live, err := w.liveHolder(ctx, holder, mine, kv, e); err != nil || !live {
		return nil // stopping, or the holder is gone: the messages are checked anyway
	}
	return fmt.Errorf("worker %s: %w: the coordinator holding the lease stores its campaigns' results in store %s, this worker's storage %s is store %s: one of the two has the wrong --storage", w.o.Name, ErrOtherStore, holder, w.o.Store.URL(), mine)
}
