package rng

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/msjfarm/msjfarm/internal/golden"
)

// TestSplitMix64Vector: the published first output of SplitMix64 seeded
// with 0 (Steele, Lea and Flood's reference implementation) is
// 0xe220a8397b1dcdaf.
func TestSplitMix64Vector(t *testing.T) {
	if got := SplitMix64(0); got != 0xe220a8397b1dcdaf {
		t.Fatalf("SplitMix64(0) = %#x", got)
	}
}

// TestPinned pins outputs of derived streams and of the variate transforms.
// They are golden values recorded when the seed derivation was fixed: if any
// changes, every archived result stops being reproducible — do not update
// them, fix the change. (One deliberate change: engine 0.6.0 replaced the
// exponential's −log U by the ziggurat, exp.go, for speed; Exp's pinned
// value changed then and the engine version with it.)
func TestPinned(t *testing.T) {
	s := Derive(1, 2)
	for i, want := range []uint64{0x43adc0ab9b824212, 0xcab8b2f63a30c4f4, 0xaa1641d793311b7b} {
		if got := s.Uint64(); got != want {
			t.Fatalf("Derive(1, 2) draw %d = %#x, want %#x", i, got, want)
		}
	}
	// Exp's tables are computed with math.Exp and math.Log, implemented
	// per architecture (amd64 has its own assembly for both): off amd64,
	// where the value was recorded, its last bits may differ (arm64 and
	// arm, under qemu: 1.6352491859846279, one ulp); the integer draws and
	// Float64 may not.
	e := Derive(5, 1)
	x, u := e.Exp(), e.Float64()
	const want = 1.635249185984627
	if u != 0.16769176609715036 ||
		x != want && (runtime.GOARCH == golden.Arch || math.Abs(x-want) > golden.Tol*want) {
		t.Fatalf("Derive(5, 1): Exp %v, Float64 %v", x, u)
	}
	if m := Mix(1, 0); m != 0x5e41ab087439611e {
		t.Fatalf("Mix(1, 0) = %#x", m)
	}
}

// TestDeriveStable: a stream replays, and different (seed, id) differ.
func TestDeriveStable(t *testing.T) {
	s := Derive(1, 2)
	got := []uint64{s.Uint64(), s.Uint64(), s.Uint64()}
	s2 := Derive(1, 2)
	for i, g := range got {
		if v := s2.Uint64(); v != g {
			t.Fatalf("draw %d: %x then %x", i, g, v)
		}
	}
	if Derive(1, 3).Uint64() == got[0] || Derive(2, 2).Uint64() == got[0] {
		t.Fatal("different (seed, id) gave the same first draw")
	}
}

func TestFloat64Open(t *testing.T) {
	s := Derive(7, 0)
	var sum float64
	const n = 200000
	for i := 0; i < n; i++ {
		u := s.Float64()
		if u <= 0 || u >= 1 {
			t.Fatalf("u = %v outside (0,1)", u)
		}
		sum += u
	}
	// Mean of n uniforms: sd = sqrt(1/12/n) ≈ 6.5e-4; 5 sd.
	if m := sum / n; math.Abs(m-0.5) > 5*math.Sqrt(1.0/12/n) {
		t.Fatalf("mean %v", m)
	}
}

func TestExpMean(t *testing.T) {
	s := Derive(7, 1)
	var sum float64
	const n = 200000
	for i := 0; i < n; i++ {
		sum += s.Exp()
	}
	// sd of the mean = 1/sqrt(n); 5 sd.
	if m := sum / n; math.Abs(m-1) > 5/math.Sqrt(n) {
		t.Fatalf("mean %v", m)
	}
}

func TestIntNUniform(t *testing.T) {
	s := Derive(3, 3)
	const n, k = 120000, 6
	var c [k]int
	for i := 0; i < n; i++ {
		c[s.IntN(k)]++
	}
	// Each count is Binomial(n, 1/6): sd = sqrt(n*(1/6)*(5/6)) ≈ 129; 5 sd.
	sd := math.Sqrt(n * (1.0 / k) * (1 - 1.0/k))
	for i, v := range c {
		if math.Abs(float64(v)-n/k) > 5*sd {
			t.Fatalf("bucket %d: %d", i, v)
		}
	}
}

func BenchmarkExp(b *testing.B) {
	s := Derive(1, 1)
	var x float64
	for i := 0; i < b.N; i++ {
		x += s.Exp()
	}
	_ = x
}

// TestPCGMatchesStdlib: the generator written out here draws exactly what
// math/rand/v2's PCG draws from the same seed (the package's contract).
func TestPCGMatchesStdlib(t *testing.T) {
	for seed := uint64(0); seed < 64; seed++ {
		s1, s2 := SplitMix64(seed), SplitMix64(^seed)
		ours, std := New(s1, s2), rand.NewPCG(s1, s2)
		for i := 0; i < 10000; i++ {
			if a, b := ours.Uint64(), std.Uint64(); a != b {
				t.Fatalf("seed %d draw %d: %#x, math/rand/v2 PCG %#x", seed, i, a, b)
			}
		}
	}
}

// TestFillMatchesDraws: a block fill is the same numbers as draws one at a
// time, and leaves the stream where those draws would.
func TestFillMatchesDraws(t *testing.T) {
	a, b := Derive(7, 1), Derive(7, 1)
	buf := make([]float64, 333)
	for round := 0; round < 5; round++ {
		if round%2 == 0 {
			a.ExpFill(buf)
			for i, x := range buf {
				if y := b.Exp(); x != y {
					t.Fatalf("round %d: ExpFill[%d] = %v, Exp %v", round, i, x, y)
				}
			}
		} else {
			a.Float64Fill(buf)
			for i, x := range buf {
				if y := b.Float64(); x != y {
					t.Fatalf("round %d: Float64Fill[%d] = %v, Float64 %v", round, i, x, y)
				}
			}
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Fatal("streams out of step after the fills")
	}
}

// BenchmarkExpFill: a block of 128 standard exponentials, as the engine's
// job source draws them (ns/op is per block).
func BenchmarkExpFill(b *testing.B) {
	s := Derive(1, 1)
	var buf [128]float64
	for b.Loop() {
		s.ExpFill(buf[:])
	}
}
