package approx

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Max(math.Abs(want), 1e-12) {
		t.Errorf("%s = %.12g, want %.12g (rel tol %g)", what, got, want, rel)
	}
}

// TestMSFQHandDerived checks a case small enough to carry through by hand:
// k = 2, ℓ = 1, μ1 = μk = 1, λ = 1.5, p1 = 0.8, so λ1 = 6/5, λk = 3/10,
// ρL = λ1/(kμ1) = 3/5, ρH = 3/10 (load 0.9 < 1).
//
//	Busy periods (Remark 3): E[B^L] = 1/(2−1.2) = 5/4, Var(B^L) = 2/(4·0.4³) − 25/16 = 25/4;
//	  E[B^H] = 1/0.7 = 10/7, Var(B^H) = 2/0.343 − 100/49 = 1300/343;
//	  rL = λ1 E[B^L] = 3/2, rH = λk E[B^H] = 3/7, rL·rH = 9/14.
//	Lemma 8: H4 = Exp(1): E[H4] = 1, Var = 1. Lemma 7: j runs over ∅ (ℓ+1 = k), H3 = 0.
//	Lemmas 5–6, first moments: E[H2] = (rL·1 + (9/14)·1 − 1·5/4)/(1 − 9/14) = 5/2;
//	  E[H2+H3+H4] = 7/2; E[N1H] = 0.3·3.5 = 21/20; E[H1] = (21/20)(10/7) = 3/2;
//	  E[H4+H1] = 5/2; E[N2L] = 1.2·2.5 = 3 (>= k = 2: consistent); E[N2L−k+1] = 2.
//	Lemma 1: cycle 3/2 + 5/2 + 0 + 1 = 5, m = (3/10, 1/2, 0, 1/5); m1 = ρH.
//	Second moments: Var(H2) = [2·25/4 + (25/16)(1.2)(2.5) + (9/4)(13/7 + (21/20)(1300/343)
//	  + (100/49)(0.3)(3.5) + (9/49)·1)] / (1 − 81/196) = (17.1875 + 900/49)·196/115 = 5575/92;
//	  Var(H2+H3+H4) = 5575/92 + 1 = 5667/92; Var(H1) = (21/20)(1300/343)
//	  + (100/49)(1.05 + 0.09·5667/92) = 11229/644; Var(H4+H1) = 1 + 11229/644 + 2(3/7) = 1775/92.
//	Lemma 3: E[T234H] = 1.3 (5667/92 + 49/4)/(2·3.5) + 1 = 47381/3220;
//	  E[T14L] = 1.6 (1775/92 + 25/4)/(2·2.5) + 1 = 211/23.
//	Lemma 2: E[N1H²] = 1.05 + 0.09·5667/92 + 1.05² = 35403/4600, so with S ~ Exp(1),
//	  E[S'] = 21/20, E[S'²] = 35403/4600 + 21/20 = 40233/4600:
//	  E[W] = 0.3·2/(2·0.7) + 0.3(40233/4600 − 2)/(2(0.7 + 0.315)) = 19017/13340,
//	  p = 0.7/1.015 = 20/29, E[T1H] = (19017/13340)/(9/29) + 1 = 2573/460.
//	  Var(N2L) = 1.2·2.5 + 1.44·1775/92 = 708/23, E[N2L²] = 915/23; S = S1/2 (mean 1/2,
//	  E[S²] = 1/2), E[S'] = 2/2 = 1, E[S'²] = (915/23 − 1·3 + 0)/4 = 423/46:
//	  E[W] = 1.2·0.5/(2·0.4) + 1.2(423/46 − 1/2)/(2·1.6) = 369/92, p = 0.4/1.6 = 1/4,
//	  E[T2L] = (369/92)/(3/4) + 1 = 146/23.
//	Eq. (1): E[T heavy] = (2573/460)(3/10) + (47381/3220)(7/10) = 551/46;
//	  E[T light] = (211/23)(3/10 + 1/5) + (146/23)(1/2) = 357/46;
//	  E[T] = 0.8·357/46 + 0.2·551/46 = 1979/230; ρ1 = 1.2, ρk = 2·0.3 = 0.6,
//	  E[T^w] = (1.2·357/46 + 0.6·551/46)/1.8 = 55/6.
func TestMSFQHandDerived(t *testing.T) {
	r, err := MSFQ(2, 1, 1.5, 0.8, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-12
	for i, want := range [4]float64{1.5, 2.5, 0, 1} {
		near(t, "E[H"+string(rune('1'+i))+"]", r.Phases[i].Mean, want, tol)
	}
	for i, want := range [4]float64{0.3, 0.5, 0, 0.2} {
		near(t, "m"+string(rune('1'+i)), r.Phases[i].Fraction, want, tol)
	}
	near(t, "E[H2²]", r.Phases[1].Second, 5575.0/92+6.25, tol)
	near(t, "E[H1²]", r.Phases[0].Second, 11229.0/644+2.25, tol)
	near(t, "E[N1H]", r.N1H, 21.0/20, tol)
	near(t, "E[N1H²]", r.N1H2, 35403.0/4600, tol)
	near(t, "E[N2L]", r.N2L, 3, tol)
	near(t, "E[N2L²]", r.N2L2, 915.0/23, tol)
	near(t, "E[T234H]", r.T234H, 47381.0/3220, tol)
	near(t, "E[T14L]", r.T14L, 211.0/23, tol)
	near(t, "E[T1H]", r.T1H, 2573.0/460, tol)
	near(t, "E[T2L]", r.T2L, 146.0/23, tol)
	near(t, "E[T heavy]", r.Heavy, 551.0/46, tol)
	near(t, "E[T light]", r.Light, 357.0/46, tol)
	near(t, "E[T]", r.Overall, 1979.0/230, tol)
	near(t, "E[T^w]", r.Weighted, 55.0/6, tol)
	near(t, "load", r.Load, 0.9, tol)
	near(t, "max λ", r.MaxLambda, 1.5/0.9, tol)
	if !r.Consistent || r.T3L != 0 {
		t.Errorf("Consistent = %v (want true: E[N1H] = 1.05 >= 1, E[N2L] = 3 >= 2), T3L = %v (want 0, no phase 3)", r.Consistent, r.T3L)
	}
}

// TestLemma4HandDerived: k = 3, ℓ = 1, λ1 = 1.5, μ1 = 1. Phase 3 starts at
// n1 = 2 and ends at n1 = 1. Time in state j (t_j = C_j/(λ1+min(k,j)μ1)):
// t_2 = 1/(2μ1) = 1/2, t_3 = t_2 λ1/(3μ1) = 1/4, t_{3+i} = t_3 q^i with
// q = λ1/(3μ1) = 1/2, tail Σ = 1/4. Σ t = 1 = E[H3] of Lemma 7: E[H_{3,2}]
// = (1 + λ1 E[B^L])/(2μ1) with E[B^L] = 1/(3−1.5) = 2/3, i.e. (1+1)/2 = 1.
// Responses: 1 in state 2 (= k−1), (k+1)/(kμ1) = 4/3 in state 3, (4+i)/3 in
// state 3+i: num = 1/2 + (1/4)(4/3) + (1/4)(4·Σq^i + Σ i q^i)/3 = 1/2 + 1/3 +
// (1/4)(4 + 2)/3 = 4/3. E[T3L] = (4/3)/1 = 4/3.
func TestLemma4HandDerived(t *testing.T) {
	near(t, "E[T3L]", t3Light(3, 1, 1.5, 1), 4.0/3, 1e-14)
	near(t, "Σ t_j", phase3Time(3, 1, 1.5, 1), 1, 1e-14)
	// p1 = 0.5, λ = 3 gives λ1 = 1.5 (μk = 4: load 0.5 + 0.375 < 1).
	r, err := MSFQ(3, 1, 3, 0.5, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "E[H3]", r.Phases[2].Mean, 1, 1e-14)
	near(t, "T3L", r.T3L, 4.0/3, 1e-14)
	// H_{3,2}: E[H²] = λ1 E[(B^L)²]/(2μ1) + 2E[H]² with E[(B^L)²] =
	// 2/(9·(1/2)³) = 16/9: 1.5(16/9)/2 + 2 = 10/3.
	near(t, "E[H3²]", r.Phases[2].Second, 10.0/3, 1e-14)
}

// TestLemma4MatchesLemma7: the expected time phase 3 spends over its states
// (Lemma 4's Σ_j C_j/(λ1+min(k,j)μ1)) must equal E[H3] of Lemma 7, two
// independent derivations of the same quantity; and the response of a
// phase-3 arrival lies between 1/μ1 and the M/M/k-tail bound.
func TestLemma4MatchesLemma7(t *testing.T) {
	for _, c := range []struct {
		k, l       int
		lambda, p1 float64
		mu1, muk   float64
	}{
		{32, 0, 7, 0.9, 1, 1}, {32, 16, 6, 0.9, 1, 1}, {32, 30, 2, 0.9, 1, 1},
		{8, 3, 3, 0.5, 2, 3}, {4, 0, 0.5, 0.3, 1, 1}, {100, 50, 15, 0.95, 1, 1},
	} {
		r, err := MSFQ(c.k, c.l, c.lambda, c.p1, c.mu1, c.muk)
		if err != nil {
			t.Fatal(c, err)
		}
		near(t, "E[H3] vs Lemma 4", phase3Time(c.k, c.l, c.p1*c.lambda, c.mu1), r.Phases[2].Mean, 1e-12)
		if r.T3L < 1/c.mu1 || r.T3L > 10/c.mu1 {
			t.Errorf("%+v: T3L = %v", c, r.T3L)
		}
	}
}

// TestPhase1Fraction: Lemmas 1, 5, 6 give E[H1] = rH E[H2+H3+H4] with rH =
// ρH/(1−ρH), so m1 = E[H1]/cycle = rH/(1+rH) = ρH = λk/μk exactly: phase 1
// is the only time heavy work is done, and all of it is done there.
func TestPhase1Fraction(t *testing.T) {
	for _, k := range []int{2, 5, 32} {
		for _, l := range []int{0, k / 2, k - 1} {
			for _, lam := range []float64{0.3, 1, 3} {
				r, err := MSFQ(k, l, lam, 0.9, 1, 1.3)
				if err != nil {
					if errors.Is(err, ErrUnstable) {
						continue
					}
					t.Fatal(err)
				}
				near(t, "m1", r.Phases[0].Fraction, 0.1*lam/1.3, 1e-12)
			}
		}
	}
}

// TestMomentsMatchTransforms evaluates the transforms of Lemmas 5–8 exactly
// as Q writes them (Laplace transforms of H_i, z-transforms of N1H and
// N2L, Remark 3's busy-period transforms in closed form) and differentiates
// them numerically: the closed-form moments of MSFQ must agree. The mutual
// recursion N̂2L → H̃2 → N̂2L is unrolled to a fixed depth starting from
// N2L ≡ k; it contracts by rL·rH per level.
func TestMomentsMatchTransforms(t *testing.T) {
	for _, c := range []struct {
		k, l       int
		lambda, p1 float64
		mu1, muk   float64
	}{
		{32, 31, 7, 0.9, 1, 1}, {32, 20, 6, 0.9, 1, 1}, {32, 0, 7.5, 0.9, 1, 1},
		{4, 1, 2, 0.7, 1, 2}, {2, 1, 1.5, 0.8, 1, 1}, {16, 8, 6, 0.8, 0.8, 3},
	} {
		r, err := MSFQ(c.k, c.l, c.lambda, c.p1, c.mu1, c.muk)
		if err != nil {
			t.Fatal(err)
		}
		tr := newTransforms(c.k, c.l, c.lambda, c.p1, c.mu1, c.muk)
		// Step: the busy-period transforms are analytic for s > −(√μ−√λ)²
		// (radius); the z-transforms are H-transforms at λ(1−z), so they
		// take h/λ. Truncation error falls and rounding error (a product
		// of ~k transforms per unrolled level) grows as h shrinks, so
		// stableMoments scans h = radius/10 · 2^−i and keeps the pair of
		// neighbouring estimates that agree best. Where both errors are
		// small the estimates agree to ~1e-7 relative (MSF case: E[H2²] =
		// 457371.57 at h = 3e-5 and 1e-4); tolerance 1e-5 of the scale,
		// measured against the cycle's scale since E[H2] can be near 0
		// (or negative where §5.2's assumption fails).
		hs := []func(float64) float64{tr.h1, tr.h2, tr.h3, tr.h4}
		cyc := r.Phases[0].Mean + math.Abs(r.Phases[1].Mean) + r.Phases[2].Mean + r.Phases[3].Mean
		sq := func(x float64) float64 { return x * x }
		radius := math.Min(sq(math.Sqrt(c.muk)-math.Sqrt(tr.lamk)), sq(math.Sqrt(float64(c.k)*c.mu1)-math.Sqrt(tr.lam1)))
		h := radius / 10
		for i, f := range hs {
			m1, m2 := stableMoments(lstMoments, f, h)
			nearAbs(t, fmt.Sprint(c, " E[H", i+1, "] by transform"), r.Phases[i].Mean, m1, 1e-5*cyc)
			nearAbs(t, fmt.Sprint(c, " E[H", i+1, "²] by transform"), r.Phases[i].Second, m2, 1e-5*cyc*cyc)
		}
		n1, n1f := stableMoments(pgfMoments, tr.n1h, h/tr.lamk)
		nearAbs(t, fmt.Sprint(c, " E[N1H] by transform"), r.N1H, n1, 1e-5*math.Max(r.N1H, 1))
		nearAbs(t, fmt.Sprint(c, " E[N1H²] by transform"), r.N1H2, n1f+n1, 1e-5*math.Max(r.N1H2, 1))
		n2, n2f := stableMoments(pgfMoments, tr.n2l, h/tr.lam1)
		nearAbs(t, fmt.Sprint(c, " E[N2L] by transform"), r.N2L, n2, 1e-5*r.N2L)
		nearAbs(t, fmt.Sprint(c, " E[N2L²] by transform"), r.N2L2, n2f+n2, 1e-5*r.N2L2)
	}
}

// derivs returns f'(x) and f”(x) by central differences with one
// Richardson step (steps h and h/2): error O(h⁴).
func derivs(f func(float64) float64, x, h float64) (float64, float64) {
	d := func(h float64) (float64, float64) {
		fp, f0, fm := f(x+h), f(x), f(x-h)
		return (fp - fm) / (2 * h), (fp - 2*f0 + fm) / (h * h)
	}
	a1, a2 := d(h)
	b1, b2 := d(h / 2)
	return (4*b1 - a1) / 3, (4*b2 - a2) / 3
}

// lstMoments returns E[X], E[X²] from a Laplace–Stieltjes transform:
// E[X] = −f'(0), E[X²] = f”(0).
func lstMoments(f func(float64) float64, h float64) (float64, float64) {
	d1, d2 := derivs(f, 0, h)
	return -d1, d2
}

// pgfMoments returns E[N], E[N(N−1)] from a z-transform at z = 1.
func pgfMoments(f func(float64) float64, h float64) (float64, float64) {
	return derivs(f, 1, h)
}

// stableMoments evaluates moments(f, h) for h = h0·2^−i, i < 30, and
// returns the mean of the two neighbouring estimates whose second moments
// differ least (relative), ignoring non-finite ones.
func stableMoments(moments func(func(float64) float64, float64) (float64, float64), f func(float64) float64, h0 float64) (float64, float64) {
	var p1, p2 float64
	best := math.Inf(1)
	var b1, b2 float64
	for i := 0; i < 30; i++ {
		m1, m2 := moments(f, h0*math.Pow(2, -float64(i)))
		if i > 0 {
			if d := math.Abs(m2-p2) / math.Abs(m2); d < best {
				best, b1, b2 = d, (m1+p1)/2, (m2+p2)/2
			}
		}
		p1, p2 = m1, m2
	}
	return b1, b2
}

func nearAbs(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.12g, want %.12g (tol %g)", what, got, want, tol)
	}
}

// transforms evaluates Q's Lemmas 5–8 literally (real arguments).
type transforms struct {
	k, l                 int
	lam1, lamk, mu1, muk float64
	depth                int
}

func newTransforms(k, l int, lambda, p1, mu1, muk float64) *transforms {
	return &transforms{k: k, l: l, lam1: p1 * lambda, lamk: (1 - p1) * lambda, mu1: mu1, muk: muk, depth: 400}
}

// mm1Busy is the LST of an M/M/1 busy period (arrival lam, service mu).
func mm1Busy(s, lam, mu float64) float64 {
	b := lam + mu + s
	return (b - math.Sqrt(b*b-4*lam*mu)) / (2 * lam)
}

// bL is B̃^L_{S1}(s): light jobs served at rate kμ1 (Remark 3, Lemma 7).
func (t *transforms) bL(s float64) float64 { return mm1Busy(s, t.lam1, float64(t.k)*t.mu1) }

// bH is B̃^H_{Sk}(s).
func (t *transforms) bH(s float64) float64 { return mm1Busy(s, t.lamk, t.muk) }

// h4 is Lemma 8: Π_{j=1}^{ℓ} jμ1/(jμ1+s).
func (t *transforms) h4(s float64) float64 {
	p := 1.0
	for j := 1; j <= t.l; j++ {
		jm := float64(j) * t.mu1
		p *= jm / (jm + s)
	}
	return p
}

// h3 is Lemma 7, Eq. (5): Π_{j=ℓ+1}^{k−1} H̃_{3,j}(s), H̃_{3,k} = B̃^L.
func (t *transforms) h3(s float64) float64 {
	g := t.bL(s)
	p := 1.0
	for j := t.k - 1; j > t.l; j-- {
		jm := float64(j) * t.mu1
		g = jm / (t.lam1 + jm + s - t.lam1*g)
		p *= g
	}
	return p
}

// n2lD is N̂2L(z) of Lemma 6 unrolled d levels deep.
func (t *transforms) n2lD(z float64, d int) float64 {
	if d == 0 {
		return math.Pow(z, float64(t.k))
	}
	beta := t.bH(t.lam1 * (1 - z))
	x := t.lamk * (1 - beta)
	return t.h2D(x, d-1) * t.h3(x) * t.h4(x+t.lam1*(1-z))
}

// h2D is H̃2(s) of Lemma 5: N̂2L(B̃^L(s)) B̃^L(s)^{1−k}.
func (t *transforms) h2D(s float64, d int) float64 {
	b := t.bL(s)
	return t.n2lD(b, d) * math.Pow(b, float64(1-t.k))
}

func (t *transforms) n2l(z float64) float64 { return t.n2lD(z, t.depth) }
func (t *transforms) h2(s float64) float64  { return t.h2D(s, t.depth) }

// n1h is N̂1H(z) of Lemma 6: H̃2 H̃3 H̃4 at λk(1−z).
func (t *transforms) n1h(z float64) float64 {
	x := t.lamk * (1 - z)
	return t.h2(x) * t.h3(x) * t.h4(x)
}

// h1 is H̃1(s) of Lemma 5: N̂1H(B̃^H(s)).
func (t *transforms) h1(s float64) float64 { return t.n1h(t.bH(s)) }

// TestRobust: every threshold for k = 32 up to the stability bound, and
// larger systems, give finite positive means (no overflow in Lemmas 4, 7,
// 8); where the answer is genuinely astronomically large (k = 2048, ℓ = 0,
// near saturation: phase 3 of an M/M/k from k−1 down to 0 takes ~e^k), an
// error is returned instead of Inf/NaN.
func TestRobust(t *testing.T) {
	maxLam := 1 / (0.9/32 + 0.1)
	for l := 0; l < 32; l++ {
		for _, f := range []float64{0.01, 0.3, 0.7, 0.95, 0.999} {
			r, err := MSFQ(32, l, f*maxLam, 0.9, 1, 1)
			if err != nil {
				t.Fatalf("ℓ = %d, λ = %v: %v", l, f*maxLam, err)
			}
			for _, x := range []float64{r.Overall, r.Weighted, r.Light, r.Heavy, r.T3L} {
				if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
					t.Fatalf("ℓ = %d, λ = %v: %+v", l, f*maxLam, r)
				}
			}
			if r.Consistent && r.Overall < 1 {
				t.Errorf("ℓ = %d, λ = %v: E[T] = %v below the mean size", l, f*maxLam, r.Overall)
			}
		}
	}
	if _, err := MSFQ(256, 255, 0.9*1/(0.9/256+0.1), 0.9, 1, 1); err != nil {
		t.Errorf("k = 256: %v", err)
	}
	r, err := MSFQ(2048, 0, 0.95/(0.9/2048+0.1), 0.9, 1, 1)
	if err == nil {
		for _, x := range []float64{r.Overall, r.Weighted, r.Light, r.Heavy} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("k = 2048: no error but %+v", r)
			}
		}
	}
}

// TestMSFQErrors: invalid parameters and λ at or beyond the bound of Q
// Theorems 3–4 (λ < 1/(p1/(kμ1) + (1−p1)/μk)).
func TestMSFQErrors(t *testing.T) {
	bound := 1 / (0.9/32 + 0.1)
	for _, lam := range []float64{bound * (1 + 1e-9), 8, 100} {
		if _, err := MSFQ(32, 31, lam, 0.9, 1, 1); !errors.Is(err, ErrUnstable) {
			t.Errorf("λ = %v beyond the bound %v: err = %v, want ErrUnstable", lam, bound, err)
		}
	}
	if _, err := MSFQ(32, 31, bound*(1-1e-9), 0.9, 1, 1); err != nil {
		t.Errorf("λ just below the bound: %v", err)
	}
	for _, c := range []struct {
		k, l              int
		lam, p1, mu1, muk float64
	}{
		{1, 0, 0.5, 0.5, 1, 1}, {32, 32, 1, 0.9, 1, 1}, {32, -1, 1, 0.9, 1, 1},
		{32, 31, 0, 0.9, 1, 1}, {32, 31, math.NaN(), 0.9, 1, 1}, {32, 31, 1, 0, 1, 1},
		{32, 31, 1, 1, 1, 1}, {32, 31, 1, 0.9, 0, 1}, {32, 31, 1, 0.9, 1, -1},
		{32, 31, 1, 0.9, math.Inf(1), 1},
	} {
		if _, err := MSFQ(c.k, c.l, c.lam, c.p1, c.mu1, c.muk); err == nil || errors.Is(err, ErrUnstable) {
			t.Errorf("%+v: err = %v, want a parameter error", c, err)
		}
	}
}
