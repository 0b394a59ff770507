package sweep

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// testCatalog knows fcfs (no parameters) and testpol (an int threshold in
// [0, 31] and a string mode), standing in for a plugin's schemas.
type testCatalog struct{}

func (testCatalog) Schema(p string) ([]sim.Param, error) {
	switch p {
	case "fcfs":
		return nil, nil
	case "testpol":
		return []sim.Param{
			{Name: "threshold", Type: sim.Int, Default: 31, Min: sim.Bound(0), Max: sim.Bound(31)},
			{Name: "mode", Type: sim.String, Default: "slow", Enum: []string{"slow", "fast"}},
		}, nil
	}
	return nil, fmt.Errorf("unknown policy %q (known: fcfs, testpol)", p)
}

// TestExpandGolden: 2 rates × 2 means = 4 scenarios; policies fcfs plus
// testpol with 2 thresholds = 3 variants; 12 points × 2 replications = 24
// tasks. The golden file pins ids, seeds and order.
func TestExpandGolden(t *testing.T) {
	f, err := Load("testdata/fig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 24 || c.Points != 12 {
		t.Fatalf("%d tasks, %d points; want 24, 12", len(c.Tasks), c.Points)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "campaign %s\n", c.ID)
	for _, tk := range c.Tasks {
		ax, _ := json.Marshal(tk.Axes)
		pa, _ := json.Marshal(tk.Params)
		fmt.Fprintf(&buf, "%s point=%s rep=%d seed=%d policy=%s params=%s axes=%s load=%.6g\n",
			tk.ID, tk.Point, tk.Replication, tk.Seed, tk.Policy, pa, ax, tk.Load)
	}
	golden(t, "testdata/fig.golden", buf.Bytes())

	// Common random numbers: at one scenario and replication, every policy
	// variant has the same seed; different replications differ.
	seeds := map[string]uint64{}
	for _, tk := range c.Tasks {
		k := fmt.Sprintf("%s/%d", tk.Scenario, tk.Replication)
		if s, ok := seeds[k]; ok && s != tk.Seed {
			t.Fatalf("scenario %s: policies got seeds %d and %d", k, s, tk.Seed)
		}
		seeds[k] = tk.Seed
	}
	if len(seeds) != 8 {
		t.Fatalf("%d distinct (scenario, replication) seeds, want 8", len(seeds))
	}
	// Ids are unique and reproducible.
	again, _ := Expand(f, testCatalog{})
	ids := map[string]bool{}
	for i, tk := range c.Tasks {
		if ids[tk.ID] {
			t.Fatalf("duplicate task id %s", tk.ID)
		}
		ids[tk.ID] = true
		if again.Tasks[i].ID != tk.ID || TaskID(tk) != tk.ID {
			t.Fatalf("task %d: id not reproducible", i)
		}
	}
}

// TestTOMLMatchesYAML: the same sweep in TOML expands to the same campaign.
func TestTOMLMatchesYAML(t *testing.T) {
	y, err := Load("testdata/fig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load("testdata/fig.toml")
	if err != nil {
		t.Fatal(err)
	}
	cy, err := Expand(y, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := Expand(m, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cy.Tasks) != len(cm.Tasks) {
		t.Fatalf("%d vs %d tasks", len(cy.Tasks), len(cm.Tasks))
	}
	for i := range cy.Tasks {
		if cy.Tasks[i].ID != cm.Tasks[i].ID {
			t.Fatalf("task %d: yaml %s, toml %s", i, cy.Tasks[i].ID, cm.Tasks[i].ID)
		}
	}
}

func TestEnvOverride(t *testing.T) {
	t.Setenv("MSJFARM_RUN_ARRIVALS", "500")
	t.Setenv("MSJFARM_REPLICATIONS", "3")
	f, err := Load("testdata/fig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Run.Arrivals != 500 || f.Replications != 3 || f.Run.Deadline.Minutes() != 90 {
		t.Fatalf("run %+v, replications %d", f.Run, f.Replications)
	}
	// Said, in envKeys' order, so that run and submit can say it.
	want := []string{"MSJFARM_REPLICATIONS=3 (replications)", "MSJFARM_RUN_ARRIVALS=500 (run.arrivals)"}
	if got := f.EnvOverrides(); !slices.Equal(got, want) {
		t.Fatalf("EnvOverrides %q, want %q", got, want)
	}
	// A content parsed (a stored spec) takes none: with the variables set,
	// report expanded a stored spec into another campaign.
	data, err := os.ReadFile("testdata/fig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(data, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if g.Run.Arrivals == 500 || g.Replications == 3 || len(g.EnvOverrides()) != 0 {
		t.Fatalf("Parse applied the environment: run %+v, replications %d, %q", g.Run, g.Replications, g.EnvOverrides())
	}
}

// A whole number written as text (an environment override, a quoted
// value) is read as the integer it writes, not through a float64:
// MSJFARM_SEED=9007199254740993 was seed 9007199254740992, the same
// campaign, and 2⁶⁴−1 (a valid seed in a file) was refused.
func TestWholeNumberText(t *testing.T) {
	for _, seed := range []uint64{9007199254740993, 18446744073709551615} {
		t.Setenv("MSJFARM_SEED", fmt.Sprint(seed))
		f, err := Load("testdata/fig.yaml")
		if err != nil || f.Seed != seed {
			t.Fatalf("MSJFARM_SEED=%d: seed %d, %v", seed, f.Seed, err)
		}
	}
}

// An environment override is text: the whole of it is the number.
func TestEnvOverrideSuffix(t *testing.T) {
	t.Setenv("MSJFARM_RUN_ARRIVALS", "5k")
	if _, err := Load("testdata/fig.yaml"); err == nil || !strings.Contains(err.Error(), `"5k" is not a whole number`) {
		t.Fatalf("MSJFARM_RUN_ARRIVALS=5k: %v", err)
	}
}

func TestErrors(t *testing.T) {
	base := "name: x\nseed: 1\nreplications: 2\nrun: {arrivals: 100}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplicatons: 3\n", "replicatons"},
		{"unknown policy", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfz]\n", `policies[0]: unknown policy "fcfz"`},
		{"param range", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: testpol, threshold: 40}]\n", `parameter "threshold": must be <= 31`},
		{"unknown param", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: testpol, thresh: 4}]\n", `unknown parameter "thresh"`},
		{"need > servers", base + "servers: 4\nclasses: [{need: 8, share: 1, service: {dist: exp, mean: 1}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "classes[0].need: 8 is not in [1, servers] = [1, 4]"},
		// The engine's check of the workload refused these, without a
		// key path (so without a line and column).
		{"negative share", base + "servers: 4\nclasses: [{need: 1, share: -1, service: {dist: exp, mean: 1}}, {need: 2, share: 1, service: {dist: exp, mean: 1}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "classes[0].share: must be a finite number >= 0"},
		{"shares past the largest number", base + "servers: 4\nclasses: [{need: 1, share: 1e308, service: {dist: exp, mean: 1}}, {need: 2, share: 1e308, service: {dist: exp, mean: 1}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "classes: the shares sum to +Inf"},
		{"no shares", base + "servers: 4\nclasses: [{need: 1, service: {dist: exp, mean: 1}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "classes: the shares sum to 0"},
		{"negative rate", base + "workload: one-or-all\naxes: {arrival_rate: [-1]}\npolicies: [fcfs]\n", "must be > 0"},
		// k sizes the policies' state: servers: 1e9 had a worker
		// allocate 4 GB and die (sim.MaxServers = 2^20).
		{"zero load", base + "workload: one-or-all\naxes: {load: [0, 0.5]}\npolicies: [fcfs]\n", "point load=0: arrival rate and load must be > 0"},
		{"flat zip", base + "workload: one-or-all\naxes: {load: [0.5], servers: [32]}\nzip: [servers, load]\npolicies: [fcfs]\n", "zip: [[servers, load]], not zip: [servers, load]"},
		{"servers past the most", base + "workload: one-or-all\nservers: 1000000000\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "servers: must be at most 1048576"},
		{"servers axis past the most", base + "workload: one-or-all\naxes: {load: [0.5], servers: [32, 1048577]}\npolicies: [fcfs]\n", "servers must be at most 1048576, got 1048577"},
		{"bare duration", "name: x\nreplications: 1\nrun: {arrivals: 100, deadline: 30}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "has no unit"},
		{"unknown axis", base + "workload: one-or-all\naxes: {lod: [0.5]}\npolicies: [fcfs]\n", "axes.lod: unknown axis"},
		// Refused by the engine's check of the workload, without a line.
		{"negative share axis", base + "workload: one-or-all\naxes: {load: [0.5], 'class[0].share': [0.5, -1]}\npolicies: [fcfs]\n", "axes.class[0].share: -1: a share must be a finite number >= 0"},
		{"bad class axis", base + "workload: one-or-all\naxes: {load: [0.5], 'class[5].share': [1]}\npolicies: [fcfs]\n", "class 5 does not exist: the index is out of range (the workload has 2 classes, class[0] to class[1])"},
		// Atoi's largest int: reported as "class 9223372036854775807".
		{"class index past int", base + "workload: one-or-all\naxes: {load: [0.5], 'class[99999999999999999999].share': [1]}\npolicies: [fcfs]\n",
			"axes.class[99999999999999999999].share: class 99999999999999999999 does not exist: the index is out of range (the workload has 2 classes, class[0] to class[1])"},
		// class[00] is class 0: beside class[0].share it was one share
		// swept twice, one ignored; alone, another campaign id.
		{"class index with a leading zero", base + "workload: one-or-all\naxes: {load: [0.5], 'class[0].share': [0.5], 'class[00].share': [0.7]}\npolicies: [fcfs]\n",
			`line 6, column 46: axes.class[00].share: class index "00" has leading zeros: write class[0].share (two spellings of one class's index would name one axis twice, and give the campaign another id)`},
		{"class index 01", base + "workload: one-or-all\naxes: {load: [0.5], 'class[01].need': [16]}\npolicies: [fcfs]\n",
			`axes.class[01].need: class index "01" has leading zeros: write class[1].need`},
		{"class index with a sign", base + "workload: one-or-all\naxes: {load: [0.5], 'class[+1].share': [1]}\npolicies: [fcfs]\n",
			`axes.class[+1].share: unknown axis "class[+1].share"`},
		{"unknown dist", base + "servers: 4\nclasses: [{need: 1, share: 1, service: {dist: expo, mean: 1}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", `classes[0].service.dist: unknown distribution "expo" (did you mean "exp"?)`},
		{"no replications", "name: x\nrun: {arrivals: 100}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "replications: required"},
		{"fractional arrivals", "name: x\nreplications: 1\nrun: {arrivals: 150.5}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "run.arrivals"},
		{"fractional warmup", "name: x\nreplications: 1\nrun: {arrivals: 100, warmup: 2.5}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "not a whole number"},
		{"huge arrivals", "name: x\nreplications: 1\nrun: {arrivals: 1e19}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "not a whole number"},
		{"zero arrivals", "name: x\nreplications: 1\nrun: {arrivals: 0}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "arrivals: must be >= 1"},
		{"negative warmup", "name: x\nreplications: 1\nrun: {arrivals: 10, warmup: -1}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "warmup: must be >= 0"},
		{"short mser", "name: x\nreplications: 1\nrun: {arrivals: 10, mser: true}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "MSER-5 needs at least 20"},
		{"negative series_max", "name: x\nreplications: 1\nrun: {arrivals: 10, series_max: -1}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "series_max: must be >= 0"},
		// series_max 2^63-1 at a series_interval of 1e-12 had a dry run's
		// calibration grow to 24 GB (sim.MaxSeriesMax).
		{"series_max past the most", "name: x\nreplications: 1\nrun: {arrivals: 10, series_max: 9223372036854775807, series_interval: 1e-12}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"line 3, column 33: run.series_max: must be at most 1000000 (10^6 samples: a 65 MB result per replication), got 9223372036854775807"},
		// 2⁶⁴−1, decoded as unsigned, was wrapped into the int field: "must
		// be >= 0, got -1".
		{"series_max past an int", "name: x\nreplications: 1\nrun: {arrivals: 10, series_max: 18446744073709551615}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"line 3, column 33: run.series_max: 18446744073709551615 is not within ["},
		{"series_max one past the most", "name: x\nreplications: 1\nrun: {arrivals: 10, series_max: 1000001}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "run.series_max: must be at most 1000000"},
		// Counts past 2^53 (sim.MaxArrivals): warmup+arrivals overflowed,
		// and a dry run estimated "-2562047h" of CPU.
		{"arrivals past 2^53", "name: x\nreplications: 1\nrun: {arrivals: 9223372036854775807}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"line 3, column 17: run.arrivals: must be at most 2^53 = 9007199254740992 (counts stay exact as float64), got 9223372036854775807"},
		{"warmup past 2^53", "name: x\nreplications: 1\nrun: {arrivals: 10, warmup: 9223372036854775807}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"line 3, column 29: run.warmup: must be at most 2^53 = 9007199254740992 (counts stay exact as float64), got 9223372036854775807"},
		{"warmup+arrivals past 2^53", "name: x\nreplications: 1\nrun: {arrivals: 9007199254740992, warmup: 1}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"run.arrivals: warmup+arrivals = 9007199254740993, more than 2^53 = 9007199254740992"},
		{"drain_limit past 2^53", "name: x\nreplications: 1\nrun: {arrivals: 10, drain_limit: 9223372036854775807}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"run.drain_limit: must be at most 2^53 = 9007199254740992, got 9223372036854775807"},
		{"negative deadline", "name: x\nreplications: 1\nrun: {arrivals: 10, deadline: -1m}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "run.deadline: must be >= 0"},
		{"seed past 2^64-1", "name: x\nseed: 18446744073709551616\nreplications: 1\nrun: {arrivals: 10}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"seed: 1.8446744073709552e+19 is more than 2⁶⁴−1 = 18446744073709551615, the largest it may be"},
		{"seed in run", "name: x\nreplications: 1\nrun: {arrivals: 10, seed: 3}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "seed"},
		// Text with a suffix was cut to its leading number (fmt.Sscan):
		// "100k" arrivals ran 100, a "5%" precision target was ±500%.
		{"suffixed arrivals", "name: x\nreplications: 1\nrun: {arrivals: 100k}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", `run.arrivals: "100k" is not a whole number (the number alone, without a unit or suffix: 1e5, not 100k)`},
		{"percent replications", "name: x\nreplications: \"3%\"\nrun: {arrivals: 100}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", `replications: "3%" is not a whole number (no percentages`},
		{"percent precision", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nprecision: {metric: mean_response, rel_half_width: \"5%\", max_replications: 30}\n", `precision.rel_half_width: "5%" is not a number (no percentages: 0.05, not 5%)`},
		{"suffixed share", base + "servers: 4\nclasses: [{need: 1, share: \"50%\", service: {dist: exp, mean: \"1s\"}}]\naxes: {load: [0.5]}\npolicies: [fcfs]\n", `is not a number`},
		// A list of maps was merged into one map, the last of a repeated
		// key winning: λ = 1, 2 were dropped without a word.
		{"axes as a list", base + "workload: one-or-all\naxes:\n  - arrival_rate: [1, 2]\n  - arrival_rate: [4, 5]\npolicies: [fcfs]\n", "axes: want a map of keys {key: value}, got a list (a list of maps is not one map)"},
		{"run as a list", "name: x\nreplications: 1\nrun: [{arrivals: 100}, {arrivals: 200}]\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "run: want a map of keys {key: value}, got a list"},
		// The decoder's own words named Go types.
		{"trace as text", base + "trace: small.swf\npolicies: [fcfs]\n", `trace: want a map of keys {key: value}, got the text "small.swf"`},
		{"compare as text", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\ncompare: fcfs\n", `compare: want a map of keys {key: value}, got the text "fcfs"`},
		// An empty block was dropped by the decoder: no precision mode.
		{"empty precision", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nprecision: {}\n", "precision.metric: required"},
		{"zip lengths", base + "workload: one-or-all\naxes: {load: [0.5, 0.6], servers: [32]}\nzip: [[load, servers]]\npolicies: [fcfs]\n", "have 2 and 1 values"},
		// A cap on jobs in system past sim.MaxMaxInSystem switched off the
		// memory guard it is: a runaway queue grew until memory ran out.
		{"max_in_system past the most", "name: x\nreplications: 1\nrun: {arrivals: 10, max_in_system: 1e18}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n",
			"line 3, column 36: run.max_in_system: must be at most 33554432 (2^25 jobs: 16 GiB at 512 bytes a job, 32 times the default's 512 MiB budget; 0 is the default, 1048576), got 1000000000000000000"},
		{"max_in_system one past the most", "name: x\nreplications: 1\nrun: {arrivals: 10, max_in_system: 33554433}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n", "run.max_in_system: must be at most 33554432"},
		// A null was read as if the key were absent (TestNullRefused).
		{"null limit", base + "workload: one-or-all\npolicies: [fcfs]\nlimit: ~\n", "line 7, column 1: limit: null: give a value or remove the key (an empty block is {})"},
		{"null parameter", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: testpol, threshold: ~}]\n", "line 7, column 28: policies[0].threshold: null: give a value or remove the key"},
		{"empty policies", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies:\n", "line 7, column 1: policies: null (no value written): give a value or remove the key"},
		// A parameter's number may be text, as an axis value may
		// (TestQuotedNumbers); the whole text is the number.
		{"suffixed parameter", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: testpol, threshold: \"3k\"}]\n", `policies[0].threshold: policy testpol: parameter "threshold": must be a number, got the text "3k"`},
		{"quoted parameter out of range", base + "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: testpol, threshold: \"40\"}]\n", `policies[0].threshold: policy testpol: parameter "threshold": must be <= 31, got 40`},
	} {
		// A 32-bit build refuses what does not fit its int before the
		// field's own bound is checked.
		if w, ok := map[string]string{
			"series_max past the most":    "run.series_max: 9223372036854775807 is not within [-2147483648, 2147483647]",
			"max_in_system past the most": "run.max_in_system: 1000000000000000000 is not within [-2147483648, 2147483647]",
		}[tc.name]; ok && strconv.IntSize == 32 {
			tc.want = w
		}
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.yaml), "yaml")
			if err == nil {
				_, err = Expand(f, testCatalog{})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestOverloadWarning: a load >= 1 is a warning, not an error, and the
// points are kept (their results will be flagged).
func TestOverloadWarning(t *testing.T) {
	f, err := Parse([]byte("name: x\nreplications: 1\nrun: {arrivals: 100}\nworkload: one-or-all\naxes: {load: [0.5, 1.2]}\npolicies: [fcfs]\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 2 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "load=1.2") {
		t.Fatalf("tasks %d, warnings %v", len(c.Tasks), c.Warnings)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(filepath.Clean(path), got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("%s differs:\n%s", path, got)
	}
}

// TestRunJSON pins the JSON of the run block: campaign and task ids hash it,
// so the names, their order and which fields are omitted when unset must not
// change (counts written 1e5 encode as whole numbers, as when they were
// float64; the fields only plugins used, drain_limit and series_max, are
// absent unless set).
func TestRunJSON(t *testing.T) {
	f, err := Parse([]byte("name: x\nreplications: 1\nrun: {arrivals: 1e5, warmup: 1e4, max_in_system: 100000, deadline: 1h}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f.Run)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"arrivals":100000,"warmup":10000,"max_in_system":100000,"deadline":3600000000000}`; string(b) != want {
		t.Errorf("run block encodes as\n%s, want\n%s", b, want)
	}
	f.Run.MSER, f.Run.SeriesInterval, f.Run.DrainLimit, f.Run.SeriesMax = true, 0.5, 7, 9
	b, _ = json.Marshal(f.Run)
	if want := `{"arrivals":100000,"warmup":10000,"mser":true,"max_in_system":100000,"drain_limit":7,"series_interval":0.5,"series_max":9,"deadline":3600000000000}`; string(b) != want {
		t.Errorf("full run block encodes as\n%s, want\n%s", b, want)
	}
	// The engine sees exactly the run block and the task's seed.
	task := Task{Seed: 42, Run: f.Run}
	if c := task.Config(); c.Seed != 42 || c.Arrivals != 1e5 || c.Warmup != 1e4 || !c.MSER || c.MaxInSystem != 100000 ||
		c.DrainLimit != 7 || c.SeriesInterval != 0.5 || c.SeriesMax != 9 {
		t.Errorf("engine config %+v", c)
	}
}

// TestDescriptionKeepsIDs: the optional description is read, and a file
// without one hashes exactly as before the key existed (its JSON has no
// "description" key), so existing campaign ids are unchanged.
func TestDescriptionKeepsIDs(t *testing.T) {
	const body = "name: d\nworkload: one-or-all\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	plain, err := Parse([]byte(body), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(plain)
	if strings.Contains(string(b), "description") {
		t.Errorf("a file without description encodes it: %s", b)
	}
	described, err := Parse([]byte(body+"description: what it shows\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if described.Description != "what it shows" {
		t.Errorf("description = %q", described.Description)
	}
	described.Description = ""
	h1, err1 := hashHex(described, 16)
	h2, err2 := hashHex(plain, 16)
	if err1 != nil || err2 != nil || h1 != h2 {
		t.Errorf("files differing only in an empty description hash differently")
	}
}

// TestQuotedNumbers: a number written as text is read as the number
// wherever a sweep file takes one. An axis value was (arrival_rate:
// ["1"], read as it was, its campaign id unchanged); a policy's number
// parameter was refused ("threshold": must be a number, got the text
// "16"), and is now read like the bare number, into the same variants,
// tasks and task ids (no campaign held the text). A string parameter
// keeps its text.
func TestQuotedNumbers(t *testing.T) {
	const head = "name: x\nworkload: one-or-all\nreplications: 2\nrun: {arrivals: 100}\naxes: {arrival_rate: [1, 2]}\n"
	tasks := func(text string) *Campaign {
		t.Helper()
		f, err := Parse([]byte(text), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		c, err := Expand(f, testCatalog{})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return c
	}
	for _, c := range []struct{ quoted, bare string }{
		{`{name: testpol, threshold: "16"}`, `{name: testpol, threshold: 16}`},
		{`{name: testpol, threshold: ["1", 2, "3", "4e0"], mode: "fast"}`, `{name: testpol, threshold: [1, 2, 3, 4], mode: fast}`},
	} {
		q, b := tasks(head+"policies: ["+c.quoted+"]\n"), tasks(head+"policies: ["+c.bare+"]\n")
		if len(q.Tasks) != len(b.Tasks) {
			t.Fatalf("%s: %d tasks, %s: %d", c.quoted, len(q.Tasks), c.bare, len(b.Tasks))
		}
		for i := range q.Tasks {
			if q.Tasks[i].ID != b.Tasks[i].ID || q.Tasks[i].Params["threshold"] != b.Tasks[i].Params["threshold"] {
				t.Errorf("%s: task %d is %s %v, want %s's %s %v", c.quoted, i, q.Tasks[i].ID, q.Tasks[i].Params, c.bare, b.Tasks[i].ID, b.Tasks[i].Params)
			}
		}
	}
	// A quoted rate reads as before, its campaign id (of the file as
	// written) the one it had.
	if c := tasks("name: x\nworkload: one-or-all\naxes: {arrival_rate: [\"1\"]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"); c.ID != "7925e8223d69854e" || c.Tasks[0].ArrivalRate != 1 {
		t.Errorf(`arrival_rate: ["1"]: campaign %s, rate %v; want 7925e8223d69854e, 1`, c.ID, c.Tasks[0].ArrivalRate)
	}
}
