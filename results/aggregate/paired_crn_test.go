package aggregate_test

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/internal/campaigntest"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// TestPairedNarrowerOnCRN runs campaigntest.CRN and checks what the common
// random numbers must give.
//
// Expectation, derived: replication r of FCFS, MSF and MSFQ at a rate has
// the same seed, so the same arrival times and sizes; their mean response
// times move together from replication to replication (a replication with
// more heavy jobs is slow under every policy): correlation ρ > 0. The
// paired interval's half-width is t(0.975, 9)·sd(A−B)/√10 with
// sd(A−B)² = s_A² + s_B² − 2ρ s_A s_B; Welch's is t(0.975, ν)·√(s_A² +
// s_B²)/√10 with 9 ≤ ν ≤ 18. For equal variances (ν = 18) the paired one is
// narrower when √(1 − ρ) < t(0.975, 18)/t(0.975, 9) = 2.101/2.262, i.e.
// ρ > 0.14; when one variance dominates (FCFS near its limit) ν → 9 and
// any ρ > 0 makes it narrower, by little. So the paired interval must be
// narrower at every stable point and every response-time metric; the
// log shows by how much (×1.8–2.4 at λ = 1.5, ×1.0 at λ = 3 where FCFS's
// own spread dominates).
//
// At λ = 5 FCFS (the baseline) is unstable: every comparison there must be
// undefined, saying the baseline's means are bounds. At λ = 3 FCFS blocks
// light jobs behind heavy ones while MSF and MSFQ do not (their mean
// response times are about 95% lower), so both must be significantly
// better on mean response time even after Holm's correction over the
// figure's 4 non-baseline points.
//
// Complexity 23: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestPairedNarrowerOnCRN(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 90 replications")
	}
	pts := campaigntest.Points(t, campaigntest.CRN)
	narrower := 0
	for i := range pts {
		p := &pts[i]
		c := p.Compare
		if c == nil {
			t.Fatalf("%s λ=%g: no comparison", p.Policy, p.ArrivalRate)
		}
		if c.Baseline != "fcfs" {
			t.Fatalf("baseline %q, want fcfs", c.Baseline)
		}
		t.Logf("%s λ=%g ρ=%.3f: verdict %s, lower bound %v, undefined %q", p.Policy, p.ArrivalRate, p.Load, p.Verdict, p.LowerBound, c.Undefined)
		if p.Policy == "fcfs" {
			if !c.IsBaseline {
				t.Errorf("fcfs λ=%g: not marked the baseline", p.ArrivalRate)
			}
			if p.ArrivalRate == 5 && !p.Unstable() {
				t.Errorf("fcfs at λ = 5: verdict %s, want unstable (the test's premise)", p.Verdict)
			}
			continue
		}
		if p.ArrivalRate == 5 {
			if v, note := c.Verdict("mean_response"); v != aggregate.CmpUndefined || note == "" {
				t.Errorf("%s λ=5: verdict %q (%s), want undefined with a reason: the baseline is unstable", p.Policy, v, note)
			}
			continue
		}
		if p.Unstable() {
			t.Fatalf("%s λ=%g unstable: the premise fails", p.Policy, p.ArrivalRate)
		}
		for _, name := range []string{"mean_response", "weighted_mean_response", "mean_wait"} {
			m, ok := c.Paired(name)
			if !ok || m.N != 10 {
				t.Fatalf("%s λ=%g %s: %+v, want 10 pairs", p.Policy, p.ArrivalRate, name, m)
			}
			if !(m.DiffHW < m.UnpairedHW) {
				t.Errorf("%s λ=%g %s: paired half-width %g not below the unpaired %g", p.Policy, p.ArrivalRate, name, m.DiffHW, m.UnpairedHW)
			} else {
				narrower++
			}
			// The paired mean difference is the difference of the means
			// (the same replications on both sides).
			a, _ := p.Metric(name)
			var b aggregate.Metric
			for j := range pts {
				if pts[j].Point == c.BaselinePoint {
					b, _ = pts[j].Metric(name)
				}
			}
			if d := a.Mean - b.Mean; math.Abs(m.Diff-d) > 1e-9*math.Abs(d) {
				t.Errorf("%s λ=%g %s: diff %g, difference of means %g", p.Policy, p.ArrivalRate, name, m.Diff, d)
			}
			t.Logf("%s λ=%g %s: %s, paired hw %.4g vs unpaired %.4g (×%.1f narrower), p_holm %.2g: %s",
				p.Policy, p.ArrivalRate, name, aggregate.FormatRelDiff(m.RelDiff, m.RelDiffLo, m.RelDiffHi), m.DiffHW, m.UnpairedHW, m.UnpairedHW/m.DiffHW, m.PHolm, m.Verdict)
		}
		if p.ArrivalRate == 3 {
			if v, _ := c.Verdict("mean_response"); v != aggregate.CmpBetter {
				t.Errorf("%s λ=3: mean_response verdict %q, want better than FCFS", p.Policy, v)
			}
		}
	}
	if narrower != 12 { // 2 policies × 2 stable rates × 3 metrics
		t.Errorf("%d comparisons checked, want 12", narrower)
	}
}
