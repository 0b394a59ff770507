package sim_test

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestGrowthCalibrationShort is the default-suite version of the growth
// test's calibration (stability_long_test.go has the full one): with fixed
// seeds and 10^6 measured arrivals (warm-up 10^5), no replication of issue
// #15's stable cases at ρ = 0.97 (and of its three reported false alarms'
// settings) is flagged, and every replication of the two overloaded cases
// is flagged by the growth rule. Seeds 1..n; deterministic.
func TestGrowthCalibrationShort(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s of simulation")
	}
	const arrivals = 1000000
	for _, c := range stableCases {
		n := 2
		if c.name[0] == 'M' { // M/M/k is cheap: more seeds
			n = 6
		}
		rs := growthRun(t, c, 1, n, arrivals)
		flagged, _, maxT := tally(rs)
		t.Logf("%-40s %d/%d flagged, max growth t %.2f", c.name, flagged, n, maxT)
		for _, r := range rs {
			if r.Unstable || r.Truncated {
				t.Errorf("%s seed %d: stable case flagged: %+v growth %+v", c.name, r.Seed, r.Instability, r.Growth)
			}
		}
	}
	for _, c := range unstableCases {
		const n = 4
		rs := growthRun(t, c, 1, n, arrivals)
		_, minT, _ := tally(rs)
		t.Logf("%-40s min growth t %.1f", c.name, minT)
		for _, r := range rs {
			if r.Growth == nil || !r.Growth.Fired || !r.Unstable {
				t.Errorf("%s seed %d: overload not flagged by growth: %+v", c.name, r.Seed, r.Growth)
			}
		}
	}
}

func res(unstable, truncated, bound bool, tstat float64) *sim.Result {
	return &sim.Result{Unstable: unstable, Truncated: truncated, LowerBound: bound, Growth: &sim.Growth{T: tstat}}
}

// TestPool checks the majority rule on constructed replications.
func TestPool(t *testing.T) {
	rep := func(u, c, s int) []*sim.Result {
		var rs []*sim.Result
		for range u {
			rs = append(rs, res(true, false, false, 50))
		}
		for range c {
			rs = append(rs, res(false, true, true, 0))
		}
		for range s {
			rs = append(rs, res(false, false, false, 1))
		}
		return rs
	}
	for _, c := range []struct {
		u, c, s int
		want    sim.Verdict
		bound   bool
	}{
		{0, 0, 10, sim.VerdictStable, false},
		{1, 0, 9, sim.VerdictStable, false}, // one outlier does not overturn nine
		{4, 0, 6, sim.VerdictStable, false},
		{5, 0, 5, sim.VerdictUnstable, false}, // ties go to unstable
		{9, 0, 1, sim.VerdictUnstable, false},
		{10, 0, 0, sim.VerdictUnstable, false},
		{0, 1, 9, sim.VerdictStable, true}, // a truncated run: stable, but the means are bounds
		{4, 1, 5, sim.VerdictTruncated, true},
		{0, 5, 5, sim.VerdictTruncated, true},
		{5, 5, 0, sim.VerdictUnstable, true},
		{1, 0, 0, sim.VerdictUnstable, false},
		{0, 0, 1, sim.VerdictStable, false},
		{2, 0, 3, sim.VerdictStable, false},
		{3, 0, 2, sim.VerdictUnstable, false},
	} {
		v, err := sim.Pool(rep(c.u, c.c, c.s))
		if err != nil {
			t.Fatal(err)
		}
		if v.Verdict != c.want || v.LowerBound != c.bound || v.N != c.u+c.c+c.s || v.Unstable != c.u || v.Truncated != c.c {
			t.Errorf("%d unstable, %d truncated, %d stable: %+v, want %s bound=%v", c.u, c.c, c.s, v, c.want, c.bound)
		}
	}
	// A run flagged both ways counts as unstable, not truncated.
	v, _ := sim.Pool([]*sim.Result{res(true, true, true, 0)})
	if v.Verdict != sim.VerdictUnstable || v.Truncated != 0 {
		t.Errorf("unstable and truncated: %+v", v)
	}
	// Median of the growth statistics, over the runs that have one.
	rs := []*sim.Result{res(false, false, false, 3), res(false, false, false, -1), res(false, false, false, 40), {}}
	if v, _ := sim.Pool(rs); v.MedianGrowthT != 3 {
		t.Errorf("median t %v, want 3", v.MedianGrowthT)
	}
	if _, err := sim.Pool(nil); err == nil {
		t.Error("no replications: want an error")
	}
	if _, err := sim.Pool([]*sim.Result{nil}); err == nil {
		t.Error("nil replication: want an error")
	}
}

// TestMajorityErrors: the figures of Pool's doc comment.
func TestMajorityErrors(t *testing.T) {
	fu, miss := sim.MajorityErrors(10, 1e-3, 0.01)
	if math.Abs(fu/2.5075e-13-1) > 1e-3 || fu > 2.5e-13*1.01 {
		t.Errorf("false unstable %g, want 2.5e-13", fu)
	}
	// P(Bin(10, 0.01) ≥ 6) = C(10,6)·10^-12·0.99^4 + ... ≈ 2.0e-10.
	if miss > 2.1e-10 || miss < 1.9e-10 {
		t.Errorf("missed %g, want about 2.0e-10", miss)
	}
	// One replication: its own error rates.
	if fu, miss := sim.MajorityErrors(1, 0.3, 0.2); math.Abs(fu-0.3) > 1e-15 || math.Abs(miss-0.2) > 1e-15 {
		t.Errorf("n=1: %g %g", fu, miss)
	}
}
