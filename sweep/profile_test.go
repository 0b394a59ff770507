package sweep

import (
	"encoding/json"
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
