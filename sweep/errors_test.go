package sweep_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestErrorPositions: the same mistakes in YAML, TOML and JSON files are
// placed at their line and column (1-based; derived by counting in the
// files below), with the key path and the suggestion.
func TestErrorPositions(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		file, body, want string
	}{
		{"a.yaml", "name: x\nworkload: one-or-all\nreplicatons: 3\n", "a.yaml:3:1: replicatons: unknown key \"replicatons\" (did you mean \"replications\"?)"},
		// TOML: [run] on line 4, "arivals" at column 1 of line 5.
		{"b.toml", "name = \"x\"\nworkload = \"one-or-all\"\nreplications = 3\n[run]\narivals = 10\n", "b.toml:5:1: run.arivals: unknown key \"arivals\" (did you mean \"arrivals\"?)"},
		// JSON: "deadline" value "1hour" starts at line 3, column 28.
		{"c.json", "{\"name\": \"x\", \"workload\": \"one-or-all\",\n \"replications\": 3, \"policies\": [\"fcfs\"],\n \"run\": {\"arrivals\": 10, \"deadline\": \"1hour\"}}\n", "c.json:3:38: run.deadline: \"1hour\" is not a duration"},
		{"d.json", "{\"name\": \"x\",\n  \"seed\": }\n", "d.json:2:11: not valid JSON"},
		{"e.toml", "name = \"x\"\nseed = = 3\n", "e.toml:2:8: not valid TOML"},
	} {
		p := filepath.Join(dir, c.file)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := sweep.Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s:\n got %v\nwant one line containing %s", c.file, err, strings.TrimPrefix(c.want, ""))
		}
	}
}

// TestErrorFromEnvironmentAndProfile: a bad value set by an environment
// override names the variable (it has no line); one set by the selected
// profile is placed in the profile.
func TestErrorFromEnvironmentAndProfile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.yaml")
	body := "name: x\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: [fcfs]\nreplications: 3\nrun: {arrivals: 10}\nprofiles:\n  big: {replications: -2}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSJFARM_RUN_DEADLINE", "soon")
	if _, err := sweep.Load(p); err == nil || !strings.Contains(err.Error(), `run.deadline: "soon" is not a duration`) || !strings.Contains(err.Error(), "(set by MSJFARM_RUN_DEADLINE)") {
		t.Errorf("env: %v", err)
	}
	os.Unsetenv("MSJFARM_RUN_DEADLINE")
	f, err := sweep.LoadProfile(p, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.Expand(f, builtin.Catalog{}); err == nil || !strings.Contains(err.Error(), "s.yaml:8:23: replications: must be >= 1, got -2") {
		t.Errorf("profile: %v", err)
	}
}

// TestSuggest: the nearest names, by edit distance (transpositions count
// one) or ignoring case and - _, at most three, none for an exact match
// or a far one.
func TestSuggest(t *testing.T) {
	names := []string{"first-fit", "firstfit-srpt", "fcfs", "msf", "msfq", "one-or-all", "replications", "threshold"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"firstfit", []string{"first-fit", "firstfit-srpt"}},
		{"FirstFit", []string{"first-fit", "firstfit-srpt"}},
		{"fcsf", []string{"fcfs"}},
		{"msqf", []string{"msf", "msfq"}},
		{"treshold", []string{"threshold"}},
		{"replicatons", []string{"replications"}},
		{"fcfs", nil},
		{"zzzz", nil},
	} {
		if got := sweep.Suggest(c.in, names); !slices.Equal(got, c.want) {
			t.Errorf("Suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
