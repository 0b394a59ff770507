package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/plugins/builtin"
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
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := storage.PutTrace(t.Context(), st, data)
	if err != nil {
		t.Fatal(err)
	}
	f := &sweep.File{Name: "tr", Seed: 1, Trace: &sweep.TraceSpec{SHA256: sum, Size: int64(len(data))},
		Policies: []any{"fcfs", "first-fit"}, Replications: 2, Run: sweep.RunSpec{}}
	f.Run.Arrivals = 5
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Tasks, st, data
}

// TestTraceFetchedOnceParsedOnce: the replications of a trace share one
// fetch and one parse (concurrent ones too), and the runner replays the
// attached trace.
func TestTraceFetchedOnceParsedOnce(t *testing.T) {
	ts, st, _ := traceTasks(t)
	c := newTraceCache(st, t.TempDir(), 0, t.Logf)
	got := make([]*swf.Trace, len(ts))
	var wg sync.WaitGroup
	for i := range ts {
		wg.Go(func() {
			tr, err := c.get(t.Context(), ts[i].Trace, ts[i].Workload.Servers)
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
	out, err := InProcess{}.Run(WithTrace(t.Context(), got[0]), &ts[0], nil)
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
		_, err := c.get(t.Context(), ref, 0)
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
	if _, err := c.get(t.Context(), ref, 0); err != nil || c.Fetches.Load() != 1 {
		t.Fatalf("corrupt cached copy: %v, %d fetches", err, c.Fetches.Load())
	}
	// Over the worker's limit: refused before any download.
	c = newTraceCache(st, t.TempDir(), 100, t.Logf)
	if _, err := c.get(t.Context(), ref, 0); err == nil || !strings.Contains(err.Error(), "limit of 100") || c.Fetches.Load() != 0 {
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
	_, err := c.get(ctx, ts[0].Trace, 0)
	var perm *PermanentError
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("err %v, want a transient error", err)
	}
	// And the failure is not cached.
	c.store = st
	if _, err := c.get(t.Context(), ts[0].Trace, 0); err != nil {
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
		if _, err := c.get(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.parsed)
	c.mu.Unlock()
	if n > maxParsedTraces {
		t.Fatalf("%d parsed traces kept, limit %d", n, maxParsedTraces)
	}
	if _, err := c.get(t.Context(), refs[0], 0); err != nil {
		t.Fatal(err)
	}
	if f, p := c.Fetches.Load(), c.Parses.Load(); f != int64(len(refs)) || p != int64(len(refs))+1 {
		t.Fatalf("%d fetches, %d parses; want %d and %d", f, p, len(refs), len(refs)+1)
	}
}
