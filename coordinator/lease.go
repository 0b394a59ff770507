package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/redact"
)

// The coordinator lease: one coordinator acts on a NATS system at a time.
// Two that both answered requests and finalised campaigns disagreed (with
// different storages one re-published a campaign's tasks for ever), so a
// coordinator holds protocol.LeaseKey in protocol.LeaseBucket while it
// runs. It takes the key with a create-if-absent, renews it every TTL/3
// with an update conditional on its revision, and deletes it (again
// conditionally) when it stops. The bucket's TTL is the lease's, so a
// holder that is killed loses the key TTL after its last renewal, and a
// coordinator standing by (polling every TTL/5, at most 2 s) takes over.
// A stale lease held by a process of this host that no longer exists (a
// coordinator killed and restarted on the same machine) is taken over at
// once.
//
// A holder that finds another holder in the key (its renewals failed for
// longer than the TTL, say during a partition, and another took over)
// stops: Run returns ErrLeaseLost. Failing to reach NATS at all is not
// losing the lease: nobody else can take it meanwhile either.

// DefaultLeaseTTL is the lease's TTL (Options.LeaseTTL).
const DefaultLeaseTTL = 15 * time.Second

// ErrLeaseHeld is returned by Run with Options.NoStandby when another
// coordinator holds the lease.
var ErrLeaseHeld = errors.New("another coordinator holds the lease")

// ErrLeaseLost is returned by Run when another coordinator took the lease
// over while this one ran.
var ErrLeaseLost = errors.New("this coordinator lost its lease")

// LeaseHolder identifies the coordinator holding the lease.
type LeaseHolder struct {
	// ID is unique to one coordinator instance (Host, PID, Started and a
	// random suffix).
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Storage is the coordinator's storage URL, whole but with its
	// credentials masked (leaseStorage). Takeovers compare it to warn
	// about a change of storage.
	Storage string `json:"storage"`
	// StoreID is the identity of the coordinator's store (storage.ID):
	// a standby whose store is another refuses to take over
	// (ErrOtherStore). Empty from coordinators before it.
	StoreID string `json:"store_id,omitempty"`
	// PIDNamespace identifies the process's PID namespace (Linux), so
	// that a PID is only checked for life where it means the same
	// process: two containers may share a host name.
	PIDNamespace string `json:"pid_ns,omitempty"`
	// Boot identifies the machine's boot (Linux's random boot_id): a host
	// name and the initial PID namespace (the same number on every
	// machine) do not tell two machines apart, and a live holder on a
	// cloned VM of the same name was taken for a dead process here and
	// its lease deleted at once.
	Boot string `json:"boot_id,omitempty"`
}

func (h LeaseHolder) String() string {
	return fmt.Sprintf("%s/%d (started %s, storage %s)", h.Host, h.PID, h.Started.UTC().Format(time.RFC3339), h.Storage)
}

// leaseStorage is how a storage URL is recorded in the lease, which
// anyone on the NATS system can read: credentials (a password or token in
// the user information, secret query parameters) are masked, and the rest
// is kept. The query must stay: an S3 URL names its service there
// (s3://bucket?endpoint=host:port), and the same bucket on two endpoints
// is two storages, which the takeover warning has to tell apart. Two URLs
// that differ only in their secrets record the same location.
func leaseStorage(storeURL string) string { return redact.URL(storeURL) }

type lease struct {
	co  *Coordinator
	kv  jetstream.KeyValue
	me  LeaseHolder
	val []byte
	// ttl times renewals and polls: the shorter of own (Options.LeaseTTL)
	// and the bucket's.
	ttl, own time.Duration
	rev      uint64
}

func (co *Coordinator) newLease(ctx context.Context) (*lease, error) {
	ttl := co.o.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	kv, bucketTTL, err := co.leaseBucket(ctx, ttl)
	if err != nil {
		return nil, fmt.Errorf("coordinator: lease bucket: %w", err)
	}
	if bucketTTL != ttl {
		co.o.Logf("coordinator: the lease's TTL is %v, its bucket's, made by an earlier coordinator (this one's --lease-ttl %v applies to a bucket it makes; to change it, stop every coordinator and delete the KV bucket %s)", bucketTTL, ttl, protocol.LeaseBucket)
	}
	// Renewals every third of the shorter of the two: the key lives by the
	// bucket's TTL.
	ttl = min(ttl, bucketTTL)
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	now := time.Now()
	ns, _ := os.Readlink("/proc/self/ns/pid")
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	me := LeaseHolder{Host: co.host, PID: os.Getpid(), Started: now, Storage: leaseStorage(co.o.Store.URL()), StoreID: co.storeID, PIDNamespace: ns,
		Boot: strings.TrimSpace(string(boot))}
	me.ID = fmt.Sprintf("%s/%d/%d/%s", me.Host, me.PID, now.UnixNano(), hex.EncodeToString(nonce[:]))
	val, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	return &lease{co: co, kv: kv, me: me, val: val, ttl: ttl, own: ttl}, nil
}

// leaseBucket opens the lease bucket, making it with TTL ttl if it is
// absent, and returns its TTL (the stream's MaxAge), which is the lease's:
// a holder's key expires by it. The bucket is never changed once made.
// A coordinator that set its own TTL on its way in made NATS expire the
// live holder's key (a shorter TTL) and took its place, past the store
// check and --coordinator-standby=false alike, or left a longer one
// behind after it was refused; and one that set it once it held the
// lease had its key expire by the old TTL meanwhile, or renewed by its
// own when the update's answer was lost: two coordinators ready at once
// (TestLeaseNewcomerTTL). The TTL is read until NATS answers, since
// renewals cannot be timed without it.
func (co *Coordinator) leaseBucket(ctx context.Context, ttl time.Duration) (jetstream.KeyValue, time.Duration, error) {
	for {
		kv, err := co.js.KeyValue(ctx, protocol.LeaseBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = co.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: protocol.LeaseBucket, Description: "msjfarm coordinator lease", History: 1,
				TTL: ttl, Storage: jetstream.FileStorage, Replicas: co.o.Layout.Replicas,
			})
			if errors.Is(err, jetstream.ErrBucketExists) { // made meanwhile
				continue
			}
		}
		if err != nil {
			return nil, 0, err
		}
		st, err := kv.Status(ctx)
		if err == nil && st.TTL() <= 0 {
			return nil, 0, fmt.Errorf("the KV bucket %s has no TTL, so a dead holder's lease would never expire: delete it (no coordinator running) and start again", protocol.LeaseBucket)
		}
		if err == nil {
			return kv, st.TTL(), nil
		}
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func (l *lease) poll() time.Duration { return min(max(l.ttl/5, 50*time.Millisecond), 2*time.Second) }

// holder reads the lease key (nil, nil: no lease).
func (l *lease) holder(ctx context.Context) (*LeaseHolder, uint64, error) {
	h, e, err := l.entry(ctx)
	if h == nil {
		return nil, 0, err
	}
	return h, e.Revision(), nil
}

// entry reads the lease key, decoded and as stored (nil, nil, nil: no
// lease).
func (l *lease) entry(ctx context.Context) (*LeaseHolder, jetstream.KeyValueEntry, error) {
	e, err := l.kv.Get(ctx, protocol.LeaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var h LeaseHolder
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		h = LeaseHolder{ID: string(e.Value()), Host: "?", Storage: "?"}
	}
	return &h, e, nil
}

// acquire takes the lease, standing by while another coordinator holds it
// (or returning ErrLeaseHeld with Options.NoStandby).
func (l *lease) acquire(ctx context.Context) error {
	var st acquireState
	for {
		switch step, err := l.attempt(ctx, &st); step {
		case leaseTaken:
			return err
		case leaseAgain:
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.poll()):
		}
	}
}

// leaseStep is what acquire does after an attempt.
type leaseStep int

const (
	leaseWait  leaseStep = iota // held by another: poll again later
	leaseAgain                  // try again at once
	leaseTaken                  // stop: taken, or the error returned
)

// acquireState is what acquire remembers between attempts: whom it said
// it stands by, the holder's storage and store identity, the last error
// logged.
type acquireState struct {
	said, prevStorage, prevStoreID, lastErr string
}

// attempt tries once to create the lease key.
func (l *lease) attempt(ctx context.Context, st *acquireState) (leaseStep, error) {
	rev, err := l.kv.Create(ctx, protocol.LeaseKey, l.val)
	if err == nil {
		l.rev = rev
		l.tookOver(st)
		return leaseTaken, nil
	}
	if ctx.Err() != nil {
		return leaseTaken, ctx.Err()
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		return l.held(ctx, st)
	}
	st.logErr(l, err)
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		// The bucket is gone (NATS's store wiped, the bucket deleted): a
		// standby kept asking a stream that no longer exists for ever.
		if kv, ttl, err := l.co.leaseBucket(ctx, l.own); err == nil {
			l.kv, l.ttl = kv, min(l.own, ttl)
		}
	}
	return leaseWait, nil
}

// held decides what to do about a lease key that exists: the one place
// that takes a dead holder's lease over, refuses (NoStandby) or stands by.
func (l *lease) held(ctx context.Context, st *acquireState) (leaseStep, error) {
	h, e, err := l.entry(ctx)
	if err != nil {
		st.logErr(l, err)
		return leaseWait, nil
	}
	var hrev uint64
	if e != nil {
		hrev = e.Revision()
	}
	if h != nil && h.ID != l.me.ID {
		st.prevStorage, st.prevStoreID = h.Storage, h.StoreID
	}
	switch {
	case h == nil:
		return leaseAgain, nil // expired meanwhile
	case h.ID == l.me.ID: // our create landed, its answer did not
		l.rev = hrev
		return leaseTaken, nil
	case l.deadHere(h):
		l.co.o.Logf("coordinator: the lease holder %s is no longer running on this host; taking over", h)
		_ = l.kv.Delete(ctx, protocol.LeaseKey, jetstream.LastRevision(hrev))
		return leaseAgain, nil
	case h.StoreID != "" && h.StoreID != l.me.StoreID:
		return l.otherStoreHolder(ctx, h, e)
	case l.co.o.NoStandby:
		return leaseTaken, fmt.Errorf("%w: coordinator %s is running on this NATS system; refusing to start a second one (--coordinator-standby=false; with standby it would wait and take over when that one stops)", ErrLeaseHeld, h)
	}
	if s := h.String(); s != st.said {
		l.co.o.Logf("coordinator: coordinator %s holds the lease; standing by", s)
		st.said = s
	}
	return leaseWait, nil
}

// otherStoreHolder decides about a holder on another store: refused once
// it renews its lease (ErrOtherStore), taken over when it lets it expire.
// A holder killed a moment before on the farm's old store (kill -9, a lost
// machine) stopped, for the lease's TTL, every coordinator started on the
// new one, naming a process that no longer ran.
func (l *lease) otherStoreHolder(ctx context.Context, h *LeaseHolder, e jetstream.KeyValueEntry) (leaseStep, error) {
	l.co.o.Logf("coordinator: coordinator %s holds the lease with store %s, not this coordinator's store %s; waiting up to twice the lease's TTL to see whether it runs", h, h.StoreID, l.me.StoreID)
	life, err := protocol.LeaseLive(ctx, l.kv, e, l.poll())
	switch {
	case err != nil:
		return leaseTaken, err
	case life == protocol.LeaseRenewed:
		return leaseTaken, otherStore(h, l.me, "holds the lease on this NATS system and renews it")
	case life == protocol.LeaseStuck:
		return leaseTaken, otherStore(h, l.me, "holds the lease on this NATS system (its key neither renewed nor expired within twice the lease's TTL)")
	}
	l.co.o.Logf("coordinator: the lease of %s (store %s) was not renewed within its TTL: the holder stopped or lost NATS; taking the lease", h, h.StoreID)
	return leaseAgain, nil
}

// deadHere reports whether holder h is a process of this host (same boot
// of the same machine, same PID namespace) that no longer runs.
func (l *lease) deadHere(h *LeaseHolder) bool {
	return h.Host == l.me.Host && h.Boot != "" && h.Boot == l.me.Boot &&
		h.PIDNamespace != "" && h.PIDNamespace == l.me.PIDNamespace &&
		h.PID != l.me.PID && h.PID > 0 && !processAlive(h.PID)
}

// tookOver logs a lease taken after standing by, and a store that
// differs from the previous holder's: by identity when the holder named
// one (then it differs only for a holder that died on this host, since a
// live one on another store is refused), else by URL.
func (l *lease) tookOver(st *acquireState) {
	if st.said != "" {
		l.co.o.Logf("coordinator: took over the lease from %s", st.said)
	}
	if st.prevStoreID != "" && st.prevStoreID != l.me.StoreID || st.prevStoreID == "" && st.prevStorage != "" && st.prevStorage != l.me.Storage {
		l.co.o.Logf("coordinator: WARNING: the previous coordinator used storage %s, this one %s: the campaigns it ran find no results here (start this coordinator with the same --storage)", st.prevStorage, l.me.Storage)
	}
}

// logErr logs an error taking the lease, once until it changes.
func (st *acquireState) logErr(l *lease, err error) {
	if err.Error() != st.lastErr {
		l.co.o.Logf("coordinator: taking the lease: %v (retrying)", err)
		st.lastErr = err.Error()
	}
}

// keep renews the lease until ctx ends; if another coordinator holds it
// it calls lost with ErrLeaseLost and returns.
func (l *lease) keep(ctx context.Context, lost func(error)) {
	tk := time.NewTicker(l.ttl / 3)
	defer tk.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		rctx, cancel := context.WithTimeout(ctx, l.ttl/3)
		err := l.renew(rctx)
		cancel()
		if errors.Is(err, ErrLeaseLost) {
			l.co.o.Logf("coordinator: %v; stopping", err)
			lost(err)
			return
		}
		if err != nil && ctx.Err() == nil && err.Error() != lastErr {
			l.co.o.Logf("coordinator: renewing the lease: %v (retrying)", err)
		}
		if err == nil {
			lastErr = ""
		} else {
			lastErr = err.Error()
		}
	}
}

func (l *lease) renew(ctx context.Context) error {
	rev, err := l.kv.Update(ctx, protocol.LeaseKey, l.val, l.rev)
	if err == nil {
		l.rev = rev
		return nil
	}
	// Failed: find out whose the key is now.
	h, hrev, gerr := l.holder(ctx)
	switch {
	case gerr != nil:
		return fmt.Errorf("%v; reading it: %w", err, gerr)
	case h == nil: // expired (NATS unreachable longer than the TTL): ours again if nobody took it
		rev, err := l.kv.Create(ctx, protocol.LeaseKey, l.val)
		if err == nil {
			l.rev = rev
		}
		return err
	case h.ID == l.me.ID: // our update landed, its answer did not
		l.rev = hrev
		return nil
	}
	return fmt.Errorf("%w: coordinator %s holds it now", ErrLeaseLost, h)
}

// release deletes the lease if it is still ours, so that a coordinator
// standing by takes over at once.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.kv.Delete(ctx, protocol.LeaseKey, jetstream.LastRevision(l.rev))
}

// processAlive reports whether a process pid exists on this host.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
