package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/storage"
)

// ErrOtherStore is what Run returns when a task or verification message
// names another store than the worker's (storage.ID): the coordinator
// reads results from its own store, so every task this worker ran would
// be run for nothing, its result never found and the task published
// again (17,113 times a minute before the coordinator learnt to wait).
// The message is given back at once for a worker on the right store,
// and the worker stops: a misconfiguration, not a condition to wait out.
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

// checkStore compares the store a message names (announced; "" from a
// coordinator that names none: not checked) with the worker's, waiting
// while storage is unavailable. It returns nil when they are one,
// errStopping (wrapped) at the hard stop, and otherwise the error to stop
// the worker with: ErrOtherStore, or why the identity could not be read.
func (w *Worker) checkStore(hard context.Context, msg jetstream.Msg, announced string) error {
	if announced == "" {
		return nil
	}
	var mine string
	err := w.withStorage(hard, msg, false, func(ctx context.Context) error {
		var err error
		mine, err = w.storeID.get(ctx, w.o.Store)
		return err
	})
	switch {
	case errors.Is(err, errStopping):
		return err
	case err != nil:
		return fmt.Errorf("worker %s: checking that its storage is its coordinator's: %w", w.o.Name, err)
	case mine != announced:
		return fmt.Errorf("worker %s: %w: the coordinator stores its campaigns' results in store %s, this worker's storage %s is store %s; the task was given back, and this worker stops: one of the two has the wrong --storage", w.o.Name, ErrOtherStore, announced, w.o.Store.URL(), mine)
	}
	return nil
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
