package aggregate

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/msjfarm/msjfarm/sim/stats"
)

// h3 is t(0.975, 2)/√3, the half-width factor of three pairs:
// t(0.975, 2) = 0.95·√(2/(1 − 0.95²)) = 4.302652729749463.
const h3 = 4.302652729749463 / 1.7320508075688772

// TestRelDiffFieller: Fieller's set {ρ : |ā − ρ·b̄| ≤ t·sd(a_r − ρ·b_r)/√n},
// minus 1, on samples where it can be solved by hand.
func TestRelDiffFieller(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name         string
		a, b         []float64
		lo, hi       float64
		excl         bool
		testRejects  bool // the unadjusted paired t-test at 5%
		zeroInterval bool // whether the set contains 0
	}{
		{
			// a constant, so sd(a_r − ρ·b_r) = |ρ|·sd(b) = |ρ|: with b̄ = 3,
			// |1 − 3ρ| ≤ h3·|ρ| holds for ρ in [1/(3 + h3), 1/(3 − h3)] =
			// [0.18234, 1.93850] (no ρ ≤ 0 does). The delta method said
			// −66.7% ± t·sd(1 − b_r/3)/(√3·3) = ±h3/9 = ±27.6%, excluding 0,
			// where the differences (−1, −2, −3), mean −2 ± 2.484, do not
			// (p = 0.074): Fieller's interval contains 0 like the test.
			name: "delta method disagreed", a: []float64{1, 1, 1}, b: []float64{2, 3, 4},
			lo: 1/(3+h3) - 1, hi: 1/(3-h3) - 1, zeroInterval: true,
		},
		{
			// a constant 5, b = (9, 10, 11): |5 − 10ρ| ≤ h3·|ρ| for ρ in
			// [5/(10 + h3), 5/(10 − h3)] = [0.40051, 0.66526]: −59.9% to
			// −33.5% about R̂ − 1 = −50% (the delta method: ±h3·0.5/10 =
			// ±12.4%, symmetric). The differences (−4, −5, −6), mean −5 and
			// sd 1, reject (t = −8.66): 0 is outside.
			name: "asymmetric", a: []float64{5, 5, 5}, b: []float64{9, 10, 11},
			lo: 5/(10+h3) - 1, hi: 5/(10-h3) - 1, testRejects: true,
		},
		{
			// b = (−1, 1, 3), b̄ = 1 within its own interval 1 ± 2·h3 of 0;
			// a = 2: |2 − ρ| ≤ 2h3·|ρ| for ρ ≥ 2/(1 + 2h3) = 0.33511 or
			// ρ ≤ −2/(2h3 − 1) = −0.50399: two half-lines. 1 is in the upper
			// one; the differences (3, 1, −1), mean 1 ± 4.97, do not reject.
			name: "two half-lines", a: []float64{2, 2, 2}, b: []float64{-1, 1, 3},
			lo: -2/(2*h3-1) - 1, hi: 2/(1+2*h3) - 1, excl: true, zeroInterval: true,
		},
		{
			// The same b with a = 10: ρ ≥ 10/(1 + 2h3) = 1.67556 or
			// ρ ≤ −10/(2h3 − 1) = −2.51993; 1 falls between, and the
			// differences (11, 9, 7), mean 9 and sd 2 (t = 7.79), reject.
			name: "two half-lines, 0 excluded", a: []float64{10, 10, 10}, b: []float64{-1, 1, 3},
			lo: -10/(2*h3-1) - 1, hi: 10/(1+2*h3) - 1, excl: true, testRejects: true,
		},
		{
			// a = 2b: a − ρ·b = (2 − ρ)·b, the condition 2·|2 − ρ| ≤
			// 2.484·|2 − ρ| holds for every ρ: the whole line.
			name: "whole line", a: []float64{2, 4, 6}, b: []float64{1, 2, 3},
			lo: -inf, hi: inf, zeroInterval: true,
		},
		{
			// killsmart K=7 ν=19 (a) against FCFS (b), mean response time at
			// λ = 1.4 on one-or-all, 6 replications of 2·10⁴ arrivals (the
			// reproduction of the delta method's overstatement). By hand, from
			// the brief's quadratic: ā = 45.7399, b̄ = 169.1518, s_aa =
			// 74.177, s_bb = 6247.53, s_ab = 629.331; t(0.975, 5) = 2.570582,
			// q = t²/6 = 1.101315; coefficients b̄² − q·s_bb = 21731.83,
			// ā·b̄ − q·s_ab = 7043.897, ā² − q·s_aa = 2010.447; ρ =
			// (7043.897 ∓ √(7043.897² − 21731.83·2010.447))/21731.83 =
			// 0.212113, 0.436143: −78.8% to −56.4% about −73.0%. The delta
			// method printed −73.0% ± 8.6% (−81.5% to −64.4%): the end toward
			// 0 half as far. Differences: −123.41 ± 74.67, t = −4.248 (p =
			// 0.008 unadjusted; 0.053 after Holm over its figure).
			name: "killsmart against fcfs",
			a:    []float64{56.572436639739884, 38.72463344237458, 53.865609211353316, 33.98201826611058, 45.51210172753258, 45.782661946361785},
			b:    []float64{221.88672181696492, 118.90594758151053, 288.8399396233534, 63.193004030000886, 149.90668390355532, 172.17856983455079},
			lo:   -0.7878870702477059, hi: -0.5638567829201011, testRejects: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := pairOf("m", "m", c.a, c.b)
			s := relDiff(c.a, c.b, p.Diff, mean(c.a), mean(c.b))
			if s.excl != c.excl || !nearOrInf(s.lo, c.lo) || !nearOrInf(s.hi, c.hi) {
				t.Errorf("set %+v, want [%.17g, %.17g] excl %v", s, c.lo, c.hi, c.excl)
			}
			if !s.contains(s.rel) {
				t.Errorf("the point estimate %g is outside %+v", s.rel, s)
			}
			if got := s.contains(0); got != c.zeroInterval {
				t.Errorf("contains 0: %v, want %v", got, c.zeroInterval)
			}
			if rejects := p.P < 1-Level; rejects != c.testRejects || rejects == s.contains(0) {
				t.Errorf("p = %g: rejects %v, want %v, and the set contains 0: %v", p.P, rejects, c.testRejects, s.contains(0))
			}
			// Paired reports the hull: two half-lines as the whole line.
			wlo, whi := c.lo, c.hi
			if c.excl {
				wlo, whi = -inf, inf
			}
			if !nearOrInf(p.RelDiffLo, wlo) || !nearOrInf(p.RelDiffHi, whi) {
				t.Errorf("Paired [%g, %g], want [%g, %g]", p.RelDiffLo, p.RelDiffHi, wlo, whi)
			}
			if unb := math.IsInf(wlo, 0) || math.IsInf(whi, 0); unb != (p.Note != "") {
				t.Errorf("unbounded %v, note %q", unb, p.Note)
			}
		})
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func nearOrInf(got, want float64) bool {
	if math.IsInf(want, 0) {
		return got == want
	}
	return nearRel(got, want, 1e-9)
}

// TestRelDiffInvertsTheTest: over random paired samples (fixed seed) of
// 2 to 12 pairs, heavy-tailed baselines, ratios far from 1 and baselines
// near 0, Fieller's set contains 0 exactly when the unadjusted paired
// t-test of the verdict does not reject at 5%, contains the point
// estimate, and agrees with the defining inequality
// |ā − ρ·b̄| ≤ t·sd(a_r − ρ·b_r)/√n at random ρ. Paired's bounded
// intervals follow: 0 in [lo, hi] exactly when p ≥ 0.05.
func TestRelDiffInvertsTheTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(69, 1))
	kinds := map[string]int{}
	for trial := range 20000 {
		n := 2 + rng.IntN(11)
		a, b := make([]float64, n), make([]float64, n)
		ratio := math.Exp(rng.NormFloat64() * 1.5)
		shift := 0.0
		if trial%5 == 0 {
			shift = -1 // baselines about 0: unbounded sets
		}
		noise := math.Exp(rng.NormFloat64())
		for i := range a {
			b[i] = math.Exp(rng.NormFloat64()*1.2) + shift // lognormal: heavy right tail
			a[i] = ratio*b[i] + noise*rng.NormFloat64()*ratio
		}
		p := pairOf("m", "m", a, b)
		if math.IsNaN(p.RelDiff) {
			continue
		}
		s := relDiff(a, b, p.Diff, mean(a), mean(b))
		tc := stats.TQuantile((1+Level)/2, n-1)
		se := 0.0
		for i := range a {
			d := a[i] - b[i] - p.Diff
			se += d * d
		}
		tstat := math.Abs(p.Diff) / math.Sqrt(se/float64(n-1)/float64(n))
		if math.Abs(tstat-tc) < 1e-6*tc {
			continue // on the boundary: rounding decides
		}
		switch {
		case s.excl:
			kinds["two half-lines"]++
		case math.IsInf(s.lo, 0) || math.IsInf(s.hi, 0):
			kinds["unbounded"]++
		default:
			kinds["bounded"]++
		}
		rejects := p.P < 1-Level
		if rejects == s.contains(0) || rejects != (tstat > tc) {
			t.Fatalf("trial %d: p = %g (|t| %g, critical %g), set %+v contains 0: %v\na = %v\nb = %v", trial, p.P, tstat, tc, s, s.contains(0), a, b)
		}
		if !s.contains(s.rel) {
			t.Fatalf("trial %d: estimate %g outside %+v", trial, s.rel, s)
		}
		if finite(p.RelDiffLo) && finite(p.RelDiffHi) && (p.RelDiffLo <= 0 && 0 <= p.RelDiffHi) == rejects {
			t.Fatalf("trial %d: Paired [%g, %g], p = %g", trial, p.RelDiffLo, p.RelDiffHi, p.P)
		}
		am, bm := mean(a), mean(b)
		for range 5 {
			rho := s.rel + 1 + rng.NormFloat64()*math.Max(1, math.Abs(s.rel))
			var v float64
			for i := range a {
				d := a[i] - rho*b[i] - (am - rho*bm)
				v += d * d
			}
			lhs, rhs := math.Abs(am-rho*bm), tc*math.Sqrt(v/float64(n-1)/float64(n))
			if math.Abs(lhs-rhs) < 1e-6*(lhs+rhs) {
				continue
			}
			if (lhs <= rhs) != s.contains(rho-1) {
				t.Fatalf("trial %d: ρ = %g: |ā − ρb̄| = %g, t·se = %g, set %+v", trial, rho, lhs, rhs, s)
			}
		}
	}
	if kinds["bounded"] < 1000 || kinds["two half-lines"] < 100 || kinds["unbounded"] < 100 {
		t.Errorf("the samples did not cover every shape: %v", kinds)
	}
	t.Logf("%v", kinds)
}

// TestPairedJSONInterval: an unbounded end is null in summary.json and
// reads back infinite; a summary written with the delta method's
// rel_diff_hw reads with no interval.
func TestPairedJSONInterval(t *testing.T) {
	p := Paired{Name: "m", N: 3, Diff: -1, DiffHW: 2, UnpairedHW: 3, RelDiff: 0.1, RelDiffLo: -0.05,
		RelDiffHi: math.Inf(1), P: 0.2, PHolm: 0.4, Verdict: CmpIndistinguishable}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var q Paired
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	if q.RelDiffLo != -0.05 || !math.IsInf(q.RelDiffHi, 1) {
		t.Errorf("%s read back as [%g, %g]", b, q.RelDiffLo, q.RelDiffHi)
	}
	old := `{"name":"m","n":3,"diff":-1,"diff_hw":2,"unpaired_hw":3,"rel_diff":0.1,"rel_diff_hw":0.05,"p":0.2,"p_holm":0.4,"verdict":"indistinguishable"}`
	if err := json.Unmarshal([]byte(old), &q); err != nil {
		t.Fatal(err)
	}
	if q.RelDiff != 0.1 || !math.IsNaN(q.RelDiffLo) || !math.IsNaN(q.RelDiffHi) {
		t.Errorf("a delta-method summary read as %g [%g, %g]", q.RelDiff, q.RelDiffLo, q.RelDiffHi)
	}
	if got := FormatRelDiff(q.RelDiff, q.RelDiffLo, q.RelDiffHi); got != "+10.0%" {
		t.Errorf("printed %q", got)
	}
}
