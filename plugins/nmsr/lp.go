package nmsr

import (
	"errors"
	"math"
	"sort"
)

// Schedule is an MSR policy's precomputed data: the candidate schedules (how
// many jobs of each class each one serves) in loop order, and the long-run
// fraction of time α_s to spend in each.
type Schedule struct {
	Candidates [][]int
	Alpha      []float64
	// Theta is max θ such that θ·ℓ is a convex combination of the candidates
	// for the loads ℓ the schedule was computed for: the service capacity
	// relative to those loads (θ > 1: preemptive MSR would be stable).
	Theta float64
}

// Optimise computes the candidate schedules of an MSR policy for k servers,
// class needs n_i and per-class loads ℓ_i (mean number of class-i jobs that
// must be in service: λ_i E[S_i]). It solves
//
//	maximise θ  s.t.  Σ_s α_s u_s ≥ θ ℓ,  Σ_s α_s ≤ 1,  α ≥ 0,
//	                  u_s ∈ ℕ^C with Σ_i n_i u_{s,i} ≤ k,
//
// which is the max-min relative gap problem min_i (Σ_s α_s u_{s,i} − ℓ_i)/ℓ_i
// of the MSR authors' candidate construction (θ = 1 + gap), over the convex
// hull of all feasible packings. It is solved exactly by column generation:
// a simplex on the master LP over the packings found so far, priced by an
// unbounded knapsack over all packings. The optimum lies on a face of the
// hull of dimension at most C−1, so it uses at most C candidates, as in the
// authors' formulation with C candidate slots; where the optimum is not
// unique, the simplex vertex reached (Bland's rule, columns in generation
// order) is returned.
//
// Candidates with α_s <= cutoff (and numerically zero ones, α_s <= 1e-12)
// are then dropped and α renormalised to sum to 1 (the authors'
// post-processing, which uses cutoff 0.001), and the rest are ordered by
// decreasing α (ties by generation order): the loop order.
func Optimise(k int, needs []int, load []float64, cutoff float64) (*Schedule, error) {
	C := len(needs)
	if C == 0 || k < 1 {
		return nil, errors.New("nmsr: no classes or servers")
	}
	var total float64
	for i, l := range load {
		if !(l >= 0) || math.IsInf(l, 0) || needs[i] < 1 || needs[i] > k {
			return nil, errors.New("nmsr: loads must be finite and >= 0, needs in [1, k]")
		}
		total += l
	}
	if !(total > 0) {
		return nil, errors.New("nmsr: all class loads are zero")
	}
	ell := make([]float64, C)
	for i, l := range load {
		ell[i] = l / total // θ is rescaled at the end
	}

	// Knapsack on capacity k/g with weights n_i/g, g = gcd of the needs.
	g := needs[0]
	for _, n := range needs[1:] {
		g = gcd(g, n)
	}
	kp := newKnapsack(k/g, needs, g)

	var cols [][]int
	for i, n := range needs {
		if ell[i] > 0 {
			u := make([]int, C)
			u[i] = k / n
			cols = append(cols, u)
		}
	}
	var alpha []float64
	for iter := 0; ; iter++ {
		if iter > 10000 {
			return nil, errors.New("nmsr: column generation did not converge")
		}
		var y []float64
		var err error
		alpha, _, y, err = master(ell, cols)
		if err != nil {
			return nil, err
		}
		// Reduced cost of packing u: Σ_i y_i u_i − π, where π = y[C] is the
		// dual of Σα <= 1.
		val, u := kp.best(y[:C])
		if val <= y[C]*(1+1e-9)+1e-12 {
			break
		}
		dup := false
		for _, c := range cols {
			if equalInts(c, u) {
				dup = true
				break
			}
		}
		if dup { // numerical stall: the column is already in the master
			break
		}
		cols = append(cols, u)
	}

	// Post-process as the authors do: drop tiny α, renormalise, sort.
	idx := make([]int, 0, len(cols))
	var sum float64
	for s, a := range alpha {
		if a > cutoff && a > 1e-12 {
			idx = append(idx, s)
			sum += a
		}
	}
	if len(idx) == 0 {
		return nil, errors.New("nmsr: every candidate fell below the cutoff")
	}
	sort.SliceStable(idx, func(a, b int) bool { return alpha[idx[a]] > alpha[idx[b]] })
	sch := &Schedule{}
	for _, s := range idx {
		sch.Candidates = append(sch.Candidates, cols[s])
		sch.Alpha = append(sch.Alpha, alpha[s]/sum)
	}
	sch.Theta = math.Inf(1)
	for i := range C {
		if load[i] <= 0 {
			continue
		}
		var x float64
		for s, u := range sch.Candidates {
			x += sch.Alpha[s] * float64(u[i])
		}
		sch.Theta = min(sch.Theta, x/load[i])
	}
	return sch, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func equalInts(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// master solves the restricted master LP over the given packings:
// variables θ, α_1..α_m; rows θℓ_i − Σ_s α_s u_{s,i} <= 0 (i < C) and
// Σ_s α_s <= 1. It returns α, θ and the duals y (C+1 of them).
func master(ell []float64, cols [][]int) (alpha []float64, theta float64, y []float64, err error) {
	C, m := len(ell), len(cols)
	A := make([][]float64, C+1)
	for i := range C {
		A[i] = make([]float64, 1+m)
		A[i][0] = ell[i]
		for s, u := range cols {
			A[i][1+s] = -float64(u[i])
		}
	}
	A[C] = make([]float64, 1+m)
	for s := range cols {
		A[C][1+s] = 1
	}
	b := make([]float64, C+1)
	b[C] = 1
	c := make([]float64, 1+m)
	c[0] = 1
	x, y, err := simplexMax(A, b, c)
	if err != nil {
		return nil, 0, nil, err
	}
	return x[1:], x[0], y, nil
}

// simplexMax solves max c·x s.t. A x <= b, x >= 0, for b >= 0, by the
// tableau simplex method from the slack basis with Bland's rule (no cycling
// on the degenerate rows b_i = 0). It returns the primal solution and the
// duals of the rows.
func simplexMax(A [][]float64, b, c []float64) (x, y []float64, err error) {
	const eps = 1e-11
	m, n := len(A), len(c)
	w := n + m + 1 // columns: x, slacks, rhs
	T := make([][]float64, m+1)
	for i := range m {
		T[i] = make([]float64, w)
		copy(T[i], A[i])
		T[i][n+i] = 1
		T[i][w-1] = b[i]
	}
	T[m] = make([]float64, w)
	for j := range n {
		T[m][j] = -c[j]
	}
	basis := make([]int, m)
	for i := range m {
		basis[i] = n + i
	}
	for it := 0; ; it++ {
		if it > 100000 {
			return nil, nil, errors.New("nmsr: simplex did not converge")
		}
		enter := -1
		for j := 0; j < n+m; j++ {
			if T[m][j] < -eps {
				enter = j
				break
			}
		}
		if enter < 0 {
			break
		}
		leave := -1
		var best float64
		for i := range m {
			if T[i][enter] > eps {
				r := T[i][w-1] / T[i][enter]
				if leave < 0 || r < best-eps || (r <= best+eps && basis[i] < basis[leave]) {
					leave, best = i, r
				}
			}
		}
		if leave < 0 {
			return nil, nil, errors.New("nmsr: unbounded LP")
		}
		pv := T[leave][enter]
		for j := range w {
			T[leave][j] /= pv
		}
		for i := range m + 1 {
			if i == leave || T[i][enter] == 0 {
				continue
			}
			f := T[i][enter]
			for j := range w {
				T[i][j] -= f * T[leave][j]
			}
		}
		basis[leave] = enter
	}
	x = make([]float64, n)
	for i, bv := range basis {
		if bv < n {
			x[bv] = T[i][w-1]
		}
	}
	y = make([]float64, m)
	for i := range m {
		y[i] = T[m][n+i]
	}
	return x, y, nil
}

// knapsack finds the packing maximising Σ_i v_i u_i subject to
// Σ_i n_i u_i <= k (unbounded multiplicities), by dynamic programming over
// the capacity in units of g = gcd(needs).
type knapsack struct {
	capacity int
	w        []int // needs / g
	val      []float64
	choice   []int32
}

func newKnapsack(capacity int, needs []int, g int) *knapsack {
	kp := &knapsack{capacity: capacity, w: make([]int, len(needs))}
	for i, n := range needs {
		kp.w[i] = n / g
	}
	kp.val = make([]float64, capacity+1)
	kp.choice = make([]int32, capacity+1)
	return kp
}

func (kp *knapsack) best(v []float64) (float64, []int) {
	kp.val[0], kp.choice[0] = 0, -1
	for c := 1; c <= kp.capacity; c++ {
		bv, bc := kp.val[c-1], int32(-1) // leave one unit unused
		for i, wi := range kp.w {
			if wi <= c && v[i] > 0 {
				if x := kp.val[c-wi] + v[i]; x > bv {
					bv, bc = x, int32(i)
				}
			}
		}
		kp.val[c], kp.choice[c] = bv, bc
	}
	u := make([]int, len(kp.w))
	for c := kp.capacity; c > 0; {
		if i := kp.choice[c]; i < 0 {
			c--
		} else {
			u[i]++
			c -= kp.w[i]
		}
	}
	return kp.val[kp.capacity], u
}
