package worker

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// oldLoad is what the worker did before it streamed a trace: parse it
// whole (swf.ReadLimits), then convert the parsed trace
// (workload.FromTrace). Its results and its errors are those the
// two-pass convert must give.
func oldLoad(data []byte, k int, name string, scale float64) (*sim.Workload, error) {
	tr, err := swf.ReadLimits(bytes.NewReader(data), k, swf.Limits{})
	if err != nil {
		return nil, err
	}
	return workload.FromTrace(name, tr, scale)
}

// unsortedTrace is a trace of n jobs whose submit times are out of
// order, with ties, and whose MaxProcs header comes after the jobs (so
// the servers are known only at the end); widths include jobs too wide
// for 64 servers, and unusable jobs (width -1 and 0, run time -1).
func unsortedTrace(n int) []byte {
	var b strings.Builder
	widths := []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12, 100, -1, 0}
	for i := range n {
		fmt.Fprintf(&b, "%d %v -1 %d %d -1 -1 %d %d\n", i+1, float64((i*7907)%5003)+float64(i%50)/4, (i*31)%1000-1, widths[i%len(widths)], 1+i%9, (i*3)%400-1)
	}
	b.WriteString("; MaxProcs: 64\n")
	return []byte(b.String())
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestTraceConvertedAsParsed: the worker's workload of a trace, read in
// two passes through its cache and never parsed whole, is the one the
// trace parsed whole and converted gave (reflect.DeepEqual; to the bit,
// workload.TestFromJobsIsFromTrace), for
// the header's servers and others, time scales, plain and gzipped
// bytes, a header after the jobs and unsorted submit times; and its
// refusals are permanent errors with that path's words.
func TestTraceConvertedAsParsed(t *testing.T) {
	small, err := os.ReadFile("../model/swf/testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	traces := map[string][]byte{
		"small":       small,
		"unsorted":    unsortedTrace(6000),
		"unsorted.gz": nil,
	}
	traces["unsorted.gz"] = gzipped(t, traces["unsorted"])
	for name, data := range traces {
		st, sum := storedTrace(t, data)
		c := newTraceCache(st, t.TempDir(), 0, t.Logf)
		for _, k := range []int{0, 4, 12, 64, 128} {
			for _, scale := range []float64{1, 0.37} {
				ref := &sweep.TraceRef{SHA256: sum, Size: int64(len(data)), TimeScale: scale}
				want, werr := oldLoad(data, k, "tr", scale)
				got, gerr := c.get(t.Context(), ref, k, "tr")
				if werr != nil || gerr != nil {
					t.Fatalf("%s, k=%d, scale %v: parsed whole: %v; streamed: %v", name, k, scale, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, k=%d, scale %v: the streamed workload differs from the one parsed whole", name, k, scale)
				}
			}
		}
		if c.Fetches.Load() != 1 || c.Parses.Load() != 10 || len(c.shapes) != 1 {
			t.Fatalf("%s: %d fetches, %d conversions, %d shapes kept; want 1, 10 (one per servers value and scale) and 1", name, c.Fetches.Load(), c.Parses.Load(), len(c.shapes))
		}
	}

	// Refusals: a malformed line, no servers, no usable job, a bad time
	// scale; each a permanent error with the words the whole parse gave.
	for _, tc := range []struct {
		name  string
		data  string
		k     int
		scale float64
	}{
		{"malformed", "; MaxProcs: 4\n1 0 -1 10 1\n2 x -1 10 1\n", 0, 1},
		{"no servers", "1 0 -1 10 1\n", 0, 1},
		{"no usable job", "; MaxProcs: 4\n1 0 -1 10 8\n2 5 -1 -1 1\n", 0, 1},
		{"time scale", "; MaxProcs: 4\n1 0 -1 10 1\n", 0, math.Inf(1)},
	} {
		data := []byte(tc.data)
		st, sum := storedTrace(t, data)
		_, werr := oldLoad(data, tc.k, "tr", tc.scale)
		c := newTraceCache(st, t.TempDir(), 0, t.Logf)
		_, gerr := c.get(t.Context(), &sweep.TraceRef{SHA256: sum, Size: int64(len(data)), TimeScale: tc.scale}, tc.k, "tr")
		var perm *PermanentError
		if werr == nil || !errors.As(gerr, &perm) || !strings.Contains(gerr.Error(), werr.Error()) {
			t.Errorf("%s: streamed %v; want a permanent error saying %v", tc.name, gerr, werr)
		}
		t.Logf("%s: %v", tc.name, gerr)
	}
}

// rewrittenFile is a trace file that another process rewrites in place
// while it is read: its second pass (the second seek to its start)
// reads other bytes.
type rewrittenFile struct {
	first, second []byte
	r             *bytes.Reader
	seeks         int
}

func (f *rewrittenFile) Read(p []byte) (int, error) { return f.r.Read(p) }

func (f *rewrittenFile) Seek(off int64, whence int) (int64, error) {
	if off != 0 || whence != io.SeekStart {
		return 0, errors.New("only seeks to the start")
	}
	f.seeks++
	if f.seeks == 1 {
		f.r = bytes.NewReader(f.first)
	} else {
		f.r = bytes.NewReader(f.second)
	}
	return 0, nil
}

// TestTraceRewrittenBetweenPasses: a cached copy whose bytes change
// between the pass that counts its jobs and the one that converts them
// is refused as not the pinned content, whether the change keeps the
// counts (a run time edited) or not (a job added), never replayed.
func TestTraceRewrittenBetweenPasses(t *testing.T) {
	data := unsortedTrace(500)
	ref := &sweep.TraceRef{SHA256: storage.TraceSHA256(data), Size: int64(len(data)), TimeScale: 1}
	edited := bytes.Replace(data, []byte("\n2 "), []byte("\n3 "), 1) // same size, same counts
	if len(edited) != len(data) || bytes.Equal(edited, data) {
		t.Fatal("the edit changed nothing or the size")
	}
	for name, second := range map[string][]byte{
		"edited in place": edited,
		"job added":       append(append([]byte(nil), data...), "501 0 -1 10 1\n"...),
	} {
		w, _, err := convertTrace(&rewrittenFile{first: data, second: second}, ref, 0, "tr", nil)
		var bad *badContent
		if w != nil || !errors.As(err, &bad) || !strings.Contains(err.Error(), "changed while it was read") {
			t.Fatalf("%s: workload %v, err %v; want a refusal as changed while it was read", name, w != nil, err)
		}
		t.Logf("%s: %v", name, err)
	}
	// Unchanged, the same two passes convert it; with its shape known
	// (another servers value), one pass does.
	w, shape, err := convertTrace(&rewrittenFile{first: data, second: data}, ref, 0, "tr", nil)
	if err != nil || w == nil || shape == nil {
		t.Fatalf("unchanged: %v", err)
	}
	f := &rewrittenFile{first: data}
	w2, _, err := convertTrace(f, ref, 12, "tr", shape)
	if err != nil || f.seeks != 1 {
		t.Fatalf("with its shape: %v, %d passes; want one", err, f.seeks)
	}
	if want, _ := oldLoad(data, 12, "tr", 1); !reflect.DeepEqual(w2, want) {
		t.Fatal("with its shape: not the workload parsed whole")
	}
	// A kept shape does not vouch for other bytes: the one pass checks.
	if _, _, err := convertTrace(&rewrittenFile{first: edited}, ref, 12, "tr", shape); !errors.As(err, new(*badContent)) {
		t.Fatalf("other bytes with a kept shape: %v; want them refused", err)
	}

	// Through the cache: a copy found bad is fetched again and replayed.
	st, _ := storedTrace(t, data)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ref.SHA256), edited, 0o644); err != nil {
		t.Fatal(err)
	}
	c := newTraceCache(st, dir, 0, t.Logf)
	if _, err := c.get(t.Context(), ref, 0, "tr"); err != nil || c.Fetches.Load() != 1 {
		t.Fatalf("a cached copy not the pinned bytes: %v, %d fetches; want it fetched again and replayed", err, c.Fetches.Load())
	}
}

// TestTraceConvertAllocatesTheWorkload: converting a cached trace
// allocates the workload (40 bytes a job: the 32 of its sim.TraceJob,
// the 8 of its run time in its class's distribution) and little else,
// for a trace whose header follows its jobs and whose submit times are
// out of order. Parsed whole first, the load allocated 128 bytes a job
// (88 of them garbage once converted).
func TestTraceConvertAllocatesTheWorkload(t *testing.T) {
	const n = 200_000
	data := unsortedTrace(n)
	st, sum := storedTrace(t, data)
	ref := &sweep.TraceRef{SHA256: sum, Size: int64(len(data)), TimeScale: 1}
	dir := t.TempDir()
	// Fetched once, outside the measure.
	if _, err := newTraceCache(st, dir, 0, t.Logf).get(t.Context(), ref, 0, "tr"); err != nil {
		t.Fatal(err)
	}
	measure := func(load func() (*sim.Workload, error)) (float64, *sim.Workload) {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		w, err := load()
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		return float64(m1.TotalAlloc-m0.TotalAlloc) / float64(len(w.Trace)), w
	}
	c := newTraceCache(st, dir, 0, t.Logf)
	per, w := measure(func() (*sim.Workload, error) { return c.get(t.Context(), ref, 0, "tr") })
	whole, _ := measure(func() (*sim.Workload, error) { return oldLoad(data, 0, "tr", 1) })
	t.Logf("%d kept jobs of %d lines: %.1f bytes allocated per kept job (parsed whole: %.1f)", len(w.Trace), n, per, whole)
	if c.Fetches.Load() != 0 {
		t.Fatal("fetched again: the measure is not the conversion's")
	}
	if per > 56 {
		t.Fatalf("converting a cached trace allocated %.1f bytes per kept job; at most 56 (the workload's 40, the class distributions' gathering)", per)
	}
}
