//go:build long

package balanced

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// TestZeroWaitSubcriticalLong: the paper-scale version, k = 2^10 … 2^20,
// 30 replications of 10^6 measured arrivals (B §6 uses 10^6 per run).
func TestZeroWaitSubcriticalLong(t *testing.T) {
	zeroWait(t, []int{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20}, 30, 100000, 1000000, false)
}

// TestPaperRegimesLong and TestSmallSystemFirstFitLong: the paper-scale
// versions (30 replications of 10^6 arrivals, B's run length).
func TestPaperRegimesLong(t *testing.T)        { paperRegimes(t, 30, 100000, 1000000) }
func TestSmallSystemFirstFitLong(t *testing.T) { smallSystemFirstFit(t, 30, 100000, 1000000) }

// TestExamplePointsLong reports (no assertion: see the package documentation,
// "Small systems") BS-FCFS, BS-First-Fit and FCFS at the points of
// examples/b-fig1.yaml, b-fig2a.yaml and b-fig3-sdsc.yaml where BS-FCFS is
// above FCFS: 20 replications of 10^6 arrivals each, 95% CIs.
func TestExamplePointsLong(t *testing.T) {
	for _, c := range []struct {
		name string
		k    int
		rho  float64
	}{
		{"halfin-whitt", 32, 0.876256},
		{"halfin-whitt", 256, 0.95},
		{"sdsc-sp2", 512, 0.9},
	} {
		s, err := workload.NamedFor(c.name, c.k)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Build(1)
		if err != nil {
			t.Fatal(err)
		}
		w.ArrivalRate = c.rho / w.Load()
		for _, pol := range []string{"bs-fcfs", "bs-first-fit", "fcfs"} {
			var R []float64
			unstable := 0
			for seed := 1; seed <= 20; seed++ {
				var p sim.Policy
				switch pol {
				case "bs-fcfs":
					p = &BalancedSplitting{pi: PiFCFS}
				case "bs-first-fit":
					p = &BalancedSplitting{pi: PiFirstFit}
				default:
					p = fcfsPolicy()
				}
				r, err := sim.Run(w, p, sim.Config{Seed: uint64(seed), Warmup: 100000, Arrivals: 1000000, MaxInSystem: 200000})
				if err != nil {
					t.Fatal(err)
				}
				if r.Unstable {
					unstable++
				}
				R = append(R, r.Overall.MeanResponse)
			}
			ci := stats.MeanCI(R, 0.95)
			t.Logf("%s k=%d ρ=%g %-12s E[T] = %.4g ± %.2g (%d/20 flagged unstable)", c.name, c.k, c.rho, pol, ci.Mean, ci.HalfWidth, unstable)
		}
	}
}
