package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// captured runs f with os.Stdout and os.Stderr redirected and returns
// its exit code and the two outputs.
func captured(t *testing.T, f func() int) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	out, _ := os.Create(filepath.Join(dir, "out"))
	errf, _ := os.Create(filepath.Join(dir, "err"))
	so, se := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	code := f()
	os.Stdout, os.Stderr = so, se
	out.Close()
	errf.Close()
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return code, string(o), string(e)
}

// listing is the relative paths of every file below dir.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// TestDryRun: -dry-run prints the plan, writes nothing (neither to a
// missing nor to an existing store), counts the stored results of an
// earlier run and a grown sweep's reusable ones, and rejects an invalid
// sweep with the error a real run gives.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errs := captured(t, func() int { return runRun([]string{"-dry-run", "-workers", "2", "-storage", data, sw}) })
	if code != 0 || !strings.Contains(out, "tasks            6\n") || !strings.Contains(out, "to run           6\n") ||
		!strings.Contains(out, "estimated CPU") || !strings.Contains(out, "estimated wall") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("dry run created %s", data)
	}
	if code := runRun([]string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data, sw}); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	before := listing(t, data)
	grown := filepath.Join(dir, "grown.yaml")
	if err := os.WriteFile(grown, []byte(strings.Replace(runTestSweep, "[1, 2]", "[1, 2, 3]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file, want string
	}{
		{sw, "already stored   6 (0 of them reused from other campaigns)\n  to run           0\n"},
		{grown, "tasks            9\n  already stored   6 (6 of them reused from other campaigns)\n  to run           3\n"},
	} {
		code, out, errs := captured(t, func() int { return runSubmit([]string{"-dry-run", "-workers", "4", "-storage", data, tc.file}) })
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("submit -dry-run %s: exit %d, want %q in\n%s%s", tc.file, code, tc.want, out, errs)
		}
	}
	if after := listing(t, data); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("dry runs changed the store:\n%v\n%v", before, after)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(runTestSweep, "replications: 3", "replications: 0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	c1, _, e1 := captured(t, func() int { return runRun([]string{"-storage", data, bad}) })
	c2, _, e2 := captured(t, func() int { return runRun([]string{"-dry-run", "-storage", data, bad}) })
	if c1 == 0 || c1 != c2 || e1 != e2 || !strings.Contains(e1, "replications") {
		t.Fatalf("invalid sweep: run exit %d %q, dry run exit %d %q", c1, e1, c2, e2)
	}
}

// TestNamesAndGC: results lists the campaigns and takes a name; an
// unknown name lists the candidates; gc lists and, with -delete only,
// removes results no campaign refers to.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestNamesAndGC(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code := runRun([]string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data, sw}); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	code, out, _ := captured(t, func() int { return runResults([]string{"-storage", data}) })
	if code != 0 || !strings.Contains(out, "run-cmd") || !strings.Contains(out, "done") {
		t.Fatalf("results list: exit %d\n%s", code, out)
	}
	if code, out, _ := captured(t, func() int { return runResults([]string{"-storage", data, "run-cmd"}) }); code != 0 || !strings.Contains(out, "fcfs") {
		t.Fatalf("results by name: exit %d\n%s", code, out)
	}
	if code, _, errs := captured(t, func() int { return runResults([]string{"-storage", data, "nope"}) }); code == 0 || !strings.Contains(errs, "run-cmd (") {
		t.Fatalf("unknown name: exit %d %q", code, errs)
	}
	if code, out, _ := captured(t, func() int { return runStatus([]string{"-storage", data, "run-cmd"}) }); code != 0 || !strings.Contains(out, "done") {
		t.Fatalf("status from storage: exit %d\n%s", code, out)
	}
	// Remove the campaign: its 6 results become unreferenced.
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*"))
	if len(camps) != 1 {
		t.Fatal(camps)
	}
	if err := os.RemoveAll(camps[0]); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		files, _ := filepath.Glob(filepath.Join(data, "results", "*", "*.json"))
		return len(files)
	}
	code, out, errs := captured(t, func() int { return runGC([]string{"-storage", data, "-min-age", "0s"}) })
	if code != 0 || strings.Count(out, "\n") != 6 || count() != 6 || !strings.Contains(errs, "-delete removes them") {
		t.Fatalf("gc: exit %d, %d stored\n%s%s", code, count(), out, errs)
	}
	if code, _, errs := captured(t, func() int { return runGC([]string{"-storage", data}) }); code != 0 || !strings.Contains(errs, "0 results") {
		t.Fatalf("gc with the default min age: exit %d %s", code, errs)
	}
	// One result marked imported: its mark goes with it (a mark left
	// behind would make a later run's own result look imported).
	files, _ := filepath.Glob(filepath.Join(data, "results", "*", "*.json"))
	mark := filepath.Join(data, filepath.FromSlash(storage.ImportedKey(strings.TrimSuffix(filepath.Base(files[0]), ".json"))))
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mark, []byte("0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := captured(t, func() int { return runGC([]string{"-storage", data, "-min-age", "0s", "-delete"}) }); code != 0 || count() != 0 {
		t.Fatalf("gc -delete: exit %d, %d left; %s", code, count(), errs)
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("gc -delete left the imported mark of a result it removed (%v)", err)
	}
}

// The dry run says how many tasks spot verification re-runs, the
// coordinator's sample: a run with the same fraction samples as many.
func TestDryRunCountsVerification(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	code, out, errs := captured(t, func() int { return dispatch([]string{"run", "--dry-run", "--verify", "0.5", "--storage", data, sw}) })
	i := strings.Index(out, "  verification     ")
	if code != 0 || i < 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	var n int
	fmt.Sscanf(out[i+len("  verification     "):], "%d", &n)
	if !strings.Contains(out, fmt.Sprintf("%d of the 12 tasks re-run on another worker", n)) || n == 0 || n == 12 {
		t.Fatalf("dry run: %d sampled of 12 at verify 0.5\n%s", n, out)
	}
	code, out, errs = captured(t, func() int { return dispatch([]string{"run", "-q", "--verify", "0.5", "--storage", data, sw}) })
	if want := fmt.Sprintf("of %d sampled tasks verified", n); code != 0 || !strings.Contains(out+errs, want) {
		t.Fatalf("run: exit %d, want %q\n%s%s", code, want, out, errs)
	}
}
