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

func TestFitCost(t *testing.T) {
	// 0.1 s set-up, 1 µs per arrival.
	m := fitCost(0.1+1e-6*1000, 1000, 0.1+1e-6*4000, 4000)
	if d := m.setup - 0.1; d > 1e-12 || d < -1e-12 || m.perArrival < 1e-6-1e-15 || m.perArrival > 1e-6+1e-15 {
		t.Errorf("fit %+v, want set-up 0.1 and 1e-6 per arrival", m)
	}
	// Noise making the shorter run dearer than the longer: the average.
	if m := fitCost(0.5, 1000, 0.4, 4000); m.setup != 0 || m.perArrival != 0.4/4000 {
		t.Errorf("noisy fit %+v", m)
	}
}
