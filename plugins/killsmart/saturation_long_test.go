//go:build long

package killsmart

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestLongSaturationFig4: the saturation check of TestSaturationThroughput at
// paper scale (K Appendix A: 30 replications; here 3·10^6 arrivals each) on
// every (K, ν) of K Fig. 4 — K ∈ {7, 14, 21}, ν ∈ {1, 5, 19, 100} — and FCFS.
func TestLongSaturationFig4(t *testing.T) {
	cases := []saturationCase{{name: "fcfs", mk: func() sim.Policy { return &fcfs.FCFS{} }, lambda: FCFSLambdaMax(ps, muS, muB)}}
	for _, K := range []int{7, 14, 21} {
		for _, nu := range []int{1, 5, 19, 100} {
			cases = append(cases, ksCase(K, nu))
		}
	}
	checkSaturation(t, cases, 30, 3000000)
}

// TestLongBorgB: the paper's four Borg cell B configurations ((K, ν) with
// ν(K−1) = N) against FCFS, overloaded at λ = 2.5 (saturation throughput) and
// at λ = 1.5 (mean response time), 10 replications of 3·10^6 arrivals.
// Asserted: the saturation-throughput gain of K = 5, ν = 512 (paired 99% CI
// above 0); the rest is logged, for comparison with K Fig. 5.
func TestLongBorgB(t *testing.T) {
	n := 10
	for _, rate := range []float64{2.5, 1.5} {
		w := simtest.Named(t, "borg-b", rate)
		cfg := sim.Config{Warmup: 100000, Arrivals: 3000000}
		if rate > 2 {
			cfg.DrainLimit = 1
		}
		rf := simtest.Replicate(t, w, func() sim.Policy { return &fcfs.FCFS{} }, n, cfg)
		t.Logf("λ=%v fcfs: throughput %.4f E[T] %.4g E[T_W] %.4g", rate,
			simtest.CI(rf, func(r *sim.Result) float64 { return r.Throughput }, 0.99).Mean,
			simtest.CI(rf, func(r *sim.Result) float64 { return r.Overall.MeanResponse }, 0.99).Mean,
			simtest.CI(rf, func(r *sim.Result) float64 { return r.WeightedMeanResponse }, 0.99).Mean)
		for _, c := range [][2]int{{3, 1024}, {5, 512}, {9, 256}, {17, 128}} {
			rk := simtest.Replicate(t, w, func() sim.Policy { return New(MultiClass, c[0], c[1]) }, n, cfg)
			d := make([]float64, n)
			for i := range d {
				d[i] = rk[i].Throughput - rf[i].Throughput
			}
			s := stats.MeanCI(d, 0.99)
			t.Logf("λ=%v killsmart-multiclass K=%d ν=%d: throughput %.4f (gain %.4f ± %.2g) E[T] %.4g E[T_W] %.4g wasted power %.4g D_Jp %.4g",
				rate, c[0], c[1], simtest.CI(rk, func(r *sim.Result) float64 { return r.Throughput }, 0.99).Mean, s.Mean, s.HalfWidth,
				simtest.CI(rk, func(r *sim.Result) float64 { return r.Overall.MeanResponse }, 0.99).Mean,
				simtest.CI(rk, func(r *sim.Result) float64 { return r.WeightedMeanResponse }, 0.99).Mean,
				simtest.CI(rk, func(r *sim.Result) float64 { return simtest.Counter(t, r, "wasted_power") }, 0.99).Mean,
				simtest.CI(rk, func(r *sim.Result) float64 { return simtest.Counter(t, r, "extra_delay_preempted") }, 0.99).Mean)
			if rate > 2 && c == [2]int{5, 512} && s.Mean-s.HalfWidth <= 0 {
				t.Errorf("K=5 ν=512: throughput gain %.4f ± %.2g not significantly positive", s.Mean, s.HalfWidth)
			}
		}
	}
}
