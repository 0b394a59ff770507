package sim_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/plugins/killsmart"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// verdictScenario is a policy on a workload with a known saturation point
// λ*: the combined point verdict (sim.Pool) is calibrated at 0.97 λ*
// (stable: must not be called unstable) and at 1.01 λ* (overloaded: must
// be). Issue #31's workloads: one-or-all, four-class, Borg cell B and
// Kill-Smart's one-or-all.
type verdictScenario struct {
	name     string
	workload string
	policy   func() sim.Policy
	// lambda is λ*: exact where a closed form exists (0: the rate at
	// ρ = 1), -1 when it is not known precisely enough to place an
	// overload point.
	lambda float64
	// power marks scenarios whose overload at 1.01 λ* is below ρ = 1: there
	// the ρ ≥ 1 rule cannot decide and the tests must (the others are
	// throughput-optimal policies whose λ* is ρ = 1).
	power bool
	// fixed, when positive, is a known-stable rate run instead of 0.97 λ*.
	fixed float64
}

// builtinP returns a constructor of the built-in policy name configured
// with its defaults, as msjfarm configures it (an unconfigured policy
// keeps Go's zero values: Static Quickswap's threshold ℓ would be 0,
// exhaustive service, not its default k − 1).
func builtinP(name string) func() sim.Policy {
	e, err := builtin.Lookup(name)
	if err != nil {
		panic(err)
	}
	return func() sim.Policy {
		p := e.New()
		if err := sim.Configure(p, nil); err != nil {
			panic(err)
		}
		return p
	}
}

// Saturation points.
//   - one-or-all (k = 32): ρ = 1 at λ = 1/(0.9/32 + 0.1) = 7.8049, which
//     MSF and First-Fit reach (Q §6); FCFS saturates at 3.0261
//     (limit.FCFSOneOrAllLimit, exact).
//   - four-class: ρ = 1 at λ = 5 (MSF, Adaptive Quickswap).
//   - Kill-Smart one-or-all (k = 2048): Kill-Smart (5, 100) saturates at
//     1.7765 (its closed form, killsmart.Saturation), FCFS at 1.4510 for
//     this k (the N → ∞ form is 1.4551; killsmart's saturation tests).
//   - Borg cell B (k = 2048): ρ = 1 at λ = 4.899 (Adaptive Quickswap is
//     throughput-optimal). Its stable side runs at λ = 4.25 (ρ = 0.87), and
//     since engine 0.7.2 also at ρ = 0.97, a scenario of its own: there its
//     number in system is a sawtooth of 10^5 jobs whose rare classes are
//     served once in several cycles — converged false in every
//     replication — which engine 0.7.1 called unstable in 3 of 10 points
//     (silent classes' deficits; docs/design.md). FCFS's saturation
//     throughput there is about 1.4–1.55 (its overloaded replications at
//     10^6 arrivals depart at 1.19–1.56, so long are its blocking cycles):
//     only known-stable rates are calibrated for it (λ = 1.2) and for MSF
//     (λ = 2.5, where issue #31 saw a replication flagged by the growth
//     test).
var (
	ksSat      = killsmart.Saturation{Ps: 0.95, MuS: 0.8, MuB: 0.1, K: 5, Nu: 100}.LambdaMax()
	fcfsOneAll = limit.FCFSOneOrAllLimit(32, 0.9, 1, 1)
)

var verdictScenarios = []verdictScenario{
	{"one-or-all MSF", "one-or-all", builtinP("msf"), 1 / (0.9/32 + 0.1), false, 0},
	{"one-or-all First-Fit", "one-or-all", builtinP("first-fit"), 1 / (0.9/32 + 0.1), false, 0},
	{"one-or-all FCFS", "one-or-all", builtinP("fcfs"), fcfsOneAll, true, 0},
	{"four-class MSF", "four-class", builtinP("msf"), 5, false, 0},
	{"four-class Adaptive Quickswap", "four-class", builtinP("adaptive-quickswap"), 5, false, 0},
	{"Kill-Smart (5,100)", "killsmart-one-or-all", func() sim.Policy { return killsmart.New(killsmart.OneOrAll, 5, 100) }, ksSat, true, 0},
	{"Kill-Smart one-or-all FCFS", "killsmart-one-or-all", builtinP("fcfs"), 1.4510, true, 0},
	{"Borg B Adaptive Quickswap", "borg-b", builtinP("adaptive-quickswap"), 0, false, 4.25},
	{"Borg B Adaptive Quickswap at 0.97", "borg-b", builtinP("adaptive-quickswap"), -1, false, 4.7517}, // 0.97 λ*; its overload is the row above
	{"Borg B MSF", "borg-b", builtinP("msf"), -1, false, 2.5},
	{"Borg B FCFS", "borg-b", builtinP("fcfs"), -1, false, 1.2},
}

// verdictPoint is one point of the calibration: reps replications pooled.
type verdictPoint struct {
	v  sim.PointVerdict
	cv sim.ConvergenceVerdict
	rs []*sim.Result
}

// runPoints runs points [first, first+n) of scenario sc at rate lambda,
// reps replications each (point p's replication r has seed p·reps + r + 1,
// so no two points share a seed), arrivals measured after a tenth of that
// in warm-up, on every core.
func runPoints(t testing.TB, sc verdictScenario, lambda float64, first, n, reps int, arrivals int64) []verdictPoint {
	t.Helper()
	w := simtest.Named(t, sc.workload, lambda)
	out, errs := runParallel(n*reps, func(i int) (*sim.Result, error) {
		seed := uint64((first+i/reps)*reps + i%reps + 1)
		return sim.Run(w, sc.policy(), sim.Config{Seed: seed, Warmup: arrivals / 10, Arrivals: arrivals})
	})
	pts := make([]verdictPoint, n)
	for p := range n {
		for _, err := range errs[p*reps : (p+1)*reps] {
			if err != nil {
				t.Fatalf("%s λ=%v: %v", sc.name, lambda, err)
			}
		}
		rs := out[p*reps : (p+1)*reps]
		v, err := sim.Pool(rs)
		if err != nil {
			t.Fatal(err)
		}
		pts[p] = verdictPoint{v: v, cv: sim.PoolConvergence(rs), rs: rs}
	}
	return pts
}
