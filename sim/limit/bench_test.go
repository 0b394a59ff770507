package limit_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// BenchmarkLimitFCFSOneOrAll finds FCFS's λ_max on one-or-all (k = 32,
// p1 = 0.9; exact 3.0261) to ±1%: bracket [2, 4], RelTol 0.02 (the
// estimate is within 1% of both ends), 3 replications per rate, and runs of
// 5·10^6 arrivals so that the growth test's resolution (2.25% at 10^6
// arrivals, falling as 1/√length) is 1%. One iteration is one whole
// search; it reports the bracket and the estimate's relative error.
//
//	go test ./sim/limit -run '^$' -bench LimitFCFSOneOrAll -benchtime 1x
//
// Measured: 26.2 s wall on 2 cores (shared, load about 4), 24 runs,
// bracket [3.018, 3.051], estimate +0.29% from the exact 3.0261.
func BenchmarkLimitFCFSOneOrAll(b *testing.B) {
	const arrivals = 5000000
	want := limit.FCFSOneOrAllLimit(32, 0.9, 1, 1)
	var l *limit.Limit
	for b.Loop() {
		var err error
		l, err = limit.Search(func(lambda float64, rep int) (*sim.Result, error) {
			return sim.Run(simtest.Named(b, "one-or-all", lambda), &fcfs.FCFS{}, sim.Config{Seed: uint64(rep + 1), Warmup: arrivals / 10, Arrivals: arrivals})
		}, limit.Options{Lo: 2, Hi: 4, Reps: 3, RelTol: 0.02})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(l.Lo, "lo")
	b.ReportMetric(l.Hi, "hi")
	b.ReportMetric(100*(l.Estimate/want-1), "%err")
	b.ReportMetric(float64(l.Runs), "runs")
}
