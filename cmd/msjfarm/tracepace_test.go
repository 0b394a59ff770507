package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
)

// paceSeen records the GOGC in force when a policy is tried on a replayed
// trace's workload, just parsed and converted for it.
type paceSeen struct {
	builtin.Catalog
	gogc *[]int
}

func (c paceSeen) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	if len(w.Trace) > 0 {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		*c.gogc = append(*c.gogc, p)
	}
	return c.Catalog.CheckWorkload(policy, params, w)
}

// TestTracePlannedAtDefaultGCPace: run and submit read and plan a trace
// sweep (its canonical form built, the trace parsed and converted at each
// servers value to try the policies) at the collector's default pace,
// not at the simulation pace (GOGC=400) `msjfarm run` starts with: the
// parses leave about 90 bytes a job of garbage beside the canonical form,
// and planning a trace of 5·10⁶ jobs grew to 1.9 GB before a cycle ran.
// The simulation pace is back once the plan is made.
func TestTracePlannedAtDefaultGCPace(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the collector's pace is the user's")
	}
	if p := gcpace.Resume(); p < gcpace.Percent { // as main starts (Apply), whatever a test before left
		t.Fatalf("GOGC=%d: not at the simulation pace", p)
	}
	defer gcpace.Stop()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.swf"), []byte(dryTraceSWF), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte("name: tr\nseed: 1\ntrace: {file: t.swf}\naxes: {servers: [4, 8]}\npolicies: [fcfs, first-fit]\nreplications: 1\nrun: {arrivals: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []int
	if _, _, _, err := planSweep(sw, nil, paceSeen{gogc: &seen}, "", 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Fatalf("%d policy variants tried on the trace; want 4 (2 servers values × 2 policies)", len(seen))
	}
	for _, p := range seen {
		if p != 100 {
			t.Fatalf("the trace was planned at GOGC=%v, not the default 100", seen)
		}
	}
	if p := debug.SetGCPercent(-1); debug.SetGCPercent(p) != -1 || p < gcpace.Percent {
		t.Fatalf("GOGC=%d after the plan, not the simulation pace (at least %d) again", p, gcpace.Percent)
	}
}
