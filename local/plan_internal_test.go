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

// TestMakespanGroups: groups of equal tasks schedule as their tasks one
// by one would.
func TestMakespanGroups(t *testing.T) {
	for _, tc := range []struct {
		groups []taskGroup
		slots  int
		want   float64
	}{
		{[]taskGroup{{2, 3}, {3, 2}}, 2, 7},   // TestMakespan's first case: {3,2,2} and {3,2}
		{[]taskGroup{{1, 1000}}, 8, 125},      // 1000 unit tasks on 8 slots: 125 each
		{[]taskGroup{{1, 7}, {10, 1}}, 2, 10}, // 10 on one slot, the seven 1s on the other
		{nil, 2, 0},
	} {
		if got := makespanGroups(tc.groups, tc.slots); got != tc.want {
			t.Errorf("makespanGroups(%v, %d) = %v, want %v", tc.groups, tc.slots, got, tc.want)
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
