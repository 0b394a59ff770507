package maxweight_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// Benchmark workloads: powers-of-two at ρ = 0.5, one-or-all at λ = 1
// (ρ = 0.128) and Borg cell B at λ = 2 (k = 2048, 26 classes, ρ = 0.41,
// inside the default max_servers = 4096; MaxWeight is stable there,
// maxweight-np and FCFS are flagged unstable). The same cases as
// plugins/srpt's benchmarks, so the figures compare.
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

func BenchmarkMaxWeight(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &maxweight.MaxWeight{} })
}

func BenchmarkMaxWeightNP(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &maxweight.Myopic{} })
}

func BenchmarkFCFS(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &fcfs.FCFS{} })
}
