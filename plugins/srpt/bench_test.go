package srpt_test

import (
	"runtime"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// Benchmark workloads: powers-of-two at ρ = 0.5 and one-or-all at λ = 1
// (ρ = 0.128), both stable for every policy here and for FCFS (at λ = 4 the
// SRPT heuristics starve the need-32 jobs), and Borg cell B at λ = 2
// (k = 2048, 26 classes, ρ = 0.41), where GreedySRPT, FirstFit-SRPT and
// FCFS are flagged unstable (wide jobs starve or block) but still show the
// cost per event.
var benchCases = []struct {
	name     string
	workload string
	rate     float64
	arrivals int64
}{
	{"powers-of-two", "powers-of-two", 0.5 / 0.46875, 200000},
	{"one-or-all", "one-or-all", 1, 200000},
	{"borg-b", "borg-b", 2, 200000},
}

func benchPolicy(b *testing.B, mk func() sim.Policy) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			simtest.Bench(b, simtest.Named(b, bc.workload, bc.rate), mk(), bc.arrivals)
		})
	}
}

func BenchmarkGreedySRPT(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &srpt.GreedySRPT{} })
}

func BenchmarkFirstFitSRPT(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &srpt.FirstFitSRPT{} })
}

func BenchmarkFCFS(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &fcfs.FCFS{} })
}

// BenchmarkSRPT1 reports the reference model with simtest.Bench's metrics.
func BenchmarkSRPT1(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			w := simtest.Named(b, bc.workload, bc.rate)
			var events uint64
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := srpt.RunSRPT1(w, sim.Config{Seed: uint64(i + 1), Warmup: bc.arrivals / 10, Arrivals: bc.arrivals})
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(events), "allocs/event")
		})
	}
}
