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
// lease every third of the bucket's TTL at most (a new revision of the
// same value), a dead one leaves it to expire.
//
// NATS not answering says nothing of the holder, so it is never a
// verdict. While NATS does not answer the watch goes on, and the time it
// allows starts again once it does (a NATS restart during the wait had
// read as a live holder, and the farm's new store refused). A key found
// gone after NATS did not answer may have expired during the outage while
// its holder still runs, so the holder is given that time again to put
// it back (renew finds it gone and creates it) before it is called gone
// (a newcomer on another store took the lease from the live holder after
// an outage longer than the TTL). The time allowed is counted from the
// bucket's TTL, read before any verdict (a TTL read that failed made a
// 15 s guess, and a 1-hour holder was refused as stuck after 37 s).
// ctx's end is returned as its error.
//
// Why: a coordinator or worker on another store than the holder's stops
// (a misconfiguration). Judged on the entry alone, a holder killed a
// moment before (kill -9, a lost machine) stopped, for the lease's TTL,
// every coordinator and worker started on the farm's new store, naming a
// process that no longer ran.
func LeaseLive(ctx context.Context, kv jetstream.KeyValue, seen jetstream.KeyValueEntry, poll time.Duration) (LeaseLife, error) {
	var allow time.Duration // 2 TTLs and a poll once the TTL is known (the server expires keys a little late)
	var limit time.Time
	// outage: NATS did not answer since the key was last seen; back: the
	// key vanished after an outage, and its holder may put it back.
	outage, back := false, false
	for {
		select {
		case <-ctx.Done():
			return LeaseGone, ctx.Err()
		case <-time.After(poll):
		}
		gctx, cancel := context.WithTimeout(ctx, 2*time.Second) // a request waits for a reconnect otherwise
		if allow == 0 {
			if st, err := kv.Status(gctx); err == nil && st.TTL() > 0 {
				allow = 2*st.TTL() + poll
				limit = time.Now().Add(allow)
			}
		}
		e, err := kv.Get(gctx, LeaseKey)
		cancel()
		switch {
		case ctx.Err() != nil:
			return LeaseGone, ctx.Err()
		case err != nil && !errors.Is(err, jetstream.ErrKeyNotFound):
			// NATS unavailable: nothing learnt, the wait starts again.
			outage = true
			limit = time.Now().Add(allow)
			continue
		case err != nil: // the key is gone
			switch {
			case allow == 0: // no verdict before the TTL is known
			case outage: // perhaps expired during the outage: the holder's time to put it back
				outage, back = false, true
				limit = time.Now().Add(allow)
			case !back || time.Now().After(limit):
				return LeaseGone, nil
			}
			continue
		case !bytes.Equal(e.Value(), seen.Value()):
			return LeaseGone, nil // another's: read it again
		case back || e.Revision() != seen.Revision():
			return LeaseRenewed, nil
		}
		if allow != 0 && time.Now().After(limit) {
			return LeaseStuck, nil
		}
	}
}
