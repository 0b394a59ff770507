package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// traceTasks expands a two-policy, two-replication sweep replaying the
// test trace, uploaded to a fresh local store.
func traceTasks(t *testing.T) ([]sweep.Task, storage.Store, []byte) {
	t.Helper()
	data, err := os.ReadFile("../model/swf/testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	ts, st := traceCampaign(t, data, 5, "fcfs", "first-fit")
	return ts, st, data
}

// storedTrace is a new local store holding trace data, and its sha256.
func storedTrace(t *testing.T, data []byte) (storage.Store, string) {
	t.Helper()
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := storage.PutTrace(t.Context(), st, data)
	if err != nil {
		t.Fatal(err)
	}
	return st, sum
}

// traceCampaign stores trace data in a new local store and expands a
// campaign replaying it: two replications of each policy, arrivals each.
func traceCampaign(t *testing.T, data []byte, arrivals int64, policies ...any) ([]sweep.Task, storage.Store) {
	t.Helper()
	st, sum := storedTrace(t, data)
	f := &sweep.File{Name: "tr", Seed: 1, Trace: &sweep.TraceSpec{SHA256: sum, Size: int64(len(data))},
		Policies: policies, Replications: 2, Run: sweep.RunSpec{}}
	f.Run.Arrivals = arrivals
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Tasks, st
}

// TestTraceFetchedOnceParsedOnce: the replications of a trace share one
// fetch, one parse and one workload (concurrent ones too), and the runner
// replays the attached trace.
func TestTraceFetchedOnceParsedOnce(t *testing.T) {
	ts, st, _ := traceTasks(t)
	c := newTraceCache(st, t.TempDir(), 0, t.Logf)
	got := make([]*sim.Workload, len(ts))
	var wg sync.WaitGroup
	for i := range ts {
		wg.Go(func() {
			tr, err := c.get(t.Context(), ts[i].Trace, ts[i].Workload.Servers, ts[i].Workload.Name)
			if err != nil {
				t.Error(err)
			}
			got[i] = tr
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] == nil || got[i] != got[0] {
			t.Fatalf("task %d: trace %p, task 0: %p", i, got[i], got[0])
		}
	}
	if c.Fetches.Load() != 1 || c.Parses.Load() != 1 {
		t.Fatalf("%d fetches, %d parses for %d tasks; want 1 and 1", c.Fetches.Load(), c.Parses.Load(), len(ts))
	}
	out, err := InProcess{}.Run(context.WithValue(t.Context(), traceWorkloadKey{}, got[0]), &ts[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Arrivals == 0 {
		t.Fatalf("result %+v", out.Result)
	}
	// Without an attached trace a runner refuses: it never reads one itself.
	if _, err := (InProcess{}).Run(t.Context(), &ts[0], nil); err == nil || !strings.Contains(err.Error(), ts[0].Trace.SHA256) {
		t.Fatalf("no trace attached: %v", err)
	}
}

// TestTraceTamperedOrMissing: a stored object that is not the pinned
// content (same size, one byte changed; or another size) and a missing
// object are permanent errors naming the hash, and nothing of the bad
// object stays in the cache; a corrupt cached copy is fetched again.
func TestTraceTamperedOrMissing(t *testing.T) {
	ts, st, data := traceTasks(t)
	ref := ts[0].Trace
	key := storage.TraceKey(ref.SHA256)
	dir := t.TempDir()
	permanent := func(want string) {
		t.Helper()
		c := newTraceCache(st, dir, 0, t.Logf)
		_, err := c.get(t.Context(), ref, 0, "tr")
		var perm *PermanentError
		if !errors.As(err, &perm) || !strings.Contains(err.Error(), ref.SHA256) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v, want a permanent error naming %s and %q", err, ref.SHA256, want)
		}
		if _, err := os.Stat(filepath.Join(dir, ref.SHA256)); err == nil {
			t.Fatal("the bad trace was kept in the cache")
		}
		t.Log(err)
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)-2] ^= 1
	if err := st.Put(t.Context(), key, bad); err != nil {
		t.Fatal(err)
	}
	permanent("corrupt or tampered")
	if err := st.Put(t.Context(), key, append(bad, '\n')); err != nil {
		t.Fatal(err)
	}
	permanent("bytes where the task pins")
	if err := st.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	permanent("has no object")

	// A cached copy that is not its content is replaced by a fresh fetch.
	if _, _, err := storage.PutTrace(t.Context(), st, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ref.SHA256), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newTraceCache(st, dir, 0, t.Logf)
	if _, err := c.get(t.Context(), ref, 0, "tr"); err != nil || c.Fetches.Load() != 1 {
		t.Fatalf("corrupt cached copy: %v, %d fetches", err, c.Fetches.Load())
	}
	// Over the worker's limit: refused before any download.
	c = newTraceCache(st, t.TempDir(), 100, t.Logf)
	if _, err := c.get(t.Context(), ref, 0, "tr"); err == nil || !strings.Contains(err.Error(), "limit of 100") || c.Fetches.Load() != 0 {
		t.Fatalf("over the limit: %v", err)
	}
}

// TestTraceStorageErrorRetried: a storage error other than a missing
// object is not permanent (another attempt may reach the storage).
func TestTraceStorageErrorRetried(t *testing.T) {
	ts, st, _ := traceTasks(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c := newTraceCache(failingStore{st}, t.TempDir(), 0, t.Logf)
	_, err := c.get(ctx, ts[0].Trace, 0, "tr")
	var perm *PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("err %v, want a transient error", err)
	}
	// And the failure is not cached.
	c.store = st
	if _, err := c.get(t.Context(), ts[0].Trace, 0, "tr"); err != nil {
		t.Fatal(err)
	}
}

type failingStore struct{ storage.Store }

func (failingStore) Stat(ctx context.Context, key string) (storage.Info, error) {
	return storage.Info{}, errors.New("storage unreachable")
}

// TestParsedTracesBounded: at most maxParsedTraces parsed traces stay in
// memory; an evicted one is parsed again from the disk cache, not
// fetched again.
func TestParsedTracesBounded(t *testing.T) {
	_, st, data := traceTasks(t)
	c := newTraceCache(st, t.TempDir(), 0, t.Logf)
	var refs []*sweep.TraceRef
	for i := range maxParsedTraces + 2 {
		d := append(append([]byte(nil), data...), []byte(strings.Repeat(";\n", i+1))...)
		sum, _, err := storage.PutTrace(t.Context(), st, d)
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, &sweep.TraceRef{SHA256: sum, Size: int64(len(d)), TimeScale: 1})
	}
	for _, r := range refs {
		if _, err := c.get(t.Context(), r, 0, "tr"); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n, shapes := len(c.parsed), len(c.shapes)
	c.mu.Unlock()
	if n > maxParsedTraces || shapes > maxParsedTraces {
		t.Fatalf("%d parsed traces and %d shapes kept, limit %d", n, shapes, maxParsedTraces)
	}
	if _, err := c.get(t.Context(), refs[0], 0, "tr"); err != nil {
		t.Fatal(err)
	}
	if f, p := c.Fetches.Load(), c.Parses.Load(); f != int64(len(refs)) || p != int64(len(refs))+1 {
		t.Fatalf("%d fetches, %d parses; want %d and %d", f, p, len(refs), len(refs)+1)
	}
}

// TestTraceReplicationsShareOneWorkload: the replications of a trace that
// a worker runs at once replay one read-only workload, and the worker
// keeps that alone of the trace: 40 bytes a job (the 32 of its
// sim.TraceJob, the 8 of its run time in its class's distribution),
// however many replications run. Each replication converted the cached
// parsed trace (40 bytes a job) again: four held 200 bytes a job.
func TestTraceReplicationsShareOneWorkload(t *testing.T) {
	const n = 200_000
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range n {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*3, 1+i%97, []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12}[i%10], 200)
	}
	data := []byte(b.String())
	ts, st := traceCampaign(t, data, 5, "fcfs", "first-fit")
	wk := &Worker{traces: newTraceCache(st, t.TempDir(), 0, t.Logf)}
	// Fetched and parsed once, outside the measure.
	if _, err := wk.withTaskTrace(t.Context(), &ts[0]); err != nil {
		t.Fatal(err)
	}
	wk.traces = newTraceCache(st, wk.traces.dir, 0, t.Logf)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ws := make([]*sim.Workload, len(ts))
	for i := range ts {
		ctx, err := wk.withTaskTrace(t.Context(), &ts[i])
		if err != nil {
			t.Fatal(err)
		}
		if ws[i], err = taskWorkload(ctx, &ts[i]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	perJob := (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / n
	t.Logf("%d replications hold %.1f bytes per job", len(ts), perJob)
	for i, w := range ws {
		if len(w.Trace) != n || &w.Trace[0] != &ws[0].Trace[0] || w.Classes[0].Service != ws[0].Classes[0].Service || w.Name != "tr" {
			t.Fatalf("replication %d replays its own copy of the trace (%d jobs, name %q)", i, len(w.Trace), w.Name)
		}
	}
	if perJob > 56 {
		t.Fatalf("%d replications of a trace hold %.1f bytes per job; at most 56 (one shared workload of 40)", len(ts), perJob)
	}
	if wk.traces.Fetches.Load() != 0 || wk.traces.Parses.Load() != 1 {
		t.Fatalf("%d fetches, %d parses; want 0 (cached on disk) and 1", wk.traces.Fetches.Load(), wk.traces.Parses.Load())
	}
	runtime.KeepAlive(ws)
}

// TestSharedTraceConvertedOnce: the runs a parsed trace is attached to
// through one SharedTrace (msjfarm run's calibrations) replay one
// workload, under each task's own name; each converted it again.
func TestSharedTraceConvertedOnce(t *testing.T) {
	ts, _, data := traceTasks(t)
	tr, err := swf.Read(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := ShareTrace(tr)
	var first *sim.Workload
	for i := range ts {
		ts[i].Workload.Name = fmt.Sprintf("tr%d", i)
		w, err := taskWorkload(WithSharedTrace(t.Context(), s), &ts[i])
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = w
		}
		if &w.Trace[0] != &first.Trace[0] || w.Classes[0].Service != first.Classes[0].Service || w.Name != ts[i].Workload.Name {
			t.Fatalf("task %d replays its own conversion of the trace (name %q)", i, w.Name)
		}
	}
	// WithTrace alone converts for each run, as before.
	w, err := taskWorkload(WithTrace(t.Context(), tr), &ts[0])
	if err != nil || &w.Trace[0] == &first.Trace[0] || len(w.Trace) != len(first.Trace) {
		t.Fatalf("WithTrace: %v", err)
	}
}

// TestTraceLoadedAtDefaultGCPace: a trace is fetched, parsed and
// converted at the collector's default pace, not at the simulation pace
// (GOGC=400) a worker's process runs at: the load left 88 bytes a job of
// garbage for 40 kept when it parsed the trace whole, and `msjfarm run`
// of a trace of 10⁷ jobs grew to five times its live heap before a cycle
// ran; it leaves about 10 now (TestTraceConvertAllocatesTheWorkload),
// and the pace costs nothing.
func TestTraceLoadedAtDefaultGCPace(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the collector's pace is the user's")
	}
	ts, st, _ := traceTasks(t)
	if p := gcpace.Apply(); p < gcpace.Percent {
		t.Fatalf("GOGC=%d: not at the simulation pace", p)
	}
	defer gcpace.Stop()
	gs := &gcSeeingStore{Store: st}
	c := newTraceCache(gs, t.TempDir(), 0, t.Logf)
	if _, err := c.get(t.Context(), ts[0].Trace, 0, "tr"); err != nil {
		t.Fatal(err)
	}
	if gs.gogc != 100 {
		t.Fatalf("the trace was fetched and parsed at GOGC=%d, not the default 100", gs.gogc)
	}
	if p := debug.SetGCPercent(-1); debug.SetGCPercent(p) != -1 || p < gcpace.Percent {
		t.Fatalf("GOGC=%d after the load, not the simulation pace (at least %d) again", p, gcpace.Percent)
	}
}

// gcSeeingStore records the GOGC in force when a file is fetched.
type gcSeeingStore struct {
	storage.Store
	gogc int
}

func (s *gcSeeingStore) GetFile(ctx context.Context, key, dst string) error {
	s.gogc = debug.SetGCPercent(-1)
	debug.SetGCPercent(s.gogc)
	return s.Store.GetFile(ctx, key, dst)
}

// TestSharedTraceReplicationsConcurrent: replications of one trace share
// one workload (TestTraceReplicationsShareOneWorkload), and a worker runs
// several at once, each on a goroutine of its own. They must only read
// it: run concurrently (under -race in CI, which then fails on any write
// to the shared job list or class distributions), each replication's
// result is the one it gives alone.
func TestSharedTraceReplicationsConcurrent(t *testing.T) {
	var b strings.Builder
	b.WriteString("; MaxProcs: 16\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*2, 1+i%53, []int{1, 2, 4, 8, 16, 3}[i%6], 100)
	}
	data := []byte(b.String())
	ts, st := traceCampaign(t, data, 3000, "fcfs", "first-fit", "serverfilling")
	wk := &Worker{traces: newTraceCache(st, t.TempDir(), 0, t.Logf)}
	run := func(i int) float64 {
		ctx, err := wk.withTaskTrace(t.Context(), &ts[i])
		if err != nil {
			t.Error(err)
			return 0
		}
		out, err := InProcess{}.Run(ctx, &ts[i], nil)
		if err != nil {
			t.Error(err)
			return 0
		}
		return out.Result.Overall.MeanResponse
	}
	alone := make([]float64, len(ts))
	for i := range ts {
		alone[i] = run(i)
	}
	together := make([]float64, len(ts))
	var wg sync.WaitGroup
	for i := range ts {
		wg.Go(func() { together[i] = run(i) })
	}
	wg.Wait()
	if wk.traces.Parses.Load() != 1 {
		t.Fatalf("%d parses; want 1 (one shared workload)", wk.traces.Parses.Load())
	}
	for i := range ts {
		if alone[i] == 0 || together[i] != alone[i] {
			t.Errorf("task %s: E[T] %v run beside the others, %v alone", ts[i].ID, together[i], alone[i])
		}
	}
}
