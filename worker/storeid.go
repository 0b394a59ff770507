package worker

import (
	"cmp"
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
	storeStopping                   // the hard stop came while storage was unavailable: release
	storeWrong                      // the coordinator's store, not the worker's: give back, stop the worker
	storeStale                      // neither the coordinator's nor the worker's: a leftover, terminated
	storeUnknown                    // no coordinator names its store now: given back for later
)

// checkStore compares the store a message names (announced; "" from a
// coordinator that names none: not checked) with the worker's, waiting
// while storage is unavailable, and, when they differ, with the store of
// the coordinator holding the lease: a message that names the
// coordinator's store shows the worker is on the wrong one (storeWrong,
// ErrOtherStore), but one that names another store is a leftover of a
// coordinator that ran on it (a campaign queued before the farm moved
// stores), and stopping on it would stop every worker of the farm, one
// after the other, as the message went round (storeStale). err says why
// for every result but storeOK.
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
	ctx, cancel := ioCtx()
	defer cancel()
	holder, err := w.holderStore(ctx)
	switch {
	case err != nil:
		return storeUnknown, fmt.Errorf("a message names store %s, not this worker's store %s, and the coordinator's cannot be read: %w", announced, mine, err)
	case holder == announced:
		return storeWrong, fmt.Errorf("worker %s: %w: the coordinator stores its campaigns' results in store %s, this worker's storage %s is store %s; the task was given back, and this worker stops: one of the two has the wrong --storage", w.o.Name, ErrOtherStore, announced, w.o.Store.URL(), mine)
	case holder == mine:
		return storeStale, fmt.Errorf("messages of store %s, which the coordinator (on this worker's store %s) does not use, were left in the stream: terminated (a coordinator on that store publishes them again when it resumes their campaigns; submitted here, they run on this store)", announced, mine)
	}
	return storeUnknown, fmt.Errorf("a message names store %s, this worker's store is %s, and the coordinator holding the lease names %s: given back until a coordinator on one of them runs", announced, mine, cmp.Or(holder, "none"))
}

// storeUnknownDelay is how long a message is given back for when no
// coordinator names its store (storeUnknown): a coordinator's lease TTL,
// so that a restarting or standby coordinator has taken the lease before
// the message comes back, and its deliveries are not spent meanwhile.
const storeUnknownDelay = 15 * time.Second

// holderStore is the store identity the coordinator holding the lease
// names ("" when none holds it, or it names none).
func (w *Worker) holderStore(ctx context.Context) (string, error) {
	kv, err := w.js.KeyValue(ctx, protocol.LeaseBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	e, err := kv.Get(ctx, protocol.LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var h struct {
		StoreID string `json:"store_id"`
	}
	_ = json.Unmarshal(e.Value(), &h)
	return h.StoreID, nil
}

// settleStore acts on a message checkStore did not pass (but at the hard
// stop): the worker stops (storeWrong), the message is terminated
// (storeStale) or given back for later (storeUnknown). Each reason is
// logged once.
func (w *Worker) settleStore(msg jetstream.Msg, check storeCheck, err error) {
	switch check {
	case storeWrong:
		w.refuseStore(msg, err)
		return
	case storeStale:
		_ = msg.TermWithReason("names another store than the coordinator's")
		w.Stats.Terminated.Add(1)
	default:
		_ = msg.NakWithDelay(storeUnknownDelay)
		w.Stats.GivenBack.Add(1)
	}
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
// task (ErrOtherStore). Nothing is checked when no coordinator holds the
// lease, it names no store, or either store cannot be read now: the
// messages are checked anyway.
func (w *Worker) checkHolder(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	holder, err := w.holderStore(ctx)
	if err != nil || holder == "" {
		return nil
	}
	mine, err := w.storeID.get(ctx, w.o.Store)
	if err != nil || mine == holder {
		return nil
	}
	return fmt.Errorf("worker %s: %w: the coordinator holding the lease stores its campaigns' results in store %s, this worker's storage %s is store %s: one of the two has the wrong --storage", w.o.Name, ErrOtherStore, holder, w.o.Store.URL(), mine)
}
