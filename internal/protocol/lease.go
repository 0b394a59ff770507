package protocol

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaseLife is what LeaseLive saw of a lease holder.
type LeaseLife int

const (
	// LeaseGone: the key expired, or another holder's is there now (the
	// lease is free, or taken by someone else: read it again).
	LeaseGone LeaseLife = iota
	// LeaseRenewed: the holder renewed it: it runs.
	LeaseRenewed
	// LeaseStuck: the key neither changed nor expired for twice the
	// bucket's TTL and a poll while NATS answered. A holder that cannot
	// be shown dead is taken for alive, but it was not seen renewing.
	LeaseStuck
)

// LeaseLive watches the lease entry seen (LeaseKey at seen's revision)
// until its holder shows whether it runs: a live coordinator renews its
// lease every third of the bucket's TTL (a new revision of the same
// value), a dead one leaves it to expire. While NATS does not answer it
// keeps watching, and the time it allows the holder starts again once
// NATS answers: an outage says nothing of the holder (before, a NATS
// restart during the wait read as a live holder, and a coordinator and
// workers on the farm's new store stopped as if on the wrong store).
// ctx's end is returned as its error.
//
// Why: a coordinator or worker on another store than the holder's stops
// (a misconfiguration). Judged on the entry alone, a holder killed a
// moment before (kill -9, a lost machine) stopped, for the lease's TTL,
// every coordinator and worker started on the farm's new store, naming a
// process that no longer ran.
func LeaseLive(ctx context.Context, kv jetstream.KeyValue, seen jetstream.KeyValueEntry, poll time.Duration) (LeaseLife, error) {
	ttl := 15 * time.Second
	if st, err := kv.Status(ctx); err == nil && st.TTL() > 0 {
		ttl = st.TTL()
	}
	allow := 2*ttl + poll // the server expires keys a little after their TTL
	limit := time.Now().Add(allow)
	for {
		select {
		case <-ctx.Done():
			return LeaseGone, ctx.Err()
		case <-time.After(poll):
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a request waits for a reconnect otherwise
		e, err := kv.Get(gctx, LeaseKey)
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return LeaseGone, nil
		case ctx.Err() != nil:
			return LeaseGone, ctx.Err()
		case err != nil: // NATS unavailable: nothing learnt, the wait starts again
			limit = time.Now().Add(allow)
			continue
		case !bytes.Equal(e.Value(), seen.Value()):
			return LeaseGone, nil
		case e.Revision() != seen.Revision():
			return LeaseRenewed, nil
		}
		if time.Now().After(limit) {
			return LeaseStuck, nil
		}
	}
}
