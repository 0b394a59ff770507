package sim

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim/rng"
)

// pickBranch is the alias draw written as the plain comparison that
// aliasTable.pickU computes without a branch.
func (a *aliasTable) pickBranch(u float64) int {
	i, f := a.column(u)
	if f < a.prob[i] {
		return i
	}
	return a.alias[i]
}

// TestAliasPickBranchFree checks that the branch-free alias draw picks what
// the comparison picks, on random uniforms and on the uniforms at and next
// to each column's threshold (u·n − i = prob[i], where the comparison turns
// and where reading its sign off a difference could go wrong), for tables
// with columns kept whole (prob 1), split, and of probability zero.
func TestAliasPickBranchFree(t *testing.T) {
	tables := map[string][]float64{
		"one-or-all":  {0.9, 0.1},
		"three":       {0.5, 0.3, 0.2},
		"uniform":     {0.25, 0.25, 0.25, 0.25},
		"with zeros":  {0, 0.7, 0, 0.3},
		"one class":   {1},
		"tiny weight": {1 - 1e-12, 1e-12},
	}
	rs := rng.New(1, 2)
	for name, p := range tables {
		a := newAlias(p)
		n := float64(len(p))
		check := func(u float64) {
			if got, want := a.pickU(u), a.pickBranch(u); got != want {
				t.Fatalf("%s: u = %v (%#x): pickU %d, comparison %d", name, u, math.Float64bits(u), got, want)
			}
		}
		for range 200000 {
			check(rs.Float64())
		}
		for i := range a.prob {
			u := (float64(i) + a.prob[i]) / n
			for range 8 {
				u = math.Nextafter(u, 0)
			}
			for range 17 {
				if u > 0 && u < 1 {
					check(u)
				}
				u = math.Nextafter(u, 1)
			}
		}
		check(math.SmallestNonzeroFloat64)
		check(math.Nextafter(1, 0))
	}
}
