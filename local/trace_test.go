package local_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// synthSWF is a deterministic SWF trace of n jobs on 16 processors: needs
// 1, 2, 4 or 8, run times from a fixed linear congruential sequence
// multiplied by runScale (mean 5 s: load 0.73 at time_scale 0.8), one
// arrival every 2 s on average.
func synthSWF(n int, runScale float64) []byte {
	var b bytes.Buffer
	b.WriteString("; Version: 2\n; Computer: msjfarm synthetic test trace\n; MaxProcs: 16\n")
	x := uint64(12345)
	next := func() float64 {
		x = x*6364136223846793005 + 1442695040888963407
		return float64(x>>11) / (1 << 53)
	}
	t := 0.0
	for i := 1; i <= n; i++ {
		t += 4 * next()
		need := 1 << int(4*next())
		run := (1 + 8*next()) * runScale
		fmt.Fprintf(&b, "%d %.0f 0 %.2f %d -1 -1 %d %.0f -1 1 -1 -1 -1 0 -1 -1 -1\n", i, t, run, need, need, 2*run)
	}
	return b.Bytes()
}

// B Fig. 3's policies on a replayed trace, reduced to a 400-job trace.
const traceCampaign = `name: trace-replay
seed: 3
trace: {file: %s, time_scale: 0.8}
policies: [fcfs, first-fit, serverfilling, {name: firstfit-srpt, order: duration}]
replications: 1
run: {arrivals: 300, warmup: 50}
`

func writeTraceSweep(t *testing.T, dir, trace string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, trace), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(traceCampaign, "%s", trace, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runTrace reads the sweep at path as msjfarm run does (the trace read and
// pinned on this side only), then lets before run (to change the disk
// after the submitting client read it), runs the campaign in st and
// returns its campaign id and summary.
func runTrace(t *testing.T, path string, st storage.Store, before func()) (string, []byte) {
	t.Helper()
	f, err := sweep.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sweep.ReadTraceFile(f, storage.DefaultMaxTraceSize)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := local.Run(ctx, local.Options{Spec: f, Trace: data, Store: st, Runner: worker.InProcess{}, Workers: 2,
		TraceCache: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Status; out.Interrupted || s == nil || s.State != protocol.CampaignDone || s.Failed != 0 || s.Done != 4 {
		t.Fatalf("outcome %+v, status %+v", out, out.Status)
	}
	sum, err := st.Get(t.Context(), storage.SummaryKey(out.Submit.Campaign))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(t.Context(), storage.TraceKey(f.Trace.SHA256)); err != nil {
		t.Fatalf("the trace was not uploaded: %v", err)
	}
	return out.Submit.Campaign, sum
}

// TestTraceReplacedAfterSubmit: replacing the trace file after the
// submitting client read it changes nothing (the farm replays the uploaded
// content: same campaign, byte-identical summary), although the other
// trace really gives other results, as a run that reads it shows.
func TestTraceReplacedAfterSubmit(t *testing.T) {
	dir := t.TempDir()
	path := writeTraceSweep(t, dir, "t.swf", synthSWF(400, 1))
	open := func() storage.Store {
		st, err := storage.Open(t.Context(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	id1, sum1 := runTrace(t, path, open(), nil)
	other := synthSWF(400, 3)
	st2 := open()
	id2, sum2 := runTrace(t, path, st2, func() {
		if err := os.WriteFile(filepath.Join(dir, "t.swf"), other, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if id1 != id2 || !bytes.Equal(sum1, sum2) {
		t.Fatalf("the file replaced after submit changed the campaign:\n%s %s\n%s %s", id1, sum1, id2, sum2)
	}
	// msjfarm reproduce replays the stored trace too, bit for bit.
	a, err := archive.Load(t.Context(), st2, id2, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(a.Tasks))
	for i, tk := range a.Tasks {
		ids[i] = tk.ID
	}
	rctx := worker.WithTraceSource(t.Context(), worker.NewTraceSource(st2, t.TempDir(), 0))
	for _, r := range reproduce.Run(rctx, a, ids, 2, nil) {
		if r.Verdict != reproduce.Same {
			t.Fatalf("reproduce %s: %s %s", r.Task.ID, r.Verdict, r.Detail)
		}
	}
	id3, sum3 := runTrace(t, path, open(), nil)
	if id3 == id1 || bytes.Equal(sum1, sum3) {
		t.Fatalf("the other trace gives the same campaign %s or summary", id3)
	}
	t.Logf("First-Fit mean response: %s with the trace read at submit (also when the file is replaced after submit), %s with the replacement read at submit",
		firstFitMean(t, sum1), firstFitMean(t, sum3))
}

// TestTraceCampaignOnMinIO: a trace campaign with S3 storage (a real
// MinIO) runs with the trace file gone from disk once the client has read
// it, and the worker's trace cache empty: the worker fetches the trace
// from MinIO, as a worker on another machine would.
func TestTraceCampaignOnMinIO(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	st, err := storage.Open(t.Context(), "s3://msjfarm-traces?secure=false&endpoint="+ep, storage.WithCredentials(ak, sk))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := writeTraceSweep(t, dir, "t.swf", synthSWF(400, 1))
	local1, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	id1, want := runTrace(t, path, local1, nil)
	id, sum := runTrace(t, path, st, func() {
		if err := os.Remove(filepath.Join(dir, "t.swf")); err != nil {
			t.Fatal(err)
		}
	})
	if id != id1 || !bytes.Equal(sum, want) {
		t.Fatalf("on MinIO: campaign %s, summary\n%s\nwant %s\n%s", id, sum, id1, want)
	}
	keys, err := st.List(t.Context(), storage.TracesPrefix)
	if err != nil || len(keys) != 1 {
		t.Fatalf("stored traces %v, %v", keys, err)
	}
}

// firstFitMean is the first-fit row's mean_response_mean of a summary.
func firstFitMean(t *testing.T, summary []byte) string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(summary)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("summary: %v", err)
	}
	col, pol := -1, -1
	for i, h := range rows[0] {
		switch h {
		case "mean_response_mean":
			col = i
		case "policy":
			pol = i
		}
	}
	for _, r := range rows[1:] {
		if col >= 0 && pol >= 0 && r[pol] == "first-fit" {
			return r[col]
		}
	}
	t.Fatal("no first-fit row")
	return ""
}
