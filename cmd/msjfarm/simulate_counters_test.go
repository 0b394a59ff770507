package main

import (
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
	} {
		code, _, errs := msjfarm(t, nil, append([]string{"simulate", "--arrivals", "100"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, errs)
		}
	}
}
