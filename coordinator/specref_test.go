package coordinator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/worker"
)

func jsOf(t *testing.T, e *env) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// campaignEntry is the raw KV entry of a campaign.
func campaignEntry(t *testing.T, e *env, id string) map[string]json.RawMessage {
	t.Helper()
	h, err := protocol.Open(context.Background(), jsOf(t, e), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kve, err := h.Campaigns.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(kve.Value(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpecByReference: a sweep submitted by its storage key (what msjfarm
// submit sends when the sweep does not fit in a NATS message) runs, its
// KV entry holds the key and not the spec, and a coordinator restarted
// mid-campaign resumes it from the stored spec. An inline submission is
// stored under the same content key.
func TestSpecByReference(t *testing.T) {
	e := newEnv(t)
	co, stop := e.startCoordinator(protocol.Layout{AckWait: 2 * time.Second})
	f := loadSpec(t, "testdata/small.yaml")
	ctx := context.Background()
	key, err := protocol.PutSpec(ctx, e.store, f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := co.Submit(ctx, protocol.SubmitRequest{SpecKey: key})
	if err != nil {
		t.Fatal(err)
	}
	m := campaignEntry(t, e, r.Campaign)
	if _, inline := m["spec"]; inline {
		t.Fatalf("the KV entry holds the spec: %s", m["spec"])
	}
	var got string
	if err := json.Unmarshal(m["spec_key"], &got); err != nil || got != key {
		t.Fatalf("spec_key %s (%v), want %q", m["spec_key"], err, key)
	}
	stop()
	co2, _ := e.startCoordinator(protocol.Layout{AckWait: 2 * time.Second})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if s := waitDone(t, co2, r.Campaign, 5*time.Minute); s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	// Inline: the same spec, the same campaign, the same content key.
	r2, err := co2.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil || r2.Campaign != r.Campaign || r2.AlreadyDone != 6 {
		t.Fatalf("inline resubmission %+v, %v", r2, err)
	}
	if m := campaignEntry(t, e, r.Campaign); string(m["spec_key"]) != `"`+key+`"` || m["spec"] != nil {
		t.Fatalf("entry after inline resubmission: spec_key %s, spec %s", m["spec_key"], m["spec"])
	}
}

// TestSpecByReferenceRefused: a key whose object is not the spec it
// names, or no object, is refused, and nothing is written for it.
func TestSpecByReferenceRefused(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	ctx := context.Background()
	f := loadSpec(t, "testdata/small.yaml")
	key, err := protocol.PutSpec(ctx, e.store, f)
	if err != nil {
		t.Fatal(err)
	}
	other := loadSpec(t, "testdata/small.yaml")
	other.Seed++
	data, _ := json.Marshal(other)
	if err := e.store.Put(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	missing := protocol.SpecKey(strings.Repeat("0", 64))
	for _, tc := range []struct{ key, want string }{
		{key, "not to its key"},
		{missing, "reading the sweep spec"},
		{"specs/../campaigns/x.json", "not specs/<sha256>.json"},
	} {
		_, err := co.Submit(ctx, protocol.SubmitRequest{SpecKey: tc.key})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("key %s: error %v, want one containing %q", tc.key, err, tc.want)
		}
	}
	keys, _ := objectsWritten(e.store)
	if len(keys) != 1 || keys[0] != key {
		t.Fatalf("stored %v, want only the spec put by the test", keys)
	}
}

// TestInlineSpecEntryResumes: a running campaign whose KV entry holds its
// spec inline (written by coordinators before specs moved to storage)
// is resumed by a coordinator started on that store.
func TestInlineSpecEntryResumes(t *testing.T) {
	e := newEnv(t)
	co, stop := e.startCoordinator(protocol.Layout{})
	ctx := context.Background()
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	// Rewrite the entry as an older coordinator wrote it: the spec inline,
	// no key; and remove the stored spec, so that only the entry has it.
	h, err := protocol.Open(ctx, jsOf(t, e), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kve, err := h.Campaigns.Get(ctx, r.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	var st protocol.CampaignState
	if err := json.Unmarshal(kve.Value(), &st); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, st.SpecKey); err != nil {
		t.Fatal(err)
	}
	st.SpecKey, st.Spec = "", f
	data, _ := json.Marshal(st)
	if _, err := h.Campaigns.Put(ctx, r.Campaign, data); err != nil {
		t.Fatal(err)
	}
	co2, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if s := waitDone(t, co2, r.Campaign, 5*time.Minute); s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
}

// TestCompactReconcileReadsQueued: a compact campaign (ids only, here
// forced on a 6-task one) reads its queued tasks a page of the stream's
// subjects at a time into one bit per task: resubmitted with every task
// queued and none run, nothing is published again; a worker then
// completes each task once.
func TestCompactReconcileReadsQueued(t *testing.T) {
	t.Cleanup(coordinator.SetCompact(2, 2))
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	ctx := context.Background()
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil || r.Published != 6 {
		t.Fatalf("submit %+v, %v", r, err)
	}
	r, err = co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil || r.Published != 0 || r.Queued != 6 {
		t.Fatalf("resubmit with 6 tasks queued: %+v, %v; want 0 published, 6 queued", r, err)
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := cr.total(); n != 6 || mx != 1 {
		t.Fatalf("runs %d (max %d per task), want 6 and 1", n, mx)
	}
}
