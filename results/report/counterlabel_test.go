package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/sim"
)

// TestCounterAxisLabels: a counter figure's y axis shows the policy's label
// and unit when the records carry its descriptions, and the counter's name
// in words when they do not (records written before descriptions existed,
// or a plugin built against an SDK without them). MSFQ on one-or-all at
// λ = 2 and 4, 2 replications of 3000 arrivals.
func TestCounterAxisLabels(t *testing.T) {
	spec := quickswap.Policies[0]
	run := policyRun{name: "msfq", params: map[string]any{"threshold": 31}, new: func() sim.Policy { return spec.New() }}
	c := simulateCampaign(t, "one-or-all", []policyRun{run}, []float64{2, 4}, 2, 3000)

	old := t.TempDir()
	if err := Write(old, Campaign{Points: c.Points}); err != nil {
		t.Fatal(err)
	}
	svg := readFile(t, filepath.Join(old, "counter_phase1_mean.svg"))
	if !strings.Contains(svg, ">phase 1 mean<") {
		t.Errorf("without descriptions the axis should read \"phase 1 mean\":\n%.2000s", svg)
	}

	_, dir := describedReport(t, c, spec.New())
	for fig, want := range map[string]string{
		"counter_phase1_mean.svg":     ">mean duration of phase 1 (time)<",
		"counter_phase3_fraction.svg": ">fraction of time in phase 3<",
		"counter_cycles.svg":          ">MSFQ cycles<",
	} {
		if svg := readFile(t, filepath.Join(dir, fig)); !strings.Contains(svg, want) {
			t.Errorf("%s: no axis label %q", fig, want)
		}
	}
	// The phases are named in the captions, as Q §4.2 defines them.
	idx := readFile(t, filepath.Join(dir, "index.html"))
	for _, want := range []string{
		"policy counter: mean duration of phase 1 (time). phase 1: serving k-server jobs until none remain",
		"MSFQ phases (Quickswap Fig. 4). phase 1: serving k-server jobs until none remain; phase 2:",
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html: no %q", want)
		}
	}
	// The editable script labels its axis the same way.
	if py := readFile(t, filepath.Join(dir, "counter_phase1_mean.py")); !strings.Contains(py, `"mean duration of phase 1 (time)"`) {
		t.Errorf("counter_phase1_mean.py does not label its axis with the policy's label")
	}
}

// describedReport writes c's report, its records carrying the counter
// descriptions of policy p as a worker records them, into a temporary
// directory; it returns the points summarised and the directory.
func describedReport(t *testing.T, c Campaign, p sim.Policy) ([]aggregate.Point, string) {
	t.Helper()
	info := sim.Describe(p).CounterInfo
	for _, r := range c.Records {
		r.CounterInfo = info
	}
	pts := aggregate.Summarize(c.Tasks, c.Records)
	dir := t.TempDir()
	if err := Write(dir, Campaign{Points: pts}); err != nil {
		t.Fatal(err)
	}
	return pts, dir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
