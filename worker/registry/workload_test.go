package registry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// TestRegistryChecksWorkload: the registry, as the catalogue of run,
// submit and the coordinator, refuses at expansion a built-in parameter
// whose range depends on the system (MSFQ's threshold must be in
// [0, k−1] = [0, 31] on one-or-all), as the built-in catalogue does.
func TestRegistryChecksWorkload(t *testing.T) {
	var _ sweep.WorkloadChecker = (*registry.Registry)(nil)
	f, err := sweep.Parse([]byte(`
name: thr
workload: one-or-all
axes: {arrival_rate: [1]}
policies: [{name: msfq, threshold: 1000}]
replications: 1
run: {arrivals: 100}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sweep.Expand(f, registry.Builtin())
	if err == nil || !strings.Contains(err.Error(), "threshold") {
		t.Fatalf("expansion error %v, want one naming the threshold", err)
	}
	f.Policies = []any{map[string]any{"name": "msfq", "threshold": 31}}
	if _, err := sweep.Expand(f, registry.Builtin()); err != nil {
		t.Fatalf("threshold 31: %v", err)
	}
}

// TestPluginTrial: a third party's policy whose Init refuses the system
// (msfq-copy, MSFQ served by a test plugin: threshold ≤ k−1 = 31 on
// one-or-all) is refused at expansion by a trial in its binary,
// at the parameter it names, as the built-in one is in-process; a threshold
// the system allows passes the trial. With NoTrial the plugin's policy is
// checked by its schema only (the refusal would come from each task).
func TestPluginTrial(t *testing.T) {
	var _ sweep.SpecChecker = (*registry.Registry)(nil)
	dir := t.TempDir()
	install(t, dir, "copies")
	reg := registry.New(t.Context(), registry.Options{Dirs: []string{dir}, Host: newHost(t)})
	sweepOf := func(policy string, threshold int) *sweep.File {
		f, err := sweep.Parse([]byte(fmt.Sprintf(`
name: trial
workload: one-or-all
axes: {arrival_rate: [1, 2]}
policies: [{name: %s, threshold: %d}]
replications: 1
run: {arrivals: 100}
`, policy, threshold)), "yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	_, err := sweep.Expand(sweepOf("msfq-copy", 300), reg)
	if err == nil || !strings.Contains(err.Error(), "policies[0].threshold") || !strings.Contains(err.Error(), "tried for 200 arrivals") ||
		!strings.Contains(err.Error(), "msjfarm-policy-copies") {
		t.Fatalf("msfq-copy threshold 300: expansion error %v, want the trial's refusal at policies[0].threshold naming the binary", err)
	}
	if _, err := sweep.Expand(sweepOf("msfq-copy", 31), reg); err != nil {
		t.Fatalf("msfq-copy threshold 31: %v", err)
	}
	if _, err := sweep.Expand(sweepOf("msfq", 300), reg); err == nil || strings.Contains(err.Error(), "tried for 200 arrivals") {
		t.Fatalf("msfq threshold 300: %v, want the built-in's refusal, in-process", err)
	}
	if _, err := sweep.Expand(sweepOf("msfq-copy", 300), reg.WithoutTrials()); err != nil {
		t.Fatalf("msfq-copy threshold 300 without trials: %v, want the schema check only", err)
	}

	// A budget the first trial spends: the second variant (threshold 300)
	// is left to the schema, and TrialNote says so. The first trial runs
	// with what is left of the budget as its deadline (1 ns): a fast
	// machine finishes it first (it ran: 1 ran, 1 left), a loaded one
	// does not (cut short: it is counted as left to the schema too, 0 ran,
	// 2 left; seen under load in a full test run). Both notes are right.
	tight := registry.New(t.Context(), registry.Options{Dirs: []string{dir}, Host: newHost(t), TrialBudget: time.Nanosecond})
	two := sweepOf("msfq-copy", 3)
	two.Policies = append(two.Policies, map[string]any{"name": "msfq-copy", "threshold": 300})
	if tight.TrialNote() != "" {
		t.Fatalf("a note before any trial: %s", tight.TrialNote())
	}
	if _, err := sweep.Expand(two, tight); err != nil {
		t.Fatalf("past the budget: %v, want the second variant left to the schema", err)
	}
	note := tight.TrialNote()
	ranOne := strings.Contains(note, " for 1, one per policy variant and system") && strings.Contains(note, "1 more were left to the schema check")
	cutShort := strings.Contains(note, " for 0, one per policy variant and system") && strings.Contains(note, "2 more were left to the schema check")
	if !ranOne && !cutShort {
		t.Fatalf("TrialNote %q", note)
	}
	if _, err := sweep.Expand(two, reg); err == nil {
		t.Fatal("within the default budget the second variant is not refused")
	}

	// A trial ends with the budget: a policy whose Init never returns held
	// the planning for the trial's 30 s whatever --plugin-trial-budget
	// said. With 1 s left, it is stopped then and left to the schema.
	install(t, dir, "blocks")
	short := registry.New(t.Context(), registry.Options{Dirs: []string{dir}, Host: newHost(t), TrialBudget: time.Second})
	blocking := sweepOf("msfq-copy", 3)
	blocking.Policies = []any{"fcfs-blocks"}
	t0 := time.Now()
	if _, err := sweep.Expand(blocking, short); err != nil {
		t.Fatalf("fcfs-blocks with a budget of 1 s: %v, want it left to the schema", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Errorf("the trial took %v, past the budget of 1 s and its 2 s grace", d)
	}
	if note := short.TrialNote(); !strings.Contains(note, "1 more were left to the schema check") {
		t.Fatalf("TrialNote %q", note)
	}

	// A policy that fails only once jobs queue (fcfs-late: at three jobs in
	// the system) is caught too: a trial of one arrival passed it, and each
	// of its tasks failed on the workers.
	install(t, dir, "late")
	withLate := registry.New(t.Context(), registry.Options{Dirs: []string{dir}, Host: newHost(t)})
	lateSweep := sweepOf("msfq-copy", 3)
	lateSweep.Policies = []any{"fcfs-late"}
	if _, err := sweep.Expand(lateSweep, withLate); err == nil || !strings.Contains(err.Error(), "tried for 200 arrivals") ||
		!strings.Contains(err.Error(), "three jobs in the system") {
		t.Fatalf("fcfs-late: %v, want the trial's refusal with the policy's panic", err)
	}

	// The context given to New ends the trials (Ctrl-C of run or submit).
	ctx, cancel := context.WithCancel(t.Context())
	ended := registry.New(ctx, registry.Options{Dirs: []string{dir}, Host: newHost(t)})
	cancel()
	if _, err := sweep.Expand(sweepOf("msfq-copy", 31), ended); err == nil || !strings.Contains(err.Error(), "cancel") {
		t.Fatalf("trial after the context ended: %v, want it cancelled", err)
	}
}
