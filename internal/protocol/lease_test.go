package protocol_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
)

// leaseBucket makes the lease bucket with TTL ttl on a real nats-server
// and puts a holder's entry in it.
func leaseBucket(t *testing.T, url string, ttl time.Duration) (jetstream.KeyValue, jetstream.KeyValueEntry) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx := t.Context()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: protocol.LeaseBucket, History: 1, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, protocol.LeaseKey, []byte(`{"id":"holder"}`)); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, protocol.LeaseKey)
	if err != nil {
		t.Fatal(err)
	}
	return kv, e
}

// TestLeaseLive: a holder that renews its entry is seen renewing; one that
// lets it expire is seen gone; and a NATS restart during the wait, longer
// than the wait allows, says nothing of the holder: the watch goes on and
// finds the entry gone once NATS is back (the holder died meanwhile).
// Before, the outage ended the wait as if the holder ran, and a
// coordinator and workers on the farm's new store stopped as if on the
// wrong store.
func TestLeaseLive(t *testing.T) {
	const ttl, poll = time.Second, 100 * time.Millisecond
	t.Run("renewed", func(t *testing.T) {
		kv, e := leaseBucket(t, natstest.StartBinary(t).URL, ttl)
		go func() {
			time.Sleep(300 * time.Millisecond)
			_, _ = kv.Update(context.Background(), protocol.LeaseKey, e.Value(), e.Revision())
		}()
		if life, err := protocol.LeaseLive(t.Context(), kv, e, poll); err != nil || life != protocol.LeaseRenewed {
			t.Fatalf("renewed: %v, %v", life, err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		kv, e := leaseBucket(t, natstest.StartBinary(t).URL, ttl)
		if life, err := protocol.LeaseLive(t.Context(), kv, e, poll); err != nil || life != protocol.LeaseGone {
			t.Fatalf("expired: %v, %v", life, err)
		}
	})
	t.Run("nats restarted", func(t *testing.T) {
		srv := natstest.StartBinary(t)
		kv, e := leaseBucket(t, srv.URL, ttl)
		type answer struct {
			life protocol.LeaseLife
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			life, err := protocol.LeaseLive(t.Context(), kv, e, poll)
			got <- answer{life, err}
		}()
		time.Sleep(2 * poll) // it has read the bucket's TTL
		srv.Stop()
		// Down for longer than the wait allows (2 TTLs and a poll), and
		// than a few of its reads.
		time.Sleep(3*ttl + 3*time.Second)
		select {
		case a := <-got:
			t.Fatalf("the watch ended while NATS was down: %v, %v", a.life, a.err)
		default:
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-got:
			if a.err != nil || a.life != protocol.LeaseGone {
				t.Fatalf("after the restart: %v, %v; want the entry gone (it expired)", a.life, a.err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no answer a minute after NATS was back")
		}
	})
	// The key expired during the outage but its holder runs: once NATS is
	// back, its renewal finds the key gone and creates it again. That is
	// a live holder (before, the key's absence was taken for a dead one,
	// and a newcomer on another store took the lease from it).
	t.Run("nats restarted, holder back", func(t *testing.T) {
		srv := natstest.StartBinary(t)
		kv, e := leaseBucket(t, srv.URL, ttl)
		got := make(chan protocol.LeaseLife, 1)
		go func() {
			life, _ := protocol.LeaseLive(t.Context(), kv, e, poll)
			got <- life
		}()
		time.Sleep(2 * poll)
		srv.Stop()
		time.Sleep(3*ttl + 3*time.Second)
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := kv.Create(t.Context(), protocol.LeaseKey, e.Value()); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the holder could not put its key back")
			}
		}
		select {
		case life := <-got:
			if life != protocol.LeaseRenewed {
				t.Fatalf("the holder put its key back after the outage: %v, want renewed", life)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no answer a minute after NATS was back")
		}
	})
}
