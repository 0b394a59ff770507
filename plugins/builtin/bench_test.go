package builtin_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// catalogCases are the workloads of BenchmarkCatalog: the two workloads the
// papers' comparisons turn on, each at a stable load and near saturation,
// as fractions ρ of the work-conserving bound (λ·E[need·size]/k):
//
//   - one-or-all (k = 32, p₁ = 0.9): ρ = 0.5 is λ ≈ 3.9, ρ = 0.9 is λ ≈ 7.0
//     (the MSF and ServerFilling rows);
//   - Borg cell B (k = 2048, 26 classes): ρ = 0.5 is λ ≈ 2.4, ρ = 0.92 is
//     λ ≈ 4.5 (the Adaptive Quickswap row).
//
// A policy that is not stable at the higher load (FCFS on both) runs with a
// growing queue, which is the "unstable FCFS queue" row of the issue; the
// cap below keeps such a run finite for policies whose per-event cost grows
// with the queue.
var catalogCases = []struct {
	name, workload string
	rho            float64
}{
	{"one-or-all/rho=0.50", "one-or-all", 0.50},
	{"one-or-all/rho=0.90", "one-or-all", 0.90},
	{"borg-b/rho=0.50", "borg-b", 0.50},
	{"borg-b/rho=0.92", "borg-b", 0.92},
}

// benchCap bounds the jobs in system of a benchmark run: a run that reaches
// it ends early (truncated), and events/s is still the per-event cost at
// that queue length.
const benchCap = 20000

// quadratic lists the policies whose per-event cost is quadratic in the
// queue by definition, with the factor by which their runs on Borg cell B
// are shortened so that `make bench` stays within minutes: conservative
// backfilling re-places every reservation at every event, O(Q·(R+Q)) (see
// plugins/backfill), measured at about 1.7 ms per event on Borg cell B at
// ρ = 0.92 where EASY costs 250 ns.
var quadratic = map[string]int64{"conservative-backfill": 50}

// benchArrivals is the run length of one benchmark replication;
// MSJFARM_BENCH_ARRIVALS overrides it (the comparison used 10^6).
func benchArrivals(b *testing.B) int64 {
	if s := os.Getenv("MSJFARM_BENCH_ARRIVALS"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("MSJFARM_BENCH_ARRIVALS=%q: want a positive integer", s)
		}
		return n
	}
	return 100000
}

// rateAt is the arrival rate at which spec offers load rho: the load is
// linear in the rate, so one build at rate 1 gives the factor.
func rateAt(b testing.TB, name string, rho float64) float64 {
	spec, err := workload.Named(name)
	if err != nil {
		b.Fatal(err)
	}
	w, err := spec.Build(1)
	if err != nil {
		b.Fatal(err)
	}
	return rho / w.Load()
}

// BenchmarkCatalog runs every built-in policy and reference model, with its
// default parameters, on each of catalogCases: `make bench` runs it, and
// benchstat compares two runs row by row (ns/event, events/s). A policy
// that does not apply to a workload (Kill-Smart's configurations, say) is
// skipped with the reason its own check gives.
func BenchmarkCatalog(b *testing.B) {
	arrivals := benchArrivals(b)
	for _, c := range catalogCases {
		rate := rateAt(b, c.workload, c.rho)
		w := simtest.Named(b, c.workload, rate)
		for _, e := range builtin.All() {
			b.Run(fmt.Sprintf("%s/%s", c.name, e.Name), func(b *testing.B) {
				if err := (builtin.Catalog{}).CheckWorkload(e.Name, nil, w); err != nil {
					b.Skipf("%s does not apply to %s: %v", e.Name, c.workload, err)
				}
				n := arrivals
				if f := quadratic[e.Name]; f > 0 && c.workload == "borg-b" {
					n = max(arrivals/f, 1000)
				}
				simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) {
					cfg.MaxInSystem = benchCap
					if e.Reference != nil {
						return e.Reference(w, cfg)
					}
					return sim.RunFresh(w, func() (sim.Policy, error) { return e.New(), nil }, cfg)
				}, n)
			})
		}
	}
}

// BenchmarkBacklog is FCFS over one-or-all at λ = 7 with no cap on the jobs
// in system: 1.33·10^6 arrivals (plus warm-up and the drain limit's
// arrivals) with a queue that grows the whole run, to 8·10^5 jobs. It is the
// "unstable FCFS queue" row of the side-by-side comparison with the C++
// simulator: what it measures is the path of a growing backlog, parking
// and unparking jobs (sdk.ParkingFIFO). (Adding it to the PGO profile was
// tried: no faster.)
func BenchmarkBacklog(b *testing.B) {
	w := simtest.Named(b, "one-or-all", 7)
	e, err := builtin.Lookup("fcfs")
	if err != nil {
		b.Fatal(err)
	}
	simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) {
		return sim.RunFresh(w, func() (sim.Policy, error) { return e.New(), nil }, cfg)
	}, 1330000)
}
