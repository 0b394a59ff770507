package protocol

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LeaseLive watches the lease entry seen (LeaseKey at seen's revision)
// until its holder shows that it runs: a live coordinator renews its
// lease every third of the bucket's TTL (a new revision of the same
// value), a dead one leaves it to expire. It reports true when the entry
// is renewed, false when it is gone or another holder's (then the lease
// is free, or taken by someone else: read it again), and true as well
// when neither happened within twice the TTL and a poll (the server
// expires keys a little after their TTL), since a holder that cannot be
// shown dead is taken for alive. ctx's end is returned as its
// error.
//
// Why: a coordinator or worker on another store than the holder's stops
// (a misconfiguration). Judged on the entry alone, a holder killed a
// moment before (kill -9, a lost machine) stopped, for the lease's TTL,
// every coordinator and worker started on the farm's new store, naming a
// process that no longer ran.
func LeaseLive(ctx context.Context, kv jetstream.KeyValue, seen jetstream.KeyValueEntry, poll time.Duration) (bool, error) {
	ttl := 15 * time.Second
	if st, err := kv.Status(ctx); err == nil && st.TTL() > 0 {
		ttl = st.TTL()
	}
	limit := time.Now().Add(2*ttl + poll)
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(poll):
		}
		e, err := kv.Get(ctx, LeaseKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return false, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil: // NATS unavailable for a moment: keep watching
		case !bytes.Equal(e.Value(), seen.Value()):
			return false, nil
		case e.Revision() != seen.Revision():
			return true, nil
		}
		if time.Now().After(limit) {
			return true, nil
		}
	}
}
