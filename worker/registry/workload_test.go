package registry_test

import (
	"strings"
	"testing"

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
