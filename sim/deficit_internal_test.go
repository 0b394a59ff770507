package sim

import (
	"math"
	"testing"
)

// TestDeficitBatch: the batch length is the smallest power of two longer
// than the longest silence of the tested half (the second 32 segments),
// derived by hand per row; the first half's silences do not count (a
// class's count leaves out warm-up jobs).
func TestDeficitBatch(t *testing.T) {
	silent := func(from, to int) []float64 { // deliveries 1 except in [from, to)
		dep := make([]float64, growthSegments)
		for i := range dep {
			if i < from || i >= to {
				dep[i] = 1
			}
		}
		return dep
	}
	for _, c := range []struct {
		name     string
		from, to int
		batch    int
	}{
		{"no silence", 0, 0, 1},
		{"one segment", 40, 41, 2},       // gap 1 → 2
		{"three segments", 40, 43, 4},    // gap 3 → 4
		{"four segments", 40, 44, 8},     // gap 4 → 8 (longer than the gap)
		{"seven at the end", 57, 64, 8},  // gap 7 → 8: 4 batches, still tested
		{"eight segments", 50, 58, 16},   // gap 8 → 16: 2 batches, not tested
		{"first half only", 0, 32, 1},    // warm-up jobs' silence is not counted
		{"across the middle", 28, 35, 4}, // 3 of it in the tested half → 4
		{"the whole window", 0, 64, 64},  // gap 32 → 64
	} {
		dep := silent(c.from, c.to)
		if got := deficitBatch(longestSilence(dep[growthSegments/2:])); got != c.batch {
			t.Errorf("%s: batch %d, want %d", c.name, got, c.batch)
		}
	}
}

// TestDeficitEpisodic: a class served in episodes — silent for 7
// segments, then its backlog of 8 segments' offer (8 × 10 jobs) in one —
// is stable: over the half its increments sum to zero. Batched per segment
// its t was meaningless (the increments are its offer, 10, in 28 of 32
// segments); its own time scale (batches of 8, each holding one episode)
// gives increments of exactly 0 and no deficit. A starving class that
// delivers nothing for 8 segments or more is not tested per replication
// (Critical 0); one that delivers every segment keeps 32 batches and fires.
func TestDeficitEpisodic(t *testing.T) {
	offer := make([]float64, growthSegments)
	inc := make([]float64, growthSegments)
	dep := make([]float64, growthSegments)
	for i := range offer {
		offer[i] = 10
		if i%8 == 7 {
			dep[i] = 80
		}
		inc[i] = offer[i] - dep[i]
	}
	d := deficitTest("episodic", 0, true, offer, inc, dep)
	if d.Batch != 8 || d.Fired || d.Deficit != 0 || d.T != 0 || d.Critical <= GrowthCritical(0) {
		t.Errorf("episodic class: %+v", d)
	}
	// starving: nothing delivered through the second half
	for i := range dep {
		dep[i], inc[i] = 0, offer[i]
	}
	d = deficitTest("starving", 0, true, offer, inc, dep)
	if d.Batch != 64 || d.Fired || d.Critical != 0 || d.Relative != 1 {
		t.Errorf("silent class: %+v", d)
	}
	// falling behind by 2 of 10 in every segment, ± 0.5 alternating (φ < 0,
	// clamped to 0: critical 10.17; t = 2/(0.508/√32) ≈ 22): 32 batches
	for i := range dep {
		dep[i] = 8 + 0.5*math.Cos(math.Pi*float64(i))
		inc[i] = offer[i] - dep[i]
	}
	d = deficitTest("behind", 0, true, offer, inc, dep)
	if d.Batch != 0 || !d.Fired || d.Critical != GrowthCritical(d.Phi) {
		t.Errorf("class falling behind: %+v", d)
	}
}

// TestMerged31: a merged-batch t enters Stouffer's z at the t(31) quantile
// of its own tail probability: t(7)'s 0.99 quantile 2.998 maps to t(31)'s,
// 2.453; the sign is kept; 0 stays 0; a tail that underflows is bounded.
func TestMerged31(t *testing.T) {
	for _, c := range []struct{ t, want float64 }{
		{2.998, 2.453}, {-2.998, -2.453}, {0, 0}, {1e9, mergedMax},
	} {
		got := merged31(Deficit{T: c.t, Batch: 4}) // 8 batches, 7 degrees of freedom
		if math.Abs(got-c.want) > 2e-3 {
			t.Errorf("merged31(%g) = %g, want %g", c.t, got, c.want)
		}
	}
}

// TestSilentClass: the "episodes" reason needs a class (not a total)
// silent for 8 segments of the tested half or more and offered at least
// 128 jobs (4 a segment) over the half; the longest silence is named.
func TestSilentClass(t *testing.T) {
	for _, c := range []struct {
		name string
		ds   []Deficit
		want string
	}{
		{"busy and silent", []Deficit{{Name: "big", Class: 3, Silence: 8, Offered: 128}}, "big"},
		{"offered too little", []Deficit{{Name: "big", Class: 3, Silence: 8, Offered: 127}}, ""},
		{"silent too briefly", []Deficit{{Name: "big", Class: 3, Silence: 7, Offered: 1e4}}, ""},
		{"a total", []Deficit{{Name: DeficitJobs, Class: -1, Silence: 32, Offered: 1e4}}, ""},
		{"the longest", []Deficit{{Name: "a", Class: 0, Silence: 9, Offered: 200}, {Name: "b", Class: 1, Silence: 20, Offered: 200}}, "b"},
	} {
		if got := silentClass(c.ds); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
