package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// TestImportedResultsNotReused: an imported archive's results answer its
// own campaign only. Another sweep sharing its 12 tasks on the importing
// store runs them again (0 reused); those runs agree, which makes the
// results reusable, and a third sweep reuses all 12. On a store where one
// imported result was altered (an archive whose author claims other
// numbers), the sharing sweep's task fails, naming the imported campaign,
// and the imported result is left as it was. Before, the second sweep
// reused the 12 as its own, altered or not ("12 reused from other
// campaigns").
//
// Complexity: one scenario's steps in order, each a flat check.
func TestImportedResultsNotReused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := write("first.yaml", newcomerBase)
	second := write("second.yaml", strings.Replace(strings.Replace(newcomerBase, "name: first", "name: second", 1), "arrival_rate: [1, 2]", "arrival_rate: [1, 2, 3]", 1))
	third := write("third.yaml", strings.Replace(newcomerBase, "name: first", "name: third", 1))
	farm, file := filepath.Join(dir, "farm"), filepath.Join(dir, "first.msjar")
	if code, _, errs := captured(t, func() int { return dispatch([]string{"run", "-q", "--workers", "2", "--storage", farm, first}) }); code != 0 {
		t.Fatalf("run first: exit %d\n%s", code, errs)
	}
	if code, out, errs := captured(t, func() int {
		return dispatch([]string{"archive", "export", "first", "--storage", farm, "-o", file})
	}); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errs)
	}
	run := func(store, sw string) (int, string) {
		t.Helper()
		code, _, errs := captured(t, func() int { return dispatch([]string{"run", "--workers", "2", "--storage", store, sw}) })
		return code, errs
	}
	imported := func(store string) (id string, marks []string) {
		t.Helper()
		code, out, errs := captured(t, func() int { return dispatch([]string{"archive", "import", file, "--storage", store}) })
		if code != 0 || !strings.Contains(out, "its 12 new results answer this campaign only") {
			t.Fatalf("import: exit %d\n%s%s", code, out, errs)
		}
		id = strings.Fields(strings.TrimPrefix(out, "msjfarm archive import: campaign "))[0]
		st, err := storage.Open(t.Context(), store)
		if err != nil {
			t.Fatal(err)
		}
		marks, _ = st.List(t.Context(), storage.ImportedPrefix)
		return id, marks
	}

	// The importing store: nothing reused until confirmed.
	store := filepath.Join(dir, "imported")
	if _, marks := imported(store); len(marks) != 12 {
		t.Fatalf("%d results marked imported, want 12", len(marks))
	}
	if code, errs := run(store, second); code != 0 || !strings.Contains(errs, "18 tasks in 6 points, 0 already done (0 reused from other campaigns), 18 to run") {
		t.Fatalf("second sweep after the import: exit %d, want 0 reused and 18 run\n%s", code, errs)
	}
	st, _ := storage.Open(t.Context(), store)
	if marks, _ := st.List(t.Context(), storage.ImportedPrefix); len(marks) != 0 {
		t.Fatalf("runs that agree left %d marks", len(marks))
	}
	if code, errs := run(store, third); code != 0 || !strings.Contains(errs, "(12 reused from other campaigns), 0 to run") {
		t.Fatalf("third sweep, once confirmed: exit %d, want 12 reused\n%s", code, errs)
	}

	// `msjfarm reproduce` of the imported campaign confirms what it
	// re-runs bit-identical, as a worker's run does.
	rstore := filepath.Join(dir, "reproduced")
	rid, _ := imported(rstore)
	code, _, errs := captured(t, func() int {
		return dispatch([]string{"reproduce", rid, "--sample", "3", "--storage", rstore})
	})
	if code != 0 || !strings.Contains(errs, "3 imported results confirmed") {
		t.Fatalf("reproduce --sample 3: exit %d\n%s", code, errs)
	}
	if code, errs := run(rstore, third); code != 0 || !strings.Contains(errs, "(3 reused from other campaigns), 9 to run") {
		t.Fatalf("third sweep after reproducing 3: exit %d, want 3 reused\n%s", code, errs)
	}

	// A store with one imported result altered.
	altered := filepath.Join(dir, "altered")
	id, marks := imported(altered)
	key, _ := storage.ImportedContentKey(marks[0])
	obj := filepath.Join(altered, filepath.FromSlash(storage.StoredResultKey(key)))
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rec["result"]["mean_in_system"] = rec["result"]["mean_in_system"].(float64) / 10
	forged, _ := json.Marshal(rec)
	if err := os.WriteFile(obj, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	code, errs = run(altered, second)
	if code == 0 || !strings.Contains(errs, "was imported with campaign "+id+" and differs from this run's") || !strings.Contains(errs, "1 of 18 tasks failed") {
		t.Fatalf("second sweep on the altered store: exit %d, want 1 failed naming campaign %s\n%s", code, id, errs)
	}
	if got, _ := os.ReadFile(obj); string(got) != string(forged) {
		t.Fatal("the altered imported result was replaced")
	}
	// The other 11 were confirmed by those runs; reproducing the altered
	// one finds it different and leaves its mark.
	code, out, errs := captured(t, func() int { return dispatch([]string{"reproduce", id, "--all", "--storage", altered}) })
	if code != 1 || !strings.Contains(out, "12 tasks: 11 bit-identical, 1 different") || strings.Contains(errs, "confirmed") {
		t.Fatalf("reproduce --all of the altered campaign: exit %d\n%s%s", code, out, errs)
	}
	ast, _ := storage.Open(t.Context(), altered)
	if left, _ := ast.List(t.Context(), storage.ImportedPrefix); len(left) != 1 || left[0] != marks[0] {
		t.Fatalf("marks left on the altered store: %v, want %s", left, marks[0])
	}
}
