package schema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

var update = flag.Bool("update", false, "rewrite docs/sweep.schema.json")

const committed = "../../docs/sweep.schema.json"

// TestSchemaUpToDate regenerates the schema from the Go types and fails if
// the committed docs/sweep.schema.json differs (go test -update rewrites it).
func TestSchemaUpToDate(t *testing.T) {
	got, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committed, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with the Go types: go test ./sweep/schema -update rewrites it", committed)
	}
}

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRead(t, committed)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// instance converts YAML to the JSON value a validator sees (what an editor
// extension does with a YAML file).
func instance(t *testing.T, yml []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(yml, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestExamplesValidate validates every examples/*.yaml against the
// committed schema (profiles blocks included); each example also expands,
// as written and under every profile (so the schema accepts files the
// reader accepts, not only files of the right shape); a limit file is
// planned instead (sweep.PlanLimit expands its first round).
func TestExamplesValidate(t *testing.T) {
	s := compile(t)
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		if err := s.Validate(instance(t, mustRead(t, f))); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		sf, err := sweep.LoadProfile(f, "")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, p := range append([]string{""}, sf.ProfileNames()...) {
			pf, err := sweep.LoadProfile(f, p)
			switch {
			case err == nil && pf.Limit != nil:
				// A limit search is planned, not expanded (its rounds are).
				_, err = sweep.PlanLimit(pf, builtin.Catalog{})
			case err == nil:
				_, err = sweep.Expand(pf, builtin.Catalog{})
			}
			if err != nil {
				t.Errorf("%s (profile %q) does not expand: %v", f, p, err)
			}
		}
	}
}

// TestSchemaRejects checks that the schema catches the structural mistakes
// the reader also rejects, and accepts the value forms the reader accepts.
func TestSchemaRejects(t *testing.T) {
	s := compile(t)
	base := "name: x\npolicies: [fcfs]\nreplications: 2\nworkload: one-or-all\n"
	for _, c := range []struct {
		extra string
		ok    bool
	}{
		{"", true},
		{"description: what it shows\n", true},
		{"run: {arrivals: 1e5, warmup: 1e4, deadline: 90m}\n", true},
		{"axes: {arrival_rate: [1, 2.5], \"class[1].service.mean\": [1, 2]}\nzip: [[arrival_rate, \"class[1].service.mean\"]]\n", true},
		{"precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 20}\n", true},
		{"classes: [{need: 1, share: 1, service: {dist: exp, mean: 1}}]\nservers: 4\n", true},
		{"unknown_key: 1\n", false},
		{"run: {arrivals: 1e5, deadline: 30}\n", false},         // bare-number duration
		{"run: {arrivals: 1.5}\n", false},                       // not whole
		{"run: {arrival: 10}\n", false},                         // misspelt key
		{"axes: {arrival_rate: 3}\n", false},                    // not a list
		{"precision: {metric: mean_response}\n", false},         // incomplete
		{"classes: [{need: 1, share: 1}]\nservers: 4\n", false}, // no service
		{"trace: {time_scale: 2}\n", false},                     // no file
		{"profiles: {paper: {replications: 30, run: {arrivals: 1e7, deadline: 4h}, axes: {arrival_rate: [1, 2]}}, quick: {}}\n", true},
		{"profiles: {paper: {precision: {rel_half_width: 0.02}}}\n", true}, // merged into the file's block
		{"profiles: {paper: {seed: 2}}\n", false},                          // a profile does not change what is simulated
		{"profiles: {paper: {run: {arrival: 10}}}\n", false},               // misspelt key
		{"profiles: {paper: {run: {deadline: 30}}}\n", false},              // bare-number duration
		{"profiles: {paper: {replications: 0}}\n", false},
		{"profiles: {paper: {axes: {arrival_rate: 3}}}\n", false}, // not a list
	} {
		err := s.Validate(instance(t, []byte(base+c.extra)))
		if (err == nil) != c.ok {
			t.Errorf("%q: valid=%v, want %v (%v)", c.extra, err == nil, c.ok, err)
		}
	}
	for _, bad := range []string{"name: x\nreplications: 2\n", "policies: [fcfs]\nreplications: 2\n",
		"name: x\nreplications: 2\npolicies: [{threshold: 3}]\n", "name: x\nreplications: 0\npolicies: [fcfs]\n"} {
		if err := s.Validate(instance(t, []byte(bad))); err == nil {
			t.Errorf("%q: valid, want an error", strings.ReplaceAll(bad, "\n", "; "))
		}
	}
}
