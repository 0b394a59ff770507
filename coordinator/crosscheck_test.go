package coordinator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// campaignsBucket is the msjfarm_campaigns bucket of e's NATS server.
func campaignsBucket(t *testing.T, e *env) jetstream.KeyValue {
	t.Helper()
	bucket, err := jsOf(t, e).KeyValue(context.Background(), protocol.CampaignBucket)
	if err != nil {
		t.Fatal(err)
	}
	return bucket
}

// forgeEntry writes, as anyone holding the farm's NATS credentials can, a
// campaigns-bucket entry for the sweep small.yaml with seed: a state
// that passes every check, under the campaign id the sweep plans to,
// with the sweep inline (a running campaign's entry resumes from it).
func forgeEntry(t *testing.T, e *env, bucket jetstream.KeyValue, seed uint64, state string) (id string, tasks int) {
	t.Helper()
	ctx := context.Background()
	f := loadSpec(t, "testdata/small.yaml")
	f.Seed = seed
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	storeID, err := storage.ID(ctx, e.store)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	st := protocol.CampaignState{ID: camp.ID, Name: f.Name, State: state, Total: len(camp.Tasks), Points: camp.Points,
		Created: now, Spec: f, Store: storeID}
	if state == protocol.CampaignDone {
		st.Done, st.Finished = len(camp.Tasks), now
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucket.Put(ctx, camp.ID, data); err != nil {
		t.Fatal(err)
	}
	return camp.ID, len(camp.Tasks)
}

// TestForgedEntryWithoutManifest: entries written by someone holding the
// farm's NATS credentials, under valid campaign ids the store holds no
// manifest of: a running one with its sweep inline, a done one. They
// were taken as they were: the running one's six tasks were published
// (work nobody submitted, run by the farm's workers), the done one was
// listed done though it never ran. A submission writes the manifest
// before the entry, so neither is trusted now: both are listed
// unreadable, saying the store holds no manifest and to submit again,
// and no task is published. A forged done entry written once the
// coordinator runs is not shown done either when asked for.
func TestForgedEntryWithoutManifest(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := protocol.Setup(ctx, jsOf(t, e), protocol.Layout{}); err != nil {
		t.Fatal(err)
	}
	bucket := campaignsBucket(t, e)
	running, _ := forgeEntry(t, e, bucket, 101, protocol.CampaignRunning)
	done, _ := forgeEntry(t, e, bucket, 102, protocol.CampaignDone)

	var lines logLines
	co, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	// Run resumes the running campaigns, publishing their missing tasks,
	// before it is ready.
	info, err := e.taskStream(t).Info(ctx, jetstream.WithSubjectFilter(protocol.CampaignFilter(running)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(info.State.Subjects); n != 0 {
		t.Fatalf("%d tasks of the forged running entry published", n)
	}
	unreadable := func(what string, s *protocol.Status) {
		t.Helper()
		if s.State != coordinator.StateUnreadable || !strings.Contains(s.Elsewhere, "no manifest in the store") ||
			!strings.Contains(s.Elsewhere, "submit its sweep again") || s.Done != 0 {
			t.Fatalf("%s: %+v", what, s)
		}
	}
	listed := map[string]protocol.Status{}
	for _, s := range co.List() {
		listed[s.Campaign] = s
	}
	if len(listed) != 2 {
		t.Fatalf("listed %+v, want the two forged entries", listed)
	}
	for _, id := range []string{running, done} {
		s := listed[id]
		unreadable("listed "+id, &s)
		st, err := co.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unreadable("status of "+id, st)
		if n := lines.count("campaign " + id + ": its entry in NATS's msjfarm_campaigns bucket is not usable (no manifest in the store"); n != 1 {
			t.Fatalf("campaign %s logged %d times, want once: %q", id, n, lines.lines)
		}
	}

	later, _ := forgeEntry(t, e, bucket, 103, protocol.CampaignDone)
	st, err := co.Status(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	unreadable("status of an entry forged once the coordinator runs", st)
}

// TestDoneEntryCountsCorrected: a done campaign's entry rewritten with
// other counts (4 done and 1 failed of 9 tasks in 5 points, where 6 of 6
// in 2 points finished), another's with another name and end. They were
// trusted: status showed the forger's numbers. Finalisation writes the
// manifest and the entry from one state, so each done entry is compared
// with its manifest at start, and the manifest wins: both are listed as
// they finished, and their entries written back. A third done campaign,
// cancelled (no change: it is finished) by a coordinator that loaded it
// from its entry, is not taken for a liar: that cancel rewrote its
// manifest with no counts (the coordinator had no task list), which the
// entry then disagreed with.
func TestDoneEntryCountsCorrected(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinator(protocol.Layout{})
	_, stopW := e.startWorker(worker.Options{Concurrency: 2})
	var rs []*protocol.SubmitReply
	var fins []*protocol.Status
	for seed := range uint64(3) {
		f := loadSpec(t, "testdata/small.yaml")
		f.Seed += seed
		r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
		if err != nil {
			t.Fatal(err)
		}
		s := waitDone(t, co, r.Campaign, 5*time.Minute)
		if s.State != protocol.CampaignDone || s.Done != 6 || s.Total != 6 {
			t.Fatalf("campaign %s: %+v", r.Campaign, s)
		}
		rs, fins = append(rs, r), append(fins, s)
	}
	stopW()
	stop()
	counts, named, cancelled := rs[0].Campaign, rs[1].Campaign, rs[2].Campaign

	co2, stop2 := e.startCoordinator(protocol.Layout{})
	if s, err := co2.Cancel(ctx, cancelled); err != nil || s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("cancel of a finished campaign: %+v, %v", s, err)
	}
	stop2()

	bucket := campaignsBucket(t, e)
	flipState(t, bucket, counts, func(st map[string]any) {
		st["done"], st["failed"], st["total"], st["points"] = 4, 1, 9, 5
	})
	flipState(t, bucket, named, func(st map[string]any) {
		st["name"], st["finished"] = "forged", time.Now().Add(time.Hour).UTC()
	})

	var lines logLines
	co3, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	for i, r := range rs {
		s, err := co3.Status(ctx, r.Campaign)
		if err != nil || s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 || s.Total != 6 ||
			s.Name != fins[i].Name || !s.Finished.Equal(fins[i].Finished) {
			t.Fatalf("campaign %d (%s): %+v, %v; want done 6 of 6, %q, finished %s", i, r.Campaign, s, err, fins[i].Name, fins[i].Finished)
		}
		en, err := bucket.Get(ctx, r.Campaign)
		if err != nil {
			t.Fatal(err)
		}
		var st protocol.CampaignState
		if err := json.Unmarshal(en.Value(), &st); err != nil || st.Done != 6 || st.Total != 6 || st.Points != 2 || st.Name != fins[i].Name {
			t.Fatalf("campaign %s: entry not written back: %s (%v)", r.Campaign, en.Value(), err)
		}
	}
	if lines.count("campaign "+counts+": its entry in NATS's msjfarm_campaigns bucket was not usable (it counts 4 done and 1 failed of 9 tasks in 5 points, but its manifest in the store records 6 done and 0 failed of 6 tasks in 2 points)") != 1 ||
		lines.count("campaign "+named+`: its entry in NATS's msjfarm_campaigns bucket was not usable (its name "forged"`) != 1 ||
		lines.count("campaign "+cancelled+": its entry") != 0 {
		t.Fatalf("the corrected entries are not logged once each, or the cancelled one is: %q", lines.lines)
	}
}

// manifestRefused is a store that refuses every manifest while refuse is
// set: a coordinator that cannot write a campaign's manifest is one
// stopped before it.
type manifestRefused struct {
	storage.Store
	refuse atomic.Bool
}

func (s *manifestRefused) Put(ctx context.Context, key string, data []byte) error {
	if s.refuse.Load() && strings.HasSuffix(key, "/manifest.json") {
		return fmt.Errorf("storage: put %q: refused by the test", key)
	}
	return s.Store.Put(ctx, key, data)
}

// TestInterruptedSubmission: a submission writes its campaign's manifest
// before the entry that says it runs. The entry came first, and the
// manifest once the task list was generated (minutes for 10^7 tasks): a
// coordinator stopped between them left a first submission's entry
// without a manifest (which is not trusted at start) and a resubmitted
// finished campaign lost, its entry running beside a finished manifest.
// Now a submission whose manifest cannot be written writes no entry:
// none for a new campaign, and a resubmitted finished one stays as it
// was. Stopped between the manifest and the entry, a coordinator leaves
// a running manifest beside the cancelled (or done) entry of the
// campaign submitted again: the manifest was written after the
// cancellation, so the store wins, and the submission runs on from its
// manifest and finishes, each task run once. (A cancelled entry beside a
// running manifest written before the cancellation is a cancel stopped
// half-way, and stays cancelled: TestLyingStateFlipped.)
func TestInterruptedSubmission(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	store := &manifestRefused{Store: e.store}
	e.store = store
	co, stop := e.startCoordinator(protocol.Layout{})
	bucket := campaignsBucket(t, e)

	fd := loadSpec(t, "testdata/small.yaml")
	_, stopW := e.startWorker(worker.Options{Concurrency: 2})
	rd, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fd})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, rd.Campaign, 5*time.Minute)
	stopW()

	store.refuse.Store(true)
	fn := loadSpec(t, "testdata/small.yaml")
	fn.Seed++
	if _, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fn}); err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("a submission whose manifest is refused: %v", err)
	}
	camp, err := sweep.Expand(fn, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if en, err := bucket.Get(ctx, camp.ID); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a new campaign whose manifest was refused has an entry: %v", err)
	} else if en != nil {
		t.Fatalf("entry %s", en.Value())
	}
	if _, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fd}); err == nil {
		t.Fatal("a resubmission whose manifest is refused succeeded")
	}
	en, err := bucket.Get(ctx, rd.Campaign)
	if err != nil {
		t.Fatal(err)
	}
	var st protocol.CampaignState
	if err := json.Unmarshal(en.Value(), &st); err != nil || st.State != protocol.CampaignDone {
		t.Fatalf("the finished campaign submitted again with its manifest refused: entry %s (%v), want done", en.Value(), err)
	}
	store.refuse.Store(false)

	// A cancelled campaign submitted again, the coordinator stopped after
	// the manifest (running, written now) and before the entry.
	fc := loadSpec(t, "testdata/small.yaml")
	fc.Seed += 2
	rc, err := co.Submit(ctx, protocol.SubmitRequest{Spec: fc})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := co.Cancel(ctx, rc.Campaign); err != nil || s.State != protocol.CampaignCancelled {
		t.Fatalf("cancel: %+v, %v", s, err)
	}
	stop()
	data, err := e.store.Get(ctx, storage.ManifestKey(rc.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["state"], m["updated"] = protocol.CampaignRunning, time.Now().UTC()
	delete(m, "finished")
	if data, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Put(ctx, storage.ManifestKey(rc.Campaign), data); err != nil {
		t.Fatal(err)
	}

	var lines logLines
	co2, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}})
	if s, err := co2.Status(ctx, rc.Campaign); err != nil || s.State != protocol.CampaignRunning {
		t.Fatalf("the cancelled campaign submitted again: %+v, %v; want running", s, err)
	}
	if lines.count("it says cancelled but its manifest in the store says running") != 1 || lines.count("resumed from its manifest in the store") != 1 {
		t.Fatalf("the completed submission is not logged once: %q", lines.lines)
	}
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	if s := waitDone(t, co2, rc.Campaign, 5*time.Minute); s.State != protocol.CampaignDone || s.Done != rc.Tasks {
		t.Fatalf("the completed submission: %+v", s)
	}
	if n, mx := cr.total(); n != rc.Tasks || mx != 1 {
		t.Fatalf("%d runs (at most %d of one task), want %d and 1", n, mx, rc.Tasks)
	}
}

// TestFinishedEntryOfAnotherStore: entries written by someone holding
// the farm's NATS credentials, a done one and a cancelled one, each
// naming a made-up store. Entries of another store are not compared with
// a manifest (theirs is in that store), and they were listed with the
// forger's counts and name as if trusted. They are still listed as they
// say, but their status says they belong to another store and were not
// checked against a manifest, at start, in the list, by id, and for one
// written once the coordinator runs.
func TestFinishedEntryOfAnotherStore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := protocol.Setup(ctx, jsOf(t, e), protocol.Layout{}); err != nil {
		t.Fatal(err)
	}
	const made = "0123456789abcdef01234567" // no store's
	bucket := campaignsBucket(t, e)
	forge := func(seed uint64, state string) string {
		id, _ := forgeEntry(t, e, bucket, seed, state)
		flipState(t, bucket, id, func(st map[string]any) {
			st["store"], st["done"], st["failed"], st["total"], st["name"] = made, 900, 3, 1000, "anyone's"
			st["finished"] = time.Now().UTC()
			delete(st, "spec")
		})
		return id
	}
	done, cancelled := forge(111, protocol.CampaignDone), forge(112, protocol.CampaignCancelled)

	co, _ := e.startCoordinator(protocol.Layout{})
	myID, err := storage.ID(ctx, e.store)
	if err != nil {
		t.Fatal(err)
	}
	want := "belongs to store " + made + ", not this coordinator's store " + myID
	said := func(what string, s protocol.Status, state string) {
		t.Helper()
		if s.State != state || s.Done != 900 || s.Name != "anyone's" ||
			!strings.Contains(s.Elsewhere, want) || !strings.Contains(s.Elsewhere, "not checked against its manifest") {
			t.Fatalf("%s: %+v; want %s, its entry's counts, and %q", what, s, state, want)
		}
		if p := s.Problems(); len(p) != 1 || p[0] != s.Elsewhere {
			t.Fatalf("%s: msjfarm status prints %q under it, want the note", what, p)
		}
	}
	listed := map[string]protocol.Status{}
	for _, s := range co.List() {
		listed[s.Campaign] = s
	}
	if len(listed) != 2 {
		t.Fatalf("listed %+v, want the two entries", listed)
	}
	for id, state := range map[string]string{done: protocol.CampaignDone, cancelled: protocol.CampaignCancelled} {
		said("listed "+id, listed[id], state)
		s, err := co.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		said("status of "+id, *s, state)
	}
	later := forge(113, protocol.CampaignDone)
	s, err := co.Status(ctx, later)
	if err != nil {
		t.Fatal(err)
	}
	said("status of an entry forged once the coordinator runs", *s, protocol.CampaignDone)
}

// TestCancelledEntryCountsCorrected: two campaigns cancelled with two of
// their six tasks done. A cancel now records the counts of its task list
// in the entry and the manifest alike (the entry kept its submission's
// zeros). One entry is then rewritten with other counts and name, as
// anyone holding the farm's NATS credentials can: it was listed with
// them, since a cancelled entry's counts were not compared with its
// manifest. At the next start they are: the manifest wins, the entry is
// corrected and written back with one log line, and not declared
// unusable (an entry an older coordinator cancelled differs the same
// way). The other, genuine, stays as it is, without a word, though a
// task state reported since its cancel counts one more task done and it
// was cancelled again (the manifest keeps the counts of the cancel);
// and the corrected one is not corrected again at the start after.
func TestCancelledEntryCountsCorrected(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	co, stop := e.startCoordinator(protocol.Layout{})
	run := &finishRunner{}
	_, stopW := e.startWorker(worker.Options{Concurrency: 2, Runner: run})
	var ids []string
	var names []string
	for seed := range uint64(2) {
		run.mu.Lock()
		run.pass = 2
		run.mu.Unlock()
		f := loadSpec(t, "testdata/small.yaml")
		f.Seed += 10 + seed
		r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			s, err := co.Status(ctx, r.Campaign)
			if err != nil {
				t.Fatal(err)
			}
			if s.Done == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("campaign %s: %+v after five minutes, want 2 done", r.Campaign, s)
			}
		}
		if s, err := co.Cancel(ctx, r.Campaign); err != nil || s.State != protocol.CampaignCancelled || s.Done != 2 {
			t.Fatalf("cancel: %+v, %v", s, err)
		}
		ids, names = append(ids, r.Campaign), append(names, r.Name)
		if seed == 0 {
			continue
		}
		// A task of the cancelled campaign reported done since (a task
		// state anyone on NATS may write), and the campaign cancelled
		// again: its manifest, rewritten, counted one more than its
		// entry, which the next start took for a disagreement.
		camp, err := sweep.Expand(f, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := jsOf(t, e).KeyValue(ctx, protocol.TaskBucket)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range camp.Tasks {
			if _, err := e.store.Stat(ctx, storage.ResultKey(r.Campaign, task.ID)); err == nil {
				continue
			}
			late, _ := json.Marshal(protocol.TaskState{State: protocol.StateDone, Worker: "late", Updated: time.Now().UTC()})
			if _, err := tasks.Put(ctx, protocol.TaskKey(r.Campaign, task.ID), late); err != nil {
				t.Fatal(err)
			}
			break
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if s, err := co.Status(ctx, r.Campaign); err == nil && s.Done == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the late task state is not counted")
			}
		}
		if s, err := co.Cancel(ctx, r.Campaign); err != nil || s.State != protocol.CampaignCancelled {
			t.Fatalf("cancelled again: %+v, %v", s, err)
		}
	}
	stopW()
	stop()
	forged, genuine := ids[0], ids[1]
	bucket := campaignsBucket(t, e)
	entry := func(id string) protocol.CampaignState {
		t.Helper()
		en, err := bucket.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var st protocol.CampaignState
		if err := json.Unmarshal(en.Value(), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	for i, id := range ids {
		if st := entry(id); st.State != protocol.CampaignCancelled || st.Done != 2 || st.Failed != 0 || st.Total != 6 || st.Points != 2 || st.Name != names[i] {
			t.Fatalf("campaign %s: the cancel wrote entry %+v, want 2 done of 6 tasks in 2 points", id, st)
		}
	}
	genuineEntry := entry(genuine)
	flipState(t, bucket, forged, func(st map[string]any) {
		st["done"], st["failed"], st["total"], st["points"], st["name"] = 5, 1, 9, 5, "forged"
	})

	var lines logLines
	logf := func(format string, args ...any) {
		lines.logf(format, args...)
		t.Logf(format, args...)
	}
	co2, stop2 := e.startCoordinatorWith(coordinator.Options{Logf: logf})
	for i, id := range ids {
		s, err := co2.Status(ctx, id)
		if err != nil || s.State != protocol.CampaignCancelled || s.Done != 2 || s.Failed != 0 || s.Total != 6 || s.Name != names[i] || s.Elsewhere != "" {
			t.Fatalf("campaign %s: %+v, %v; want cancelled, 2 done of 6, named %q", id, s, err, names[i])
		}
	}
	if st := entry(forged); st.Done != 2 || st.Failed != 0 || st.Total != 6 || st.Points != 2 || st.Name != names[0] {
		t.Fatalf("the forged entry not written back: %+v", st)
	}
	if got := entry(genuine); got.Done != genuineEntry.Done || !got.Finished.Equal(genuineEntry.Finished) || got.Name != genuineEntry.Name {
		t.Fatalf("the genuine entry was rewritten: %+v, was %+v", got, genuineEntry)
	}
	if lines.count("campaign "+forged+": its cancelled entry in NATS's msjfarm_campaigns bucket counts 5 done and 1 failed of 9 tasks in 5 points, named \"forged\", but its manifest in the store records 2 done and 0 failed of 6 tasks in 2 points") != 1 ||
		lines.count("campaign "+genuine) != 0 || lines.count("not usable") != 0 {
		t.Fatalf("want one line for the forged entry, none for the genuine one, none saying unusable: %q", lines.lines)
	}
	stop2()

	var again logLines
	co3, _ := e.startCoordinatorWith(coordinator.Options{Logf: func(format string, args ...any) {
		again.logf(format, args...)
		t.Logf(format, args...)
	}})
	if s, err := co3.Status(ctx, forged); err != nil || s.Done != 2 || s.Name != names[0] {
		t.Fatalf("at the start after: %+v, %v", s, err)
	}
	if again.count("campaign "+forged) != 0 {
		t.Fatalf("the corrected entry is corrected again: %q", again.lines)
	}
}
