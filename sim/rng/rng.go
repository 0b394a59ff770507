// Package rng provides the random streams of msjfarm's simulations.
//
// Every published number must be reproducible years later, so the generator and
// every transformation of its output are owned here rather than borrowed from a
// library whose algorithms may change between releases. The generator is
// PCG-DXSM (128-bit LCG state, DXSM output), as specified by math/rand/v2's PCG,
// whose output sequence is part of that package's documented contract; uniform
// and exponential variates are derived here by fixed formulas.
//
// The generator is written out here (the same 128-bit LCG and DXSM output,
// checked draw for draw against math/rand/v2's PCG by TestPCGMatchesStdlib)
// rather than called through rand.PCG, so that a stream's state can stay in
// registers through a block of draws (ExpFill, Float64Fill): the engine draws
// its job sequence a block at a time, and with the state in memory each draw
// cost a load, a store and a call more than the arithmetic itself.
//
// # Seed derivation
//
// A simulation seed is a uint64. Independent streams are derived from it by
// [Derive]: stream (seed, id) is seeded with the two words
//
//	s1 = SplitMix64(seed ^ SplitMix64(id))
//	s2 = SplitMix64(s1 ^ 0x6a09e667f3bcc909)
//
// where SplitMix64 is the finaliser of Steele, Lea and Flood's SplitMix64
// (one step from the given state). Stream ids are small constants fixed by the
// engine (arrivals, classes, sizes, policy, ...), so that the job sequence never
// shares a stream with any policy's randomness (common random numbers).
package rng

import (
	"math"
	"math/bits"
)

// Stream is one independent pseudo-random stream. The zero value is not usable;
// make streams with [New] or [Derive].
type Stream struct {
	hi, lo uint64 // the 128-bit LCG state
}

// The PCG constants: the 128-bit LCG multiplier and increment, and DXSM's
// 64-bit multiplier (the values of math/rand/v2's PCG).
const (
	mulHi    = 2549297995355413924
	mulLo    = 4865540595714422341
	incHi    = 6364136223846793005
	incLo    = 1442695040888963407
	dxsmMul  = 0xda942042e4dd58b5
	unitStep = 1.0 / (1 << 53)
)

// advance is one step of the LCG: state = state × mul + inc (mod 2^128).
func advance(hi, lo uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	return h, l
}

// dxsm is PCG's "double xorshift multiply" output of a (new) state.
func dxsm(hi, lo uint64) uint64 {
	hi ^= hi >> 32
	hi *= dxsmMul
	hi ^= hi >> 48
	return hi * (lo | 1)
}

// unit maps 64 random bits to (0, 1): the top 53 bits, offset by half a unit.
func unit(x uint64) float64 { return (float64(x>>11) + 0.5) * unitStep }

// SplitMix64 returns the SplitMix64 output for state x (one step).
func SplitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// New returns a stream seeded with the two words s1, s2.
func New(s1, s2 uint64) *Stream {
	return &Stream{hi: s1, lo: s2}
}

// Derive returns stream id of seed (see the package documentation).
func Derive(seed, id uint64) *Stream {
	s1 := SplitMix64(seed ^ SplitMix64(id))
	s2 := SplitMix64(s1 ^ 0x6a09e667f3bcc909)
	return New(s1, s2)
}

// Uint64 returns 64 uniformly distributed bits.
func (s *Stream) Uint64() uint64 {
	s.hi, s.lo = advance(s.hi, s.lo)
	return dxsm(s.hi, s.lo)
}

// Float64 returns a uniform variate in the open interval (0, 1): the top 53
// bits of a draw, offset by half a unit so neither 0 nor 1 can occur (safe for
// log and for inverse-CDF transforms at both ends).
func (s *Stream) Float64() float64 { return unit(s.Uint64()) }

// Exp returns an exponential variate with mean 1, by the ziggurat method
// (exp.go): a fixed function of the stream that does not depend on any
// rate, so scaling the rate keeps the coupling between runs at different
// rates.
func (s *Stream) Exp() float64 {
	u := s.Uint64()
	if x, ok := zig(u); ok {
		return x
	}
	return s.zigSlow(u)
}

// ExpFill fills dst with exponential variates of mean 1: the same numbers,
// in the same order, as len(dst) calls of Exp. The stream's state stays in
// registers through the fast path; a draw the ziggurat rejects (about one
// in forty-five) goes through the stream's state in memory.
func (s *Stream) ExpFill(dst []float64) {
	hi, lo := s.hi, s.lo
	for i := range dst {
		hi, lo = advance(hi, lo)
		u := dxsm(hi, lo)
		x, ok := zig(u)
		if !ok {
			s.hi, s.lo = hi, lo
			x = s.zigSlow(u)
			hi, lo = s.hi, s.lo
		}
		dst[i] = x
	}
	s.hi, s.lo = hi, lo
}

// Float64Fill fills dst with uniform variates in (0, 1): the same numbers,
// in the same order, as len(dst) calls of Float64.
func (s *Stream) Float64Fill(dst []float64) {
	hi, lo := s.hi, s.lo
	for i := range dst {
		hi, lo = advance(hi, lo)
		dst[i] = unit(dxsm(hi, lo))
	}
	s.hi, s.lo = hi, lo
}

// IntN returns a uniform integer in [0, n) for n > 0 (Lemire's method with
// rejection, so unbiased).
func (s *Stream) IntN(n int) int {
	if n <= 0 {
		panic("rng: IntN with n <= 0")
	}
	un := uint64(n)
	for {
		x := s.Uint64()
		hi, lo := mul64(x, un)
		if lo < un {
			thresh := -un % un
			if lo < thresh {
				continue
			}
		}
		return int(hi)
	}
}

// Normal returns a standard normal variate (Box–Muller, cosine branch only, so
// exactly two uniforms are consumed per variate and the stream position never
// depends on cached state).
func (s *Stream) Normal() float64 {
	u1 := s.Float64()
	u2 := s.Float64()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

func mul64(x, y uint64) (hi, lo uint64) {
	const mask32 = 1<<32 - 1
	x0, x1 := x&mask32, x>>32
	y0, y1 := y&mask32, y>>32
	w0 := x0 * y0
	t := x1*y0 + w0>>32
	w1 := t & mask32
	w2 := t >> 32
	w1 += x0 * y1
	hi = x1*y1 + w2 + w1>>32
	lo = x * y
	return
}

// Mix combines a seed with an index (a replication number, a point hash)
// into a new seed: SplitMix64(SplitMix64(seed) ^ i). Used to give every
// replication its own independent seed from one campaign seed.
func Mix(seed, i uint64) uint64 { return SplitMix64(SplitMix64(seed) ^ i) }
