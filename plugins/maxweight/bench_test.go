package maxweight_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/maxweight"
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

func BenchmarkMaxWeight(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &maxweight.MaxWeight{} })
}

func BenchmarkMaxWeightNP(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &maxweight.Myopic{} })
}

func BenchmarkFCFS(b *testing.B) {
	benchPolicy(b, func() sim.Policy { return &fcfs.FCFS{} })
}
