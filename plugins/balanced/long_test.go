//go:build long

package balanced

import "testing"

// TestZeroWaitSubcriticalLong: the paper-scale version, k = 2^10 … 2^20,
// 30 replications of 10^6 measured arrivals (B §6 uses 10^6 per run).
func TestZeroWaitSubcriticalLong(t *testing.T) {
	zeroWait(t, []int{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20}, 30, 100000, 1000000, false)
}
