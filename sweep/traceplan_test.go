package sweep_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// writeBigTrace writes a trace of n job lines on 64 processors, of
// widths 1 to 64 and a few unusable lines, and a sweep replaying it on
// the given servers values with one policy; it returns the sweep loaded.
func writeBigTrace(t *testing.T, n int, servers string) *sweep.File {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	widths := []int{1, 2, 4, 8, 16, 32, 64, 3, 5, 12, 1, 2}
	for i := range n {
		run := 1 + i%97
		if i%50 == 7 {
			run = -1
		}
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*3, run, widths[i%len(widths)], 200)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.swf"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.yaml")
	body := "name: tr\nseed: 1\ntrace: {file: t.swf}\naxes: {servers: " + servers + "}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 10}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTracePlannedWithoutParsedTrace: planning a trace sweep allocates,
// per job kept at each servers value, about the 48 bytes of the
// workload its policies are tried on (a replayed job's 32, its run time
// in its class's distribution and once more gathered for it): each
// servers value's workload is built from the canonical bytes and the
// counts gathered when they were written, as the jobs are read again.
// The trace was parsed whole at each servers value and then converted,
// about 140 bytes a kept job, most of them the parsed trace held beside
// the workload.
func TestTracePlannedWithoutParsedTrace(t *testing.T) {
	const n = 100_000
	f := writeBigTrace(t, n, "[16, 64]")
	data, err := sweep.ReadTraceFile(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, k := range []int{16, 64} {
		tr, err := swf.Read(bytes.NewReader(data), k)
		if err != nil {
			t.Fatal(err)
		}
		kept += len(tr.Jobs)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := sweep.Plan(f, builtin.Catalog{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / float64(kept)
	t.Logf("planning: %.1f bytes allocated per job kept (%d kept at two servers values)", per, kept)
	if per > 64 {
		t.Errorf("planning a trace sweep allocated %.1f bytes per job kept at a servers value; at most 64 (the 48 of the workload tried)", per)
	}
}

// TestTraceFormAloneAfterRead: once ReadTraceFile has read a trace, the
// heap holds its canonical form and not what building it left (the
// chunks it was written in): a cycle is run then, at the default pace,
// where the next one waited for the heap to reach twice the form and its
// chunks, and planning's conversions added to that peak.
func TestTraceFormAloneAfterRead(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	f := writeBigTrace(t, 200_000, "[64]")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	data, err := sweep.ReadTraceFile(f, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("a canonical form of %d bytes: the heap grew by %d", len(data), grew)
	if grew > int64(len(data))+1<<20 {
		t.Errorf("after reading a trace whose canonical form is %d bytes, the heap holds %d bytes more: what building it left is still there", len(data), grew)
	}
	runtime.KeepAlive(data)
}

// TestStoredTraceRefusalsAsRead: a trace read from storage (named by
// sha256 alone) is planned from its bytes and their shape, gathered as
// they are read; bytes that do not parse are refused at the first point
// that needs them with the error Read gives of them, as when the parsed
// trace was built there.
func TestStoredTraceRefusalsAsRead(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte("name: tr\nseed: 1\ntrace: {sha256: "+strings.Repeat("a", 64)+", size: 1}\naxes: {servers: [4, 8]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, stored := range []string{
		"; MaxProcs: 8\n1 0 -1 10 2\n2 5 -1 ten 2\n",
		"; MaxProcs: x\n1 0 -1 10 2\n",
	} {
		f, err := sweep.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		data := []byte(stored)
		f.Trace.SHA256, f.Trace.Size = sha256Hex(data), int64(len(data))
		if err := sweep.AttachStoredTrace(f, func(string, int64) ([]byte, error) { return data, nil }); err != nil {
			t.Fatal(err)
		}
		_, rerr := swf.Read(bytes.NewReader(data), 4)
		_, err = sweep.Plan(f, builtin.Catalog{})
		if rerr == nil || err == nil || !strings.HasSuffix(err.Error(), "point servers=4: trace: "+rerr.Error()) {
			t.Errorf("stored %q: Plan %v; want the point's error to be Read's: %v", stored, err, rerr)
		}
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestLocalTraceWorkloadHoldsWhatItKeeps: the workload a dry run's
// calibrations replay (LocalTraceWorkload) is the one the trace Read
// gives of the canonical bytes converts to, bit for bit, built as the
// kept jobs are read again: only the workload is allocated, 40 bytes a
// kept job and the 8 of its run time gathered for its class, where the
// parsed trace (40 bytes a kept job, read with the trace's shape; 83 and
// 92 read whole) was built first and kept beside it.
func TestLocalTraceWorkloadHoldsWhatItKeeps(t *testing.T) {
	f := writeBigTrace(t, 100_000, "[16, 64]")
	data, err := sweep.ReadTraceFile(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Plan(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{16, 64} {
		tr, err := swf.Read(bytes.NewReader(data), k)
		if err != nil {
			t.Fatal(err)
		}
		want, err := workload.FromTrace("tr", tr, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := c.LocalTraceWorkload("tr", k, 0.5)
		runtime.ReadMemStats(&after)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("servers %d: LocalTraceWorkload is not the parsed trace's workload (%v)", k, err)
		}
		per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(got.Trace))
		t.Logf("servers %d: %.1f bytes allocated per job kept", k, per)
		if per > 52 {
			t.Errorf("servers %d: LocalTraceWorkload allocated %.1f bytes per job kept; at most 52 (the 40 of a replayed job, the 8 of its run time in its class)", k, per)
		}
	}
}
