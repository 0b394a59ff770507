//go:build long

package serverfilling

import "testing"

// TestDivisorSRPTPathLong is TestDivisorSRPTPathExact with four times the
// random workloads at five times the run length, and the structured ones
// at five times theirs.
func TestDivisorSRPTPathLong(t *testing.T) {
	cs := dsRandomCases(240, 40000)
	for _, c := range dsStructuredCases(t) {
		c.arrivals *= 5
		cs = append(cs, c)
	}
	dsFastVsGeneral(t, cs)
}
