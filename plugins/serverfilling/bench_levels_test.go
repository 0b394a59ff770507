package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// twoClass2048 is the per-event-cost workload of issue #18: k = 2048, two
// classes, need 1 (share 0.95, exponential duration of mean 10) and need
// 128 (share 0.05, mean 1); both needs divide k, so every policy of the
// family runs on it. ρ = λ·(0.95·10 + 0.05·128)/2048 = λ·15.9/2048
// (saturation at λ ≈ 128.8), and the mean number in system is about 9.5·λ
// below saturation.
func twoClass2048(rate float64) *sim.Workload {
	return &sim.Workload{Name: "two-class-2048", Servers: 2048, ArrivalRate: rate, Classes: []sim.Class{
		{Name: "narrow", Need: 1, Share: 0.95, Service: dist.Must(dist.NewExponential(10))},
		{Name: "wide", Need: 128, Share: 0.05, Service: dist.Must(dist.NewExponential(1))},
	}}
}

// levelRates are arrival rates of twoClass2048 chosen so that ServerFilling
// holds about L = 10, 100, 500, 1300, 2000, 3500 and 5000 jobs in the
// system on average (measured; the last three are past saturation, where
// the population grows through the run and L is its time average). Each
// benchmark reports the L it measured as the metric "L": the SRPT and
// Gittins orderings hold fewer jobs at the same rate.
var levelRates = []struct {
	L    int
	rate float64
}{{10, 1}, {100, 10}, {500, 52.5}, {1300, 125}, {2000, 130}, {3500, 134}, {5000, 137}}

// benchL is simtest.Bench plus the measured mean number in system.
func benchL(b *testing.B, w *sim.Workload, p sim.Policy, arrivals int64) {
	var sumL float64
	n := 0
	simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) {
		r, err := sim.Run(w, p, cfg)
		if err == nil {
			sumL += r.MeanInSystem
			n++
		}
		return r, err
	}, arrivals)
	b.ReportMetric(sumL/float64(n), "L")
}

// BenchmarkLevels: the per-event cost of every policy of the family against
// the number of jobs in system L on twoClass2048 (k = 2048), 10^5 measured
// arrivals per replication. The cost must be flat in L up to a log factor
// (issue #18). Run with -benchtime=1x: one replication is long enough.
func BenchmarkLevels(b *testing.B) {
	for _, sp := range Policies {
		if sp.Name == "divisorfilling-srpt" || sp.Name == "divisorfilling-gittins" {
			continue
		}
		for _, lv := range levelRates {
			b.Run(fmt.Sprintf("%s/L=%d", sp.Name, lv.L), func(b *testing.B) {
				benchL(b, twoClass2048(lv.rate), sp.New(), 100000)
			})
		}
	}
}

// BenchmarkLoads: the ServerFilling family on one-or-all (k = 32) at a
// stable load (λ = 4, ρ ≈ 0.52) and near saturation (λ = 7, ρ ≈ 0.91), and
// on Borg cell B (k = 2048, 26 classes) at λ = 2 (ρ ≈ 0.41) and λ = 4.5
// (ρ ≈ 0.92), 2·10^5 measured arrivals per replication.
func BenchmarkLoads(b *testing.B) {
	cases := []simtest.BenchCase{
		{Name: "one-or-all/lambda=4", Workload: "one-or-all", Rate: 4, Arrivals: 200000},
		{Name: "one-or-all/lambda=7", Workload: "one-or-all", Rate: 7, Arrivals: 200000},
		{Name: "borg-b/lambda=2", Workload: "borg-b", Rate: 2, Arrivals: 200000},
		{Name: "borg-b/lambda=4.5", Workload: "borg-b", Rate: 4.5, Arrivals: 200000},
	}
	for _, sp := range Policies[:3] {
		for _, bc := range cases {
			b.Run(sp.Name+"/"+bc.Name, func(b *testing.B) {
				benchL(b, simtest.Named(b, bc.Workload, bc.Rate), sp.New(), bc.Arrivals)
			})
		}
	}
}
