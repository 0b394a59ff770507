//go:build long

package serverfilling

import "testing"

// TestPreemptionsIntrinsicDivisor: TestPreemptionsIntrinsic for
// DivisorFilling-SRPT and -Gittins on twoClass2048 at BenchmarkLevels' L =
// 5000 rate, where they preempt 6 and 68 times per arrival (45 and 113 in
// BenchmarkLevels' longer runs): 90% and 99% of it by decisions starting a
// need-128 job (measured 0.903 and 0.992, required 0.85 and 0.95; the reference's general path takes
// 10–20 s here).
func TestPreemptionsIntrinsicDivisor(t *testing.T) {
	checkPreemptions(t, []preemptionCase{
		{"divisorfilling-srpt/two-class-2048/L=5000", twoClass2048(137), SRPTOrder, DivisorFilling, 8000, 0.85},
		{"divisorfilling-gittins/two-class-2048/L=5000", twoClass2048(137), GittinsOrder, DivisorFilling, 8000, 0.95},
	})
}
