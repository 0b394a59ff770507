package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

const runLimitSweep = `name: run-limit
seed: 3
workload: one-or-all
policies: [fcfs]
replications: 3
run: {arrivals: 5e4, warmup: 5e3}
limit: {lo: 2, hi: 6, rel_tol: 0.1, probes: 3}
`

// readLimits reads the one limits.csv under data as header → value.
func readLimits(t *testing.T, data string) (map[string]string, []byte) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(data, "limits", "*", "limits.csv"))
	if len(paths) != 1 {
		t.Fatalf("limits.csv files: %v", paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("limits.csv: %v rows, %v", len(rows), err)
	}
	m := map[string]string{}
	for i, h := range rows[0] {
		m[h] = rows[1][i]
	}
	return m, b
}

// TestRunLimitFile runs a limit block on the embedded farm end to end:
// FCFS on one-or-all is bracketed around its exact limit 3.0261 (within the
// growth test's resolution at 5·10^4 arrivals, 0.0225·√(10^6/5·10^4) =
// 10%, sim/limit), limits.csv and the report (with the λ_max line) are
// written, and running the file again reuses every round from storage
// (same rounds, no new result). Then the bad inputs: a policy unstable at
// the lowest rate is a verdict (exit 0), a cap below k an error naming
// run.max_in_system that writes nothing.
//
// Complexity 29: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestRunLimitFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the embedded farm for about 10 s")
	}
	dir := t.TempDir()
	sw := filepath.Join(dir, "l.yaml")
	if err := os.WriteFile(sw, []byte(runLimitSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	args := []string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data, sw}
	if code := runRun(args); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	m, first := readLimits(t, data)
	lo, _ := strconv.ParseFloat(m["lo"], 64)
	hi, _ := strconv.ParseFloat(m["hi"], 64)
	exact := limit.FCFSOneOrAllLimit(32, 0.9, 1, 1)
	const res = 0.10
	if m["outcome"] != "found" || !(lo <= exact*(1+res) && hi >= exact*(1-res)) || hi/lo-1 > 0.1*(1+1e-9) {
		t.Errorf("FCFS: %s [%v, %v], want a bracket within %.0f%% of %.5g", m["outcome"], lo, hi, 100*res, exact)
	}
	if m["policy"] != "fcfs" || m["campaigns"] == "" || m["rates"] == "" {
		t.Errorf("limits.csv row %v", m)
	}
	svgs, _ := filepath.Glob(filepath.Join(data, "limits", "*", "report", "mean_response.svg"))
	if len(svgs) != 1 {
		t.Fatalf("report: %v", svgs)
	}
	svg, _ := os.ReadFile(svgs[0])
	if !strings.Contains(string(svg), "fcfs λmax = ") {
		t.Error("the report's plot lacks fcfs's λ_max line")
	}
	before, _ := filepath.Glob(filepath.Join(data, "results", "*", "*"))
	results, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "results", "*.json"))
	if code := runRun(args); code != 0 {
		t.Fatalf("run again: exit %d", code)
	}
	if _, again := readLimits(t, data); !bytes.Equal(first, again) {
		t.Errorf("run again: limits.csv changed:\n%s\n%s", first, again)
	}
	after, _ := filepath.Glob(filepath.Join(data, "results", "*", "*"))
	results2, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "results", "*.json"))
	if len(before) == 0 || len(results) == 0 {
		t.Fatalf("no stored results under %s (%d, %d)", data, len(before), len(results))
	}
	if len(after) != len(before) || len(results2) != len(results) {
		t.Errorf("run again simulated: %d → %d stored results, %d → %d campaign results", len(before), len(after), len(results), len(results2))
	}

	// Unstable at the lowest rate: a verdict, not a loop.
	low := filepath.Join(dir, "low.yaml")
	if err := os.WriteFile(low, []byte(strings.Replace(runLimitSweep, "lo: 2, hi: 6", "lo: 4, hi: 6", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	data2 := filepath.Join(dir, "data2")
	if code := runRun([]string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data2, low}); code != 0 {
		t.Fatalf("run low: exit %d", code)
	}
	if m, _ := readLimits(t, data2); m["outcome"] != string(limit.UnstableAtLowest) || m["hi"] != "4" || m["rates"] != "5" {
		t.Errorf("unstable at the lowest rate: %v", m)
	}

	// --dry-run plans and writes nothing.
	dryDir := filepath.Join(dir, "dry")
	if code := runRun([]string{"-dry-run", "-storage", dryDir, sw}); code != 0 {
		t.Fatalf("dry run: exit %d", code)
	}
	if _, err := os.Stat(dryDir); !os.IsNotExist(err) {
		t.Fatalf("dry run created %s (%v)", dryDir, err)
	}

	// A cap too small to run: an error naming the key, nothing written.
	bad := filepath.Join(dir, "cap.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(runLimitSweep, "warmup: 5e3}", "warmup: 5e3, max_in_system: 8}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	nothing := filepath.Join(dir, "nothing")
	if code := runRun([]string{"-storage", nothing, bad}); code != 2 {
		t.Fatalf("cap below k: exit %d, want 2", code)
	}
	if _, err := os.Stat(nothing); !os.IsNotExist(err) {
		t.Fatalf("cap below k created %s (%v)", nothing, err)
	}
}

// TestSubmitLimitFile runs a limit block with msjfarm submit against a
// farm (an embedded NATS server, a coordinator and an in-process worker,
// as deployed but in this process): the search loop runs in the
// submitting command, each round a campaign the farm runs, and the result
// is the one msjfarm run finds for the same file (the same rounds, so the
// same campaigns and records: every round is reused from storage).
func TestSubmitLimitFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a farm for about 10 s")
	}
	dir := t.TempDir()
	sw := filepath.Join(dir, "l.yaml")
	if err := os.WriteFile(sw, []byte(runLimitSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := storage.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	srv, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: filepath.Join(dir, "js")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { protocol.StopEmbedded(srv) }) // after the coordinator's cleanup
	nc := runCoordinator(t, url, st)
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Concurrency: 2, Runner: worker.InProcess{}, FetchWait: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wDone := make(chan error, 1)
	go func() { wDone <- w.Run(ctx) }()
	defer func() { cancel(); <-wDone }()

	if code := runSubmit([]string{"-nats-url", url, "-storage", data, sw}); code != 0 {
		t.Fatalf("submit: exit %d", code)
	}
	got, _ := readLimits(t, data)
	if got["outcome"] != "found" || got["campaigns"] == "" {
		t.Fatalf("submit: %v", got)
	}
	results, _ := filepath.Glob(filepath.Join(data, "results", "*", "*"))
	data2 := filepath.Join(dir, "data2")
	if code := runRun([]string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data2, sw}); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	want, _ := readLimits(t, data2)
	for _, k := range []string{"outcome", "lo", "hi", "rates", "runs", "campaigns"} {
		if got[k] != want[k] {
			t.Errorf("%s: submit %q, run %q", k, got[k], want[k])
		}
	}
	if len(results) == 0 {
		t.Error("submit stored no results")
	}
	// Without --storage the search cannot read its rounds: an error.
	if code := runSubmit([]string{"-nats-url", url, sw}); code != 2 {
		t.Errorf("submit without --storage: exit %d, want 2", code)
	}
}
