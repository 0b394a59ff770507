package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// TestResultsWarnings: `msjfarm results` tells on stderr which results
// it left out. A finished campaign of 2 rates × 2 policies × 2
// replications (8 results) has one stored result object altered after
// finalisation (its checksum no longer matches) and another deleted;
// with summary.csv moved aside, the partial summary and --compare both
// still answer (exit 0), and both warn about each of the two, naming its
// key; report writes its pages without them and exits 1.
func TestResultsWarnings(t *testing.T) {
	dir := t.TempDir()
	data := runSweepText(t, dir, `name: warn
seed: 3
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, msf]
replications: 2
run: {arrivals: 1e3, warmup: 1e2}
`, "-workers", "2")
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*"))
	if len(camps) != 1 {
		t.Fatalf("campaigns %v", camps)
	}
	id := filepath.Base(camps[0])
	ctx := context.Background()
	st, err := storage.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.List(ctx, storage.ResultsPrefix(id))
	if err != nil || len(keys) != 8 {
		t.Fatalf("%d results (%v), want 8", len(keys), err)
	}
	stored := func(k string) string {
		b, err := st.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		ref, ok := record.ParseRef(b)
		if !ok {
			t.Fatalf("%s is not a reference", k)
		}
		return storage.StoredResultKey(ref)
	}
	// Altered: one byte of whitespace more, still a valid record.
	altered := stored(keys[0])
	b, _ := st.Get(ctx, altered)
	if err := st.Put(ctx, altered, append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	gone := stored(keys[1])
	if err := st.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(camps[0], "summary.csv"), filepath.Join(dir, "summary.csv")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-storage", data, id}, {"-storage", data, id, "--compare", "msf,fcfs"}} {
		code, out, errs := captured(t, func() int { return runResults(args) })
		if code != 0 {
			t.Fatalf("results %v: exit %d\n%s%s", args, code, out, errs)
		}
		for _, want := range []string{
			"msjfarm results: warning: result object " + altered + " was modified after it was written",
			// Listed in the campaign's checksums: a result missing, not a
			// task never run.
			"msjfarm results: warning: " + keys[1] + " refers to result object " + gone + ", which is missing: it was there when the campaign finalised",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("results %v: stderr lacks %q:\n%s", args, want, errs)
			}
		}
		if len(args) == 3 && strings.Count(out, "\n") < 5 {
			t.Errorf("results %v: no summary table:\n%s", args, out)
		}
	}
	// The report is written without the two, and exits 1 saying so: a
	// store copied without its result objects gave a report headed
	// "(done)" with every figure empty, and exit 0.
	rep := filepath.Join(dir, "rep")
	code, out, errs := captured(t, func() int { return runReport([]string{"-storage", data, id, "--out", rep}) })
	if code != 1 || !strings.Contains(errs, "report: 2 of the campaign's results were left out (the warnings above say why): the report lacks them") ||
		!strings.Contains(out, filepath.Join(rep, "index.html")) {
		t.Errorf("report: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(rep, "index.html")); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestResultsMixedEngines: `msjfarm results` reads the stored summary,
// not the records, so it said nothing of a campaign whose results two
// engine versions computed (a rolling upgrade of the workers); it now
// warns from the manifest's provenance, as report does from the records.
// The manifest of a real run is given a second engine row for fcfs.
func TestResultsMixedEngines(t *testing.T) {
	data := runSweepText(t, t.TempDir(), "name: mixed\nseed: 3\nworkload: one-or-all\naxes:\n  arrival_rate: [1]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1e3, warmup: 1e2}\n")
	code, _, errs := captured(t, func() int { return runResults([]string{"-storage", data, "mixed"}) })
	if code != 0 || strings.Contains(errs, "engine versions") {
		t.Fatalf("results of one engine: exit %d\n%s", code, errs)
	}
	editManifest(t, data, func(m map[string]any) {
		pols := m["policies"].([]any)
		other := maps.Clone(pols[0].(map[string]any))
		other["engine"] = "0.0.1"
		m["policies"] = append(pols, other)
	})
	for _, args := range [][]string{{"-storage", data, "mixed"}, {"-storage", data, "--csv", "mixed"}} {
		code, _, errs = captured(t, func() int { return runResults(args) })
		if code != 0 || !strings.Contains(errs, "msjfarm results: warning: policy fcfs: results of engine versions 0.0.1, ") ||
			!strings.Contains(errs, "into a store that does not hold these results") {
			t.Errorf("results %v: exit %d\n%s", args, code, errs)
		}
	}
}

// TestCancelledCounts: a cancelled campaign's manifest is written at the
// cancellation, before the tasks then running store their results;
// `status --storage` read its count (9) where 14 results were stored and
// `results` listed 14. It now counts at least what is stored. A real
// run's manifest is made a cancellation's, with 3 of its 4 results.
func TestCancelledCounts(t *testing.T) {
	data := runSweepText(t, t.TempDir(), "name: cancelme\nseed: 3\nworkload: one-or-all\naxes:\n  arrival_rate: [1, 2]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1e3, warmup: 1e2}\n")
	editManifest(t, data, func(m map[string]any) { m["state"], m["done"] = "cancelled", 3 })
	code, out, errs := captured(t, func() int { return dispatch([]string{"status", "--storage", data}) })
	var row []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[1] == "cancelme" {
			row = f
		}
	}
	if code != 0 || row == nil || row[2] != "cancelled" || row[3] != "4" {
		t.Fatalf("status: exit %d, row %q\n%s%s", code, row, out, errs)
	}
}

// runSweepText runs the sweep body with msjfarm run (extra flags first)
// into a fresh store under dir and returns the store's directory.
func runSweepText(t *testing.T, dir, body string, flags ...string) string {
	t.Helper()
	sw := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, out := capture(t, func() int { return runRun(append(flags, "-q", "-storage", data, sw)) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	return data
}

// editManifest rewrites the manifest of the one campaign in store data
// with edit, as JSON fields.
func editManifest(t *testing.T, data string, edit func(m map[string]any)) {
	t.Helper()
	man, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "manifest.json"))
	if len(man) != 1 {
		t.Fatalf("manifests %v", man)
	}
	b, err := os.ReadFile(man[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	if err := os.WriteFile(man[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
}
