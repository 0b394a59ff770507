package coordinator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// finishRunner counts the runs that finished, per task, and holds every
// run after the first pass ones until its context ends (a worker
// stopping): a campaign stopped part way, none of its tasks finished
// twice.
type finishRunner struct {
	mu   sync.Mutex
	pass int // runs let through; <0: all
	runs map[string]int
}

func (r *finishRunner) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	r.mu.Lock()
	hold := r.pass == 0
	if r.pass > 0 {
		r.pass--
	}
	r.mu.Unlock()
	if hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	out, err := worker.InProcess{}.Run(ctx, t, p)
	if err == nil {
		r.mu.Lock()
		if r.runs == nil {
			r.runs = map[string]int{}
		}
		r.runs[t.ID]++
		r.mu.Unlock()
	}
	return out, err
}

func (r *finishRunner) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.runs {
		out[k] = v
	}
	return out
}

// waitStatus polls co's status of id until ok holds (a minute at most).
func waitStatus(t *testing.T, co *coordinator.Coordinator, id string, ok func(*protocol.Status) bool) *protocol.Status {
	t.Helper()
	var s *protocol.Status
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if s, err = co.Status(context.Background(), id); err == nil && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("campaign %s: status %+v, %v after a minute", id, s, err)
		}
	}
}

// TestBadCampaignStateRebuilt: a party on NATS (no storage credentials)
// overwrites the campaigns bucket's entries of a running campaign with
// bytes that do not decode and of a finished one with a state that
// decodes but lies (another campaign's id, negative and huge counts), and
// adds entries of its own. The restarted coordinator lost the running
// campaign from status for good (a log line said it had a bad state).
// Now it trusts neither entry: the running campaign is resumed from its
// manifest in the store and finishes, every task finished exactly once
// over both runs; the finished one is listed done from its manifest;
// both entries are written back readable; a forged entry the store knows
// nothing of is listed as unreadable, saying what to do.
func TestBadCampaignStateRebuilt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinator(protocol.Layout{})
	all := &finishRunner{pass: -1}
	_, stopW := e.startWorker(worker.Options{Concurrency: 2, Runner: all})
	fd := loadSpec(t, "testdata/small.yaml")
	rd, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fd})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, rd.Campaign, 5*time.Minute); s.State != protocol.CampaignDone {
		t.Fatalf("finished campaign: %+v", s)
	}
	stopW()

	// The running campaign: two tasks finish, the rest are held by the
	// worker, given back when it stops.
	fr := loadSpec(t, "testdata/small.yaml")
	fr.Seed++
	first := &finishRunner{pass: 2}
	_, stopW = e.startWorker(worker.Options{Concurrency: 2, Runner: first})
	rr, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fr})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, co, rr.Campaign, func(s *protocol.Status) bool { return s.Done >= 2 })
	stopW()
	stop()

	kv, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	bucket, err := kv.KeyValue(ctx, protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	const forged = "0123456789abcdef"
	for key, value := range map[string]string{
		rr.Campaign: "\x00not a state {",
		rd.Campaign: fmt.Sprintf(`{"id":%q,"state":"running","total":-3,"done":9223372036854775807,"epoch":9223372036854775807,"spec_key":"x"}`, rr.Campaign),
		forged:      `{"id":"0123456789abcdef","state":"done","total":9223372036854775807,"done":9223372036854775807}`,
		"not-an-id": `{"id":"not-an-id","state":"done"}`,
	} {
		if _, err := bucket.Put(ctx, key, []byte(value)); err != nil {
			t.Fatal(err)
		}
	}

	var lines logLines
	co2, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	s, err := co2.Status(ctx, rr.Campaign)
	if err != nil || s.State != protocol.CampaignRunning || s.Total != rr.Tasks || s.Done < 2 || s.Elsewhere != "" {
		t.Fatalf("the running campaign after its entry was overwritten: %+v, %v", s, err)
	}
	if lines.count("campaign "+rr.Campaign+": its entry in NATS's msjfarm_campaigns bucket was not usable (it does not decode") != 1 ||
		lines.count("resumed from its manifest in the store") != 1 {
		t.Fatal("the rebuilt running campaign is not logged once")
	}
	if s, err := co2.Status(ctx, rd.Campaign); err != nil || s.State != protocol.CampaignDone || s.Done != rd.Tasks || s.Total != rd.Tasks {
		t.Fatalf("the finished campaign after its entry was overwritten: %+v, %v", s, err)
	}
	for _, id := range []string{rr.Campaign, rd.Campaign} {
		en, err := bucket.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var st protocol.CampaignState
		if err := json.Unmarshal(en.Value(), &st); err != nil || st.ID != id || st.Total != rd.Tasks || st.Epoch < 0 {
			t.Fatalf("campaign %s: entry not written back: %s (%v)", id, en.Value(), err)
		}
	}
	listed := map[string]protocol.Status{}
	for _, st := range co2.List() {
		listed[st.Campaign] = st
	}
	for _, id := range []string{forged, "not-an-id"} {
		st, ok := listed[id]
		if !ok || st.State != coordinator.StateUnreadable || !strings.Contains(st.Elsewhere, "submit its sweep again") || st.Created.IsZero() {
			t.Fatalf("forged entry %s: listed %v: %+v", id, ok, st)
		}
	}
	if !strings.Contains(listed[forged].Elsewhere, "holds no manifest") || !strings.Contains(listed["not-an-id"].Elsewhere, "not a campaign id") {
		t.Fatalf("the forged entries do not say why: %q, %q", listed[forged].Elsewhere, listed["not-an-id"].Elsewhere)
	}
	if s, err := co2.Status(ctx, forged); err != nil || s.State != coordinator.StateUnreadable {
		t.Fatalf("status of the forged entry: %+v, %v", s, err)
	}

	// An entry written once the coordinator runs is checked when asked for.
	later := "fedcba9876543210"
	if _, err := bucket.Put(ctx, later, []byte(`{"id":"fedcba9876543210","state":"done","failed":-1}`)); err != nil {
		t.Fatal(err)
	}
	if s, err := co2.Status(ctx, later); err != nil || s.State != coordinator.StateUnreadable || !strings.Contains(s.Elsewhere, "negative counts") {
		t.Fatalf("status of an entry written later: %+v, %v", s, err)
	}

	finishOnceEach(t, e, co2, rr, fr, first, "rebuilt campaign")
}

// finishOnceEach runs campaign r (of spec) to its end with a new worker
// and checks that each of its tasks finished exactly once, counting the
// runs of first (the runner before a restart); it returns the new
// worker's counts.
func finishOnceEach(t *testing.T, e *env, co *coordinator.Coordinator, r *protocol.SubmitReply, spec *sweep.File, first *finishRunner, what string) map[string]int {
	t.Helper()
	rest := &finishRunner{pass: -1}
	e.startWorker(worker.Options{Concurrency: 2, Runner: rest})
	fin := waitDone(t, co, r.Campaign, 5*time.Minute)
	if fin.State != protocol.CampaignDone || fin.Done != r.Tasks || fin.Failed != 0 {
		t.Fatalf("%s: %+v", what, fin)
	}
	camp, err := sweep.Expand(spec, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := first.counts(), rest.counts()
	for _, tk := range camp.Tasks {
		if n := a[tk.ID] + b[tk.ID]; n != 1 {
			t.Errorf("task %s finished %d times (%d before the restart), want once", tk.ID, n, a[tk.ID])
		}
	}
	return b
}

// TestStrayRefusalsListed: task messages refused before their campaign
// exists (published ahead of its submission, or naming campaign ids
// nobody submitted) were listed nowhere. They are listed by status under
// the campaign id they name, at most ten ids (a flood of forged messages
// naming new ids is counted, not kept), and a campaign submitted under
// such an id lists its refusal in its own status and finishes, each task
// run once.
func TestStrayRefusalsListed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	w, _ := e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	f := loadSpec(t, "testdata/small.yaml")
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	real := camp.Tasks[0]
	forged := real
	forged.ArrivalRate = 7
	js, _ := jetstream.New(e.nc)
	forge := func(cid string) {
		data, err := json.Marshal(protocol.TaskMsg{Campaign: cid, Task: forged})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, protocol.TaskSubject(cid, real.ID), data); err != nil {
			t.Fatal(err)
		}
	}
	forge(camp.ID)
	s := waitStatus(t, co, camp.ID, func(*protocol.Status) bool { return true })
	if s.State != coordinator.StateUnknown || s.RejectedTotal != 1 || len(s.Rejected) != 1 ||
		!strings.Contains(s.Rejected[0], real.ID) || !strings.Contains(s.Rejected[0], "hashes to") ||
		!strings.Contains(s.Elsewhere, "not a campaign this coordinator knows") || s.Created.IsZero() {
		t.Fatalf("the refusal before the submission: %+v", s)
	}
	// A flood naming 12 more campaigns: ten ids are listed in all.
	for i := range 12 {
		forge(fmt.Sprintf("%016x", i+1))
	}
	var unknown []protocol.Status
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		unknown = unknown[:0]
		for _, st := range co.List() {
			if st.State == coordinator.StateUnknown {
				unknown = append(unknown, st)
			}
		}
		if w.Stats.Terminated.Load() == 13 && len(unknown) == 10 && strings.Contains(unknown[0].Elsewhere, "3 more refused messages") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d messages terminated, unknown campaigns listed: %+v", w.Stats.Terminated.Load(), unknown)
		}
	}

	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	s = waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.State != protocol.CampaignDone || s.Done != len(camp.Tasks) || s.Failed != 0 || s.RejectedTotal != 1 || len(s.Rejected) != 1 || !strings.Contains(s.Rejected[0], real.ID) {
		t.Fatalf("the submitted campaign: %+v", s)
	}
	if n, mx := cr.total(); n != len(camp.Tasks) || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, len(camp.Tasks))
	}
	for _, st := range co.List() {
		if st.Campaign == camp.ID && st.State != protocol.CampaignDone {
			t.Fatalf("the campaign is listed twice: %+v", st)
		}
	}
}

// TestBadStatesBounded: a flood of unusable entries (anyone on NATS may
// write keys without end) lists twenty, and says how many more there are.
func TestBadStatesBounded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.Setup(ctx, js, protocol.Layout{}); err != nil {
		t.Fatal(err)
	}
	bucket, err := js.KeyValue(ctx, protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if _, err := bucket.Put(ctx, fmt.Sprintf("%016x", i), []byte("garbage")); err != nil {
			t.Fatal(err)
		}
	}
	var lines logLines
	co, _ := e.startCoordinatorWith(coordinator.Options{Logf: lines.logf})
	list := co.List()
	if len(list) != 20 {
		t.Fatalf("%d campaigns listed, want 20: %+v", len(list), list)
	}
	for _, s := range list {
		if s.State != coordinator.StateUnreadable || !strings.Contains(s.Elsewhere, "5 more unusable entries") {
			t.Fatalf("listed %+v", s)
		}
	}
	if n := lines.count("is not usable"); n != 20 {
		t.Fatalf("%d entries logged, want 20", n)
	}
}

// TestLyingStateNotTaken: a running campaign's entry rewritten to decode
// with a creation time, an epoch and another store of its own choosing,
// beside a negative count. The campaign is rebuilt from the store, and
// its submission takes none of these: its creation time is the
// manifest's, and its queued messages are not purged as another store's.
func TestLyingStateNotTaken(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinator(protocol.Layout{})
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	s0, err := co.Status(ctx, r.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	js, _ := jetstream.New(e.nc)
	bucket, err := js.KeyValue(ctx, protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	lie := fmt.Sprintf(`{"id":%q,"state":"running","total":-1,"created":"1999-01-01T00:00:00Z","epoch":5,"store":"0123456789abcdef01234567","spec_key":"x"}`, r.Campaign)
	if _, err := bucket.Put(ctx, r.Campaign, []byte(lie)); err != nil {
		t.Fatal(err)
	}
	var lines logLines
	co2, _ := e.startCoordinatorWith(coordinator.Options{Logf: lines.logf})
	s, err := co2.Status(ctx, r.Campaign)
	if err != nil || s.State != protocol.CampaignRunning || !s.Created.Equal(s0.Created) {
		t.Fatalf("rebuilt: %+v, %v; want created %s", s, err, s0.Created)
	}
	if lines.count("queued messages are purged") != 0 || lines.count("0 published, 6 already queued, 0 being published") != 1 {
		t.Fatalf("the campaign's messages were purged or published again: %q", lines.lines)
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if fin := waitDone(t, co2, r.Campaign, 5*time.Minute); fin.Done != r.Tasks || fin.Failed != 0 {
		t.Fatalf("rebuilt campaign: %+v", fin)
	}
	if n, mx := cr.total(); n != r.Tasks || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, r.Tasks)
	}
}

// TestRebuiltCampaignVerifies: a campaign submitted with verify: 1 whose
// entry is then garbled is rebuilt from its manifest with that fraction.
// The fraction was only in the entry: the rebuilt campaign ran without
// verification (status without Verify, a log line saying so). Now the
// manifest records it: the rebuilt campaign samples all six tasks and
// finishes with each verified by a second worker.
func TestRebuiltCampaignVerifies(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinatorWith(verifyOpts(time.Minute))
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The manifest is written once the submission has its task list.
	waitStatus(t, co, r.Campaign, func(s *protocol.Status) bool {
		_, err := e.store.Get(ctx, storage.ManifestKey(r.Campaign))
		return err == nil && s.Verify != nil
	})
	stop()
	js, _ := jetstream.New(e.nc)
	bucket, err := js.KeyValue(ctx, protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.Put(ctx, r.Campaign, []byte("{garbled")); err != nil {
		t.Fatal(err)
	}
	var lines logLines
	o := verifyOpts(time.Minute)
	o.Logf = func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}
	co2, _ := e.startCoordinatorWith(o)
	s, err := co2.Status(ctx, r.Campaign)
	if err != nil || s.State != protocol.CampaignRunning || s.Verify == nil || s.Verify.Sampled != 6 {
		t.Fatalf("rebuilt campaign: %+v (verify %+v), %v; want running with 6 tasks sampled", s, s.Verify, err)
	}
	if lines.count("spot verification 1, as its manifest records") != 1 {
		t.Fatalf("the rebuild does not say it verifies: %q", lines.lines)
	}
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1"})
	e.startWorker(worker.Options{Concurrency: 2, Name: "w2"})
	s = waitDone(t, co2, r.Campaign, 2*time.Minute)
	if v := s.Verify; s.Done != 6 || v == nil || v.Verified != 6 || v.Mismatched+v.Unverified+v.Pending != 0 {
		t.Fatalf("rebuilt campaign finished: %+v, verify %+v; want 6 of 6 verified", s, s.Verify)
	}
	var m archive.Manifest
	data, err := e.store.Get(ctx, storage.ManifestKey(r.Campaign))
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil || m.Verify == nil || *m.Verify != 1 {
		t.Fatalf("final manifest's verify: %v, %v", m.Verify, err)
	}
}

// flipState rewrites campaign id's entry in bucket with edit applied to
// its fields: a state that decodes and passes every check, but lies.
func flipState(t *testing.T, bucket jetstream.KeyValue, id string, edit func(map[string]any)) {
	t.Helper()
	ctx := context.Background()
	en, err := bucket.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(en.Value(), &st); err != nil {
		t.Fatal(err)
	}
	edit(st)
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.Put(ctx, id, data); err != nil {
		t.Fatal(err)
	}
}

// TestLyingStateFlipped: entries that decode and pass every check but
// lie about the state: a finished campaign's flipped to running, a
// running one's to done (with every task counted done), a cancelled
// one's to running. They were trusted at start: the running campaign
// was listed done and never finished, the finished one was finalised
// again, the cancelled one's tasks were published again. Each entry is
// now checked against the campaign's manifest in the store, which wins:
// the finished campaign stays done (not finalised again), the running
// one runs on and finishes with every task finished exactly once, the
// cancelled one stays cancelled with no task published, and the log
// says which entries lied. One pair is not a lie: an entry still running
// beside a done manifest whose report's marker is missing is what a
// coordinator stopped while finalising leaves (manifest, report, entry),
// and that campaign is resumed, finalised again and its report
// published, as before the cross-check (with the store trusted, it had
// stayed done with no report).
func TestLyingStateFlipped(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinator(protocol.Layout{})
	all := &finishRunner{pass: -1}
	_, stopW := e.startWorker(worker.Options{Concurrency: 2, Runner: all})
	rd, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	sd := waitDone(t, co, rd.Campaign, 5*time.Minute)
	if sd.State != protocol.CampaignDone {
		t.Fatalf("finished campaign: %+v", sd)
	}
	fi := loadSpec(t, "testdata/small.yaml")
	fi.Seed += 3
	ri, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fi})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, ri.Campaign, 5*time.Minute); s.State != protocol.CampaignDone {
		t.Fatalf("finished campaign: %+v", s)
	}
	stopW()

	// The cancelled campaign: cancelled once its six messages are queued.
	fc := loadSpec(t, "testdata/small.yaml")
	fc.Seed += 2
	rc, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fc})
	if err != nil {
		t.Fatal(err)
	}
	stream := e.taskStream(t)
	queued := func(id string) int {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(protocol.CampaignFilter(id)))
		if err != nil {
			t.Fatal(err)
		}
		return len(info.State.Subjects)
	}
	waitStatus(t, co, rc.Campaign, func(*protocol.Status) bool { return queued(rc.Campaign) == rc.Tasks })
	if s, err := co.Cancel(ctx, rc.Campaign); err != nil || s.State != protocol.CampaignCancelled {
		t.Fatalf("cancel: %+v, %v", s, err)
	}

	// The running campaign: two tasks finish, the rest are held by the
	// worker, given back when it stops.
	fr := loadSpec(t, "testdata/small.yaml")
	fr.Seed++
	first := &finishRunner{pass: 2}
	_, stopW = e.startWorker(worker.Options{Concurrency: 2, Runner: first})
	rr, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fr})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, co, rr.Campaign, func(s *protocol.Status) bool { return s.Done >= 2 })
	stopW()
	stop()

	js, _ := jetstream.New(e.nc)
	bucket, err := js.KeyValue(ctx, protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	flipState(t, bucket, rd.Campaign, func(st map[string]any) { st["state"] = protocol.CampaignRunning; delete(st, "finished") })
	flipState(t, bucket, ri.Campaign, func(st map[string]any) { st["state"] = protocol.CampaignRunning; delete(st, "finished") })
	flipState(t, bucket, rc.Campaign, func(st map[string]any) { st["state"] = protocol.CampaignRunning; delete(st, "finished") })
	flipState(t, bucket, rr.Campaign, func(st map[string]any) {
		st["state"], st["done"], st["finished"] = protocol.CampaignDone, rr.Tasks, time.Now().UTC()
	})

	// As a coordinator stopped while finalising leaves it: the manifest
	// done, the report not published, the entry running.
	if err := e.store.Delete(ctx, storage.ReportMarkerKey(ri.Campaign)); err != nil {
		t.Fatal(err)
	}

	var lines logLines
	co2, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	if s, err := co2.Status(ctx, rr.Campaign); err != nil || s.State != protocol.CampaignRunning || s.Total != rr.Tasks || s.Done < 2 || s.Done == rr.Tasks {
		t.Fatalf("the running campaign whose entry says done: %+v, %v", s, err)
	}
	if s, err := co2.Status(ctx, rd.Campaign); err != nil || s.State != protocol.CampaignDone || s.Done != rd.Tasks || !s.Finished.Equal(sd.Finished) {
		t.Fatalf("the finished campaign whose entry says running: %+v, %v; want done, finished %s", s, err, sd.Finished)
	}
	if s, err := co2.Status(ctx, rc.Campaign); err != nil || s.State != protocol.CampaignCancelled {
		t.Fatalf("the cancelled campaign whose entry says running: %+v, %v", s, err)
	}
	if n := queued(rc.Campaign); n != 0 {
		t.Fatalf("the cancelled campaign has %d messages queued again", n)
	}
	if lines.count("it says running but its manifest in the store says done") != 1 ||
		lines.count("it says done but its manifest in the store says running") != 1 ||
		lines.count("it says running but its manifest in the store says cancelled") != 1 {
		t.Fatalf("the lying entries are not logged once each: %q", lines.lines)
	}
	if lines.count("campaign "+ri.Campaign+": its entry") != 0 {
		t.Fatalf("the campaign stopped while finalising is taken for a liar: %q", lines.lines)
	}
	if s := waitDone(t, co2, ri.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Done != ri.Tasks {
		t.Fatalf("the campaign stopped while finalising: %+v", s)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := e.store.Stat(ctx, storage.ReportMarkerKey(ri.Campaign)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the report of the campaign stopped while finalising is not published again in 5 minutes")
		}
	}

	b := finishOnceEach(t, e, co2, rr, fr, first, "the running campaign")
	if a := first.counts(); len(b) != rr.Tasks-len(a) {
		t.Errorf("the worker after the restart finished %d tasks, want only the running campaign's %d left", len(b), rr.Tasks-len(a))
	}
	if s, err := co2.Status(ctx, rd.Campaign); err != nil || !s.Finished.Equal(sd.Finished) {
		t.Fatalf("the finished campaign was finalised again: %+v, %v", s, err)
	}
}
