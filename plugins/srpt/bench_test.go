package srpt_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/srpt"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// benchPolicy benchmarks a policy on simtest.SmallCases (shared with the
// other preemptive packages so the figures compare; GreedySRPT,
// FirstFit-SRPT, maxweight-np and FCFS are flagged unstable on Borg cell B
// at λ = 2, MaxWeight is stable there).
func benchPolicy(b *testing.B, mk func() sim.Policy) {
	simtest.BenchCases(b, simtest.SmallCases, mk)
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
	for _, bc := range simtest.SmallCases {
		b.Run(bc.Name, func(b *testing.B) {
			w := simtest.Named(b, bc.Workload, bc.Rate)
			simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) { return srpt.RunSRPT1(w, cfg) }, bc.Arrivals)
		})
	}
}
