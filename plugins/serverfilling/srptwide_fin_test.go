package serverfilling

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestFinFar: finFar returns finAtMost's fin to the bit, on the inputs
// TestFinAtMost draws (fin0 above the fin sought by up to 2^12 ulps, the
// key 0 or above fin0's) and on keys drawn at random below fin0's; and
// its guess, when it passes its check, is finAtMost's answer, and passes
// for nearly every input whose answer lies below fin0 (else finFar would
// be finAtMost with extra work); and finFar is finAtMost over wider
// ranges of instants, durations and keys.
func TestFinFar(t *testing.T) {
	r := rng.New(40, 1)
	passed, below := 0, 0
	for i := range 40000 {
		now, rem, scale, fin0 := finDraw(r, i)
		key := finKeyDraw(r, i%5, now, rem, scale, fin0)
		want := finAtMost(fin0, now, scale, key)
		if got := finFar(fin0, now, scale, key); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("now %v rem %v scale %v key %v: finFar %v, finAtMost %v", now, rem, scale, key, got, want)
		}
		f, ok := finGuess(fin0, now, scale, key)
		if ok && math.Float64bits(f) != math.Float64bits(want) {
			t.Fatalf("now %v rem %v scale %v key %v: guess %v passed, finAtMost %v", now, rem, scale, key, f, want)
		}
		if want < fin0 {
			below++
			if ok {
				passed++
			}
		}
	}
	if passed < below*99/100 {
		t.Fatalf("the guess passed for %d of %d inputs whose fin lies below fin0", passed, below)
	}
	// Wider ranges, where the guess is now and then two ulps off on
	// either side and must fail its check (about one in 10^4).
	for i := range 200000 {
		now := math.Pow(10, 8*r.Float64()-2)
		rem := math.Pow(10, -12+18*r.Float64())
		scale := float64(1+r.IntN(2048)) / 2048
		key := scale * rem * r.Float64()
		fin0 := now + rem
		if got, want := finFar(fin0, now, scale, key), finAtMost(fin0, now, scale, key); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("draw %d: now %v rem %v scale %v key %v: finFar %v, finAtMost %v", i, now, rem, scale, key, got, want)
		}
	}
}
