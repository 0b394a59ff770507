//go:build long

package serverfilling

import "testing"

// TestDivisorOneKLong is TestDivisorOneKExact at five times the run length,
// over three sets of seeds, for the one-or-all slices (divisoronek.go).
func TestDivisorOneKLong(t *testing.T) {
	for _, seed := range []uint64{0, 1000, 2000} {
		srpt, gittins := oneKCases(30000, seed)
		dsFastVsGeneral(t, SRPTOrder, srpt)
		dsFastVsGeneral(t, GittinsOrder, gittins)
	}
}
