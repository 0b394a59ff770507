//go:build reportdemo

package report

import (
	"os"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
)

// TestDemo renders Quickswap Fig. 3 in small (FCFS, First-Fit, MSF, MSFQ
// ℓ = 0 and 31 on one-or-all) for looking at the plots:
//
//	REPORT_OUT=/tmp/demo go test -tags reportdemo -run TestDemo ./report/
func TestDemo(t *testing.T) {
	dir := os.Getenv("REPORT_OUT")
	if dir == "" {
		t.Skip("set REPORT_OUT")
	}
	pols := []policyRun{
		fcfsRun(),
		{name: "first-fit", params: map[string]any{}, new: func() sim.Policy { return firstfit.Policies[0].New() }},
		{name: "msf", params: map[string]any{}, new: func() sim.Policy { return msf.Policies[0].New() }},
		{name: "msfq", params: map[string]any{"threshold": 0}, new: func() sim.Policy { return quickswap.Policies[0].New() }},
		{name: "msfq", params: map[string]any{"threshold": 31}, new: func() sim.Policy { return quickswap.Policies[0].New() }},
	}
	pts := simulate(t, pols, []float64{1, 2, 3, 4, 5, 6, 6.5, 7, 7.25, 7.5}, 3, 50000)
	if err := Write(dir, Campaign{Points: pts, Manifest: []byte(`{"demo":true}`)}); err != nil {
		t.Fatal(err)
	}
}

// TestDemoBorg renders FCFS and MSF on Borg cell B (26 classes) to look at
// the per-class panels: REPORT_OUT=/tmp/borg go test -tags reportdemo -run TestDemoBorg ./report/
func TestDemoBorg(t *testing.T) {
	dir := os.Getenv("REPORT_OUT")
	if dir == "" {
		t.Skip("set REPORT_OUT")
	}
	pols := []policyRun{
		fcfsRun(),
		{name: "msf", params: map[string]any{}, new: func() sim.Policy { return msf.Policies[0].New() }},
	}
	pts := simulateOn(t, "borg-b", pols, []float64{1, 2}, 2, 5000)
	t.Logf("simulated %d points", len(pts))
	if err := Write(dir, Campaign{Points: pts}); err != nil {
		t.Fatal(err)
	}
}
