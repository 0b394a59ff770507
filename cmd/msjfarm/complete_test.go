package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionOfValues: the shell completion (cobra's __complete, which
// the completion scripts call) completes the enumerable values — policies,
// workloads, runners, a sweep file's profiles, and the campaigns of the
// store (names and ids) for status/results/report/reproduce/cancel —
// not only commands and flags; completing against a missing store
// creates nothing.
func TestCompletionOfValues(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep+"profiles: {paper: {replications: 5}, quick: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, _, errOut := captured(t, func() int {
		return dispatch([]string{"run", "--workers", "2", "-q", "--runner", "inprocess", "--storage", data, sw})
	}); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	complete := func(args ...string) []string {
		t.Helper()
		_, out, _ := captured(t, func() int { return dispatch(append([]string{"__complete"}, args...)) })
		var vals []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				vals = append(vals, strings.SplitN(l, "\t", 2)[0])
			}
		}
		return vals
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"simulate", "--policy", "first"}, []string{"first-fit", "firstfit-srpt"}},
		{[]string{"limit", "--workload", "one-or"}, []string{"one-or-all"}},
		{[]string{"run", "--runner", ""}, []string{"auto", "plugin", "inprocess"}},
		{[]string{"run", sw, "--profile", ""}, []string{"paper", "quick"}},
		{[]string{"status", "--storage", data, "run"}, []string{"run-cmd"}},
		{[]string{"results", "--storage", data, ""}, []string{"run-cmd"}},
		{[]string{"report", "--storage", data, "r"}, []string{"run-cmd"}},
	} {
		got := complete(c.args...)
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("complete %v: %v, want %q among them", c.args, got, w)
			}
		}
	}
	// A campaign id completes too.
	if got := complete("results", "--storage", data, ""); len(got) != 2 {
		t.Errorf("results: %v, want the name and the id", got)
	}
	missing := filepath.Join(dir, "missing")
	if got := complete("status", "--storage", missing, ""); len(got) != 0 {
		t.Errorf("a missing store completes %v", got)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("completion created the store")
	}
}
