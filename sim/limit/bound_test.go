package limit

import "testing"

// TestUnionBound: 1 − n·p, never below 0. A farm search of 130
// single-replication rates (p = 0.01 each) printed "confidence ≥ -0.3".
func TestUnionBound(t *testing.T) {
	for _, c := range []struct {
		n    int
		p    float64
		want float64
	}{
		{10, 0.01, 0.9}, // 1 − 10·0.01
		{100, 0.01, 0},  // exactly used up
		{130, 0.01, 0},  // 1 − 1.3 = −0.3: no bound
		{0, 0.01, 1},    // nothing decided
	} {
		if got := unionBound(c.n, c.p); got < c.want-1e-12 || got > c.want+1e-12 {
			t.Errorf("unionBound(%d, %v) = %v, want %v", c.n, c.p, got, c.want)
		}
	}
}
