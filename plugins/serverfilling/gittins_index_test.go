package serverfilling

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
)

// searchAt is rankTable.at with the grid index found by a binary search
// over the whole grid: the lookup before the bucket index, kept here as
// the reference the index must reproduce to the bit.
func searchAt(t *rankTable, a float64) float64 {
	xs := t.xs
	if a <= xs[0] {
		return t.rs[0]
	}
	n := len(xs)
	if a >= xs[n-1] {
		return t.rs[n-1]
	}
	i := sort.SearchFloat64s(xs, a)
	x0, x1 := xs[i-1], xs[i]
	r0, r1 := t.rs[i-1], t.rs[i]
	return r0 + (r1-r0)*(a-x0)/(x1-x0)
}

// TestRankTableIndexExact: the bucket index of rankTable finds the grid
// index a binary search over the whole grid finds, so every rank is the
// same number, on the tables of every law that has one (bounded Pareto,
// lognormal, Weibull of shape > 1, Fréchet, empirical) at every grid age,
// one ulp either side of it, the midpoints, ages below and beyond the grid
// and log-uniform random ages.
func TestRankTableIndexExact(t *testing.T) {
	laws := []dist.Dist{
		dist.Must(dist.NewBoundedParetoMean(2, 1, 12000)),
		dist.Must(dist.NewBoundedParetoMean(2.1, 10, 120000)),
		dist.Must(dist.NewBoundedPareto(1.5, 0.3, 40)),
		dist.Must(dist.NewLognormal(1, 4)),
		dist.Must(dist.NewLognormal(3, 0.5)),
		dist.Must(dist.NewWeibullMean(2, 1)),
		dist.Must(dist.NewFrechetMean(3, 2)),
		dist.Must(dist.NewEmpirical([]float64{0.2, 1, 1.8, 0.5, 1.5, 7, 1e-3})),
		dist.Must(dist.NewEmpirical([]float64{4})),
	}
	r := rand.New(rand.NewPCG(35, 37))
	for _, d := range laws {
		f, err := newRankFn(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		tab := f.tab
		xs := tab.xs
		n := len(xs)
		var ages []float64
		for i, x := range xs {
			ages = append(ages, x, math.Nextafter(x, -1), math.Nextafter(x, math.Inf(1)))
			if i > 0 {
				ages = append(ages, (xs[i-1]+x)/2)
			}
		}
		lo, hi := math.Log(xs[min(1, n-1)]/4), math.Log(4*xs[n-1])
		for range 200000 {
			ages = append(ages, math.Exp(lo+(hi-lo)*r.Float64()))
		}
		ages = append(ages, 0, math.SmallestNonzeroFloat64, math.Inf(1))
		bad := 0
		for _, a := range ages {
			if a > xs[0] && a < xs[n-1] && tab.index(a) != sort.SearchFloat64s(xs, a) {
				bad++
			}
			got, want := tab.at(a), searchAt(tab, a)
			if math.Float64bits(got) != math.Float64bits(want) {
				if bad++; bad <= 5 {
					t.Errorf("%s: rank at age %v: %v with the index, %v by search", d, a, got, want)
				}
			}
		}
		t.Logf("%s: %d grid points, %d buckets, %d ages, %d differ", d, n, len(tab.first), len(ages), bad)
		if bad > 0 {
			t.Errorf("%s: %d lookups differ from the binary search's", d, bad)
		}
	}
}

// TestRankTableIndexBoundaries: grids whose points lie exactly on bucket
// boundaries (ages b1 + m·2^40 in float64 bits) and grids of random
// points, where a lookup at a grid age must still find that point.
func TestRankTableIndexBoundaries(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 3))
	b := math.Float64bits(1)
	var grids [][]float64
	for _, n := range []int{2, 3, 17, 100, 1000} {
		xs := []float64{0}
		for i := range n - 1 {
			xs = append(xs, math.Float64frombits(b+uint64(i)<<40))
		}
		grids = append(grids, xs)
		ys := []float64{0}
		for range n - 1 {
			ys = append(ys, math.Exp(40*r.Float64()-20))
		}
		sort.Float64s(ys)
		grids = append(grids, slices.Compact(ys))
	}
	for gi, xs := range grids {
		rs := make([]float64, len(xs))
		for i := range rs {
			rs[i] = r.Float64()
		}
		tab := newRankTable(xs, rs)
		for _, x := range xs {
			for _, a := range []float64{x, math.Nextafter(x, -1), math.Nextafter(x, math.Inf(1))} {
				if a > xs[0] && a < xs[len(xs)-1] {
					if got, want := tab.index(a), sort.SearchFloat64s(xs, a); got != want {
						t.Errorf("grid %d (%d points, shift %d): index of age %v: %d, search %d", gi, len(xs), tab.shift, a, got, want)
					}
				}
				if got, want := tab.at(a), searchAt(tab, a); math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("grid %d (%d points, shift %d): rank at age %v: %v with the index, %v by search",
						gi, len(xs), tab.shift, a, got, want)
				}
			}
		}
	}
}
