//go:build long

package serverfilling

import "testing"

// TestStaticPathLong is TestStaticPathExact with four times the random
// mixes, Borg cell B at ρ ≈ 0.92, 0.95, 0.97 and 1.00 (λ = 4.5, 4.65,
// 4.75, 4.9) and one-or-all at λ = 4 and 7, every run ten times longer.
func TestStaticPathLong(t *testing.T) { staticPathCases(t, 16, 10) }
