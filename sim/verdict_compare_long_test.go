//go:build long

package sim_test

import (
	"flag"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/killsmart"
	"github.com/msjfarm/msjfarm/sim"
)

var (
	cmpName     = flag.String("compare.name", "", "a label for the printed row")
	cmpLambda   = flag.Float64("compare.lambda", 0, "arrival rate")
	cmpPolicy   = flag.String("compare.policy", "", "built-in policy name, or killsmart-5-100")
	cmpWorkload = flag.String("compare.workload", "", "named workload")
)

// before is the engine 0.6.0 verdict of the same replications: every number
// but the verdict fields is bit for bit the same, so dropping the reasons
// and rules 0.7.0 added gives it exactly.
func before(rs []*sim.Result) (sim.Verdict, int, bool) {
	var old []*sim.Result
	u := 0
	for _, r := range rs {
		c := *r
		c.Deficits = nil
		c.Unstable = false
		if r.Instability != nil {
			for _, why := range r.Instability.Reasons {
				if why != "deficit" && why != "truncated" {
					c.Unstable = true
				}
			}
		}
		if c.Unstable {
			u++
		}
		if r.Convergence != nil {
			cv := *r.Convergence
			cv.Reasons = nil
			for _, why := range r.Convergence.Reasons {
				if why != "throughput" {
					cv.Reasons = append(cv.Reasons, why)
				}
			}
			cv.Converged = len(cv.Reasons) == 0
			c.Convergence = &cv
		}
		old = append(old, &c)
	}
	v, _ := sim.Pool(old)
	return v.Verdict, u, sim.PoolConvergence(old).Converged
}

// TestVerdictCompareLong runs one point (verdict.reps replications of
// verdict.arrivals, seeds 1..reps) and prints its verdict before (engine
// 0.6.0) and after (0.7.0) with the evidence: the before/after table of
// issue #31, e.g.
//
//	go test -tags long ./sim -run VerdictCompareLong -v -compare.name 'Kill-Smart (5,100)' \
//	    -compare.policy killsmart-5-100 -compare.workload killsmart-one-or-all -compare.lambda 1.8
func TestVerdictCompareLong(t *testing.T) {
	if *cmpPolicy == "" {
		t.Skip("no -compare.policy")
	}
	sc := verdictScenario{name: *cmpName, workload: *cmpWorkload}
	if *cmpPolicy == "killsmart-5-100" {
		sc.policy = func() sim.Policy { return killsmart.New(killsmart.OneOrAll, 5, 100) }
	} else {
		sc.policy = builtinP(*cmpPolicy)
	}
	p := runPoints(t, sc, *cmpLambda, 0, 1, *verdictReps, *verdictArrivals)[0]
	bv, bu, bc := before(p.rs)
	d, _ := p.v.StrongestDeficit()
	var util, thr float64
	for _, r := range p.rs {
		util += r.Utilization / r.OfferedLoad / float64(len(p.rs))
		thr += r.Throughput / *cmpLambda / float64(len(p.rs))
	}
	t.Logf("%s | %v | before: %s (%d/%d flagged), converged %v | after: %s by %s (%.3g vs %.3g; %d/%d flagged), converged %v | strongest deficit %s %.4f ± %.4f (t %.3g/%.3g, z %.3g/%.3g) | util/ρ %.4f thr/λ %.4f | throughput shortfall %+v | work shortfall %+v",
		*cmpName, *cmpLambda, bv, bu, p.v.N, bc, p.v.Verdict, p.v.Test, p.v.Statistic, p.v.Critical, p.v.Unstable, p.v.N, p.cv.Converged,
		d.Name, d.Mean, d.HalfWidth, d.T, d.Critical, d.Z, d.ZCritical, util, thr, p.cv.Throughput, p.cv.WorkShortfall)
	for _, r := range p.rs {
		w := r.Deficits[0]
		t.Logf("  seed %d work rel %.4f t %.3g window %.4f wt %.3g conv %v", r.Seed, w.Relative, w.T, w.WindowRelative, w.WindowT, r.Convergence.Reasons)
	}
}
