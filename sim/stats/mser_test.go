package stats

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestBatchMeans(t *testing.T) {
	cases := []struct {
		xs   []float64
		b    int
		want []float64
	}{
		{[]float64{1, 2, 3, 4, 5, 6}, 2, []float64{1.5, 3.5, 5.5}},
		{[]float64{1, 2, 3, 4, 5, 6, 7}, 3, []float64{2, 5}}, // 7 dropped
		{[]float64{1, 2}, 3, []float64{}},
		{[]float64{4, 5}, 1, []float64{4, 5}},
		{[]float64{1, 2}, 0, nil},
		{nil, 5, []float64{}},
	}
	for _, c := range cases {
		if got := BatchMeans(c.xs, c.b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("BatchMeans(%v, %d) = %v, want %v", c.xs, c.b, got, c.want)
		}
	}
}

// noise returns a fixed, deterministic zero-mean sequence in [-1, 1)
// (Weyl sequence of the golden ratio), so the tests do not depend on a
// random generator.
func noise(i int) float64 {
	v := float64(i) * 0.6180339887498949
	return 2*(v-math.Floor(v)) - 1
}

// mserBrute is the O(n²) definition.
func mserBrute(y []float64) int {
	n := len(y)
	best, bestD := math.Inf(1), 0
	for d := 0; d <= n/2 && n > 0; d++ {
		var m float64
		for _, v := range y[d:] {
			m += v
		}
		m /= float64(n - d)
		var ss float64
		for _, v := range y[d:] {
			ss += (v - m) * (v - m)
		}
		if s := ss / float64((n-d)*(n-d)); s < best {
			best, bestD = s, d
		}
	}
	return bestD
}

func TestMSER(t *testing.T) {
	transient := make([]float64, 1000)
	for i := range transient {
		if i < 100 {
			transient[i] = 50
		} else {
			transient[i] = noise(i)
		}
	}
	stationary := make([]float64, 1000)
	for i := range stationary {
		stationary[i] = noise(i)
	}
	// A decaying transient 20·e^{-i/30}: noticeably biased up to ~150.
	decay := make([]float64, 2000)
	for i := range decay {
		decay[i] = 20*math.Exp(-float64(i)/30) + noise(i)
	}

	cases := []struct {
		name   string
		xs     []float64
		b      int
		lo, hi int // accepted range for the number of batches deleted
	}{
		// 100 values at 50 = 20 batches of 5 (or 10 of 10), then noise.
		{"step b=5", transient, 5, 20, 21},
		{"step b=10", transient, 10, 10, 11},
		{"step b=1", transient, 1, 100, 102},
		{"stationary b=5", stationary, 5, 0, 10},
		{"decay b=5", decay, 5, 15, 40},
	}
	for _, c := range cases {
		y := BatchMeans(c.xs, c.b)
		d := MSER(y)
		if d < c.lo || d > c.hi {
			t.Errorf("%s: MSER = %d batches, want %d..%d", c.name, d, c.lo, c.hi)
		}
		if bd := mserBrute(y); bd != d {
			t.Errorf("%s: MSER = %d, brute force %d", c.name, d, bd)
		}
	}
	if d := MSER5(transient); d != 100 {
		t.Errorf("MSER5 = %d observations, want 100", d)
	}
}

func TestMSEREdges(t *testing.T) {
	cases := []struct {
		y    []float64
		want int
	}{
		{nil, 0},
		{[]float64{3}, 0},
		{[]float64{3, 4}, 1}, // d <= n/2 = 1; MSER(0) = 0.5/4, MSER(1) = 0
		{[]float64{5, 5, 5, 5}, 0},
		// A transient longer than half the run goes undetected: MSER(5) =
		// 58.8/25 = 2.35 > MSER(0) = 184.4/100 = 1.844, so nothing is deleted.
		{[]float64{9, 9, 9, 9, 9, 9, 0, 1, 0, 1}, 0},
		// A shorter one is found: MSER(3) = 0, the remaining five values being equal.
		{[]float64{7, 7, 7, 1, 1, 1, 1, 1}, 3},
	}
	for _, c := range cases {
		got := MSER(c.y)
		if got != c.want {
			t.Errorf("MSER(%v) = %d, want %d", c.y, got, c.want)
		}
		if bd := mserBrute(c.y); bd != got {
			t.Errorf("MSER(%v) = %d, brute force %d", c.y, got, bd)
		}
	}
}

// TestMSERMatchesBrute: the O(n) suffix computation equals the definition on
// random series with random transients.
func TestMSERMatchesBrute(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := 1 + r.IntN(200)
		y := make([]float64, n)
		shift := r.IntN(n + 1)
		for i := range y {
			y[i] = r.NormFloat64()
			if i < shift {
				y[i] += 3 * r.Float64()
			}
		}
		if got, want := MSER(y), mserBrute(y); got != want {
			t.Fatalf("trial %d (n=%d): MSER %d, brute %d", trial, n, got, want)
		}
	}
}

// TestMSERUpTo: with the search extended past n/2, a level shift at 70% of
// the series is found at its place, which MSER (stopping at n/2) cannot
// report; with dmax = n/2 the two agree.
func TestMSERUpTo(t *testing.T) {
	const n = 64
	y := make([]float64, n)
	for i := range y {
		y[i] = float64(i%3) * 0.1 // small bounded noise
		if i < 45 {
			y[i] += 10
		}
	}
	if d := MSERUpTo(y, 3*n/4); d != 45 {
		t.Errorf("MSERUpTo: d = %d, want 45", d)
	}
	if d := MSER(y); d > n/2 {
		t.Errorf("MSER: d = %d beyond n/2", d)
	}
	for i := range y {
		y[i] = float64((i*37)%11) - float64(i)/20
	}
	if a, b := MSERUpTo(y, n/2), MSER(y); a != b {
		t.Errorf("MSERUpTo(n/2) = %d, MSER = %d", a, b)
	}
	if d := MSERUpTo(y, 1000); d > n-2 {
		t.Errorf("dmax past the end: d = %d > n−2", d)
	}
}
