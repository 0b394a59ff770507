package serverfilling

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEstAtLeast checks that estAtLeast never answers true when estOf's
// estimate is below the bound, on draws near the boundary (d within a few
// parts in 2^40 of (bound − now)·r, where its margin decides), and that it
// does answer true well past it (so the crossing timer's shortcut is
// taken at all).
func TestEstAtLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	yes := 0
	for i := 0; i < 2000000; i++ {
		now := rng.Float64() * math.Pow(2, float64(rng.IntN(40)-10))
		bound := now + rng.Float64()*math.Pow(2, float64(rng.IntN(40)-20))
		if rng.IntN(16) == 0 {
			bound = now - rng.Float64() // already passed
		}
		r := rng.Float64() * math.Pow(2, float64(rng.IntN(20)-12))
		if r == 0 {
			continue
		}
		base := (bound - now) * r
		d := base * (1 + (rng.Float64()-0.5)*math.Pow(2, float64(-30-rng.IntN(25))))
		if rng.IntN(8) == 0 {
			d = base * (1 + rng.Float64()) // well past
		}
		for _, dd := range []float64{d, math.Nextafter(d, math.Inf(1)), math.Nextafter(d, math.Inf(-1))} {
			if estAtLeast(now, dd, r, bound) {
				yes++
				if e := estOf(now, dd, r); e < bound {
					t.Fatalf("estAtLeast(%v, %v, %v, %v) = true but estOf = %v < bound", now, dd, r, bound, e)
				}
			}
		}
	}
	if yes == 0 {
		t.Fatal("estAtLeast never true")
	}
	if estAtLeast(1, 1e300, 1, math.Inf(1)) {
		t.Fatal("true with no timer pending")
	}
}
