//go:build long

package serverfilling

import "testing"

// TestFig3Long is S Fig. 3 at paper-like scale: loads up to 0.99, 20 seeds
// of 10^6 measured arrivals each (S used one run of 10^7 per point).
func TestFig3Long(t *testing.T) {
	checkFig3(t, []float64{0.8, 0.9, 0.95, 0.98, 0.99}, 20, 1000000)
}
