//go:build long

package serverfilling

import (
	"fmt"
	"testing"
)

// TestFastPathLong is TestFastPathEquivalent at ten times the run length
// and four times the random workloads, plus Borg cell B at ρ = 0.92 for
// seeds 1-4 over 160000 arrivals (t ≈ 55000: seed 4 parted the two paths
// at t = 49339 under the 0.4.0 tolerance rule, seed 1 preempted a job not
// running at t ≈ 51943 in an earlier version of the fast path).
func TestFastPathLong(t *testing.T) {
	cs := append(randomCases(48, 30000), structuredCases(t, 10)...)
	borg1 := namedWorkload(t, "borg-b", 1)
	for seed := uint64(1); seed <= 4; seed++ {
		cs = append(cs, equivCase{name: fmt.Sprintf("borg-b/rho=0.92/seed=%d/long", seed),
			w: namedWorkload(t, "borg-b", 0.92/borg1.Load()), o: SRPTOrder, arrivals: 160000, seed: seed})
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) { t.Parallel(); fastVsGeneral(t, c) })
	}
}
