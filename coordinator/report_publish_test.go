package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// failAfterStore fails every Put under a campaign's report/ prefix after
// the first n: a coordinator dying in the middle of publishing a report.
type failAfterStore struct {
	storage.Store
	mu sync.Mutex
	n  int
}

func (f *failAfterStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.Contains(key, "/report/") {
		f.mu.Lock()
		f.n--
		fail := f.n < 0
		f.mu.Unlock()
		if fail {
			return errors.New("injected failure")
		}
	}
	return f.Store.Put(ctx, key, data)
}

// TestInterruptedReportRewritten: a report whose publication stopped after
// 3 objects is incomplete (no marker), and the next finalisation of the
// campaign, with the same results, writes it again whole instead of
// keeping it ("results unchanged, report kept" with plots missing was the
// bug).
//
// Complexity 21: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestInterruptedReportRewritten(t *testing.T) {
	e := newEnv(t)
	fs := &failAfterStore{Store: e.store, n: 3}
	co, err := coordinator.New(context.Background(), coordinator.Options{Conn: e.nc, Store: fs,
		Reconcile: 500 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	<-co.Ready()
	_, stopWorker := e.startWorker(worker.Options{Concurrency: 2})
	f := loadSpec(t, "testdata/small.yaml")
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	cancel()
	<-done
	stopWorker()
	bg := context.Background()
	stored, err := e.store.List(bg, storage.ReportPrefix(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 3 {
		t.Fatalf("after the injected failure %d report objects are stored, want 3: %v", len(stored), stored)
	}
	if ok, err := archive.ReportComplete(bg, e.store, r.Campaign); err != nil || ok {
		t.Fatalf("an interrupted report counts as complete (%v, %v)", ok, err)
	}

	var log syncBuf
	co2, err := coordinator.New(bg, coordinator.Options{Conn: e.nc, Store: e.store,
		Reconcile: 500 * time.Millisecond, Logf: func(format string, args ...any) {
			t.Logf(format, args...)
			log.Write([]byte(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(bg)
	done2 := make(chan error, 1)
	go func() { done2 <- co2.Run(ctx2) }()
	t.Cleanup(func() { cancel2(); <-done2 })
	<-co2.Ready()
	if _, err := co2.Submit(bg, protocol.SubmitRequest{Spec: f}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, co2, r.Campaign, 5*time.Minute)
	if ok, err := archive.ReportComplete(bg, e.store, r.Campaign); err != nil || !ok {
		t.Fatalf("the report is still incomplete after a new finalisation (%v, %v); log:\n%s", ok, err, log.String())
	}
	marker, err := e.store.Get(bg, storage.ReportMarkerKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := archive.ParseChecksums(marker)
	if err != nil {
		t.Fatal(err)
	}
	stored, err = e.store.List(bg, storage.ReportPrefix(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(sums)+1 || len(sums) <= 3 {
		t.Fatalf("%d objects stored for a report of %d files", len(stored), len(sums))
	}
	for _, k := range []string{"index.html", "summary.csv"} {
		if _, ok := sums[k]; !ok {
			t.Fatalf("the published report has no %s", k)
		}
	}
	if strings.Contains(log.String(), "report kept") || !strings.Contains(log.String(), "incomplete") {
		t.Fatalf("log does not say the incomplete report was rewritten:\n%s", log.String())
	}
	if left, _ := e.store.List(bg, storage.ReportStagingPrefix(r.Campaign)); len(left) != 0 {
		t.Fatalf("staged objects left behind: %v", left)
	}
}

// TestModifiedResultRerun: a finished campaign records the sha256 of its
// result objects (checksums beside the manifest, its own hash in the
//
// Complexity 21: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
// manifest); one modified afterwards is found when the campaign is
// finalised again, moved aside to rejected/ and run again, so that the
// summary is the original one.
func TestModifiedResultRerun(t *testing.T) {
	e := newEnv(t)
	var log syncBuf
	co, _ := e.startCoordinatorWith(coordinator.Options{Logf: logTo(t, &log)})
	e.startWorker(worker.Options{Concurrency: 2})
	f := loadSpec(t, "testdata/small.yaml")
	bg := context.Background()
	r, err := co.Submit(bg, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	summary, _ := e.store.Get(bg, storage.SummaryKey(r.Campaign))
	checkSums := func() map[string]string {
		t.Helper()
		data, err := e.store.Get(bg, storage.ChecksumsKey(r.Campaign))
		if err != nil {
			t.Fatal(err)
		}
		mj, _ := e.store.Get(bg, storage.ManifestKey(r.Campaign))
		var m archive.Manifest
		if err := json.Unmarshal(mj, &m); err != nil || m.ChecksumsSHA256 != archive.SHA256(data) {
			t.Fatalf("manifest checksums_sha256 %q, the object hashes to %s (%v)", m.ChecksumsSHA256, archive.SHA256(data), err)
		}
		sums, err := archive.ParseChecksums(data)
		if err != nil {
			t.Fatal(err)
		}
		return sums
	}
	sums := checkSums()
	if len(sums) != 2*r.Tasks { // each task: its entry and the stored result
		t.Fatalf("%d checksums for %d tasks", len(sums), r.Tasks)
	}
	keys, _ := e.store.List(bg, storage.ResultsPrefix(r.Campaign))
	tid, _ := storage.ResultTaskID(r.Campaign, keys[0])
	rec, objs, err := record.ReadObjects(bg, e.store, r.Campaign, tid)
	if err != nil || len(objs) != 2 {
		t.Fatalf("%v, %d objects", err, len(objs))
	}
	orig := *rec
	res := *rec.Result
	res.Throughput *= 2
	rec.Result = &res
	forged, _ := json.Marshal(rec)
	if err := e.store.Put(bg, objs[1].Key, forged); err != nil {
		t.Fatal(err)
	}
	if _, err := co.Submit(bg, protocol.SubmitRequest{Spec: f}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	if !strings.Contains(log.String(), objs[1].Key+" was modified after it was written") {
		t.Fatalf("log does not name the modified object %s:\n%s", objs[1].Key, log.String())
	}
	if moved, err := e.store.Get(bg, coordinator.RejectedKey(r.Campaign, tid)); err != nil || !bytes.Equal(moved, forged) {
		t.Fatalf("the modified object was not moved aside (%v)", err)
	}
	// Recomputed: the same numbers (its provenance, times included, is
	// new).
	again, objs2, err := record.ReadObjects(bg, e.store, r.Campaign, tid)
	if err != nil || len(objs2) != 2 || bytes.Equal(objs2[1].Data, forged) {
		t.Fatalf("the task's result was not recomputed (%v)", err)
	}
	if a, b := jsonOf(t, again.Result), jsonOf(t, orig.Result); !bytes.Equal(a, b) {
		t.Fatalf("recomputed result %s, first %s", a, b)
	}
	if again, _ := e.store.Get(bg, storage.SummaryKey(r.Campaign)); !bytes.Equal(again, summary) {
		t.Fatalf("summary changed:\n%s\nwas:\n%s", again, summary)
	}
	if got := checkSums(); got[objs[1].Key] != archive.SHA256(objs2[1].Data) {
		t.Fatal("the new checksums do not record the recomputed result")
	}
}

func jsonOf(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompactCampaign: a campaign held as task ids only (as one of more
// than 2^16 tasks is), published two tasks at a time, runs every task
// once and summarises to the bytes of the same campaign held in full; its
// manifest records the count and the hash of the task list, not the list.
func TestCompactCampaign(t *testing.T) {
	// Each in a subtest, so that its coordinator has stopped (Cleanup)
	// before the sizes change.
	run := func(compact bool) (summary []byte, m archive.Manifest, runs int) {
		t.Run(fmt.Sprintf("compact=%v", compact), func(t *testing.T) {
			if compact {
				t.Cleanup(coordinator.SetCompact(2, 2))
			}
			summary, m, runs = runCampaign(t, compact)
		})
		return
	}
	fullSum, fullM, fullRuns := run(false)
	sum, m, runs := run(true)
	if !bytes.Equal(sum, fullSum) || m.TaskListSHA256 != fullM.TaskListSHA256 || runs != 6 || fullRuns != 6 {
		t.Fatalf("compact campaign: %d runs, summary\n%s\nheld in full: %d runs, summary\n%s", runs, sum, fullRuns, fullSum)
	}
}

func runCampaign(t *testing.T, compact bool) (summary []byte, m archive.Manifest, runs int) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	var cr countRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &cr})
	f := loadSpec(t, "testdata/small.yaml")
	bg := context.Background()
	r, err := co.Submit(bg, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != 6 || r.Published != 6 {
		t.Fatalf("compact %v: submit %+v", compact, r)
	}
	if s := waitDone(t, co, r.Campaign, 5*time.Minute); s.Done != 6 {
		t.Fatalf("compact %v: status %+v", compact, s)
	}
	summary, _ = e.store.Get(bg, storage.SummaryKey(r.Campaign))
	mj, _ := e.store.Get(bg, storage.ManifestKey(r.Campaign))
	if err := json.Unmarshal(mj, &m); err != nil {
		t.Fatal(err)
	}
	if m.TaskListSHA256 != listHash(r.Campaign, e.store, t) || len(m.Seeds) != 0 {
		t.Fatalf("compact %v: manifest task list %s, %d seeds", compact, m.TaskListSHA256, len(m.Seeds))
	}
	n, mx := cr.total()
	if mx != 1 {
		t.Fatalf("compact %v: a task ran %d times", compact, mx)
	}
	return summary, m, n
}

// TestDanglingResultRerun: a finished campaign whose result reference
// points at an object that is gone (another campaign's verification
// outvoted that shared result and moved it aside) runs that task again
// when it is submitted again, and finishes with the same summary. Before,
// the reconcile counted the task as stored and each finalisation found it
// missing and started the next at once: 87,522 finalisations in ten
// minutes, no task published.
func TestDanglingResultRerun(t *testing.T) {
	e := newEnv(t)
	var log syncBuf
	co, _ := e.startCoordinatorWith(coordinator.Options{Logf: logTo(t, &log)})
	w, _ := e.startWorker(worker.Options{Concurrency: 2})
	f := loadSpec(t, "testdata/small.yaml")
	bg := context.Background()
	r, err := co.Submit(bg, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	summary, _ := e.store.Get(bg, storage.SummaryKey(r.Campaign))
	ran := w.Stats.Done.Load()
	keys, _ := e.store.List(bg, storage.ResultsPrefix(r.Campaign))
	tid, _ := storage.ResultTaskID(r.Campaign, keys[0])
	_, objs, err := record.ReadObjects(bg, e.store, r.Campaign, tid)
	if err != nil || len(objs) != 2 {
		t.Fatalf("%v, %d objects", err, len(objs))
	}
	if err := e.store.Delete(bg, objs[1].Key); err != nil { // the shared object, not the reference
		t.Fatal(err)
	}
	if _, err := co.Submit(bg, protocol.SubmitRequest{Spec: f}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	if got := w.Stats.Done.Load() - ran; got != 1 {
		t.Fatalf("%d tasks ran again, want the one whose object was gone", got)
	}
	if n := strings.Count(log.String(), "results missing from storage"); n > 2 {
		t.Fatalf("%d finalisations found results missing: a loop", n)
	}
	if !strings.Contains(log.String(), "the result of task "+tid+" refers to an object that is gone") {
		t.Fatalf("the log does not name the task:\n%s", log.String())
	}
	if _, _, err := record.ReadObjects(bg, e.store, r.Campaign, tid); err != nil {
		t.Fatalf("the task's result was not stored again: %v", err)
	}
	if again, _ := e.store.Get(bg, storage.SummaryKey(r.Campaign)); !bytes.Equal(again, summary) {
		t.Fatalf("summary changed:\n%s\nwas:\n%s", again, summary)
	}
}

// TestWorkerOnACopyOfTheStore: a worker that stores its results elsewhere
// than the coordinator reads them, in a copy of its store (which keeps
// the store's identity, so TestWorkerOnAnotherStore's check cannot see
// it), is diagnosed: after a few finalisations that find the results
// missing, the status asks whether the workers store where the
// coordinator reads, and the next finalisation waits for the periodic
// reconcile. The coordinator finalised, found them missing and
// re-published them 17,113 times a minute, and no status said why.
func TestWorkerOnACopyOfTheStore(t *testing.T) {
	e := newEnv(t)
	var log syncBuf
	co, _ := e.startCoordinatorWith(coordinator.Options{Logf: logTo(t, &log)})
	other, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id, err := storage.ID(context.Background(), e.store)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Put(context.Background(), storage.IDKey, []byte(id+"\n")); err != nil {
		t.Fatal(err)
	}
	wo := worker.Options{Conn: e.nc, Store: other, Concurrency: 2, FetchWait: 200 * time.Millisecond, Logf: t.Logf}
	w, err := worker.New(context.Background(), wo)
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(wctx) }()
	t.Cleanup(func() { wcancel(); <-wdone })
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var s *protocol.Status
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if s, err = co.Status(context.Background(), r.Campaign); err == nil && s.Finalising != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no diagnosis in the status: %+v\n%s", s, log.String())
		}
	}
	if !strings.Contains(s.Finalising, "found results missing from storage after workers had reported them stored: do the workers store where the coordinator reads ("+e.store.URL()+")?") {
		t.Fatalf("status says %q", s.Finalising)
	}
	if s.State != protocol.CampaignRunning {
		t.Fatalf("state %s, want running", s.State)
	}
}

// logTo is a coordinator's Logf that logs to the test and keeps the lines
// in b.
func logTo(t *testing.T, b *syncBuf) func(string, ...any) {
	return func(format string, args ...any) {
		t.Logf(format, args...)
		b.Write([]byte(fmt.Sprintf(format, args...) + "\n"))
	}
}

// TestWorkerOnAnotherStore: a worker whose store is not the coordinator's
// (storage.ID) stops with ErrOtherStore, naming both stores, having run
// and stored nothing: at its start when a coordinator holds the lease,
// else at its first task, which it gives back. A worker on the
// coordinator's store then completes the campaign. Before, it ran every
// task for nothing (see TestWorkerOnACopyOfTheStore).
func TestWorkerOnAnotherStore(t *testing.T) {
	for _, first := range []string{"coordinator", "worker"} {
		t.Run(first+" first", func(t *testing.T) { testWorkerOnAnotherStore(t, first == "worker") })
	}
}

func testWorkerOnAnotherStore(t *testing.T, workerFirst bool) {
	e := newEnv(t)
	ctx := context.Background()
	other, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var co *coordinator.Coordinator
	if !workerFirst {
		co, _ = e.startCoordinatorWith(coordinator.Options{})
	} else if _, err := protocol.Setup(ctx, jsOf(t, e), protocol.Layout{}); err != nil {
		t.Fatal(err)
	}
	w, wdone, _ := e.runWorkerOn(other, "elsewhere")
	if workerFirst {
		time.Sleep(200 * time.Millisecond) // past its start
		co, _ = e.startCoordinatorWith(coordinator.Options{})
	}
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-wdone:
		mine, _ := storage.ID(ctx, other)
		theirs, _ := storage.ID(ctx, e.store)
		if !errors.Is(err, worker.ErrOtherStore) || !strings.Contains(err.Error(), other.URL()) ||
			!strings.Contains(err.Error(), mine) || !strings.Contains(err.Error(), theirs) ||
			strings.Contains(err.Error(), "given back") != workerFirst {
			t.Fatalf("worker.Run: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("the worker on another store did not stop")
	}
	if n := w.Stats.Done.Load(); n != 0 {
		t.Errorf("the worker on another store ran %d tasks", n)
	}
	if keys, _ := other.List(ctx, "campaigns/"); len(keys) != 0 {
		t.Errorf("the other store holds %v", keys)
	}
	e.startWorker(worker.Options{Concurrency: 2})
	if s := waitDone(t, co, r.Campaign, 2*time.Minute); s.State != protocol.CampaignDone || s.Done != s.Total || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
}

// TestWorkerOnAnotherStoreWhileNoCoordinator: a worker on another store,
// started while no coordinator holds the lease, holds the messages it
// fetched (kept alive) instead of giving them back, which spent a delivery
// each time: every queued task failed at MaxDeliver before the coordinator
// was back. Once one is, the worker stops; a worker on the right store
// completes the campaign with nothing failed.
func TestWorkerOnAnotherStoreWhileNoCoordinator(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	layout := protocol.Layout{MaxDeliver: 2}
	co, stop := e.startCoordinatorWith(coordinator.Options{Layout: layout})
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	stop() // in order: the lease is released
	other, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w, wdone, _ := e.runWorkerOn(other, "elsewhere")
	time.Sleep(3 * time.Second)
	select {
	case err := <-wdone:
		t.Fatalf("the worker stopped with no coordinator to compare with: %v", err)
	default:
	}
	if n := w.Stats.GivenBack.Load(); n != 0 {
		t.Fatalf("the worker gave %d messages back with no coordinator (each a delivery spent)", n)
	}
	co, _ = e.startCoordinatorWith(coordinator.Options{Layout: layout})
	select {
	case err := <-wdone:
		if !errors.Is(err, worker.ErrOtherStore) {
			t.Fatalf("worker.Run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the worker on another store did not stop once a coordinator held the lease")
	}
	e.startWorker(worker.Options{Concurrency: 2})
	if s := waitDone(t, co, r.Campaign, 2*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
}

// TestStoreIDKept: the store's identity object deleted while the farm
// runs (a bucket cleared) is put back by the coordinator at its next
// reconcile; rewritten, it is warned of once; and a running worker whose
// store's identity changed under it (the coordinator restarted with the
// new one) reads it again and goes on, where it stopped as a worker on
// the wrong store.
func TestStoreIDKept(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var log syncBuf
	co, stop := e.startCoordinatorWith(coordinator.Options{Logf: logTo(t, &log)})
	id, err := storage.ID(ctx, e.store)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := e.startWorker(worker.Options{Concurrency: 2})
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 2*time.Minute)
	if err := e.store.Delete(ctx, storage.IDKey); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if data, err := e.store.Get(ctx, storage.IDKey); err == nil {
			if string(data) != id+"\n" {
				t.Fatalf("store-id put back as %q, want %q", data, id)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted store-id was not put back")
		}
	}
	if !strings.Contains(log.String(), "was gone from "+e.store.URL()+": restored (store "+id+")") {
		t.Fatalf("the restoration is not logged:\n%s", log.String())
	}
	const other = "0123456789abcdef01234567"
	if err := e.store.Put(ctx, storage.IDKey, []byte(other+"\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(log.String(), `now says "`+other+`"`) != 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the rewritten store-id is not warned of once:\n%s", log.String())
		}
	}
	time.Sleep(time.Second) // more reconciles: still once
	if n := strings.Count(log.String(), `now says "`+other+`"`); n != 1 {
		t.Fatalf("warned %d times", n)
	}
	// The coordinator restarts with the new identity; the running worker
	// still holds the old one.
	stop()
	co, _ = e.startCoordinatorWith(coordinator.Options{})
	f := loadSpec(t, "testdata/small.yaml")
	f.Name, f.Seed = "again", 99
	r, err = co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 2*time.Minute); s.State != protocol.CampaignDone || s.Done != 6 {
		t.Fatalf("status %+v", s)
	}
	if n := w.Stats.Done.Load(); n < 7 {
		t.Fatalf("the running worker did %d tasks, want the second campaign's too", n)
	}
}
