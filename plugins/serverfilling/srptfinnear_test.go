package serverfilling

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestFinNear checks finNear against a search one ulp at a time from fin0
// down, on keys that make the answer fin0 itself, exactly one ulp below
// (the key of that instant), a few or up to 2^12 ulps below, or a key
// clamped at 0 a few ulps above now; with now 0 in a seventh of the cases. It fails with the flag's test reversed,
// the step taken as two ulps, or the fallback (finFar) dropped.
func TestFinNear(t *testing.T) {
	r := rng.New(40, 2)
	ones := 0
	for i := range 40000 {
		now, _, scale, fin0 := finDraw(r, i)
		below := func(n int) float64 { // the key at n ulps below fin0
			return scale * clamp0(math.Float64frombits(math.Float64bits(fin0)-uint64(n))-now)
		}
		var key float64
		switch i % 5 {
		case 0:
			key = scale * clamp0(fin0-now)
		case 1:
			key = below(1)
		case 2:
			key = below(2 + r.IntN(8))
		case 3: // 0 where that is a few ulps away, else far below
			key = 0
			if i%2 == 0 || math.Float64bits(fin0)-math.Float64bits(now) > 1<<12 {
				key = below(16 + r.IntN(1<<12))
			}
		case 4:
			rem := math.Nextafter(now, math.Inf(1)) - now // one ulp of now
			fin0 = now + rem*float64(1+r.IntN(3))
			key = below(r.IntN(3))
		}
		want := finLinear(fin0, now, scale, key)
		if got := finNear(fin0, now, scale, key); got != want {
			t.Fatalf("now %v fin0 %v scale %v key %v: finNear %v, one ulp at a time %v", now, fin0, scale, key, got, want)
		}
		if want == math.Nextafter(fin0, math.Inf(-1)) {
			ones++
		}
	}
	if ones < 4000 {
		t.Fatalf("one ulp below reached %d times", ones)
	}
}
