package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// submitStore opens submit's --storage, where it stages the spec, trace
// and plugin pins, and returns it with its identity (SubmitRequest.Store,
// which the coordinator compares with its own store's) and, when this
// submission made the store's local directory, that directory (made).
//
// A store that does not exist yet is made, with its identity, only while
// no coordinator holds the farm's lease: the farm's coordinator, starting
// on it for the first time after this submission, reads the same identity
// and takes the submission (refusing a store without an identity broke
// exactly that). When a coordinator holds the lease, its store is known
// (LeaseHolder.StoreID), and a store given that does not exist cannot be
// it: submit refuses, naming both, and makes nothing. A mistyped --storage
// was made, with an identity, before the coordinator refused the
// submission, and stayed behind as a stray store. conn connects to NATS
// (once; submit uses the same connection).
func submitStore(ctx context.Context, ff *farmFlags, conn func() (*nats.Conn, error)) (st storage.Store, id, made string, err error) {
	st, err = storage.Open(ctx, *ff.storage, append(ff.storageOptions(), storage.NoCreate())...)
	if errors.Is(err, storage.ErrNotFound) {
		nc, cerr := conn()
		if cerr != nil {
			return nil, "", "", cerr
		}
		if h, ok := farmCoordinator(ctx, nc); ok {
			return nil, "", "", notFarmStore{fmt.Errorf("--storage %s does not exist, so it is not the farm's store: the farm's coordinator %s has store %s; give the farm's --storage (nothing was created)",
				*ff.storage, h, h.StoreID)}
		}
		if st, err = ff.store(ctx); err == nil {
			made, _ = storage.LocalRoot(st)
		}
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("storage for the plugin pins, traces and spec: %w", err)
	}
	// The store names itself, and the coordinator compares the name with
	// its own. Made here if the store has none yet: a farm's coordinator
	// that starts after this submission reads the same one; another store
	// keeps one of its own.
	if id, err = storage.ID(ctx, st); err != nil {
		return nil, "", "", err
	}
	return st, id, made, nil
}

// notFarmStore is submitStore's refusal of a store that does not exist
// while the farm's coordinator has one: a usage error (exit 2), found
// before anything is created.
type notFarmStore struct{ error }

// farmCoordinator is the coordinator that holds the farm's lease on the
// NATS system nc reaches, if one does and says its store (ok). Nothing
// learnt (no lease bucket: no coordinator ever ran; no holder; no
// permission to read the bucket; NATS not answering within 5 s) is not
// ok.
func farmCoordinator(ctx context.Context, nc *nats.Conn) (h coordinator.LeaseHolder, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		return h, false
	}
	kv, err := js.KeyValue(ctx, protocol.LeaseBucket)
	if err != nil {
		return h, false
	}
	e, err := kv.Get(ctx, protocol.LeaseKey)
	if err != nil || json.Unmarshal(e.Value(), &h) != nil {
		return h, false
	}
	return h, h.StoreID != ""
}

// refusedStore completes the refusal of a submission staged in store id
// (--storage given): when the farm's coordinator has another store, it says the
// store given, and removes the directory made (submitStore) when this
// submission made it, so that a mistyped --storage leaves nothing behind.
// Any other refusal is err as it is.
func refusedStore(ctx context.Context, nc *nats.Conn, err error, given, id, made string) error {
	h, ok := farmCoordinator(context.WithoutCancel(ctx), nc)
	if !ok || h.StoreID == id {
		return err
	}
	if made == "" {
		return fmt.Errorf("%w (--storage %s)", err, given)
	}
	if rerr := os.RemoveAll(made); rerr != nil {
		return fmt.Errorf("%w (--storage %s, which this submission made: removing it: %v)", err, given, rerr)
	}
	return fmt.Errorf("%w (--storage %s, which this submission made, is removed again)", err, given)
}
