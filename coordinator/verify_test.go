package coordinator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// lyingRunner is a host whose results differ from every other host's: it
// runs the replication and moves the overall mean response time up by one
// ulp, a change no physics check can see (Little's law holds within its
// tolerance) and only a bit-for-bit comparison catches.
// After two runs it waits for gate to close (the honest workers joined),
// so that the honest workers run tasks of their own that the liar may then
// verify.
type lyingRunner struct {
	runs atomic.Int64
	gate chan struct{}
}

func (l *lyingRunner) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	if l.runs.Add(1) > 2 {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out, err := worker.InProcess{}.Run(ctx, t, p)
	if err != nil {
		return out, err
	}
	r := *out.Result
	r.Overall.MeanResponse = math.Nextafter(r.Overall.MeanResponse, math.Inf(1))
	out.Result = &r
	return out, nil
}

// verifyWithLiar submits the small sweep with verify: 1 to co, lets a
// lying worker run its first two tasks alone, then starts two honest
// workers (h1, h2) and waits for the campaign to finish (TestVerifyLyingWorker
// has what should follow).
func verifyWithLiar(t *testing.T, e *env, co *coordinator.Coordinator) (protocol.SubmitReply, *worker.Worker, *protocol.Status) {
	t.Helper()
	lr := &lyingRunner{gate: make(chan struct{})}
	liar, _ := e.startWorker(worker.Options{Concurrency: 1, Name: "liar", Runner: lr})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); liar.Stats.Done.Load() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lying worker ran no task")
		}
	}
	e.startWorker(worker.Options{Concurrency: 1, Name: "h1"})
	e.startWorker(worker.Options{Concurrency: 1, Name: "h2"})
	close(lr.gate)
	return *r, liar, waitDone(t, co, r.Campaign, 120*time.Second)
}

// verifyOpts paces verification for tests: a 100 ms poll, and wait before
// giving up on another worker.
func verifyOpts(wait time.Duration) coordinator.Options {
	return coordinator.Options{VerifyPoll: 100 * time.Millisecond, VerifyWait: wait, VerifyRepublish: time.Second}
}

// honestSummary runs the small sweep without verification on one honest
// worker and returns its summary.csv.
func honestSummary(t *testing.T) []byte {
	t.Helper()
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	e.startWorker(worker.Options{Concurrency: 2, Name: "plain"})
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 60*time.Second); s.Verify != nil {
		t.Fatalf("a campaign without verify reports verification: %+v", s.Verify)
	}
	sum, err := e.store.Get(context.Background(), storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// verifyRecord reads round round of the verification of task tid.
func verifyRecord(t *testing.T, st storage.Store, c, tid string, round int) *record.Record {
	t.Helper()
	data, err := st.Get(context.Background(), protocol.VerifyKey(c, tid, round))
	if err != nil {
		t.Fatalf("verification record %d of %s: %v", round, tid, err)
	}
	rec, err := record.Decode(data, tid)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestVerifyHonestWorkers: with verify: 1 every task of the 6-task sweep
// is run a second time on the other worker; all agree bit for bit, the
// summary is the one of a run without verification byte for byte, and
// no task is counted done twice.
func TestVerifyHonestWorkers(t *testing.T) {
	want := honestSummary(t)
	e := newEnv(t)
	co, _ := e.startCoordinatorWith(verifyOpts(time.Minute))
	var log1, log2 syncBuf
	e.startWorker(worker.Options{Concurrency: 2, Name: "w1", RunLog: &log1})
	e.startWorker(worker.Options{Concurrency: 2, Name: "w2", RunLog: &log2})
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 90*time.Second)
	v := s.Verify
	if s.Done != 6 || v == nil || v.Sampled != 6 || v.Verified != 6 || v.Mismatched+v.Unverified+v.Pending != 0 || len(v.Disagreeing) != 0 {
		t.Fatalf("status %+v, verify %+v; want 6 done, 6 of 6 verified", s, v)
	}
	sum, err := e.store.Get(ctx, storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum, want) {
		t.Fatalf("summary with verification differs from the one without:\n%s\nwant\n%s", sum, want)
	}
	runs := log1.String() + log2.String()
	if n, m := countLines(runs, "done "), countLines(runs, "verify "); n != 6 || m != 6 {
		t.Fatalf("run logs: %d done, %d verify lines; want 6 and 6:\n%s", n, m, runs)
	}
	for _, tid := range taskIDs(t, e.store, r.Campaign) {
		acc, r1 := verifyRecord(t, e.store, r.Campaign, tid, 0), verifyRecord(t, e.store, r.Campaign, tid, 1)
		if acc.Provenance.Worker == r1.Provenance.Worker || r1.Provenance.Worker == "" {
			t.Fatalf("task %s: verified on %q, the worker of the accepted result %q", tid, r1.Provenance.Worker, acc.Provenance.Worker)
		}
	}
	var rep protocol.VerifyReport
	data, err := e.store.Get(ctx, protocol.VerifyReportKey(r.Campaign))
	if err != nil || json.Unmarshal(data, &rep) != nil || len(rep.Tasks) != 6 || rep.Status.Verified != 6 {
		t.Fatalf("verification report: %v\n%s", err, data)
	}
}

// countLines counts the lines of s that start with prefix.
func countLines(s, prefix string) int {
	n := 0
	for l := range strings.Lines(s) {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func taskIDs(t *testing.T, st storage.Store, c string) []string {
	t.Helper()
	keys, err := st.List(context.Background(), storage.ResultsPrefix(c))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(c, k)
		ids = append(ids, tid)
	}
	return ids
}

// TestVerifyLyingWorker: a worker whose results are off by one ulp runs
// the first two tasks alone, then two honest workers join. Every result of
// the liar that is checked (its accepted results and its verification
// runs) disagrees, the third run sides with the honest worker, the liar's
// accepted results are replaced, and the liar alone is named in the
// status, the log and the metrics; the summary is the honest one.
//
// Complexity 23: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestVerifyLyingWorker(t *testing.T) {
	want := honestSummary(t)
	e := newEnv(t)
	var logs syncBuf
	o := verifyOpts(time.Minute)
	o.Logf = func(format string, args ...any) {
		e.t.Logf(format, args...)
		logs.Write([]byte(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"))
	}
	co, _ := e.startCoordinatorWith(o)
	ctx := context.Background()
	r, liar, s := verifyWithLiar(t, e, co)
	v := s.Verify
	lied := int(liar.Stats.Done.Load() + liar.Stats.Verified.Load())
	if s.Done != 6 || v == nil || v.Sampled != 6 || v.Mismatched != lied || v.Verified != 6-lied || v.Unverified+v.Pending != 0 {
		t.Fatalf("status %+v, verify %+v; want 6 done, %d mismatched (the liar's runs), the rest verified", s, v, lied)
	}
	if len(v.Disagreeing) != 1 || !strings.HasPrefix(v.Disagreeing[0], "liar (") {
		t.Fatalf("disagreeing %v, want the liar alone", v.Disagreeing)
	}
	if _, bad := co.VerifyCounts(); bad["liar"] != lied || len(bad) != 1 {
		t.Fatalf("metrics: disagreeing %v, want liar: %d", bad, lied)
	}
	if l := logs.String(); !strings.Contains(l, "VERIFICATION MISMATCH") || !strings.Contains(l, "disagreeing worker(s): liar") {
		t.Fatalf("the log does not name the liar:\n%s", l)
	}
	sum, err := e.store.Get(ctx, storage.SummaryKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum, want) {
		t.Fatalf("summary after verification is not the honest one:\n%s\nwant\n%s", sum, want)
	}
	// verify.json: each run agrees with the result kept, never the liar's
	// (relative to the accepted run, a replaced liar's result "agreed"
	// and the majority did not).
	data, err := e.store.Get(ctx, protocol.VerifyReportKey(r.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	var rep protocol.VerifyReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	for _, vt := range rep.Tasks {
		for _, run := range vt.Runs {
			if run.Agrees == (run.Worker == "liar") {
				t.Errorf("verify.json, task %s: run of %s agrees %v", vt.Task, run.Worker, run.Agrees)
			}
		}
	}
	for _, tid := range taskIDs(t, e.store, r.Campaign) {
		rec, _, err := record.Read(ctx, e.store, r.Campaign, tid)
		if err != nil || rec.Provenance.Worker == "liar" {
			t.Fatalf("task %s: the accepted result is the liar's (%v)", tid, err)
		}
		if verifyRecord(t, e.store, r.Campaign, tid, 0).Provenance.Worker == "liar" {
			if _, err := e.store.Stat(ctx, coordinator.RejectedKey(r.Campaign, tid)); err != nil {
				t.Fatalf("task %s: the liar's outvoted result was not moved aside: %v", tid, err)
			}
		}
	}
}

// TestVerifyNondeterministicCode: three honest workers running a policy
// that is not deterministic give three results for each sampled task.
// The code is named (policy, engine, implementation), not the workers:
// before, all three were reported disagreeing on every task, and their
// metric blamed them.
func TestVerifyNondeterministicCode(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinatorWith(verifyOpts(time.Minute))
	jr := &campaigntest.Jitter{}
	for _, name := range []string{"w1", "w2", "w3"} {
		e.startWorker(worker.Options{Concurrency: 1, Name: name, Runner: jr})
	}
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 120*time.Second)
	v := s.Verify
	if v == nil || v.Sampled != 6 || v.Mismatched != 6 || len(v.Disagreeing) != 0 {
		t.Fatalf("verify %+v: want 6 mismatched, no worker disagreeing", v)
	}
	tasks := 0
	for _, n := range v.Nondeterministic {
		var k int
		if !strings.HasPrefix(n, "policy ") || !strings.Contains(n, ", engine "+sim.Version+", builtin (") {
			t.Fatalf("nondeterministic %q", n)
		}
		fmt.Sscanf(n[strings.LastIndex(n, "(")+1:], "%d", &k)
		tasks += k
	}
	if tasks != 6 {
		t.Fatalf("nondeterministic %v: want 6 tasks in all", v.Nondeterministic)
	}
	if len(v.Findings) == 0 || !strings.Contains(v.Findings[0], "three different results from the same code") {
		t.Fatalf("findings %v", v.Findings)
	}
	if _, bad := co.VerifyCounts(); len(bad) != 0 {
		t.Fatalf("metrics blame workers: %v", bad)
	}
}

// TestVerifyNoSecondWorker: with a single worker no request can be run;
// the campaign finishes after the bounded wait with every sampled task
// unverified, and no request is left in the stream soon after. The wait
// (4 s) is more than twice the republication check (1 s), as the defaults
// are (10 min, 30 s): the lone worker keeps passing the requests on, so
// each check finds them in the stream, and the end of the wait was once
// counted from that check, which put it off for ever.
func TestVerifyNoSecondWorker(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinatorWith(verifyOpts(4 * time.Second))
	w, _ := e.startWorker(worker.Options{Concurrency: 2, Name: "alone"})
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 90*time.Second)
	if v := s.Verify; s.Done != 6 || v == nil || v.Unverified != 6 || v.Verified+v.Mismatched+v.Pending != 0 {
		t.Fatalf("status %+v, verify %+v; want 6 done, 6 unverified", s, s.Verify)
	}
	if n := w.Stats.Verified.Load(); n != 0 {
		t.Fatalf("the only worker verified %d of its own results", n)
	}
	stream := e.taskStream(t)
	// A request a worker was passing on when the wait ended is published
	// once more; the next worker to see it ends it (the campaign is done).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(protocol.VerifyFilter(r.Campaign)))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verification requests left in the stream: %v", info.State.Subjects)
		}
	}
}

// TestVerifyAcrossCoordinatorRestart: the coordinator stops while the
// requests wait for a second worker; the second worker runs them while no
// coordinator runs, and the next coordinator rebuilds the verification
// from storage and finishes the campaign with every task verified.
func TestVerifyAcrossCoordinatorRestart(t *testing.T) {
	e := newEnv(t)
	co, stop := e.startCoordinatorWith(verifyOpts(time.Minute))
	e.startWorker(worker.Options{Concurrency: 2, Name: "first"})
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	stream := e.taskStream(t)
	// Wait until every request is in the stream, not only every record
	// copied: the copy comes first, and a coordinator stopped between the
	// two leaves a request for the next one to publish (on a loaded
	// machine the test used to stop it there).
	published := func() int {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(protocol.VerifyFilter(r.Campaign)))
		if err != nil {
			return 0
		}
		return len(info.State.Subjects)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s, err := co.Status(ctx, r.Campaign)
		if err == nil && s.Done == 6 && s.Verify != nil && s.Verify.Pending == 6 {
			if keys, _ := e.store.List(ctx, protocol.VerifyPrefix(r.Campaign)); len(keys) == 6 && published() == 6 {
				break // every accepted record copied, every request published
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("verification never started: %+v", s)
		}
	}
	stop()
	second, _ := e.startWorker(worker.Options{Concurrency: 2, Name: "second"})
	for deadline := time.Now().Add(60 * time.Second); second.Stats.Verified.Load() < 6; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the second worker ran %d of 6 requests without a coordinator", second.Stats.Verified.Load())
		}
	}
	co2, stop2 := e.startCoordinatorWith(verifyOpts(time.Minute))
	s := waitDone(t, co2, r.Campaign, 60*time.Second)
	if v := s.Verify; s.Done != 6 || v == nil || v.Verified != 6 {
		t.Fatalf("after the restart: status %+v, verify %+v", s, s.Verify)
	}
	if n := second.Stats.Done.Load(); n != 0 {
		t.Fatalf("the second worker completed %d tasks: a verification run counted as a completion", n)
	}
	// A third coordinator knows the finished campaign from its stored
	// state only; its status still reports the verification.
	stop2()
	co3, _ := e.startCoordinatorWith(verifyOpts(time.Minute))
	if s, err := co3.Status(ctx, r.Campaign); err != nil || s.Verify == nil || s.Verify.Verified != 6 {
		t.Fatalf("status after another restart: %v, %+v", err, s)
	}
}

// TestVerifyResubmitRetriesUnverified: a campaign verified with one
// worker ends with every task unverified; once a second worker joins,
// submitting it again with the same fraction verifies every task. It
// stayed unverified: the resubmission kept the outcomes, and its
// requests reused message ids the stream had seen within its duplicate
// window, which the server dropped silently.
func TestVerifyResubmitRetriesUnverified(t *testing.T) {
	e := newEnv(t)
	// One coordinator throughout (a restarted one asked again before the
	// fix), so one wait for both submissions: 15 s, since the second
	// worker's six runs must fit in it on a loaded machine (under -race
	// beside other tests, one of six missed a 4 s wait).
	co, _ := e.startCoordinatorWith(verifyOpts(15 * time.Second))
	e.startWorker(worker.Options{Concurrency: 2, Name: "alone"})
	ctx := context.Background()
	req := protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1}
	r, err := co.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if s := waitDone(t, co, r.Campaign, 90*time.Second); s.Verify == nil || s.Verify.Unverified != 6 {
		t.Fatalf("one worker: verify %+v, want 6 unverified", s.Verify)
	}
	second, _ := e.startWorker(worker.Options{Concurrency: 2, Name: "second"})
	if _, err := co.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 90*time.Second)
	if v := s.Verify; v == nil || v.Verified != 6 || v.Unverified+v.Mismatched+v.Pending != 0 {
		t.Fatalf("submitted again with a second worker: verify %+v, want 6 verified", s.Verify)
	}
	// At least the six: a request republished (verifyOpts: after 1 s)
	// while the loaded machine had not yet run its first copy is run
	// twice (the second record is not written over the first; seen once,
	// 7, in a full run beside a probe).
	if n := second.Stats.Verified.Load(); n < 6 {
		t.Fatalf("the second worker ran %d verifications, want 6 or more", n)
	}
}

// TestVerifyRecordFromExcludedWorker: a round's record written by the
// worker the round excluded (here the accepted record copied in storage
// to round 1, as someone with access to the store could) is moved aside
// and the round requested again; the task is verified by another worker.
// It was counted as verified, the accepted worker confirming itself.
func TestVerifyRecordFromExcludedWorker(t *testing.T) {
	e := newEnv(t)
	var logs syncBuf
	o := verifyOpts(time.Minute)
	o.Logf = logTo(t, &logs)
	co, _ := e.startCoordinatorWith(o)
	e.startWorker(worker.Options{Concurrency: 2, Name: "first"})
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: 1})
	if err != nil {
		t.Fatal(err)
	}
	var tid string
	for deadline := time.Now().Add(60 * time.Second); tid == ""; time.Sleep(50 * time.Millisecond) {
		keys, _ := e.store.List(ctx, protocol.VerifyPrefix(r.Campaign))
		if len(keys) > 0 {
			_, rest, _ := strings.Cut(keys[0], "/verify/")
			tid, _, _ = strings.Cut(rest, ".")
		}
		if time.Now().After(deadline) {
			t.Fatal("no accepted record was copied for verification")
		}
	}
	acc, err := e.store.Get(ctx, protocol.VerifyKey(r.Campaign, tid, 0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutIfAbsent(ctx, protocol.VerifyKey(r.Campaign, tid, 1), acc); err != nil {
		t.Fatal(err)
	}
	e.startWorker(worker.Options{Concurrency: 2, Name: "second"})
	s := waitDone(t, co, r.Campaign, 90*time.Second)
	if v := s.Verify; v == nil || v.Verified != 6 {
		t.Fatalf("verify %+v, want 6 verified", s.Verify)
	}
	if w := verifyRecord(t, e.store, r.Campaign, tid, 1).Provenance.Worker; w != "second" {
		t.Fatalf("task %s verified by %q, want the second worker", tid, w)
	}
	if !strings.Contains(logs.String(), "was written by worker first, whom its round excluded") {
		t.Fatalf("the log does not name the excluded worker's record:\n%s", logs.String())
	}
	// Moved aside under its round (one name per task let a refused round
	// 2 overwrite round 1's).
	if data, err := e.store.Get(ctx, coordinator.RejectedKey(r.Campaign, tid+".verify.1")); err != nil || !bytes.Equal(data, acc) {
		t.Fatalf("the refused round-1 record is not at rejected/%s.verify.1.json: %v", tid, err)
	}
}

// TestVerifyRejectsBadFraction: the fraction is checked before anything
// is written.
func TestVerifyRejectsBadFraction(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	for _, f := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml"), Verify: f})
		if err == nil || !strings.Contains(err.Error(), "verify: must be a fraction in [0, 1]") {
			t.Fatalf("verify %v: %v", f, err)
		}
	}
	if keys, err := e.store.List(context.Background(), "campaigns/"); err != nil || len(keys) != 0 {
		t.Fatalf("a refused submission wrote %v (%v)", keys, err)
	}
}

// taskStream is the environment's task stream, whose subjects the
// verification tests count.
func (e *env) taskStream(t *testing.T) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(context.Background(), protocol.TaskStream)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// TestVerifyLowerFractionKeepsEvidence: a campaign verified in full (a
// lying worker found out on its runs) and then submitted again with a
// lower fraction keeps what the first sample found: the mismatches and the
// liar's name stay in the status and in verify.json, the tasks outside the
// new sample counted as carried, on the same coordinator and on a
// restarted one, and no decided mismatch is announced again as running a
// third time. Before, the resubmission sampled anew and dropped them.
func TestVerifyLowerFractionKeepsEvidence(t *testing.T) {
	e := newEnv(t)
	var logs syncBuf
	o := verifyOpts(time.Minute)
	o.Logf = logTo(t, &logs)
	co, stop := e.startCoordinatorWith(o)
	ctx := context.Background()
	spec := loadSpec(t, "testdata/small.yaml")
	r, _, s := verifyWithLiar(t, e, co)
	first := s.Verify
	thirdRuns := strings.Count(logs.String(), "running it a third time")
	if first == nil || first.Sampled != 6 || first.Mismatched == 0 || len(first.Disagreeing) != 1 {
		t.Fatalf("verified in full: %+v, want mismatches naming the liar", first)
	}
	// 0.2 samples some of the six tasks, not all (the same hash as the
	// run's: sweep.Sampled).
	const lower = 0.2
	in := 0
	for _, tid := range taskIDs(t, e.store, r.Campaign) {
		if sweep.Sampled(lower, spec.Seed, tid) {
			in++
		}
	}
	if in == 6 {
		t.Fatalf("fraction %v samples every task: no task to carry", lower)
	}
	check := func(when string, co *coordinator.Coordinator) {
		t.Helper()
		if _, err := co.Submit(ctx, protocol.SubmitRequest{Spec: spec, Verify: lower}); err != nil {
			t.Fatal(err)
		}
		v := waitDone(t, co, r.Campaign, 120*time.Second).Verify
		if v == nil || v.Fraction != lower || v.Sampled != 6 || v.Carried != 6-in || v.Mismatched != first.Mismatched ||
			v.Verified != first.Verified || !slices.Equal(v.Disagreeing, first.Disagreeing) {
			t.Fatalf("%s, submitted again at %v: %+v, want the first sample's outcomes (%+v) with %d carried", when, lower, v, first, 6-in)
		}
		data, err := e.store.Get(ctx, protocol.VerifyReportKey(r.Campaign))
		if err != nil {
			t.Fatal(err)
		}
		var rep protocol.VerifyReport
		if err := json.Unmarshal(data, &rep); err != nil || len(rep.Tasks) != 6 || rep.Status.Mismatched != first.Mismatched {
			t.Fatalf("%s: verify.json %+v (%v)", when, rep.Status, err)
		}
	}
	check("same coordinator", co)
	stop()
	co2, _ := e.startCoordinatorWith(o)
	check("restarted coordinator", co2)
	// The mismatches decided in the first sample are not told again as
	// if their third run were still to come.
	if n := strings.Count(logs.String(), "running it a third time"); n != thirdRuns {
		t.Errorf("%d more lines say a decided task is run a third time", n-thirdRuns)
	}
}

// TestResubmitKeepsVerify: a campaign submitted with a verification
// fraction and submitted again with none given (KeepVerify: msjfarm
// submit without --verify or a verify in the file, as "submit it again"
// advises) keeps its fraction, and the reply says which is in effect; a
// fraction given, 0 included, still replaces it. The second submission
// turned verification off without a word.
func TestResubmitKeepsVerify(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	ctx := context.Background()
	spec := loadSpec(t, "testdata/small.yaml")
	var id string
	fraction := func() float64 {
		t.Helper()
		s, err := co.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.Verify == nil {
			return 0
		}
		return s.Verify.Fraction
	}
	submit := func(req protocol.SubmitRequest) *protocol.SubmitReply {
		t.Helper()
		req.Spec = spec
		r, err := co.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		id = r.Campaign
		return r
	}
	if r := submit(protocol.SubmitRequest{Verify: 0.5}); r.Verify != 0.5 || fraction() != 0.5 {
		t.Fatalf("submitted at 0.5: reply %v, status %v", r.Verify, fraction())
	}
	if r := submit(protocol.SubmitRequest{KeepVerify: true}); r.Verify != 0.5 || fraction() != 0.5 {
		t.Fatalf("submitted again with no fraction given: reply %v, status %v; want 0.5 kept", r.Verify, fraction())
	}
	if r := submit(protocol.SubmitRequest{Verify: 0}); r.Verify != 0 || fraction() != 0 {
		t.Fatalf("submitted again at 0: reply %v, status %v; want verification off", r.Verify, fraction())
	}
	if r := submit(protocol.SubmitRequest{KeepVerify: true}); r.Verify != 0 || fraction() != 0 {
		t.Fatalf("no fraction given after it was turned off: reply %v, status %v", r.Verify, fraction())
	}
}
