//go:build long

package serverfilling

import "testing"

// TestDivisorSRPTPathLong is TestDivisorSRPTPathExact and
// TestDivisorGittinsPathExact with four times the random workloads at five
// times the run length, and the structured ones at five times theirs.
func TestDivisorSRPTPathLong(t *testing.T) {
	cs := dsRandomCases(240, 40000, false)
	for _, c := range dsStructuredCases(t) {
		c.arrivals *= 5
		cs = append(cs, c)
	}
	dsFastVsGeneral(t, SRPTOrder, cs)
	cs = dsRandomCases(160, 40000, true)
	for _, c := range dsStructuredCases(t) {
		c.arrivals *= 5
		cs = append(cs, c)
	}
	dsFastVsGeneral(t, GittinsOrder, cs)
}
