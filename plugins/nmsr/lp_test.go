package nmsr

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestOptimiseHand checks Optimise against optima derived by hand.
func TestOptimiseHand(t *testing.T) {
	cases := []struct {
		name  string
		k     int
		needs []int
		load  []float64
		theta float64
		cands [][]int // in loop order (decreasing α)
		alpha []float64
	}{
		// k = 5, needs 2 and 4, ℓ = (1, 1). Packings: (2,0), (1,0), (0,1)
		// ((1,1) needs 6 > 5). θ(1,1) on the segment (2,0)–(0,1):
		// x1/2 + x2 = 1 → θ(1/2 + 1) = 1 → θ = 2/3, with α = 1/3 on (2,0)
		// and 2/3 on (0,1). (The fractional bound 5/6 is not reachable.)
		{"integrality", 5, []int{2, 4}, []float64{1, 1}, 2.0 / 3,
			[][]int{{0, 1}, {2, 0}}, []float64{2.0 / 3, 1.0 / 3}},
		// One-or-all, Q §6.2 per unit λ: ℓ = (0.9, 0.1), k = 32. Packings
		// (32,0), (0,1): α1·32 = 0.9θ, α2 = 0.1θ, α1+α2 = 1 →
		// θ = 1/(0.9/32 + 0.1) = 7.8049 (the stability bound of Q Thm 3),
		// α2 = 0.1θ = 0.78049, α1 = 0.21951.
		{"one-or-all", 32, []int{1, 32}, []float64{0.9, 0.1}, 1 / (0.9/32 + 0.1),
			[][]int{{0, 1}, {32, 0}}, []float64{0.1 / (0.9/32 + 0.1), 0.9 / 32 / (0.9/32 + 0.1)}},
		// Four-class, Q §6.3 per unit λ: every need divides 15, so the pure
		// schedules (15,0,0,0), (0,5,0,0), (0,0,3,0), (0,0,0,1) reach the
		// fractional bound θ = 15/Σ ℓ_i n_i = 15/3 = 5 (Q Remark 1: λ < 5),
		// with α_i = θ ℓ_i n_i/15 = (1/6, 1/4, 1/3, 1/4) for needs 1, 3, 5, 15.
		{"four-class", 15, []int{1, 3, 5, 15}, []float64{0.5, 0.25, 0.2, 0.05}, 5,
			[][]int{{0, 0, 3, 0}, {0, 5, 0, 0}, {0, 0, 0, 1}, {15, 0, 0, 0}}, []float64{1.0 / 3, 0.25, 0.25, 1.0 / 6}},
	}
	for _, c := range cases {
		sch, err := Optimise(c.k, c.needs, c.load, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if math.Abs(sch.Theta-c.theta) > 1e-9*c.theta {
			t.Errorf("%s: θ = %v, want %v", c.name, sch.Theta, c.theta)
		}
		if len(sch.Candidates) != len(c.cands) {
			t.Fatalf("%s: candidates %v α %v, want %v α %v", c.name, sch.Candidates, sch.Alpha, c.cands, c.alpha)
		}
		for s := range c.cands {
			if !equalInts(sch.Candidates[s], c.cands[s]) || math.Abs(sch.Alpha[s]-c.alpha[s]) > 1e-9 {
				t.Errorf("%s: candidates %v α %v, want %v α %v", c.name, sch.Candidates, sch.Alpha, c.cands, c.alpha)
				break
			}
		}
	}
}

// TestOptimiseMatchesFullLP: on random small systems, column generation
// reaches the optimum of the master LP over every packing (enumerated), and
// its output is consistent (feasible packings, α summing to 1, θ the
// smallest coverage ratio).
func TestOptimiseMatchesFullLP(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		k := 1 + r.IntN(14)
		C := 1 + r.IntN(4)
		needs := make([]int, C)
		load := make([]float64, C)
		for i := range needs {
			needs[i] = 1 + r.IntN(k)
			load[i] = r.Float64()
		}
		sch, err := Optimise(k, needs, load, 0)
		if err != nil {
			t.Fatal(err)
		}
		all := enumerate(k, needs)
		var total float64
		for _, l := range load {
			total += l
		}
		ell := make([]float64, C)
		for i := range ell {
			ell[i] = load[i] / total
		}
		_, theta, y, err := master(ell, all)
		if err != nil {
			t.Fatal(err)
		}
		theta /= total
		if math.Abs(sch.Theta-theta) > 1e-9*theta {
			t.Fatalf("k=%d needs=%v load=%v: θ = %v, full LP %v", k, needs, load, sch.Theta, theta)
		}
		// Optimality certificate independent of the simplex: for any y >= 0,
		// θℓ = Σα_s u_s gives θ·(y·ℓ) <= max_u y·u (weak duality), so a y
		// attaining sch.Theta proves that no schedule does better.
		var yl, best float64
		for i := range load {
			if y[i] < -1e-12 {
				t.Fatalf("negative dual %v", y)
			}
			yl += y[i] * load[i]
		}
		for _, u := range all {
			var v float64
			for i, n := range u {
				v += y[i] * float64(n)
			}
			best = max(best, v)
		}
		if ub := best / yl; math.Abs(ub-sch.Theta) > 1e-9*ub {
			t.Fatalf("k=%d needs=%v load=%v: θ = %v but the dual bound is %v", k, needs, load, sch.Theta, ub)
		}
		var sum float64
		cov := make([]float64, C)
		for s, u := range sch.Candidates {
			used := 0
			for i, n := range u {
				used += n * needs[i]
				cov[i] += sch.Alpha[s] * float64(n)
			}
			if used > k {
				t.Fatalf("candidate %v uses %d > %d servers", u, used, k)
			}
			if s > 0 && sch.Alpha[s] > sch.Alpha[s-1] {
				t.Fatalf("α not decreasing: %v", sch.Alpha)
			}
			sum += sch.Alpha[s]
		}
		if math.Abs(sum-1) > 1e-9 || len(sch.Candidates) > C {
			t.Fatalf("α sums to %v over %d candidates (C = %d)", sum, len(sch.Candidates), C)
		}
		m := math.Inf(1)
		for i := range cov {
			m = min(m, cov[i]/load[i])
		}
		if math.Abs(m-sch.Theta) > 1e-9*m {
			t.Fatalf("θ %v, min coverage ratio %v", sch.Theta, m)
		}
	}
}

// enumerate lists every packing u with Σ n_i u_i <= k.
func enumerate(k int, needs []int) [][]int {
	var out [][]int
	u := make([]int, len(needs))
	var rec func(i, left int)
	rec = func(i, left int) {
		if i == len(needs) {
			out = append(out, append([]int(nil), u...))
			return
		}
		for c := 0; c*needs[i] <= left; c++ {
			u[i] = c
			rec(i+1, left-c*needs[i])
		}
		u[i] = 0
	}
	rec(0, k)
	return out
}

// TestOptimiseCutoff: the cutoff drops candidates with small α and
// renormalises (the MSR authors' post-processing).
func TestOptimiseCutoff(t *testing.T) {
	// Kill-Smart one-or-all shape: k = 2048, ℓ ∝ (0.95·1.25, 0.05·10):
	// α on (2048,0) is (1.1875/2048)/(1.1875/2048 + 0.5) ≈ 0.00116.
	sch, err := Optimise(2048, []int{1, 2048}, []float64{0.95 * 1.25, 0.05 * 10}, 0.002)
	if err != nil {
		t.Fatal(err)
	}
	if len(sch.Candidates) != 1 || sch.Alpha[0] != 1 || sch.Theta != 0 {
		t.Fatalf("got %v α %v θ %v, want only (0,1) with α 1 and θ 0", sch.Candidates, sch.Alpha, sch.Theta)
	}
	if _, err := Optimise(4, []int{1}, []float64{0}, 0); err == nil {
		t.Error("all-zero loads accepted")
	}
}
