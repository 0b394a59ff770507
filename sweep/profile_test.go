package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

const profileBase = `name: p
seed: 7
workload: one-or-all
axes:
  arrival_rate: [1, 2]
  class[1].service.mean: [1, 2]
policies: [fcfs]
replications: 3
run: {arrivals: 1e5, warmup: 1e4, max_in_system: 500, deadline: 1h}
`

const profileBlock = `profiles:
  paper:
    replications: 30
    run: {arrivals: 1e7, deadline: 4h}
    axes:
      arrival_rate: [1, 2, 3]
    precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 60}
  Same:
    replications: 3
  empty: {}
`

func expandID(t *testing.T, f *File) string {
	t.Helper()
	c, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestProfileOverlay: the selected profile sets exactly what it names, key
// by key inside run and axes; the rest is the file's.
func TestProfileOverlay(t *testing.T) {
	plain, err := Parse([]byte(profileBase), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseProfile([]byte(profileBase+profileBlock), "yaml", "paper")
	if err != nil {
		t.Fatal(err)
	}
	if f.Replications != 30 || f.Run.Arrivals != 1e7 || f.Run.Deadline != 4*time.Hour {
		t.Errorf("overlaid: replications %d, arrivals %d, deadline %v", f.Replications, f.Run.Arrivals, f.Run.Deadline)
	}
	if f.Run.Warmup != 1e4 || f.Run.MaxInSystem != 500 {
		t.Errorf("run keys the profile does not name changed: warmup %d, max_in_system %d", f.Run.Warmup, f.Run.MaxInSystem)
	}
	if got := f.Axes["arrival_rate"]; len(got) != 3 {
		t.Errorf("arrival_rate = %v, want the profile's 3 values", got)
	}
	if !reflect.DeepEqual(f.Axes["class[1].service.mean"], plain.Axes["class[1].service.mean"]) {
		t.Errorf("an axis the profile does not name changed: %v", f.Axes["class[1].service.mean"])
	}
	if f.Precision == nil || f.Precision.MaxReplications != 60 || f.Precision.RelHalfWidth != 0.05 {
		t.Errorf("precision = %+v", f.Precision)
	}
	// Everything else is the file's: compare with the overlaid keys reset.
	g := *f
	g.Replications, g.Run, g.Precision, g.Profiles = plain.Replications, plain.Run, nil, nil
	g.Axes = map[string][]any{"arrival_rate": plain.Axes["arrival_rate"], "class[1].service.mean": f.Axes["class[1].service.mean"]}
	a, _ := json.Marshal(&g)
	b, _ := json.Marshal(plain)
	if string(a) != string(b) {
		t.Errorf("the profile changed more than it names:\n%s\n%s", a, b)
	}
	if expandID(t, f) == expandID(t, plain) {
		t.Errorf("a profile that changes the run left the campaign id unchanged")
	}
}

// TestProfileKeepsIDs: a profiles block does not enter the campaign id; an
// unselected block, an empty profile and a profile restating the file's
// values give the id of the file without the block.
func TestProfileKeepsIDs(t *testing.T) {
	plain, err := Parse([]byte(profileBase), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := expandID(t, plain)
	for _, name := range []string{"", "empty", "same", "SAME"} {
		f, err := ParseProfile([]byte(profileBase+profileBlock), "yaml", name)
		if err != nil {
			t.Fatalf("profile %q: %v", name, err)
		}
		if len(f.Profiles) != 3 {
			t.Errorf("profile %q: %d profiles decoded, want 3", name, len(f.Profiles))
		}
		if got := expandID(t, f); got != want {
			t.Errorf("profile %q: id %s, want the plain file's %s", name, got, want)
		}
		if b, _ := json.Marshal(f); strings.Contains(string(b), "profiles") || strings.Contains(string(b), "paper") {
			t.Errorf("profile %q: the profiles block is in the JSON: %s", name, b)
		}
	}
}

func TestProfileErrors(t *testing.T) {
	for _, c := range []struct {
		body, profile, want string
	}{
		{profileBase + profileBlock, "huge", `profile "huge": not in the sweep file (its profiles: empty, paper, same)`},
		{profileBase, "paper", `profile "paper": the sweep file has no profiles block`},
		// A profile may not change what is simulated.
		{profileBase + "profiles: {paper: {seed: 2}}\n", "", "profiles.paper.seed"},
		{profileBase + "profiles: {paper: {policies: [fcfs]}}\n", "", "policies"},
		{profileBase + "profiles: {paper: {run: {arivals: 5}}}\n", "", "arivals"},
		{profileBase + "profiles: {paper: {run: {arrivals: 1.5}}}\n", "", "not a whole number"},
		{profileBase + "profiles: {paper: {run: {deadline: 30}}}\n", "", "has no unit"},
		{profileBase + "profiles: {paper: {precision: {metrik: x}}}\n", "", "metrik"},
		// Checked even when another profile, or none, is selected.
		{profileBase + "profiles: {a: {}, b: {replications: x}}\n", "a", "replications"},
	} {
		_, err := ParseProfile([]byte(c.body), "yaml", c.profile)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("profile %q of\n%s\nerror %v, want it to contain %q", c.profile, c.body, err, c.want)
		}
	}
}

// TestProfileEnv: MSJFARM_PROFILE selects a profile for Load (no flag
// needed), not for Parse (stored specs); MSJFARM_<KEY> beats the profile.
func TestProfileEnv(t *testing.T) {
	path := t.TempDir() + "/s.yaml"
	if err := os.WriteFile(path, []byte(profileBase+profileBlock), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ProfileEnv, "paper")
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Replications != 30 || f.Run.Arrivals != 1e7 {
		t.Errorf("MSJFARM_PROFILE=paper: replications %d, arrivals %d", f.Replications, f.Run.Arrivals)
	}
	if f, err := Parse([]byte(profileBase+profileBlock), "yaml"); err != nil || f.Replications != 3 {
		t.Errorf("Parse applied MSJFARM_PROFILE: %v, %v", f, err)
	}
	if f, err := LoadProfile(path, "same"); err != nil || f.Run.Arrivals != 1e5 {
		t.Errorf("an explicit profile should win over MSJFARM_PROFILE: %v, %v", f, err)
	}
	t.Setenv("MSJFARM_RUN_ARRIVALS", "2e5")
	if f, err := Load(path); err != nil || f.Run.Arrivals != 2e5 || f.Replications != 30 {
		t.Errorf("MSJFARM_RUN_ARRIVALS should beat the profile: %+v, %v", f, err)
	}
}

// TestOtherProfilesChecked: a profile that is not selected is planned
// too, and its first mistake refuses the file, named by the profile and
// placed at the profile's own line (profileBase has 9 lines, so the
// profiles block begins on line 10 and its first profile on 11).
func TestOtherProfilesChecked(t *testing.T) {
	for _, c := range []struct {
		name, profiles, selected, want string
	}{
		{"replications", "paper: {replications: 0}", "",
			`line 11, column 25: replications: must be >= 1, got 0 (in profile "paper", not selected`},
		// The bad value, placed at its element (column of "-2").
		{"negative rate", "paper:\n    axes: {arrival_rate: [1, -2]}", "",
			`line 12, column 30: axes.arrival_rate: point arrival_rate=-2`},
		{"misspelt axis", "paper:\n    axes: {arival_rate: [1, 2]}", "",
			`line 12, column 12: axes.arival_rate: unknown axis "arival_rate"`},
		{"run", "paper: {run: {warmup: -5}}", "",
			`run.warmup`},
		// Another profile selected: the one that is not is checked.
		{"beside the selected", "quick: {replications: 2}\n  paper: {replications: -1}", "quick",
			`replications: must be >= 1, got -1 (in profile "paper"`},
		// Points too: each is planned, as when selected.
		{"share at a point", "paper:\n    axes:\n      class[1].service.mean: [1, 0]", "",
			`(in profile "paper"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := profileBase + "profiles:\n  " + c.profiles + "\n"
			f, err := ParseProfile([]byte(body), "yaml", c.selected)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			_, err = Expand(f, testCatalog{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "profile") {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			// The profile itself, selected, gives the same mistake.
			g, err := ParseProfile([]byte(body), "yaml", "paper")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Expand(g, testCatalog{}); err == nil {
				t.Fatal("profile paper selected: no error")
			}
		})
	}
	// Good profiles: nothing to say, and the campaign is the file's.
	f, err := ParseProfile([]byte(profileBase+profileBlock), "yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Expand(f, testCatalog{})
	if err != nil || len(c.Warnings) != 0 {
		t.Fatalf("good profiles: %v, warnings %q", err, c.Warnings)
	}
}

// TestOtherProfilesBounded: past the bounds a profile is not planned
// point by point, or not re-read at all, and the warnings say which.
func TestOtherProfilesBounded(t *testing.T) {
	// 101 × 101 = 10 201 points (one policy), over maxProfilePoints: its names and
	// sizes are still checked (a misspelt axis is refused), its points not.
	var vals []string
	for i := range 101 {
		vals = append(vals, fmt.Sprint(1+float64(i)/100))
	}
	big := "big:\n    axes:\n      arrival_rate: [" + strings.Join(vals, ", ") + "]\n      class[1].service.mean: [" + strings.Join(vals, ", ") + "]\n"
	f, err := ParseProfile([]byte(profileBase+"profiles:\n  "+big), "yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "big (10201 points)") {
		t.Errorf("warnings %q, want one naming big and its points", c.Warnings)
	}
	bad := strings.Replace(big, "arrival_rate", "arival_rate", 1)
	f, err = ParseProfile([]byte(profileBase+"profiles:\n  "+bad), "yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Expand(f, testCatalog{}); err == nil || !strings.Contains(err.Error(), `unknown axis "arival_rate"`) {
		t.Errorf("a large profile's misspelt axis: %v", err)
	}

	// Past maxOtherProfiles profiles the rest are not checked, and said
	// so: the first 256 in name order (p000 … p255) are, p256 … p299 not.
	var b strings.Builder
	b.WriteString(profileBase + "profiles:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "  p%03d: {replications: %d}\n", i, 1+i%7)
	}
	f, err = ParseProfile([]byte(b.String()), "yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err = Expand(f, testCatalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "44 of the file's profiles were not checked (p256, p257,") {
		t.Errorf("warnings %q, want one naming p256 on", c.Warnings)
	}
}

// TestOverlayIsSelection: the campaign checkOtherProfiles plans for a
// profile is the one selecting it plans: same normalised file (hence id),
// with and without an environment override, which wins over both.
func TestOverlayIsSelection(t *testing.T) {
	body := []byte(profileBase + profileBlock + "  axes2:\n    axes:\n      class[1].service.mean: [3]\n      servers: [4, 8]\n")
	for _, env := range []string{"", "77"} {
		t.Setenv("MSJFARM_RUN_ARRIVALS", env)
		f, err := parseProfile(body, "yaml", "", "f.yaml", true)
		if err != nil {
			t.Fatal(err)
		}
		if f.src.others == nil {
			t.Fatal("nothing kept for the other profiles")
		}
		for _, name := range f.ProfileNames() {
			g, err := f.src.others.overlay(f.src, name)
			if err != nil {
				t.Fatal(err)
			}
			h, err := parseProfile(body, "yaml", name, "f.yaml", true)
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(g)
			hj, _ := json.Marshal(h)
			if string(gj) != string(hj) {
				t.Errorf("env %q, profile %s: overlay\n%s\nselection\n%s", env, name, gj, hj)
			}
			if env != "" && g.Run.Arrivals != 77 {
				t.Errorf("profile %s: arrivals %d, want the environment's 77", name, g.Run.Arrivals)
			}
		}
	}
}
