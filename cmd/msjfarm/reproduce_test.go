package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// precisionRunSweep: rel_half_width 1e-9 cannot be met by a real
// simulation, so each point grows 3 → 6 (one batch) and stops at the cap:
// 2 points × 6 = 12 tasks, 6 of them added by the precision rule.
const precisionRunSweep = `name: run-precision
seed: 9
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs]
replications: 3
precision: {metric: weighted_mean_response, rel_half_width: 1e-9, max_replications: 6, batch: 3}
run: {arrivals: 2e3, warmup: 1e2}
`

// capture runs f with os.Stdout redirected and returns its exit code and
// output.
func capture(t *testing.T, f func() int) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	code := f()
	os.Stdout = old
	w.Close()
	return code, <-out
}

// TestRunReportReproduce: `msjfarm run` of a precision sweep prints where
// the report and precision.csv are; `msjfarm report` regenerates the
// report locally; `msjfarm reproduce -all` finds every task bit-identical;
// after one stored result is tampered with, that task (only) is reported
// as different and the exit status is 1.
//
// Complexity 36: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestRunReportReproduce(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(sw, []byte(precisionRunSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out := capture(t, func() int { return runRun([]string{"-workers", "2", "-q", "-storage", data, sw}) })
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*"))
	if len(camps) != 1 {
		t.Fatalf("campaigns %v", camps)
	}
	id := filepath.Base(camps[0])
	index := filepath.Join(data, "campaigns", id, "report", "index.html")
	if !strings.Contains(out, "report: "+index) || !strings.Contains(out, "precision: ") {
		t.Fatalf("run output does not say where the report is (%s):\n%s", index, out)
	}
	// Local storage: every location is a file path.
	for _, want := range []string{"\nsummary: " + filepath.Join(data, "campaigns", id, "summary.csv") + "\n",
		" — " + filepath.Join(data, "campaigns", id, "precision.csv") + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	res, _ := filepath.Glob(filepath.Join(data, "campaigns", id, "results", "*.json"))
	if len(res) != 12 {
		t.Fatalf("%d results, want 12 (2 points grown from 3 to 6)", len(res))
	}
	prec, err := os.ReadFile(filepath.Join(data, "campaigns", id, "precision.csv"))
	if err != nil || strings.Count(string(prec), ",max_replications\n") != 2 {
		t.Fatalf("precision.csv (%v):\n%s", err, prec)
	}

	// report: id before the flags works; the files are the stored report's.
	outDir := filepath.Join(dir, "rep")
	code, out = capture(t, func() int { return runReport([]string{id, "-storage", data, "-out", outDir}) })
	if code != 0 || strings.TrimSpace(out) != filepath.Join(outDir, "index.html") {
		t.Fatalf("report: exit %d, output %q", code, out)
	}
	for _, n := range []string{"index.html", "summary.csv", "summary.json", "manifest.json", "precision.csv"} {
		got, err := os.ReadFile(filepath.Join(outDir, n))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(data, "campaigns", id, "report", n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("regenerated %s differs from the stored one", n)
		}
	}
	sum, _ := os.ReadFile(filepath.Join(data, "campaigns", id, "summary.csv"))
	if got, _ := os.ReadFile(filepath.Join(outDir, "summary.csv")); !bytes.Equal(got, sum) {
		t.Errorf("regenerated summary.csv differs from campaigns/%s/summary.csv", id)
	}

	// reproduce -all: every task bit-identical.
	code, out = capture(t, func() int { return runReproduce([]string{id, "-storage", data, "-all", "-workers", "2"}) })
	if code != 0 || !strings.Contains(out, "12 tasks: 12 bit-identical, 0 different, 0 errors") {
		t.Fatalf("reproduce: exit %d\n%s", code, out)
	}
	// -sample and -tasks select what they say.
	code, out = capture(t, func() int { return runReproduce([]string{id, "-storage", data, "-sample", "2"}) })
	if code != 0 || !strings.Contains(out, "2 tasks: 2 bit-identical") {
		t.Fatalf("reproduce -sample: exit %d\n%s", code, out)
	}
	if code, _ := capture(t, func() int { return runReproduce([]string{id, "-storage", data, "-tasks", "nope"}) }); code == 0 {
		t.Fatal("reproduce -tasks with an unknown id: exit 0")
	}
	// A task named twice is re-run once; --sample 0 or -1 is a usage
	// error (both re-ran the default 5).
	first := strings.TrimSuffix(filepath.Base(res[0]), ".json")
	code, out = capture(t, func() int { return runReproduce([]string{id, "-storage", data, "-tasks", first + "," + first}) })
	if code != 0 || !strings.Contains(out, "1 tasks: 1 bit-identical") {
		t.Fatalf("reproduce -tasks with one id twice: exit %d\n%s", code, out)
	}
	for _, n := range []string{"0", "-1"} {
		if code, out := capture(t, func() int { return runReproduce([]string{id, "-storage", data, "-sample", n}) }); code != 2 {
			t.Fatalf("reproduce -sample %s: exit %d\n%s", n, code, out)
		}
	}

	// Tamper with one stored result (an added replication).
	ctx := context.Background()
	st, err := storage.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	a, err := archive.Load(ctx, st, id, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tasks) != 12 {
		t.Fatalf("archive has %d tasks", len(a.Tasks))
	}
	victim := a.Tasks[4] // point 0, replication 4
	if victim.Replication != 4 {
		t.Fatalf("task order: %+v", victim)
	}
	var rec record.Record
	if err := json.Unmarshal(a.Raw[victim.ID], &rec); err != nil {
		t.Fatal(err)
	}
	rec.Result.Overall.MeanResponse *= 1 + 1e-12
	b, _ := json.Marshal(&rec)
	if err := st.Put(ctx, storage.ResultKey(id, victim.ID), b); err != nil {
		t.Fatal(err)
	}
	code, out = capture(t, func() int {
		return runReproduce([]string{"-storage", data, "-tasks", victim.ID + "," + a.Tasks[0].ID, id})
	})
	if code != 1 || !strings.Contains(out, "2 tasks: 1 bit-identical, 1 different, 0 errors") {
		t.Fatalf("reproduce after tampering: exit %d\n%s", code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		// The campaign's checksums show the object was modified.
		if strings.HasPrefix(l, victim.ID) && !strings.Contains(l, "different (result object "+storage.ResultKey(id, victim.ID)+" was modified after it was written") {
			t.Fatalf("tampered task line: %s", l)
		}
		if strings.HasPrefix(l, a.Tasks[0].ID) && !strings.Contains(l, "bit-identical") {
			t.Fatalf("untouched task line: %s", l)
		}
	}
}

// A record whose task is not the task it is filed under (another
// replication's record copied over it, the checksums rewritten to match,
// as a forger would) is reported as different, and reproduce exits 1.
// It was left out as a task that "failed or never ran", and reproduce
// --all exited 0 on an archive two thirds forged.
func TestReproduceForgedRecord(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, _, errs := captured(t, func() int { return dispatch([]string{"run", "-q", "--workers", "2", "--storage", data, sw}) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	// Copy one stored result over another and fix the checksums.
	objs, _ := filepath.Glob(filepath.Join(data, "results", "*", "*.json"))
	src, err := os.ReadFile(objs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(objs[1], src, 0o644); err != nil {
		t.Fatal(err)
	}
	sums, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "checksums"))
	text, err := os.ReadFile(sums[0])
	if err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(data, objs[1])
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		if strings.HasSuffix(l, "  "+filepath.ToSlash(rel)) {
			l = fmt.Sprintf("%x  %s", sha256.Sum256(src), filepath.ToSlash(rel))
		}
		out = append(out, l)
	}
	if err := os.WriteFile(sums[0], []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := captured(t, func() int {
		return dispatch([]string{"reproduce", "first", "--all", "--storage", data})
	})
	if code != 1 || !strings.Contains(stdout, "12 tasks: 11 bit-identical, 1 different") || !strings.Contains(stdout, "different (result of task ") {
		t.Fatalf("reproduce --all: exit %d, want 1 and the forged record different\n%s%s", code, stdout, errs)
	}
}
