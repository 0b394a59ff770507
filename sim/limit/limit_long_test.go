//go:build long

package limit_test

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/killsmart"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestSearchReferencesLong: the four references of issue #15 at 10^6
// arrivals per replication (resolution 2.25%), bracket tolerance 1%:
//
//	go test -tags long ./sim/limit -run ReferencesLong -timeout 0 -v
//
// Measured (19 s on 2 shared cores): FCFS one-or-all [3.0512, 3.0678]
// against 3.0261 (estimate +1.10%); FCFS Kill-Smart one-or-all [1.4768,
// 1.4848] against 1.4551 (+1.77%); Kill-Smart (21, 100) [1.9548, 1.9682]
// against 1.9248 (+1.90%); MSFQ(k−1) [7.7796, 7.8291] against 7.8049
// (−0.01%). The growth-decided brackets sit just above the limit, within
// the resolution: overloads under about 2% go unseen at this length. The
// saturation throughput of FCFS on one-or-all (limit.SaturationThroughput)
// is 3.0216 ± 0.0051 over its 4 unstable rates (−0.15%).
func TestSearchReferencesLong(t *testing.T) {
	const arrivals = 1000000
	fcfsP := func(*sim.Workload) sim.Policy { return &fcfs.FCFS{} }
	for _, c := range []struct {
		name, wl string
		mk       func(*sim.Workload) sim.Policy
		lo, hi   float64
		want     float64
	}{
		{"FCFS one-or-all", "one-or-all", fcfsP, 2, 4, limit.FCFSOneOrAllLimit(32, 0.9, 1, 1)},
		{"FCFS Kill-Smart one-or-all", "killsmart-one-or-all", fcfsP, 1, 2, killsmart.FCFSLambdaMax(0.95, 0.8, 0.1)},
		{"Kill-Smart (21, 100)", "killsmart-one-or-all", func(*sim.Workload) sim.Policy { return killsmart.New(killsmart.OneOrAll, 21, 100) }, 1, 2.4,
			killsmart.Saturation{Ps: 0.95, MuS: 0.8, MuB: 0.1, K: 21, Nu: 100}.LambdaMax()},
		// issue #31: 1.3% past this limit the growth test saw 1 replication
		// in 10; the pooled work deficit sees 0.43% past it (msjfarm limit,
		// 5 replications: [1.7748, 1.7842]).
		{"Kill-Smart (5, 100)", "killsmart-one-or-all", func(*sim.Workload) sim.Policy { return killsmart.New(killsmart.OneOrAll, 5, 100) }, 1.5, 2.1,
			killsmart.Saturation{Ps: 0.95, MuS: 0.8, MuB: 0.1, K: 5, Nu: 100}.LambdaMax()},
		{"MSFQ(k-1) one-or-all", "one-or-all", func(w *sim.Workload) sim.Policy { return quickswap.NewMSFQ(w.Servers - 1) }, 6, 9, 1 / (0.9/32 + 0.1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := searchCase(t, c.wl, c.mk, c.lo, c.hi, arrivals)
			t.Logf("λ_max %.4f: estimate %.4f (%+.2f%%)", c.want, l.Estimate, 100*(l.Estimate/c.want-1))
			checkBracket(t, l, c.want, arrivals)
			// FCFS is monotone: its overloaded runs depart at λ_max (the
			// saturation rule), whatever the growth test's resolution.
			// Checked where λ_max is exact for the simulated k (the
			// Kill-Smart reference is the N → ∞ limit, which the finite
			// system's 1.4510 approaches from below).
			// Each unstable rate's mean throughput is an estimate of it;
			// their spread gives a 99.9% Student-t interval that must
			// contain the exact limit.
			if c.name == "FCFS one-or-all" {
				var xs []float64
				for _, p := range l.Points {
					if p.Verdict.Verdict == sim.VerdictUnstable {
						xs = append(xs, p.Throughput)
					}
				}
				ci := stats.MeanCI(xs, 0.999)
				m, n := limit.SaturationThroughput(l)
				t.Logf("saturation throughput %.5f ± %.5f over %d rates (%+.3f%%)", m, ci.HalfWidth, n, 100*(m/c.want-1))
				if n < 2 || math.Abs(ci.Mean-m) > 1e-12 || math.Abs(m-c.want) > ci.HalfWidth {
					t.Errorf("saturation throughput %.5f ± %.5f (n = %d), want %.5f inside", m, ci.HalfWidth, n, c.want)
				}
			}
		})
	}
}
