package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

// TestStatusResultsWithoutData: `msjfarm status` and `msjfarm results` in
// a directory with no results say so and exit 1, and create nothing (they
// used to create an empty ./msjfarm-data and print an empty table with
// exit 0); with an existing but empty store they say there are no
// campaigns, exit 1.
func TestStatusResultsWithoutData(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("MSJFARM_STORAGE", "")
	t.Setenv("MSJFARM_NATS_URL", "")
	for _, args := range [][]string{{"status"}, {"results"}, {"results", "q-fig3"}, {"report", "q-fig3"}, {"gc"}, {"archive", "export", "q-fig3", "-o", "x.msjar"}} {
		code, out, errOut := captured(t, func() int { return dispatch(args) })
		if code == 0 || !strings.Contains(errOut, "no results at ./msjfarm-data: it does not exist") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero and a message that ./msjfarm-data does not exist", args, code, errOut)
		}
		if strings.TrimSpace(out) != "" {
			t.Errorf("%v: printed %q on stdout", args, out)
		}
		if _, err := os.Stat("msjfarm-data"); err == nil {
			t.Fatalf("%v created ./msjfarm-data", args)
		}
	}
	if err := os.Mkdir("msjfarm-data", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"results"}} {
		code, out, errOut := captured(t, func() int { return dispatch(args) })
		if code != 1 || !strings.Contains(errOut, "no campaigns") || strings.TrimSpace(out) != "" {
			t.Errorf("%v in an empty store: exit %d, stdout %q, stderr %q; want 1 and \"no campaigns\"", args, code, out, errOut)
		}
	}
}

// TestGCOnlyInAStore: gc --delete pointed at a directory that is not a
// result store (a project's own results/20/2024-summary.json, which only
// looks like a stored result's path) exited 0, "removed 2 unreferenced
// results", and the files were gone. It is refused now, nothing deleted;
// and --min-age below 0 (which acted as 0) is a usage error.
func TestGCOnlyInAStore(t *testing.T) {
	dir := t.TempDir()
	files := []string{"results/20/2024-summary.json", "results/ab/abstract.json", "results/ab/abcdef0123456789abcdef0123456789.json"}
	old := time.Now().Add(-72 * time.Hour)
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"year": 2024}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := captured(t, func() int { return dispatch([]string{"gc", "--storage", dir, "--delete"}) })
	if code != 1 || !strings.Contains(errOut, "is not a msjfarm result store (it has no store-id") {
		t.Errorf("gc --delete in a directory that is not a store: exit %d, %s", code, errOut)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("gc deleted %s: %v", f, err)
		}
	}
	code, _, errOut = captured(t, func() int { return dispatch([]string{"gc", "--storage", dir, "--min-age", "-1h"}) })
	if code != 2 || !strings.Contains(errOut, "gc: --min-age must be >= 0, got -1h0m0s") {
		t.Errorf("gc --min-age -1h: exit %d, %s", code, errOut)
	}
	// A store whose campaign directory is a link to elsewhere: listing
	// does not follow it, so gc took that campaign's results for
	// unreferenced and deleted them.
	st, err := storage.Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.ID(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "campaigns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "campaigns", "f1180bce555abede")); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = captured(t, func() int { return dispatch([]string{"gc", "--storage", dir, "--delete", "--min-age", "0"}) })
	if code != 1 || !strings.Contains(errOut, "holds symbolic links (campaigns/f1180bce555abede)") {
		t.Errorf("gc --delete in a store with a linked campaign: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, files[2])); err != nil {
		t.Errorf("gc deleted %s: %v", files[2], err)
	}
	// The store's own path a link: nothing inside is one, so gc works
	// (it was refused, "holds symbolic links (.)"), and deletes the
	// unreferenced result.
	if err := os.Remove(filepath.Join(dir, "campaigns", "f1180bce555abede")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "store")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = captured(t, func() int { return dispatch([]string{"gc", "--storage", link, "--delete", "--min-age", "0"}) })
	if code != 0 || !strings.Contains(errOut, "removed 1 unreferenced results") {
		t.Errorf("gc --delete through a linked store path: exit %d, %s", code, errOut)
	}
}

// TestMissingSweepFile: a sweep file that is not there is named as the
// sweep file, in the loader's words (it was "stat x.yaml: no such file or
// directory" when --max-spec-size's check stat'ed it first), exit non-zero,
// and nothing is created.
func TestMissingSweepFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("MSJFARM_STORAGE", "")
	t.Setenv("MSJFARM_NATS_URL", "")
	for _, args := range [][]string{{"run", "--dry-run", "missing.yaml"}, {"submit", "--dry-run", "missing.yaml"}} {
		code, out, errOut := captured(t, func() int { return dispatch(args) })
		if code == 0 || !strings.Contains(errOut, "sweep file: missing.yaml does not exist") || strings.Contains(errOut, "stat ") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero and that the sweep file missing.yaml does not exist", args, code, errOut)
		}
		if strings.TrimSpace(out) != "" {
			t.Errorf("%v: printed %q on stdout", args, out)
		}
		if ents, _ := os.ReadDir("."); len(ents) != 0 {
			t.Fatalf("%v left %d entries in the directory", args, len(ents))
		}
	}
}
