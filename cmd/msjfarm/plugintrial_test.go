package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestPluginTrial: run and submit try a third party's plugin policy for
// 200 arrivals on each system of the sweep before anything is written or
// queued. The hostile test plugin's procenv policy, whose Init tries to
// read the host's environment (and is refused by the sandbox, as on a
// worker), is refused at the sweep's line with exit 2 and the plugin's
// error; no store is created, and no secret of the submitter's appears.
// --plugin-trial=false leaves it to the schema: the dry run's calibration,
// which runs the policy in its binary, then fails on it (exit 1). An
// honest plugin policy passes, and its dry run is calibrated in its
// binary: before, the dry run of any third-party policy failed with
// "unknown policy" (calibration ran in-process only).
func TestPluginTrial(t *testing.T) {
	const secret = "trial-secret-do-not-show"
	t.Setenv("MSJFARM_S3_SECRET_KEY", secret)
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := hosttest.Build(plugins, "./worker/pluginhost/testdata/msjfarm-policy-hostile"); err != nil {
		t.Fatal(err)
	}
	write := func(name, policies string) string {
		p := filepath.Join(dir, name)
		body := "name: trial\nworkload: one-or-all\naxes: {arrival_rate: [1, 2]}\npolicies: [" + policies + "]\nreplications: 1\nrun: {arrivals: 2000, warmup: 100}\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad, good := write("bad.yaml", "hostile-honest, hostile-procenv"), write("good.yaml", "hostile-honest, fcfs")
	data := filepath.Join(dir, "data")
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"run", "--dry-run", "--plugin-path", plugins, "--storage", data, bad}, 2, "",
			bad + ":4:28: policies[1]: point arrival_rate=1: tried for 200 arrivals on this system: plugin " + filepath.Join(plugins, "msjfarm-policy-hostile")},
		{[]string{"run", "-q", "--plugin-path", plugins, "--storage", data, bad}, 2, "", "attack procenv refused"},
		{[]string{"submit", "--nats-url", "nats://127.0.0.1:1", "--plugin-path", plugins, "--storage", data, bad}, 2, "", "policies[1]: point arrival_rate=1: tried for 200 arrivals"},
		{[]string{"submit", "--dry-run", "--plugin-path", plugins, "--storage", data, bad}, 2, "", "attack procenv refused"},
		{[]string{"run", "--dry-run", "--plugin-trial=false", "--plugin-path", plugins, "--storage", data, bad}, 1, "", "calibrating hostile-procenv"},
		// A budget the first trial (hostile-honest's) spends: the attack is
		// left to the schema, with the warning, and its calibration fails.
		{[]string{"run", "--dry-run", "--plugin-trial-budget", "1ns", "--plugin-path", plugins, "--storage", data, bad}, 1, "", "trials took their budget"},
		{[]string{"submit", "--dry-run", "--plugin-trial-budget", "0s", "--plugin-path", plugins, "--storage", data, bad}, 2, "", "--plugin-trial-budget must be > 0"},
		{[]string{"run", "--dry-run", "--plugin-path", plugins, "--storage", data, good}, 0, "dry run: nothing is written", ""},
		{[]string{"submit", "--dry-run", "--plugin-path", plugins, "--storage", data, good}, 0, "dry run: nothing is written", ""},
	} {
		code, out, errs := captured(t, func() int { return dispatch(tc.args) })
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
			t.Errorf("%s: exit %d, want %d, %q in stdout and %q in stderr:\n%s\n%s", strings.Join(tc.args, " "), code, tc.code, tc.out, tc.err, out, errs)
		}
		// Landlock's refusal, or, in a private root, no /proc at all.
		if tc.code == 2 && !strings.Contains(tc.err, "budget") && !strings.Contains(errs, "permission denied") && !strings.Contains(errs, "environ: no such file or directory") {
			t.Errorf("%s: the trial's refusal does not say why: %s", strings.Join(tc.args, " "), errs)
		}
		if strings.Contains(out+errs, secret) {
			t.Errorf("%s: a secret in the output:\n%s\n%s", strings.Join(tc.args, " "), out, errs)
		}
	}
	if _, err := os.Stat(data); err == nil {
		t.Error("the store was created")
	}
}

// TestRunRefusesUncheckableEngine: a plugin whose Info declares an engine
// whose job sequence this msjfarm cannot draw again (badproto, declaring
// 0.5.9) would have each task fail before it runs, since its results
// could not be checked against the seed's own jobs. msjfarm run says so
// before anything is pinned or queued, naming the policy, the engine and
// the flag (exit 1), and so does its dry run; with --plugin-any-engine
// the sweep runs, and its results name the engine the plugin declared.
func TestRunRefusesUncheckableEngine(t *testing.T) {
	t.Setenv("BADPROTO_ENGINE", "0.5.9")
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := hosttest.Build(plugins, "./worker/pluginhost/testdata/msjfarm-policy-badproto"); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte("name: engine\nworkload: one-or-all\naxes: {arrival_rate: [2]}\npolicies: [preempting]\nreplications: 1\nrun: {arrivals: 2000, warmup: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	args := []string{"run", "-q", "--plugin-path", plugins, "--plugin-env", "BADPROTO_ENGINE", "--storage", data}
	// The dry run says what the run would refuse (it said "nothing is
	// written" and passed).
	code, out, errs := captured(t, func() int { return dispatch(append(args, "--dry-run", sw)) })
	if code != 1 || !strings.Contains(errs, `links engine "0.5.9"`) || strings.Contains(out, "nothing is written") {
		t.Fatalf("--dry-run: exit %d, want 1 naming the engine:\n%s\n%s", code, out, errs)
	}
	code, out, errs = captured(t, func() int { return dispatch(append(args, sw)) })
	if code != 1 || !strings.Contains(errs, `policy preempting: its plugin preempting=badproto@`) || !strings.Contains(errs, `links engine "0.5.9"`) ||
		!strings.Contains(errs, "--plugin-any-engine") {
		t.Fatalf("exit %d, want 1 naming the policy, the engine and the flag:\n%s\n%s", code, out, errs)
	}
	if m, _ := filepath.Glob(filepath.Join(data, "*", "*", "plugins*")); len(m) != 0 {
		t.Errorf("pinned before refusing: %v", m)
	}
	code, out, errs = captured(t, func() int { return dispatch(append(args, "--plugin-any-engine", sw)) })
	if code != 0 {
		t.Fatalf("--plugin-any-engine: exit %d:\n%s\n%s", code, out, errs)
	}
	stored, err := filepath.Glob(filepath.Join(data, "results", "*", "*.json"))
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored results %v (%v), want 1", stored, err)
	}
	if b, err := os.ReadFile(stored[0]); err != nil || !strings.Contains(string(b), `"engine":"0.5.9"`) {
		t.Errorf("stored result %s (%v): want engine 0.5.9:\n%s", stored[0], err, b)
	}
}

// TestUncheckedEngine: plugin info and plugin check say, after the
// engine, when run and worker would refuse the plugin's tasks.
func TestUncheckedEngine(t *testing.T) {
	for _, c := range []struct {
		engine string
		warned bool
	}{{sim.Version, false}, {sim.SequenceSince, false}, {"0.5.9", true}, {"99.0.0", true}, {"", true}} {
		if got := uncheckedEngine(c.engine); (got != "") != c.warned || c.warned && !strings.Contains(got, "--plugin-any-engine") {
			t.Errorf("engine %q: %q, want warned %v", c.engine, got, c.warned)
		}
	}
}
