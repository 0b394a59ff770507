package local

import "testing"

func TestMakespan(t *testing.T) {
	for _, tc := range []struct {
		costs []float64
		slots int
		want  float64
	}{
		{[]float64{3, 3, 2, 2, 2}, 2, 7}, // LPT: {3,2,2} and {3,2}
		{[]float64{1, 1, 1, 1}, 4, 1},
		{[]float64{5, 1, 1}, 8, 5}, // the longest task bounds it
		{[]float64{2, 2}, 1, 4},
		{nil, 2, 0},
	} {
		if got := makespan(tc.costs, tc.slots); got != tc.want {
			t.Errorf("makespan(%v, %d) = %v, want %v", tc.costs, tc.slots, got, tc.want)
		}
	}
}
