package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// msjfarm simulate names a counter by its policy's label and unit, and a
// counter the policy does not describe by "counter <name>".
func TestSimulateCounterLabels(t *testing.T) {
	code, out, errs := msjfarm(t, nil, "simulate", "--policy", "msfq", "--workload", "one-or-all", "--load", "0.5",
		"--reps", "2", "--arrivals", "3000")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"mean duration of phase 1 (time)", "fraction of time in phase 4", "MSFQ cycles"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "counter phase1_mean") {
		t.Errorf("a described counter printed by its raw name:\n%s", out)
	}
	info := sim.CounterInfos{{Name: "kills", Label: "kill operations"}}
	for k, want := range map[string]string{"kills": "kill operations", "forgotten": "counter forgotten"} {
		if got := counterRow(info, k); got != want {
			t.Errorf("counterRow(%q) = %q, want %q", k, got, want)
		}
	}
}

// Flags that do not apply are usage errors: they were ignored without a
// word (`--rate 1 --servers 16` ran one-or-all's 32 servers).
func TestSimulateFlagsThatDoNotApply(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "1", "--servers", "16"}, "--servers applies to a replayed trace"},
		{[]string{"--rate", "1", "--time-scale", "0.5"}, "--time-scale applies to a replayed trace"},
		{[]string{"--swf", "../../model/swf/testdata/small.swf", "--rate", "2"}, "--rate does not apply to --swf"},
		{[]string{"--swf", "../../model/swf/testdata/small.swf", "--workload", "borg-b"}, "--workload does not apply to --swf"},
		{[]string{"--swf", "../../model/swf/testdata/small.swf", "--servers", "-1"}, "--servers -1: must be at least 1"},
	} {
		code, _, errs := msjfarm(t, nil, append([]string{"simulate", "--arrivals", "100"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, errs)
		}
	}
}

// A file of secrets given as --swf by mistake is refused without quoting
// it, as a sweep's trace.file is: simulate printed the first field whole.
func TestSimulateSecretAsTrace(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"
	file := filepath.Join(t.TempDir(), "secret.swf")
	if err := os.WriteFile(file, []byte(secret+" 0 0 1 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := msjfarm(t, nil, "simulate", "--swf", file, "--arrivals", "1", "--warmup", "0", "--reps", "1")
	if code != 2 || !strings.Contains(errs, "is not an SWF trace (line 1, field 1 (job number): is not a number)") || strings.Contains(out+errs, secret[:8]) {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}
