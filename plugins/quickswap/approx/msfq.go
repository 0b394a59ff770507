// Package analysis holds closed-form and approximate analyses that the
// simulator is checked against.
//
// MSFQ is the mean response time approximation of Most Servers First with
// Quickswap (MSFQ) in the one-or-all system, Q §5 (Q = the Quickswap paper,
// PEVA 2025): Lemma 1 (phase time fractions), Lemmas 2–4 (conditional mean
// response times by the phase of arrival, combined by Eq. (1)), Lemmas 5–8
// (phase durations and the number of jobs at phase starts). Q §5.4 gives
// these as transforms; only their first two moments are needed (Theorem 2),
// and this package computes those moments in closed form: the transforms
// are mutually recursive (H2 → N1H → H1 → N2L → H2), and at the stationary
// cycle the recursion is an affine map of the moments, which is solved
// exactly rather than iterated. The test TestMomentsMatchTransforms checks
// the closed forms against a numerical differentiation of the transforms
// of Lemmas 5–8 exactly as Q writes them.
//
// Readings where Q's text is garbled or ambiguous (each tested):
//   - B^L_{S1} (Remark 3, Lemmas 5 and 7) is the busy period of an M/M/1
//     with arrival rate λ1 and service rate kμ1 (light jobs on all k
//     servers; Lemma 7's proof: "the completion rate of light jobs here is
//     kμ1"), so phase 2 is a busy period started by Σ(N2L−k+1, S1/k) work
//     (Lemma 5's proof prints S_k there; its transform uses B^L_{S1}).
//   - Lemma 4 prints C_j = λ1/(kμ1) C_k for j > k; its proof derives C_j =
//     C_{j−1} λ1/(kμ1), the geometric tail, which is used.
//   - Lemma 6's N2L counts light arrivals over phase 4 and the following
//     phase 1, whose lengths are correlated through N1H; the second moment
//     keeps that covariance, Cov(H4, H1) = λk E[B^H] Var(H4), exactly as
//     differentiating Lemma 6's transform does.
//   - With ℓ = k−1, phase 3 lasts zero time (m3 = 0) and T3L is reported 0.
//
// Q §5.2 assumes no phase is ever skipped: at least one heavy job at the
// start of phase 1 and at least k light jobs at the start of phase 2. The
// approximation is built on that assumption and takes no account of cycles
// where it fails; at light load it fails often, and the formulas can then
// return a negative mean phase-2 duration (E[N2L] < k − 1). Result.Consistent
// reports whether the computed means satisfy the assumption (E[N1H] ≥ 1 and
// E[N2L] ≥ k); when they do not, the numbers are the paper's formulas
// evaluated outside their domain, returned but flagged. The approximation
// also does not tend to 1/μ as λ → 0: it always charges a light job arriving
// in phase 4 or 1 the residual of a phase 4 + phase 1 period, which the real
// system (resting in phase 3 when empty) does not.
//
// Agreement with simulation (TestMSFQAgainstSimulation: the msfq policy of
// plugins/quickswap on Q §6.2's one-or-all system, k = 32, ℓ = 31, p1 =
// 0.9, μ1 = μk = 1; 10 replications, 95% CIs): within 1.3% at λ = 7 (load
// 0.90) for the overall, weighted, light and heavy means (CI ±2–4%); at λ =
// 6 (load 0.77) the heavy and weighted means within 3.3% and the light and
// overall means +9–10% (CI ±1.3%). Below that the §5.2 assumption fails
// (Consistent = false): +44% overall at λ = 4 and +129% at λ = 2, the light
// class being charged for phases 4 and 1 the real system skips. The heavy
// class stays within 2% from λ = 4 up. With thresholds below k−1, where
// phase 3 (Lemmas 4, 7) is exercised, it is closer still: ℓ = 0 (MSF) at
// λ = 6 within 1.1%, ℓ = 4 and 16 at λ = 7 within 1.5%. At λ = 7.5 (load
// 0.96; msfq_long_test.go, 10 × 5·10^6 arrivals) ℓ = 31 is within 3.0%
// (CI ±4.6%). So: within 5% at λ >= 7 (load >= 0.9) for every ℓ tested, within 10% at λ = 6; not usable
// below load ~0.6, where Consistent reports false.
package approx

import (
	"errors"
	"fmt"
	"math"
)

// ErrUnstable is returned (wrapped) when λ is at or beyond the stability
// bound of Q Theorems 3–4: λ1/(kμ1) + λk/μk < 1, i.e.
// λ < 1/(p1/(kμ1) + (1−p1)/μk).
var ErrUnstable = errors.New("unstable")

// Phase holds the first two moments of one phase duration H_i.
type Phase struct {
	Mean     float64 `json:"mean"`     // E[H_i]
	Second   float64 `json:"second"`   // E[H_i^2]
	Fraction float64 `json:"fraction"` // m_i, Lemma 1
}

// Result is the MSFQ approximation for one parameter set.
type Result struct {
	K      int     `json:"k"`
	Ell    int     `json:"threshold"`
	Lambda float64 `json:"lambda"`
	P1     float64 `json:"p1"`
	Mu1    float64 `json:"mu1"`
	MuK    float64 `json:"muk"`

	// Load is λ1/(kμ1) + λk/μk (stable iff < 1, Q Thm 3–4); MaxLambda is
	// the λ at which it reaches 1.
	Load      float64 `json:"load"`
	MaxLambda float64 `json:"max_lambda"`

	// Mean response times: Light = E[T^(1)], Heavy = E[T^(k)], Overall
	// = p1 E[T^(1)] + (1−p1) E[T^(k)] (Eq. (1)), Weighted = Σ ρ_j/ρ E[T^(j)]
	// (Q §6.1).
	Light    float64 `json:"light"`
	Heavy    float64 `json:"heavy"`
	Overall  float64 `json:"overall"`
	Weighted float64 `json:"weighted"`

	// Conditional mean response times by phase of arrival (Lemmas 2–4).
	T1H   float64 `json:"t1_heavy"`
	T234H float64 `json:"t234_heavy"`
	T14L  float64 `json:"t14_light"`
	T2L   float64 `json:"t2_light"`
	T3L   float64 `json:"t3_light"` // 0 when phase 3 does not exist (ℓ = k−1)

	// Phases 1–4 (index 0–3): moments of H_i and m_i.
	Phases [4]Phase `json:"phases"`
	// Moments of N1H (heavy jobs at the start of phase 1) and N2L (light
	// jobs at the start of phase 2), Lemma 6.
	N1H  float64 `json:"n1h"`  // E[N1H]
	N1H2 float64 `json:"n1h2"` // E[N1H²]
	N2L  float64 `json:"n2l"`  // E[N2L]
	N2L2 float64 `json:"n2l2"` // E[N2L²]

	// Consistent: the Q §5.2 assumption holds in the mean, E[N1H] >= 1 and
	// E[N2L] >= k (so every E[H_i] >= 0 and phases 1, 2 are not skipped on
	// average). When false the values are the formulas outside their domain.
	Consistent bool `json:"consistent"`
}

// MSFQ evaluates the Q §5 approximation of MSFQ with threshold l (0 <= l <
// k; l = 0 is MSF) on the one-or-all system: k servers, Poisson arrivals
// at rate lambda, a fraction p1 light (1 server, Exp(mu1)), the rest heavy
// (k servers, Exp(muk)). It returns an error wrapping ErrUnstable beyond
// the stability bound, and an error for invalid parameters.
func MSFQ(k, l int, lambda, p1, mu1, muk float64) (Result, error) {
	r := Result{K: k, Ell: l, Lambda: lambda, P1: p1, Mu1: mu1, MuK: muk}
	switch {
	case k < 2:
		// With k = 1 there is no phase 3 or 4 (l = 0), every mean phase
		// duration of Lemmas 5–8 is 0 and Lemma 1 is 0/0.
		return r, fmt.Errorf("k = %d: need k >= 2", k)
	case l < 0 || l >= k:
		return r, fmt.Errorf("threshold ℓ = %d: need 0 <= ℓ < k = %d (Q §4.2)", l, k)
	case !(lambda > 0) || math.IsInf(lambda, 0):
		return r, fmt.Errorf("lambda = %v: need a finite λ > 0", lambda)
	case !(p1 > 0 && p1 < 1):
		// Both classes must arrive: with p1 = 0 or 1 phases 1 or 2 are never
		// started, against the Q §5.2 assumption.
		return r, fmt.Errorf("p1 = %v: need 0 < p1 < 1", p1)
	case !(mu1 > 0) || math.IsInf(mu1, 0):
		return r, fmt.Errorf("mu1 = %v: need a finite μ1 > 0", mu1)
	case !(muk > 0) || math.IsInf(muk, 0):
		return r, fmt.Errorf("muk = %v: need a finite μk > 0", muk)
	}
	kf := float64(k)
	lam1, lamk := p1*lambda, (1-p1)*lambda
	rhoL, rhoH := lam1/(kf*mu1), lamk/muk
	r.Load = rhoL + rhoH
	r.MaxLambda = 1 / (p1/(kf*mu1) + (1-p1)/muk)
	// Q Theorems 3 and 4: MSFQ is stable iff λ1/(kμ1) + λk/μk < 1.
	if r.Load >= 1 {
		return r, fmt.Errorf("λ = %v: load λ1/(kμ1) + λk/μk = %.6g >= 1, beyond the stability bound λ < %.6g (Q Thm 3–4): %w",
			lambda, r.Load, r.MaxLambda, ErrUnstable)
	}

	// Remark 3: B^L_{S1} is the busy period of an M/M/1 with arrival rate λ1
	// and service rate kμ1 (light jobs on all k servers; Lemma 7's proof:
	// "the completion rate of light jobs here is kμ1"); B^H_{Sk} that of an
	// M/M/1 with λk and μk. E[B] = E[S]/(1−ρ), E[B²] = E[S²]/(1−ρ)³.
	bL := 1 / (kf*mu1 - lam1)
	bL2 := 2 / (kf * mu1 * kf * mu1 * (1 - rhoL) * (1 - rhoL) * (1 - rhoL))
	bH := 1 / (muk - lamk)
	bH2 := 2 / (muk * muk * (1 - rhoH) * (1 - rhoH) * (1 - rhoH))
	varBL, varBH := bL2-bL*bL, bH2-bH*bH
	rL, rH := lam1*bL, lamk*bH // ρ/(1−ρ) of each busy period

	// Lemma 8: H4 = Σ_{j=1}^{ℓ} Exp(jμ1), transform Π jμ1/(jμ1+s).
	var h4, v4 float64
	for j := 1; j <= l; j++ {
		m := 1 / (float64(j) * mu1)
		h4 += m
		v4 += m * m
	}

	// Lemma 7 (Eq. (5)): H3 = Σ_{j=ℓ+1}^{k−1} H_{3,j}, independent, with
	// H̃_{3,j}(s) = jμ1/(λ1 + jμ1 + s − λ1 H̃_{3,j+1}(s)), H_{3,k} ~ B^L_{S1}.
	// Differentiating at s = 0: E[H_{3,j}] = (1 + λ1 E[H_{3,j+1}])/(jμ1),
	// E[H_{3,j}²] = λ1 E[H_{3,j+1}²]/(jμ1) + 2 E[H_{3,j}]². The recursion
	// runs downward from j = k, never forming products or factorials.
	var h3, v3 float64
	g1, g2 := bL, bL2 // j = k
	for j := k - 1; j > l; j-- {
		jm := float64(j) * mu1
		m1 := (1 + lam1*g1) / jm
		m2 := lam1*g2/jm + 2*m1*m1
		h3 += m1
		v3 += m2 - m1*m1
		g1, g2 = m1, m2
	}

	// First moments of the stationary cycle (Lemmas 5 and 6):
	//   E[N1H] = λk (E[H2]+E[H3]+E[H4])    (Lemma 6, N1H ~ A^H_{H2+H3+H4})
	//   E[H1]  = E[N1H] E[B^H]             (Lemma 5, H̃1 = N̂1H(B̃^H(s)))
	//   E[N2L] = λ1 (E[H4] + E[H1])        (Lemma 6, N2L ~ A^L_{H4,1})
	//   E[H2]  = (E[N2L] − k + 1) E[B^L]   (Lemma 5, H̃2 = N̂2L(B̃^L) (B̃^L)^{1−k})
	// Substituting: E[H2](1 − rL rH) = rL E[H4] + rL rH (E[H3]+E[H4]) − (k−1)E[B^L],
	// with rL rH < 1 exactly when the load is < 1.
	a := rL * rH
	h2 := (rL*h4 + a*(h3+h4) - (kf-1)*bL) / (1 - a)
	eT := h2 + h3 + h4 // E[H2+H3+H4]
	n1 := lamk * eT
	h1 := n1 * bH
	eU := h4 + h1 // E[H4+H1] = E[H_{4,1}]
	n2 := lam1 * eU
	eM := n2 - kf + 1 // E[N2L − k + 1]

	// Second moments (variances) of the same cycle. H2, H3, H4 of one cycle
	// are independent (H2 depends only on the previous H4 and H1), so
	// Var(H2+H3+H4) = v2 + v3 + v4. Poisson arrivals over a random time X:
	// Var(A) = λE[X] + λ²Var(X). A random sum of N i.i.d. busy periods B:
	// Var = E[N]Var(B) + Var(N)E[B]². H1 and H4 are correlated through N1H:
	// E[H1 | H2,H3,H4] = rH (H2+H3+H4), so Cov(H4, H1) = rH v4 — the joint
	// period H_{4,1} of Lemma 6's proof. Then
	//   v1 = E[N1H] Var(B^H) + E[B^H]² (λk E[T] + λk² (v2+v3+v4))
	//   Var(N2L) = λ1 E[U] + λ1² (v4 + v1 + 2 rH v4)
	//   v2 = E[M] Var(B^L) + E[B^L]² Var(N2L)
	// which is affine in v2 with slope (rL rH)² < 1.
	c := eM*varBL + bL*bL*lam1*eU +
		rL*rL*(v4*(1+2*rH)+n1*varBH+bH*bH*lamk*eT+rH*rH*(v3+v4))
	v2 := c / (1 - a*a)
	vT := v2 + v3 + v4
	v1 := n1*varBH + bH*bH*(lamk*eT+lamk*lamk*vT)
	vU := v4 + v1 + 2*rH*v4
	varN1 := lamk*eT + lamk*lamk*vT
	varN2 := lam1*eU + lam1*lam1*vU
	r.N1H, r.N1H2 = n1, varN1+n1*n1
	r.N2L, r.N2L2 = n2, varN2+n2*n2

	hs := [4]float64{h1, h2, h3, h4}
	vs := [4]float64{v1, v2, v3, v4}
	// Lemma 1: m_i = E[H_i] / Σ E[H_i].
	cycle := h1 + h2 + h3 + h4
	for i := range r.Phases {
		r.Phases[i] = Phase{Mean: hs[i], Second: vs[i] + hs[i]*hs[i], Fraction: hs[i] / cycle}
	}
	r.Consistent = n1 >= 1 && n2 >= kf

	// Lemma 2 with Remark 2 (EFS system):
	//   E[T1H] = E[W^EFS(λk, Sk, Σ(N1H,Sk))]/(1 − p^EFS(...)) + 1/μk
	//   E[T2L] = E[W^EFS(λ1, S1/k, Σ(N2L−k+1,S1/k))]/(1 − p^EFS(...)) + 1/μ1
	// with E[Σ(N1H,Sk)] = E[N1H]/μk, E[Σ(N1H,Sk)²] = (E[N1H²]+E[N1H])/μk²,
	// E[Σ(N2L−k+1,S1/k)] = (E[N2L]−k+1)/(kμ1),
	// E[Σ(N2L−k+1,S1/k)²] = (E[N2L²] − (2k−3)E[N2L] + k²−3k+2)/(k²μ1²).
	r.T1H = efsWait(lamk, 1/muk, 2/(muk*muk), n1/muk, (r.N1H2+n1)/(muk*muk)) + 1/muk
	km := kf * mu1
	r.T2L = efsWait(lam1, 1/km, 2/(km*km), eM/km,
		(r.N2L2-(2*kf-3)*n2+kf*kf-3*kf+2)/(km*km)) + 1/mu1

	// Lemma 3: residual-life of the H2+H3+H4 (heavy) and H4+H1 (light)
	// periods plus the work seen:
	//   E[T234H] = (λk/μk + 1) E[(H2+H3+H4)²] / (2E[H2+H3+H4]) + 1/μk
	//   E[T14L]  = (λ1/(kμ1) + 1) E[(H4+H1)²] / (2E[H4+H1]) + 1/μ1
	r.T234H = (rhoH+1)*(vT+eT*eT)/(2*eT) + 1/muk
	r.T14L = (rhoL+1)*(vU+eU*eU)/(2*eU) + 1/mu1

	// Lemma 4: light jobs arriving in phase 3 (only if phase 3 exists;
	// with ℓ = k−1 it lasts zero time, m3 = 0, and T3L is reported as 0).
	if l < k-1 {
		r.T3L = t3Light(k, l, lam1, mu1)
	}

	// Eq. (1), split by class: E[T^(k)] = E[T1H] m1 + E[T234H](m2+m3+m4),
	// E[T^(1)] = E[T14L](m1+m4) + E[T2L] m2 + E[T3L] m3.
	m := [4]float64{r.Phases[0].Fraction, r.Phases[1].Fraction, r.Phases[2].Fraction, r.Phases[3].Fraction}
	r.Heavy = r.T1H*m[0] + r.T234H*(m[1]+m[2]+m[3])
	r.Light = r.T14L*(m[0]+m[3]) + r.T2L*m[1] + r.T3L*m[2]
	// Eq. (1): E[T] = (λk/λ) E[T^(k)] + (λ1/λ) E[T^(1)].
	r.Overall = p1*r.Light + (1-p1)*r.Heavy
	// Q §6.1: E[T^w] = Σ_j ρ_j/ρ E[T^(j)], ρ_j = j λ_j/μ_j.
	rho1, rhok := lam1/mu1, kf*lamk/muk
	r.Weighted = (rho1*r.Light + rhok*r.Heavy) / (rho1 + rhok)

	for _, x := range []float64{r.Light, r.Heavy, r.Overall, r.Weighted} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return r, fmt.Errorf("k = %d, ℓ = %d, λ = %v: the approximation overflows (phase 3 of length ~e^k)", k, l, lambda)
		}
	}
	return r, nil
}

// efsWait is the mean work seen by a job that does not receive exceptional
// first service in an M/G/1 with Exceptional First Service (Q Remark 2):
// E[W^EFS]/(1 − p^EFS), with
//
//	E[W^EFS] = λE[S²]/(2(1−λE[S])) + λ(E[S'²]−E[S²])/(2(1−λE[S]+λE[S']))
//	p^EFS    = (1−λE[S])/(1−λE[S]+λE[S']).
func efsWait(lam, s1, s2, x1, x2 float64) float64 {
	w := lam*s2/(2*(1-lam*s1)) + lam*(x2-s2)/(2*(1-lam*s1+lam*x1))
	p := (1 - lam*s1) / (1 - lam*s1 + lam*x1)
	return w / (1 - p)
}

// t3Light is Lemma 4: E[T3L] = Σ_{j>ℓ} t_j (k + (j−k+1)^+)/(kμ1) / Σ_{j>ℓ} t_j,
// with t_j = C_j/(λ1 + min(k,j)μ1) the expected time spent in state j
// (C_j the expected visits) of the phase-3 chain started at k−1 and
// absorbed at ℓ. Q's recursion for C_j, divided through by λ1 + jμ1, reads
//
//	t_{ℓ+1} = 1/((ℓ+1)μ1)                       (j = ℓ+1 <= k−1)
//	t_j = t_{j−1} λ1/(jμ1) + 1{j <= k−1}/(jμ1)   (ℓ+1 < j <= k)
//	t_j = t_{j−1} λ1/(kμ1)                      (j > k)
//
// (for j > k Q prints C_j = λ1/(kμ1) C_k; its proof derives C_j = C_{j−1}
// λ1/(kμ1), the geometric tail used here, summed in closed form). Working
// with t_j keeps every step a multiply-add, with no products or factorials
// to overflow. Returns NaN when phase 3 does not exist (ℓ = k−1: C ≡ 0).
func t3Light(k, l int, lam1, mu1 float64) float64 {
	if l+1 > k-1 {
		return math.NaN()
	}
	kf := float64(k)
	var num, den, t float64
	for j := l + 1; j <= k; j++ {
		jm := float64(j) * mu1
		t = t * lam1 / jm
		if j <= k-1 {
			t += 1 / jm
		}
		resp := 1 / mu1 // (k + (j−k+1)^+)/(kμ1) = 1/μ1 for j <= k−1
		if j == k {
			resp = (kf + 1) / (kf * mu1)
		}
		num += t * resp
		den += t
	}
	// j = k+i, i >= 1: t_{k+i} = t_k q^i, q = λ1/(kμ1) < 1, response
	// (k+1+i)/(kμ1): Σ q^i = q/(1−q), Σ i q^i = q/(1−q)².
	q := lam1 / (kf * mu1)
	num += t * ((kf+1)*q/(1-q) + q/((1-q)*(1-q))) / (kf * mu1)
	den += t * q / (1 - q)
	return num / den
}

// phase3Time is Σ_{j>ℓ} t_j of Lemma 4, the expected duration of phase 3;
// it must equal E[H3] of Lemma 7 (checked by the tests).
func phase3Time(k, l int, lam1, mu1 float64) float64 {
	if l+1 > k-1 {
		return 0
	}
	kf := float64(k)
	var den, t float64
	for j := l + 1; j <= k; j++ {
		jm := float64(j) * mu1
		t = t * lam1 / jm
		if j <= k-1 {
			t += 1 / jm
		}
		den += t
	}
	q := lam1 / (kf * mu1)
	return den + t*q/(1-q)
}
