//go:build long

package serverfilling

import "testing"

// TestRisePathLong is TestRisePathEquivalent with four times the random
// workloads at five times the run length, and the k = 2048 and
// power-of-two workloads at five times theirs.
func TestRisePathLong(t *testing.T) { risePathCases(t, 96, 40000, 5) }
