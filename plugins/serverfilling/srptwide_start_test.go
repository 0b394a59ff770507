package serverfilling

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// TestStartSeamUnclamped: startSeam's usual start, which takes the keys
// at fin and one ulp below as scale × (· − now) with neither clamp0 nor
// finAtMost's guard for fin = 0, decides as startRare's clamped form
// (the same step down, the same fin, the same acceptance) on finDraw's
// starts, on starts at now = 0 and with nothing left to serve (the
// engine's Remaining is at least 0), and on keys of every finKeyDraw
// kind and 0: what the comment above startSeam claims from
// Remaining ≥ 0, now ≥ 0 and key ≥ 0.
func TestStartSeamUnclamped(t *testing.T) {
	r := rng.New(47, 2)
	for i := range 200000 {
		now, rem, scale, _ := finDraw(r, i)
		switch i % 11 {
		case 0:
			rem = 0
		case 1:
			now = 0
		case 2:
			rem = math.SmallestNonzeroFloat64 * float64(1+r.IntN(4))
		}
		fin := now + rem
		key := 0.0
		if i%13 != 0 {
			key = finKeyDraw(r, i%5, now, rem, scale, fin)
		}
		fc, okc := startUsual(fin, now, scale, key, true)
		fu, oku := startUsual(fin, now, scale, key, false)
		if math.Float64bits(fc) != math.Float64bits(fu) || okc != oku {
			t.Fatalf("now %v rem %v scale %v key %v: clamped %v %v, unclamped %v %v", now, rem, scale, key, fc, okc, fu, oku)
		}
	}
}

// startUsual is startSeam's usual start on fin (the engine's), clamped as
// startRare (clamp0 and the guard) or not: the fin it tries and whether
// that is the one (else startRare takes the start).
func startUsual(fin, now, scale, k float64, clamped bool) (float64, bool) {
	at := func(x float64) float64 {
		if clamped {
			return scale * clamp0(x-now)
		}
		return scale * (x - now)
	}
	down := uint64(0)
	if at(fin) > k {
		down = 1
	}
	f := math.Float64frombits(math.Float64bits(fin) - down)
	ok := at(f) <= k
	if clamped {
		ok = ok && (fin > 0 || down == 0)
	}
	return f, ok
}
