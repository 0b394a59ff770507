//go:build long

package serverfilling

import "testing"

// TestDivisorFastPathLong is TestDivisorFastPathExact with four times the
// random workloads at five times the run length, and the structured ones
// at five times theirs.
func TestDivisorFastPathLong(t *testing.T) {
	cs := dfRandomCases(240, 60000)
	for _, c := range dfStructuredCases(t) {
		c.arrivals *= 5
		cs = append(cs, c)
	}
	dfFastVsGeneral(t, cs)
}
