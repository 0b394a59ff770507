package sweep_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
		// TOML integers end at 2^63-1: go-toml's decoder, not its parser,
		// refuses a larger one, and named neither line nor key. The value
		// begins at column 8 of line 2 ("seed = "), and at column 14 of
		// line 3 ("load = [0.5, ").
		{"e2.toml", "name = \"x\"\nseed = 18446744073709551615\n", `e2.toml:2:8: seed: not valid TOML: decimal number is too large to fit in a 64-bit signed integer (TOML's integers end at 2⁶³−1 = 9223372036854775807; a seed up to 2⁶⁴−1 is written as a string: seed = "18446744073709551615")`},
		{"e3.toml", "name = \"x\"\n[axes]\nload = [0.5, 0x10000000000000000]\n", "e3.toml:3:14: axes.load[1]: not valid TOML: hexadecimal number is too large"},
		// Not a mapping: said without quoting the content (a file of
		// secrets named by mistake was printed in part, with Go's types).
		{"f.yaml", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY\n", "f.yaml:1:1: the file is a single value, not a mapping of keys"},
		{"g.yaml", "- name: x\n", "g.yaml:1:1: the file is a list, not a mapping of keys"},
		{"h.json", "[1, 2]", "h.json:1:1: the file is an array, not an object of keys"},
		// A second document (its "---" on line 2) was ignored, unchecked.
		{"i.yaml", "name: x\n---\nreplications: 50\nbogus: 1\n", "i.yaml:2:1: a second YAML document"},
	} {
		p := filepath.Join(dir, c.file)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := sweep.Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 || strings.Contains(err.Error(), "wJalr") || strings.Contains(err.Error(), "interface") {
			t.Errorf("%s:\n got %v\nwant one line containing %s", c.file, err, strings.TrimPrefix(c.want, ""))
		}
	}
}

// TestTOMLErrorPositions: a mistake in a TOML file is placed at its key,
// value or list element as the same mistake in YAML is. go-toml's parser
// gives a list no bytes of its own (offset 0), and every error at a TOML
// list (a wrong type, an axis, zip) was placed at 1:1; a table under an
// array table ([classes.service] after [[classes]]) was one key for
// every class, refused as repeated; an axis value that is not > 0 was
// placed at "axes" rather than at the element, in both formats.
func TestTOMLErrorPositions(t *testing.T) {
	const (
		yhead = "name: x\nseed: 1\nreplications: 2\nrun: {arrivals: 100}\nworkload: one-or-all\npolicies: [fcfs]\n"
		thead = "name = \"x\"\nseed = 1\nreplications = 2\nworkload = \"one-or-all\"\npolicies = [\"fcfs\"]\nrun = {arrivals = 100}\n"
	)
	for _, c := range []struct {
		name       string
		yaml, toml string
		want       string // path: the message's start
		ypos, tpos string // line:column
	}{
		{"a list for a number",
			"name: x\nreplications: [2]\n",
			"name = \"x\"\nreplications = [2]\n",
			"replications: want a whole number, got a list", "2:15", "2:16"},
		{"negative rate",
			yhead + "axes:\n  arrival_rate: [1, -1]\n",
			thead + "[axes]\narrival_rate = [1, -1]\n",
			"axes.arrival_rate: point arrival_rate=-1: arrival rate and load must be > 0", "8:21", "8:20"},
		{"zero load as a dotted key",
			yhead + "axes: {load: [0.5, 0]}\n",
			thead + "axes.load = [0.5, 0]\n",
			"axes.load: point load=0: arrival rate and load must be > 0", "7:20", "7:19"},
		{"rate out of range",
			yhead + "axes: {arrival_rate: [1, 1e20]}\n",
			thead + "axes = {arrival_rate = [1, 1e20]}\n",
			"axes.arrival_rate: 1e+20 is outside", "7:26", "7:28"},
		{"negative share axis, quoted key",
			yhead + "axes: {load: [0.5], 'class[0].share': [0.5, -1]}\n",
			thead + "[axes]\nload = [0.5]\n'class[0].share' = [0.5, -1]\n",
			"axes.class[0].share: -1: a share must be a finite number >= 0", "7:45", "9:26"},
		{"flat zip",
			yhead + "axes: {load: [0.5], servers: [32]}\nzip: [servers, load]\n",
			thead + "zip = [\"servers\", \"load\"]\n[axes]\nload = [0.5]\nservers = [32]\n",
			"zip: a list of groups", "8:6", "7:7"},
		// The group's "[" is found past a comment that holds brackets.
		{"zip lengths, a list in a list",
			yhead + "axes: {load: [0.5, 0.6], servers: [32]}\nzip: [\n  # [x]\n  [load, servers]]\n",
			thead + "zip = [\n  # [x], \"y\"\n  [\"load\", \"servers\"]]\n[axes]\nload = [0.5, 0.6]\nservers = [32]\n",
			"zip[0]: axes \"load\" and \"servers\" have 2 and 1 values", "10:3", "9:3"},
		{"a table written as a list",
			"name: x\nreplications: 1\nrun:\n  - {arrivals: 100}\n",
			"name = \"x\"\nreplications = 1\n[[run]]\narrivals = 100\n",
			"run: want a map of keys {key: value}, got a list", "4:3", "3:3"},
		// [classes.service] belongs to the last [[classes]]: each class's
		// service is its own, not one key repeated.
		{"a table under an array table",
			"name: x\nseed: 1\nreplications: 2\nrun: {arrivals: 100}\npolicies: [fcfs]\naxes: {load: [0.5]}\nservers: 4\nclasses:\n  - {need: 1, share: 1, service: {dist: exp, mean: 1}}\n  - {need: 2, share: 1, service: {dist: expo, mean: 1}}\n",
			"name = \"x\"\nseed = 1\nreplications = 2\nrun = {arrivals = 100}\npolicies = [\"fcfs\"]\nservers = 4\n[axes]\nload = [0.5]\n[[classes]]\nneed = 1\nshare = 1\n[classes.service]\ndist = \"exp\"\nmean = 1\n[[classes]]\nneed = 2\nshare = 1\n[classes.service]\ndist = \"expo\"\nmean = 1\n",
			"classes[1].service.dist: unknown distribution \"expo\"", "10:41", "19:8"},
		{"unknown key in an array table",
			"name: x\nreplications: 2\nrun: {arrivals: 100}\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [{name: fcfs, bogus: 1}]\n",
			"name = \"x\"\nreplications = 2\nrun = {arrivals = 100}\nworkload = \"one-or-all\"\naxes = {load = [0.5]}\n[[policies]]\nname = \"fcfs\"\nbogus = 1\n",
			"policies[0].bogus: unknown parameter \"bogus\"", "6:25", "8:1"},
	} {
		for _, f := range []struct{ format, text, pos string }{{"yaml", c.yaml, c.ypos}, {"toml", c.toml, c.tpos}} {
			file, err := sweep.Parse([]byte(f.text), f.format)
			if err == nil {
				_, err = sweep.Expand(file, builtin.Catalog{})
			}
			var e *sweep.Error
			if !errors.As(err, &e) {
				t.Errorf("%s, %s: err = %v, want a placed *sweep.Error", c.name, f.format, err)
				continue
			}
			got := fmt.Sprintf("%d:%d", e.Line, e.Col)
			if msg := strings.TrimPrefix(e.Error(), fmt.Sprintf("line %d, column %d: ", e.Line, e.Col)); !strings.HasPrefix(msg, c.want) || got != f.pos {
				t.Errorf("%s, %s:\n got %s: %s\nwant %s: %s", c.name, f.format, got, msg, f.pos, c.want)
			}
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
	// A negative servers was the workload's error, at its line, without
	// the variable; with a trace, the header's count silently.
	t.Setenv("MSJFARM_SERVERS", "-1")
	if f, err := sweep.Load(p); err != nil {
		t.Errorf("servers from the environment: %v", err)
	} else if _, err := sweep.Plan(f, builtin.Catalog{}); err == nil || !strings.Contains(err.Error(), `s.yaml: servers: must be >= 1 (or left out: the workload's or trace's own count), got -1 (set by MSJFARM_SERVERS)`) {
		t.Errorf("servers from the environment: %v", err)
	}
	os.Unsetenv("MSJFARM_SERVERS")
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

// TestAliasBomb: a YAML sweep of a few lines whose anchors nest (each list
// nine aliases of the one before, a "billion laughs") is refused by the
// decoder's aliasing check before anything expands it. Six levels expand
// to 9⁶ = 531 441 scalars: reading positions first, as the parser once
// did, allocated 1.5 GB for them (nine levels ran out of memory).
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 6; i++ {
		ref := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(ref+", ", 8)+ref)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := sweep.Parse([]byte(b.String()), "yaml")
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Fatalf("err = %v, want the decoder's excessive aliasing", err)
	}
	// The refusal reads a few thousand nodes: ~1 MB. The expansion is
	// ~200 times that.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("refusing the file allocated %d MB", alloc>>20)
	}
}

// TestDeepNesting: keys and lists nested past 32 levels are refused at the
// top-level key that holds them, before viper reads the file (its key
// lookups cost the cube of the depth: 1500 levels took 7 s, a TOML table
// of 10⁵ dotted parts ran out of memory). 32 levels are still read.
func TestDeepNesting(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	for _, c := range []struct {
		name, format, text string
		line, col          int
		deep               bool
	}{
		{"yaml maps", "yaml", "replications: 3\na: " + nest("{a: ", "}", 1500), 2, 1, true},
		{"yaml lists", "yaml", "a: " + nest("[", "]", 1500), 1, 1, true},
		{"json", "json", `{"a": ` + nest(`{"a": `, "}", 1500) + "}", 1, 2, true},
		// "a = " then "{a = " per level: the 33rd "{" (level 33, past
		// 32) is at column 5 + 32·5 = 165.
		{"toml inline", "toml", "a = " + nest("{a = ", "}", 1500), 1, 165, true},
		{"toml table", "toml", "[" + strings.Repeat("a.", 100000) + "b]\nx = 1", 1, 2, true},
		{"toml dotted key", "toml", strings.Repeat("a.", 40) + "b = 1", 1, 1, true},
		{"yaml at the limit", "yaml", "a: " + nest("{a: ", "}", 31), 1, 1, false},
		{"toml at the limit", "toml", "[" + strings.Repeat("a.", 30) + "b]\nx = 1", 1, 2, false},
	} {
		_, err := sweep.Parse([]byte(c.text), c.format)
		var e *sweep.Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: err = %v, want a placed *sweep.Error", c.name, err)
		}
		deep := strings.Contains(e.Msg, "nested more than 32 levels")
		if deep != c.deep || e.Path != "a" || e.Line != c.line || e.Col != c.col {
			t.Errorf("%s: got %d:%d %s: %s, want %d:%d, nesting refused %v", c.name, e.Line, e.Col, e.Path, e.Msg, c.line, c.col, c.deep)
		}
	}
}

// TestRepeatedKeys: a key repeated in its mapping, written alike or in
// another case, is an error at the later one. The reader folds keys to
// lower case and kept the last of equal ones: "Replications: 2" below
// "replications: 30" ran 2 replications in every format, and JSON kept
// the last of two keys written alike too. Equal keys in different
// mappings, and YAML merge keys overridden, are not repeats.
func TestRepeatedKeys(t *testing.T) {
	const base = "name: x\nworkload: one-or-all\naxes: {load: [0.5]}\nreplications: 3\n"
	for _, c := range []struct {
		name, format, text string
		want               string // "" no repeat
	}{
		{"yaml folded", "yaml", base + "policies: [fcfs]\nrun: {arrivals: 100}\nReplications: 2\n",
			`7:1: replications: key "Replications" repeats "replications" of line 4`},
		{"yaml nested", "yaml", base + "policies: [fcfs, {name: msfq, threshold: 3, Threshold: 4}]\nrun: {arrivals: 100}\n",
			`5:45: policies[1].threshold: key "Threshold" repeats "threshold" of line 5`},
		{"yaml merge", "yaml", base + "policies: [fcfs]\ndefaults: &d {arrivals: 100, warmup: 10}\nrun: {<<: *d, warmup: 20}\n", ""},
		{"json alike", "json", `{"name": "x", "replications": 3, "policies": ["fcfs"],` + "\n" + ` "replications": 2}`,
			`2:2: replications: key "replications" is already set on line 1`},
		{"json nested in a list", "json", `{"policies": [{"name": "fcfs"}, {"name": "msfq", "THRESHOLD": 1, "threshold": 2}]}`,
			`1:66: policies[1].threshold: key "threshold" repeats "THRESHOLD" of line 1`},
		{"json lists of objects", "json", `{"name": "x", "policies": [{"name": "fcfs"}, {"name": "msf"}], "run": {"arrivals": 100}}`, ""},
		{"toml folded", "toml", "name = \"x\"\nreplications = 3\nRePlications = 2\n",
			`3:1: replications: key "RePlications" repeats "replications" of line 2`},
		{"toml table", "toml", "name = \"x\"\n[run]\narrivals = 100\n[Run]\nwarmup = 1\n",
			`4:2: run: key "Run" repeats "run" of line 2`},
		{"toml inline", "toml", "name = \"x\"\nrun = {arrivals = 100, Arrivals = 3}\n",
			`2:24: run.arrivals: key "Arrivals" repeats "arrivals" of line 2`},
		{"toml array tables", "toml", "name = \"x\"\n[[policies]]\nname = \"fcfs\"\n[[policies]]\nname = \"msf\"\n", ""},
		// Dotted keys whose parents differ only in case are two tables
		// to TOML and one to the reader: run.warmup = 100 then
		// Run.arrivals = 1000 ran with warmup 0, silently.
		{"toml dotted parents", "toml", "name = \"x\"\nrun.warmup = 100\nRun.arrivals = 1000\n",
			`3:1: run: key "Run" repeats "run" of line 2: keys are read without regard to case, and the later would silently replace the earlier`},
		{"toml dotted parents, upper first", "toml", "name = \"x\"\nRun.arrivals = 1000\nrun.warmup = 100\n",
			`3:1: run: key "run" repeats "Run" of line 2`},
		{"toml dotted parents alike", "toml", "name = \"x\"\nrun.warmup = 100\nrun.arrivals = 1000\n", ""},
		{"toml table and dotted key", "toml", "name = \"x\"\nRun.warmup = 100\n[run]\narrivals = 1000\n",
			`3:2: run: key "run" repeats "Run" of line 2`},
		{"toml dotted parent in a table", "toml", "[policies.a]\nb = 1\n[policies]\nA.c = 2\n",
			`4:1: policies.a: key "A" repeats "a" of line 1`},
		{"toml dotted in an inline table", "toml", "name = \"x\"\nrun = {x.warmup = 1, X.arrivals = 2}\n",
			`2:22: run.x: key "X" repeats "x" of line 2`},
		{"toml array table parents", "toml", "[[classes]]\nneed = 1\n[classes.service]\ndist = \"exp\"\n[[classes]]\n[Classes.service]\ndist = \"exp\"\n",
			`6:2: classes: key "Classes" repeats "classes" of line 1`},
	} {
		_, err := sweep.Parse([]byte(c.text), c.format)
		got := ""
		var e *sweep.Error
		if errors.As(err, &e) && strings.Contains(e.Msg, "the later would silently replace the earlier") {
			got = fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Col, e.Path, e.Msg)
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q (err %v), want %q", c.name, got, err, c.want)
		}
	}
}

// TestMergedKeysInAnotherCase: a key a YAML merge key ("<<") brings in
// that differs only in case from one of the mapping is refused, naming
// both spellings and the merge. YAML lets the key written in the mapping
// win; the reader folded case after YAML had merged, so the two were one
// key and the merged one won: run: {<<: {Arrivals: 5, warmup: 100},
// arrivals: 1000} ran 5 arrivals, <<: {Replications: 50} beside
// replications: 2 planned 100 tasks, and <<: {Run: {arrivals: 5}} beside
// run: {...} dropped the file's run block. Merged keys written alike are
// overridden as YAML means.
func TestMergedKeysInAnotherCase(t *testing.T) {
	const base = "name: x\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\n"
	for _, c := range []struct{ name, text, want string }{
		{"merged first", base + "replications: 2\nrun:\n  <<: {Arrivals: 5, warmup: 100}\n  arrivals: 1000\n",
			`7:3: run.arrivals: key "Arrivals", merged by "<<" from line 7, and "arrivals" of line 8 differ only in case: keys are read without regard to case, so the merged one could silently replace the other; write them alike (the key written in the mapping then wins, as YAML means) or drop one`},
		{"merged after", base + "replications: 2\nrun:\n  arrivals: 1000\n  <<: {Arrivals: 5, warmup: 100}\n",
			`8:3: run.arrivals: key "Arrivals", merged by "<<" from line 8, and "arrivals" of line 7 differ only in case`},
		{"top level", base + "<<: {Replications: 50}\nreplications: 2\nrun: {arrivals: 1000}\n",
			`5:1: replications: key "Replications", merged by "<<" from line 5, and "replications" of line 6 differ only in case`},
		{"a block", base + "replications: 2\n<<: {Run: {arrivals: 5}}\nrun: {arrivals: 1000, warmup: 100}\n",
			`6:1: run: key "Run", merged by "<<" from line 6, and "run" of line 7 differ only in case`},
		{"through an alias", base + "replications: 2\ndefaults: &d {Arrivals: 5}\nrun: {<<: *d, arrivals: 1000}\n",
			`7:7: run.arrivals: key "Arrivals", merged by "<<" from line 6, and "arrivals" of line 7 differ only in case`},
		{"two merged", base + "replications: 2\nrun: {<<: [{arrivals: 5}, {Arrivals: 6}]}\n",
			`6:7: run.arrivals: key "Arrivals", merged by "<<" from line 6, and "arrivals" of line 6 differ only in case`},
		{"nested merge", base + "replications: 2\na: &a {Arrivals: 5}\nb: &b {<<: *a, warmup: 1}\nrun: {<<: *b, arrivals: 1000}\n",
			`8:7: run.arrivals: key "Arrivals", merged by "<<" from line 6, and "arrivals" of line 8 differ only in case`},
		// Written alike, the mapping's key wins, as YAML means.
		{"alike", base + "replications: 2\nrun:\n  <<: {arrivals: 5, warmup: 100}\n  arrivals: 1000\n", ""},
	} {
		f, err := sweep.Parse([]byte(c.text), "yaml")
		got := ""
		var e *sweep.Error
		if errors.As(err, &e) {
			got = fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Col, e.Path, e.Msg)
		} else if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		if c.want == "" && err == nil && (f.Run.Arrivals != 1000 || f.Run.Warmup != 100) {
			t.Errorf("%s: run %+v, want the written arrivals 1000 and the merged warmup 100", c.name, f.Run)
		}
	}
}

// A key holding "::", the reader's key delimiter, is refused: "run::arrivals:
// 5" at the end of a file that shows "run: {arrivals: 1000}" ran 5
// arrivals (the same campaign as arrivals: 5), and no repeated key caught
// it, written in another case either; in TOML it became a nested map.
func TestDelimiterInKey(t *testing.T) {
	const base = "name: x\nworkload: one-or-all\naxes: {load: [0.5]}\nreplications: 3\npolicies: [fcfs]\nrun: {arrivals: 1000}\n"
	for _, c := range []struct{ name, format, text, want string }{
		{"yaml", "yaml", base + "run::arrivals: 5\n", `7:1: run::arrivals: key "run::arrivals" holds "::"`},
		{"yaml other case", "yaml", base + "Run::Arrivals: 5\n", `7:1: run::arrivals: key "Run::Arrivals" holds "::"`},
		{"toml", "toml", "name = \"x\"\n\"replications::x\" = 3\n", `2:1: replications::x: key "replications::x" holds "::"`},
	} {
		_, err := sweep.Parse([]byte(c.text), c.format)
		var e *sweep.Error
		if !errors.As(err, &e) || !strings.HasPrefix(fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Col, e.Path, e.Msg), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// An integer with a leading zero is refused in YAML, which reads it as
// octal: seed: 0777 was seed 511 (the campaign of seed: 511) and
// replications: 010 ran 8. 0o10 says octal, and is read so.
func TestOctalInteger(t *testing.T) {
	const base = "name: x\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nrun: {arrivals: 1000}\n"
	_, err := sweep.Parse([]byte(base+"seed: 0777\nreplications: 3\n"), "yaml")
	var e *sweep.Error
	if !errors.As(err, &e) || e.Line != 6 || e.Path != "seed" || !strings.Contains(e.Msg, "0777: a leading zero makes YAML read an integer as octal; write it without (777), or 0o777") {
		t.Errorf("seed: 0777: %v", err)
	}
	f, err := sweep.Parse([]byte(base+"seed: 7\nreplications: 0o10\n"), "yaml")
	if err != nil || f.Replications != 8 {
		t.Errorf("replications: 0o10: %v", err)
	}
}

// A mapping of more than MaxMapKeys keys is refused while the file is
// indexed, in every format: the reader looks each key up through its
// mapping's keys, and 10^5 unknown keys took 34 s (a TOML file of them
// minutes, its positions counted from the file's start each time). A
// file's errors are shown 20 at most.
func TestManyKeys(t *testing.T) {
	var yml, tml strings.Builder
	yml.WriteString("name: x\n")
	tml.WriteString("name = \"x\"\n[run]\n")
	for i := range sweep.MaxMapKeys + 1 {
		fmt.Fprintf(&yml, "k%d: 1\n", i)
		fmt.Fprintf(&tml, "k%d = 1\n", i)
	}
	for _, c := range []struct{ format, text, want string }{
		// name and k0 … k4095 are the top level's 4097 keys.
		{"yaml", yml.String(), fmt.Sprintf("%d:1: k%d: more than %d keys in one mapping (the file's top level)", sweep.MaxMapKeys+1, sweep.MaxMapKeys-1, sweep.MaxMapKeys)},
		{"toml", tml.String(), fmt.Sprintf("%d:1: run.k%d: more than %d keys in one mapping (run)", sweep.MaxMapKeys+3, sweep.MaxMapKeys, sweep.MaxMapKeys)},
	} {
		_, err := sweep.Parse([]byte(c.text), c.format)
		var e *sweep.Error
		if !errors.As(err, &e) || !strings.HasPrefix(fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Col, e.Path, e.Msg), c.want) {
			t.Errorf("%s: got %v, want %q", c.format, err, c.want)
		}
	}
	var few strings.Builder
	few.WriteString("name: x\n")
	for i := range 100 {
		fmt.Fprintf(&few, "unknown%d: 1\n", i)
	}
	_, err := sweep.Parse([]byte(few.String()), "yaml")
	if err == nil || strings.Count(err.Error(), "\n") != 20 || !strings.HasSuffix(err.Error(), "... and 80 more") {
		t.Errorf("100 unknown keys: %d lines: %.200s", strings.Count(fmt.Sprint(err), "\n")+1, err)
	}
}

// TestManyKeysReadOnce: a YAML file far past MaxMapKeys is parsed once
// and its keys checked no further than the first past the bound: it was
// parsed twice (the document, then again to look for a second one) and
// every key of it folded and set aside after the refusal, twice the
// bytes allocated (114 a byte of input; 10⁶ keys took 5 to 11 s to be
// refused, now about half).
func TestManyKeysReadOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: x\n")
	for i := range 50 * sweep.MaxMapKeys {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	data := []byte(b.String())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := sweep.Parse(data, "yaml")
	runtime.ReadMemStats(&after)
	var e *sweep.Error
	if !errors.As(err, &e) || e.Line != sweep.MaxMapKeys+1 || !strings.Contains(e.Msg, "more than 4096 keys in one mapping") {
		t.Fatalf("err = %v, want the mapping's 4097th key refused", err)
	}
	if per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(data)); per > 80 {
		t.Errorf("refusing %d bytes of keys allocated %.0f bytes a byte", len(data), per)
	}
}

// A campaign's name is shown on every line that names it: at most 200
// characters (a 60 MB name was printed whole); a description at most 64
// KiB.
func TestNameLength(t *testing.T) {
	const rest = "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	for _, c := range []struct{ text, want string }{
		{"name: " + strings.Repeat("n", 200) + "\n" + rest, ""},
		{"name: " + strings.Repeat("n", 201) + "\n" + rest, "name: 201 characters, more than the 200"},
		{"name: x\ndescription: " + strings.Repeat("d", 64<<10+1) + "\n" + rest, "description: 65537 bytes, more than the 65536"},
	} {
		f, err := sweep.Parse([]byte(c.text), "yaml")
		if err == nil {
			_, err = sweep.Plan(f, builtin.Catalog{})
		}
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// TestByteOrderMark: a UTF-8 byte order mark, which editors on Windows
// write, is dropped in every format (TOML and JSON stopped at "invalid
// character 'ï'"), and an error on the first line is placed at the column
// an editor shows; UTF-16 TOML or JSON is refused saying what to do.
func TestByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for format, text := range map[string]string{
		"yaml": "name: c\r\nworkload: one-or-all\r\npolicies: [fcfs]\r\naxes: {load: [0.5]}\r\nreplications: 1\r\nrun: {arrivals: 100}\r\n",
		"toml": "name = \"c\"\r\nworkload = \"one-or-all\"\r\npolicies = [\"fcfs\"]\r\nreplications = 1\r\n[axes]\r\nload = [0.5]\r\n[run]\r\narrivals = 100\r\n",
		"json": `{"name": "c", "workload": "one-or-all", "policies": ["fcfs"], "axes": {"load": [0.5]}, "replications": 1, "run": {"arrivals": 100}}`,
	} {
		if _, err := sweep.Parse([]byte(bom+text), format); err != nil {
			t.Errorf("%s with a byte order mark: %v", format, err)
		}
	}
	_, err := sweep.Parse([]byte(bom+"replicatons = 3\n"), "toml")
	var e *sweep.Error
	if !errors.As(err, &e) || e.Line != 1 || e.Col != 1 {
		t.Errorf("an unknown key after the mark: %v, want it at 1:1", err)
	}
	for _, format := range []string{"toml", "json"} {
		if _, err := sweep.Parse([]byte("\xff\xfen\x00a\x00"), format); err == nil || !strings.Contains(err.Error(), "UTF-16: save it as UTF-8") {
			t.Errorf("%s in UTF-16: %v", format, err)
		}
	}
}

// TestShownText: a campaign's name and description, shown on terminals
// (status lists every campaign of a farm), may not hold characters a
// terminal acts on; a description may span lines, and any script is fine.
func TestShownText(t *testing.T) {
	const rest = "workload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	for _, c := range []struct{ head, want string }{
		{`name: "x\e]0;pwned\ay"`, `line 1, column 7: name: "x\x1b]0;pwned\ay" holds the control character U+001B`},
		{"name: \"two\\nlines\"", `name: "two\nlines" holds the control character U+000A`},
		{"name: \"rtl\u202e\"", `holds the control character U+202E`},
		{"name: c\ndescription: \"clear\\e[2J\"", `line 2, column 14: description: "clear\x1b[2J" holds the control character U+001B`},
		{"name: Löwe-éßai 中文\ndescription: \"two\\nlines\\tand a tab\"", ""},
		// Blank: listed as an empty NAME column no command could name.
		{`name: "   "`, `line 1, column 7: name: is blank`},
		{`name: "\u200b"`, `name: is blank`},
	} {
		f, err := sweep.Parse([]byte(c.head+"\n"+rest), "yaml")
		if err == nil {
			_, err = sweep.Plan(f, builtin.Catalog{})
		}
		got := ""
		if err != nil {
			got = err.Error()
		}
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.head, got, c.want)
		}
	}
}

// TestErrorsShownSafely: what a file writes reaches the terminal in its
// errors escaped and clipped. A key "\e]0;pwn\a" was printed raw in the
// key path (and retitled the terminal); a 1 MB workload name was quoted
// whole, and a 50 MB policy name took 48 s and 1 GB to report (the edit
// distance to every known name). A value is quoted to 256 bytes, saying
// how many more there were.
func TestErrorsShownSafely(t *testing.T) {
	const rest = "axes: {load: [0.5]}\nreplications: 1\nrun: {arrivals: 100}\n"
	long := strings.Repeat("x", 1<<20)
	clipped := `"` + strings.Repeat("x", 256) + `"… (1048320 bytes more)`
	for _, c := range []struct{ name, text, want string }{
		{"control characters in a key", "name: t\nworkload: one-or-all\npolicies: [fcfs]\n" + rest + "\"\\e]0;pwn\\a\": 1\n",
			`line 7, column 1: \x1b]0;pwn\x07: unknown key "\x1b]0;pwn\a" (the sweep file's keys: `},
		// YAML's implicit keys are at most 1024 characters.
		{"a long key", "name: t\nworkload: one-or-all\npolicies: [fcfs]\n" + rest + long[:1000] + ": 1\n",
			`line 7, column 1: ` + strings.Repeat("x", 256) + `… (744 bytes more): unknown key "` + strings.Repeat("x", 256) + `"… (744 bytes more)`},
		{"a long workload", "name: t\nworkload: " + long + "\npolicies: [fcfs]\n" + rest,
			`line 2, column 11: workload: unknown workload ` + clipped + ` (msjfarm workloads lists them: `},
		{"a long policy", "name: t\nworkload: one-or-all\npolicies: [" + long + "]\n" + rest,
			`line 3, column 12: policies[0]: unknown policy ` + clipped + ` (msjfarm policies lists them)`},
		{"a long duration", "name: t\nworkload: one-or-all\npolicies: [fcfs]\n" + rest + "\nrun: {arrivals: 100, deadline: " + long + "}\n",
			`line 6, column 32: run.deadline: ` + clipped + ` is not a duration`},
		{"a long parameter value", "name: t\nworkload: one-or-all\npolicies: [{name: balanced-splitting, pi: " + long + "}]\n" + rest,
			`line 3, column 43: policies[0].pi: policy balanced-splitting: parameter "pi": must be one of fcfs, first-fit, got the text ` + clipped},
	} {
		text := strings.Replace(c.text, "\nrun: {arrivals: 100}\n\nrun:", "\nrun:", 1) // one run block
		f, err := sweep.Parse([]byte(text), "yaml")
		if err == nil {
			_, err = sweep.Plan(f, builtin.Catalog{})
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			got := "<nil>"
			if err != nil {
				got = err.Error()[:min(len(err.Error()), 1000)]
			}
			t.Errorf("%s: got %q, want it to begin %q", c.name, got, c.want)
			continue
		}
		if n := len(err.Error()); n > 2000 || strings.ContainsAny(err.Error(), "\x1b\x07") {
			t.Errorf("%s: an error of %d bytes, or with raw control characters", c.name, n)
		}
	}
}

// TestExplicitZero: where 0 stands for "not set" (servers: the
// workload's own; trace.time_scale: 1), an explicit 0 is refused as -1
// is: it ran as if the key were left out.
func TestExplicitZero(t *testing.T) {
	dir := t.TempDir()
	swf, err := filepath.Abs("../model/swf/testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	const rest = "axes: {arrival_rate: [1]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	for _, c := range []struct{ name, body, want string }{
		{"servers.yaml", "name: x\nworkload: one-or-all\nservers: 0\n" + rest, "servers.yaml:3:10: servers: must be >= 1"},
		{"unset.yaml", "name: x\nworkload: one-or-all\n" + rest, ""},
		// A null was left out, as every key's was (it had read "got 0"):
		// now refused, as every key's is (TestNullRefused).
		{"null.yaml", "name: x\nworkload: one-or-all\nservers: ~\n" + rest, "null.yaml:3:1: servers: null: give a value or remove the key"},
		{"empty.yaml", "name: x\nworkload: one-or-all\nservers:\n" + rest, "empty.yaml:3:1: servers: null (no value written): give a value or remove the key"},
		// A trailing empty document holds nothing the reader would ignore.
		{"dash.yaml", "name: x\nworkload: one-or-all\n" + rest + "---\n# the end\n", ""},
		{"scale.yaml", "name: x\ntrace: {file: " + swf + ", time_scale: 0}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n", "trace.time_scale: must be a finite number > 0, got 0"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := sweep.Load(p)
		if err == nil {
			_, err = sweep.Plan(f, builtin.Catalog{})
		}
		if got := fmt.Sprint(err); (c.want == "") != (err == nil) || !strings.Contains(got, c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// TestNullRefused: a null value (~, null, or nothing written after the
// key) is refused at its key, or at its list element, with its path and
// what to write instead, in YAML and JSON (TOML has no null). The reader
// read it as if the key were absent, silently: limit: ~ ran a sweep and
// no search (limit: {} is a search with every default), max_in_system: ~
// and a parameter's null ran their defaults, arrivals: null was refused
// as "must be >= 1, got 0", and a misspelt key left empty was dropped
// without a word. An empty file, a file of comments, a null document and
// a trailing empty document read as before, and the environment's
// overrides still apply.
func TestNullRefused(t *testing.T) {
	dir := t.TempDir()
	const (
		head = "name: x\nworkload: one-or-all\n"
		rest = "axes: {arrival_rate: [1]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	)
	for _, c := range []struct{ name, body, want string }{
		{"limit.yaml", head + "policies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\nlimit: ~\n",
			"limit.yaml:6:1: limit: null: give a value or remove the key (an empty block is {})"},
		{"precision.yaml", head + rest + "precision: null\n",
			"precision.yaml:7:1: precision: null: give a value or remove the key (an empty block is {})"},
		{"arrivals.yaml", head + strings.Replace(rest, "{arrivals: 100}", "{arrivals: null, warmup: 10}", 1),
			"arrivals.yaml:6:7: run.arrivals: null: give a value or remove the key"},
		{"cap.yaml", head + strings.Replace(rest, "{arrivals: 100}", "{arrivals: 100, max_in_system: ~}", 1),
			"cap.yaml:6:22: run.max_in_system: null: give a value or remove the key"},
		{"policies.yaml", head + "axes: {arrival_rate: [1]}\npolicies:\nreplications: 1\nrun: {arrivals: 100}\n",
			"policies.yaml:4:1: policies: null (no value written): give a value or remove the key"},
		{"parameter.yaml", head + strings.Replace(rest, "[fcfs]", "[{name: msfq, threshold: ~}]", 1),
			"parameter.yaml:4:25: policies[0].threshold: null: give a value or remove the key"},
		{"entry.yaml", head + strings.Replace(rest, "[fcfs]", "[fcfs, ~]", 1),
			"entry.yaml:4:18: policies[1]: null: give a value or remove the element"},
		{"rate.yaml", head + strings.Replace(rest, "[1]", "[1, NULL]", 1),
			"rate.yaml:3:26: axes.arrival_rate[1]: null: give a value or remove the element"},
		{"class.yaml", "name: x\nservers: 4\nclasses: [{need: 1, share: ~, service: {dist: exp, mean: 1}}]\n" + rest,
			"class.yaml:3:21: classes[0].share: null: give a value or remove the key"},
		{"profile.yaml", head + rest + "profiles:\n  quick:\n",
			"profile.yaml:8:3: profiles.quick: null (no value written): give a value or remove the key (an empty block is {})"},
		{"profile run.yaml", head + rest + "profiles: {paper: {run: {warmup: ~}}}\n",
			"profile run.yaml:7:26: profiles.paper.run.warmup: null: give a value or remove the key"},
		// An alias of a null is a null where the alias is.
		{"alias.yaml", head + "x: &none ~\n" + strings.Replace(rest, "{arrivals: 100}", "{arrivals: 100, warmup: *none}", 1),
			"alias.yaml:3:1: x: unknown key \"x\""},
		{"alias only.yaml", head + strings.Replace(rest, "[fcfs]", "[{name: msfq, threshold: &none ~}, {name: msfq, threshold: *none}]", 1),
			"alias only.yaml:4:25: policies[0].threshold: null: give a value or remove the key\nalias only.yaml:4:59: policies[1].threshold: null: give a value or remove the key"},
		// Every null of the file, one line each, in file order.
		{"two.yaml", head + "seed: ~\n" + rest + "description: Null\n",
			"two.yaml:3:1: seed: null: give a value or remove the key\ntwo.yaml:8:1: description: null: give a value or remove the key"},
		{"nulls.json", "{\"name\": \"x\", \"workload\": \"one-or-all\", \"axes\": {\"arrival_rate\": [1, null]},\n \"policies\": [\"fcfs\"], \"replications\": 1, \"run\": {\"arrivals\": 100, \"max_in_system\": null}}\n",
			"nulls.json:1:70: axes.arrival_rate[1]: null: give a value or remove the element\nnulls.json:2:68: run.max_in_system: null: give a value or remove the key"},
		// A key the format does not have, left null, was dropped.
		{"misspelt.yaml", head + rest + "replicatons:\n",
			`misspelt.yaml:7:1: replicatons: unknown key "replicatons" (did you mean "replications"?)`},
		{"unknown block.yaml", head + rest + "bogus: {x: ~, y: ~}\n",
			`unknown block.yaml:7:1: bogus: unknown key "bogus" (the sweep file's keys: `},
		{"unknown in run.yaml", head + strings.Replace(rest, "{arrivals: 100}", "{arrivals: 100, warmpu: ~}", 1),
			`unknown in run.yaml:6:22: run.warmpu: unknown key "warmpu" (did you mean "warmup"?)`},
		{"unknown.json", `{"name": "x", "bogus": null}`,
			`unknown.json:1:15: bogus: unknown key "bogus"`},
		// Not nulls, or not keys: as before.
		{"quoted.yaml", head + rest + "description: \"~\"\n", ""},
		{"dash.yaml", head + rest + "---\n# the end\n", ""},
		{"empty.yaml", "", "empty.yaml:1:1: name: required"},
		{"comments.yaml", "# a sweep, one day\n", "comments.yaml:1:1: name: required"},
		{"null document.yaml", "~\n", "null document.yaml:1:1: the file is a single value, not a mapping of keys"},
		{"null.json", "null", "null.json:1:1: name: required"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := sweep.Load(p)
		if err == nil {
			_, err = sweep.Plan(f, builtin.Catalog{})
		}
		got := strings.ReplaceAll(fmt.Sprint(err), dir+string(filepath.Separator), "")
		if (c.want == "") != (err == nil) || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}

	// The environment's overrides: a key the file leaves out is set by
	// its variable as before; a null is the file's mistake, refused
	// whatever the environment says.
	t.Setenv("MSJFARM_RUN_ARRIVALS", "500")
	t.Setenv("MSJFARM_RUN_MAX_IN_SYSTEM", "2000")
	p := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(p, []byte(head+strings.Replace(rest, "{arrivals: 100}", "{warmup: 10}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Load(p)
	if err == nil {
		_, err = sweep.Plan(f, builtin.Catalog{})
	}
	if err != nil || f.Run.Arrivals != 500 || f.Run.MaxInSystem != 2000 || len(f.EnvOverrides()) != 2 {
		t.Errorf("overrides of keys left out: %v (run %+v)", err, f.Run)
	}
	if err := os.WriteFile(p, []byte(head+strings.Replace(rest, "{arrivals: 100}", "{arrivals: ~}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.Load(p); err == nil || !strings.HasSuffix(err.Error(), "env.yaml:6:7: run.arrivals: null: give a value or remove the key") {
		t.Errorf("a null under an override: %v", err)
	}
}
