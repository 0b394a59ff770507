package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// waitMalformed polls co's list until its NoCampaign entry satisfies ok
// (two minutes at most) and returns it.
func waitMalformed(t *testing.T, co *coordinator.Coordinator, what string, ok func(*protocol.Status) bool) protocol.Status {
	t.Helper()
	var last protocol.Status
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		for _, s := range co.List() {
			if s.Campaign == coordinator.NoCampaign {
				if last = s; ok(&s) {
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the no-campaign entry after two minutes: %+v", what, last)
		}
	}
}

// checkMalformedLines fails unless every line of s names a message by its
// place and size and quotes nothing of content marker.
func checkMalformedLines(t *testing.T, s *protocol.Status, marker string) {
	t.Helper()
	for _, l := range s.Problems() {
		if strings.Contains(l, marker) || len(l) > 1100 {
			t.Fatalf("a status line quotes the content or is too long (%d bytes): %.300q", len(l), l)
		}
	}
	for _, l := range s.Malformed {
		if !strings.HasPrefix(l, "malformed task message ") && !strings.HasPrefix(l, "malformed or forged verification request ") ||
			!strings.Contains(l, " bytes, published ") {
			t.Fatalf("line %q does not name the message", l)
		}
	}
}

// TestMalformedTaskMessagesListed: task messages that do not decode at
// all (published by anyone holding the farm's NATS credentials) were
// terminated by the worker that drew them and named in its log only:
// status said nothing. Now status lists them by subject, stream
// sequence, size and publication time, quoting nothing of their content:
// under the campaign their subject names (once it is submitted), and
// under "no-campaign" otherwise; a flood of 2,000 is counted, not kept (64 records, ten lines
// an entry, a bounded number of log lines); a restarted coordinator lists
// the same; and the campaign published alongside finishes, each task run
// once.
func TestMalformedTaskMessagesListed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var lines logLines
	logf := func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}
	co, stop := e.startCoordinatorWith(coordinator.Options{Logf: logf})
	var cr countRunner
	w, _ := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	f := loadSpec(t, "testdata/small.yaml")
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	// Before its campaign is submitted: listed under no-campaign, then
	// under the campaign.
	const marker = "SECRET-CONTENT"
	onCamp := protocol.TaskSubject(camp.ID, "garbage")
	if _, err := js.Publish(ctx, onCamp, []byte("\x1b[2J{\x00\xff "+marker+" not json")); err != nil {
		t.Fatal(err)
	}
	nc := waitMalformed(t, co, "before the submission", func(s *protocol.Status) bool { return s.MalformedTotal == 1 })
	if !strings.Contains(nc.Malformed[0], "on "+onCamp+" (") {
		t.Fatalf("before the submission: %+v", nc)
	}
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := co.Status(ctx, r.Campaign); err != nil || s.MalformedTotal != 1 {
		t.Fatalf("the campaign just submitted does not list the message its subject named: %+v, %v", s, err)
	}
	// 4 MiB of random bytes with the marker all through, on a subject
	// naming no campaign.
	big := make([]byte, 4<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for i := 0; i+len(marker) < len(big); i += 4096 {
		copy(big[i:], marker)
	}
	bigAck, err := js.Publish(ctx, "msjfarm.tasks.binary", big)
	if err != nil {
		t.Fatal(err)
	}

	s := waitStatus(t, co, r.Campaign, func(s *protocol.Status) bool { return s.MalformedTotal == 1 })
	if len(s.Malformed) != 1 || !strings.Contains(s.Malformed[0], "on "+onCamp+" (") || !strings.Contains(s.Malformed[0], "invalid character") {
		t.Fatalf("the campaign's malformed message: %+v", s)
	}
	checkMalformedLines(t, s, marker)
	nc = waitMalformed(t, co, "the binary message", func(s *protocol.Status) bool { return s.MalformedTotal == 1 })
	want := fmt.Sprintf("malformed task message %d on msjfarm.tasks.binary (%d bytes, published ", bigAck.Sequence, len(big))
	if len(nc.Malformed) != 1 || !strings.HasPrefix(nc.Malformed[0], want) || nc.State != coordinator.StateMalformed ||
		!strings.Contains(nc.Elsewhere, "terminated 2 task messages that do not decode") || nc.Created.IsZero() {
		t.Fatalf("the binary message: %+v", nc)
	}
	checkMalformedLines(t, &nc, marker)

	fin := waitDone(t, co, r.Campaign, 5*time.Minute)
	if fin.State != protocol.CampaignDone || fin.Done != len(camp.Tasks) || fin.Failed != 0 {
		t.Fatalf("the campaign alongside: %+v", fin)
	}
	if n, mx := cr.total(); n != len(camp.Tasks) || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, len(camp.Tasks))
	}

	// A flood: counted, not kept.
	const flood = 2000
	for i := range flood {
		if _, err := js.PublishAsync(fmt.Sprintf("msjfarm.tasks.flood.%d", i), bytes.Repeat([]byte(marker), 1+i%50)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatal("the flood was not published within two minutes")
	}
	total := fmt.Sprintf("terminated %d task messages that do not decode (the latest %d kept", flood+2, protocol.MalformedSlots)
	nc = waitMalformed(t, co, "the flood", func(s *protocol.Status) bool { return strings.Contains(s.Elsewhere, total) })
	if len(nc.Malformed) != 10 || nc.MalformedTotal != protocol.MalformedSlots || w.Stats.Terminated.Load() != flood+2 {
		t.Fatalf("after the flood (%d terminated): %+v", w.Stats.Terminated.Load(), nc)
	}
	checkMalformedLines(t, &nc, marker)
	if n := lines.count("does not decode"); n > 40 {
		t.Fatalf("%d log lines for the flood", n)
	}
	bucket, err := js.KeyValue(ctx, protocol.TaskBucket)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := bucket.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for k := range keys.Keys() {
		if strings.HasPrefix(k, protocol.MalformedKeyPrefix) {
			n++
		}
	}
	if n != protocol.MalformedSlots {
		t.Fatalf("%d malformed-message keys in the bucket, want %d", n, protocol.MalformedSlots)
	}

	// A restarted coordinator lists the same.
	stop()
	co2, _ := e.startCoordinatorWith(coordinator.Options{Logf: logf})
	nc2 := waitMalformed(t, co2, "after a restart", func(*protocol.Status) bool { return true })
	if nc2.Elsewhere != nc.Elsewhere || strings.Join(nc2.Malformed, "\n") != strings.Join(nc.Malformed, "\n") {
		t.Fatalf("after a restart: %+v\nbefore: %+v", nc2, nc)
	}
	if s, err := co2.Status(ctx, coordinator.NoCampaign); err != nil || s.Elsewhere != nc.Elsewhere {
		t.Fatalf("status %s: %+v, %v", coordinator.NoCampaign, s, err)
	}
	// The list `msjfarm status` asks for over NATS, and the lines it
	// prints under the entry.
	var lr protocol.ListReply
	if err := protocol.Request(ctx, e.nc, protocol.APIList, struct{}{}, &lr); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range lr.Campaigns {
		if s.Campaign == coordinator.NoCampaign {
			got = s.Problems()
		}
	}
	if len(got) != 12 || got[0] != nc.Elsewhere || got[11] != fmt.Sprintf("… and %d more malformed task messages", protocol.MalformedSlots-10) {
		t.Fatalf("the list's lines of %s: %q", coordinator.NoCampaign, got)
	}
}

// TestForgedMalformedRecordsBounded: the malformed-message keys are in a
// bucket anyone on NATS may write. Records with a 300 KB subject full of
// escape sequences, a newline in the worker's name, a negative size and
// counts of 2^63-1 are listed clipped, on one line each, their total
// summed without overflow; keys outside the 64 slots are not taken; a
// refusal forged under the id no-campaign does not take over its entry;
// and deleted keys leave the list.
func TestForgedMalformedRecordsBounded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, _ := e.startCoordinator(protocol.Layout{})
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := js.KeyValue(ctx, protocol.TaskBucket)
	if err != nil {
		t.Fatal(err)
	}
	hugeJSON, err := json.Marshal(strings.Repeat("\x1b]52;c;Y3VybA==\x07", 20000))
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		protocol.MalformedKeyPrefix + "3":  fmt.Sprintf(`{"subject":%s,"seq":5,"size":-7,"error":%s,"worker":"w\nforged line","n":9223372036854775807}`, hugeJSON, hugeJSON),
		protocol.MalformedKeyPrefix + "4":  `{"subject":"msjfarm.tasks.x","seq":6,"size":3,"n":9223372036854775807}`,
		protocol.MalformedKeyPrefix + "64": `{"subject":"msjfarm.tasks.y","seq":7,"size":3,"n":1}`,
		protocol.MalformedKeyPrefix + "07": `{"subject":"msjfarm.tasks.z","seq":8,"size":3,"n":1}`,
		coordinator.NoCampaign + ".abc":    `{"state":"rejected","worker":"w","error":"forged refusal"}`,
	} {
		if _, err := bucket.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}
	total := fmt.Sprintf("terminated %d task messages that do not decode (the latest 2 kept", int64(2*protocol.MaxMalformedCount))
	nc := waitMalformed(t, co, "forged records", func(s *protocol.Status) bool { return strings.Contains(s.Elsewhere, total) })
	if nc.MalformedTotal != 2 || len(nc.Malformed) != 2 || !strings.Contains(nc.Malformed[0], "malformed task message 5 on ") ||
		!strings.Contains(nc.Malformed[0], "(0 bytes") || !strings.HasPrefix(nc.Malformed[1], "malformed task message 6 on msjfarm.tasks.x (3 bytes") || nc.Created.IsZero() {
		t.Fatalf("forged records: %+v", nc)
	}
	for _, l := range nc.Problems() {
		if len(l) > 1100 || strings.ContainsAny(l, "\x1b\x07\n") {
			t.Fatalf("a status line is not clipped to one printable line (%d bytes): %.200q", len(l), l)
		}
	}
	for _, k := range []string{protocol.MalformedKeyPrefix + "3", protocol.MalformedKeyPrefix + "4"} {
		if err := bucket.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		listed := false
		for _, s := range co.List() {
			listed = listed || s.Campaign == coordinator.NoCampaign
		}
		if !listed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the no-campaign entry is still listed a minute after its keys were deleted: %+v", co.List())
		}
	}
}

// TestForgedVerifyRequestsListed: a verification request that does not
// decode, or whose content is not the round of the task its subject
// names, was terminated and named in the worker's log only, as task
// messages were. Both are now listed under the campaign the subject
// names, quoting nothing of their content.
func TestForgedVerifyRequestsListed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, _ := e.startCoordinatorWith(coordinator.Options{})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	const marker = "SECRET-CONTENT"
	garbage := protocol.VerifySubject(r.Campaign, "t1", 1)
	if _, err := js.Publish(ctx, garbage, []byte("\x1b[2J "+marker)); err != nil {
		t.Fatal(err)
	}
	// Decodes, but names another task than its subject (the refusal
	// names the task it names, as a task message's does; the rest of
	// its content is not quoted).
	forged := protocol.VerifySubject(r.Campaign, "t2", 1)
	body, _ := json.Marshal(map[string]any{"campaign": r.Campaign, "round": 1, "task": map[string]any{"id": "t3"}, "exclude": []string{marker}})
	if _, err := js.Publish(ctx, forged, body); err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, co, r.Campaign, func(s *protocol.Status) bool { return s.MalformedTotal == 2 })
	joined := strings.Join(s.Malformed, "\n")
	for _, subj := range []string{garbage, forged} {
		if !strings.Contains(joined, "malformed or forged verification request ") || !strings.Contains(joined, " on "+subj+" (") {
			t.Fatalf("%s not listed: %q", subj, s.Malformed)
		}
	}
	checkMalformedLines(t, s, marker)
}
