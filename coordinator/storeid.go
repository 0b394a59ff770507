package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// ErrOtherStore is returned by Run when the coordinator holding the lease
// uses another store than this one (storage.ID): taking its place would
// have left every campaign it ran without results (this coordinator reads
// another store) and republished their tasks for ever.
var ErrOtherStore = errors.New("the coordinator holding the lease uses another store")

// readStoreID reads the store's identity into co.storeID, waiting while
// the store is unavailable (a coordinator started before its MinIO); any
// other error (a damaged identity, no permission) is returned.
func (co *Coordinator) readStoreID(ctx context.Context) error {
	logged := ""
	for {
		id, err := storage.ID(ctx, co.o.Store)
		switch {
		case err == nil:
			co.storeID = id
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !storage.IsUnavailable(err):
			return fmt.Errorf("coordinator: %w", err)
		case err.Error() != logged:
			co.o.Logf("coordinator: waiting for storage: %v", err)
			logged = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// otherStore is the error of a standby whose store is not the holder's.
func otherStore(holder *LeaseHolder, me LeaseHolder, holds string) error {
	return fmt.Errorf("%w: coordinator %s %s, with store %s; this coordinator's storage %s is store %s, which holds none of its campaigns' results: start it with the holder's --storage (a copy of that store keeps its identity)",
		ErrOtherStore, holder, holds, holder.StoreID, me.Storage, me.StoreID)
}

// leaveOtherStore purges the queued messages of campaign id when its state
// (old) says it ran on another store, as a submission to this coordinator
// moves it here: they name that store, and each would stop the worker on
// this store that fetched it (worker.ErrOtherStore). Its tasks are
// published again, in a new epoch.
func (co *Coordinator) leaveOtherStore(ctx context.Context, id string, old protocol.CampaignState) error {
	if old.Store == "" || old.Store == co.storeID {
		return nil
	}
	if err := co.h.Tasks.Purge(ctx, jetstream.WithPurgeSubject(protocol.CampaignFilter(id))); err != nil {
		return fmt.Errorf("purging the messages of campaign %s, which ran on store %s: %w", id, old.Store, err)
	}
	co.o.Logf("coordinator: campaign %s ran on store %s: its queued messages are purged, and it runs on this coordinator's store %s (%s) from now on", id, old.Store, co.storeID, co.o.Store.URL())
	return nil
}

// keepStoreID puts the store's identity back when its object is gone (a
// bucket cleared while the farm ran: the next process to ask would have
// made a new identity, and every worker holding the old one would have
// stopped as a worker on the wrong store), and warns, once per value,
// when the object names another store than the one this coordinator read.
// Called at each reconcile.
func (co *Coordinator) keepStoreID(ctx context.Context) {
	now, err := storage.ReadID(ctx, co.o.Store)
	var wrong string // what is wrong with the object now ("" nothing)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		made, err := co.o.Store.PutIfAbsent(ctx, storage.IDKey, []byte(co.storeID+"\n"))
		if err == nil && made {
			co.o.Logf("coordinator: the store's identity object %s was gone from %s: restored (store %s)", storage.IDKey, co.o.Store.URL(), co.storeID)
		}
		return
	case storage.IsUnavailable(err):
		return
	case err != nil:
		wrong = err.Error()
	case now != co.storeID:
		wrong = fmt.Sprintf("the store's identity object %s in %s now says %q, not store %s as when this coordinator started", storage.IDKey, co.o.Store.URL(), now, co.storeID)
	}
	co.mu.Lock()
	said := co.storeIDSaid
	co.storeIDSaid = wrong
	co.mu.Unlock()
	if wrong != "" && wrong != said {
		co.o.Logf("coordinator: WARNING: %s: workers that read it are refused; write %s back into it", wrong, co.storeID)
	}
}
