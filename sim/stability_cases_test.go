package sim_test

import (
	"runtime"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// growthCase is one calibration case of the growth test (issue #15): a
// workload at an arrival rate under a policy, known stable or overloaded.
type growthCase struct {
	name     string
	workload func(t testing.TB) *sim.Workload
	policy   func(w *sim.Workload) sim.Policy
	unstable bool
}

func namedAt(name string, rate float64) func(testing.TB) *sim.Workload {
	return func(t testing.TB) *sim.Workload { return simtest.Named(t, name, rate) }
}

func mmk(k int, rho float64) func(testing.TB) *sim.Workload {
	return func(testing.TB) *sim.Workload { return single(k, rho*float64(k), expD(1)) }
}

func fcfsP(*sim.Workload) sim.Policy     { return &fcfs.FCFS{} }
func msfP(*sim.Workload) sim.Policy      { return &msf.MSF{} }
func firstFitP(*sim.Workload) sim.Policy { return &firstfit.FirstFit{} }
func msfqP(w *sim.Workload) sim.Policy   { return quickswap.NewMSFQ(w.Servers - 1) }
func adaptiveP(*sim.Workload) sim.Policy { return &quickswap.Adaptive{} }

// Rates: one-or-all has ρ = 0.128125 λ (stable for λ < 7.805 under MSF,
// First-Fit and MSFQ), four-class ρ = 0.2 λ (stabilisable for λ < 5), so
// ρ = 0.97 is λ = 7.5707 and λ = 4.85.
const (
	oneOrAll97  = 0.97 / 0.128125
	fourClass97 = 0.97 / 0.2
)

// stableCases are issue #15's stable cases at ρ = 0.97, and the issue's own
// false alarms (First-Fit at λ = 7 and 7.5, MSF at 7.5 on one-or-all).
var stableCases = []growthCase{
	{"M/M/1 ρ=0.97", mmk(1, 0.97), fcfsP, false},
	{"M/M/8 ρ=0.97", mmk(8, 0.97), fcfsP, false},
	{"one-or-all MSF ρ=0.97", namedAt("one-or-all", oneOrAll97), msfP, false},
	{"one-or-all First-Fit ρ=0.97", namedAt("one-or-all", oneOrAll97), firstFitP, false},
	{"one-or-all MSFQ(k-1) ρ=0.97", namedAt("one-or-all", oneOrAll97), msfqP, false},
	{"four-class MSF ρ=0.97", namedAt("four-class", fourClass97), msfP, false},
	{"four-class Adaptive Quickswap ρ=0.97", namedAt("four-class", fourClass97), adaptiveP, false},
	{"one-or-all First-Fit λ=7", namedAt("one-or-all", 7), firstFitP, false},
	{"one-or-all First-Fit λ=7.5", namedAt("one-or-all", 7.5), firstFitP, false},
	{"one-or-all MSF λ=7.5", namedAt("one-or-all", 7.5), msfP, false},
}

// unstableCases are issue #15's power cases: ρ = 1.02 on M/M/1, and FCFS on
// one-or-all at λ = 3.2 (its saturation throughput is 3.0280, see
// limit.FCFSOneOrAllLimit).
var unstableCases = []growthCase{
	{"M/M/1 ρ=1.02", mmk(1, 1.02), fcfsP, true},
	{"one-or-all FCFS λ=3.2", namedAt("one-or-all", 3.2), fcfsP, true},
}

// runParallel calls run(i) for i in [0, n) on every core and returns the
// results and errors in index order.
func runParallel(n int, run func(i int) (*sim.Result, error)) ([]*sim.Result, []error) {
	out := make([]*sim.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = run(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errs
}

// growthRun runs seeds [first, first+n) of c with the given measured
// arrivals (warm-up a tenth of it), on every core, and returns the results
// in seed order.
func growthRun(t testing.TB, c growthCase, first uint64, n int, arrivals int64) []*sim.Result {
	t.Helper()
	w := c.workload(t)
	out, errs := runParallel(n, func(i int) (*sim.Result, error) {
		return sim.Run(w, c.policy(w), sim.Config{Seed: first + uint64(i), Warmup: arrivals / 10, Arrivals: arrivals})
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s seed %d: %v", c.name, first+uint64(i), err)
		}
	}
	return out
}

// tally counts the replications flagged unstable (any evidence) and returns
// the smallest and largest growth t.
func tally(rs []*sim.Result) (flagged int, minT, maxT float64) {
	minT, maxT = 1e300, -1e300
	for _, r := range rs {
		if r.Unstable {
			flagged++
		}
		if r.Growth != nil {
			minT, maxT = min(minT, r.Growth.T), max(maxT, r.Growth.T)
		}
	}
	return
}
