package sim_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

func named(b *testing.B, name string, rate float64) *sim.Workload {
	spec, err := workload.Named(name)
	if err != nil {
		b.Fatal(err)
	}
	w, err := spec.Build(rate)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkFCFSOneOrAll: FCFS on the one-or-all workload (k = 32) at λ = 7,
// the benchmark point. FCFS saturates at a throughput of about 3.03
// there, so the queue grows through the run (a ring buffer: the per-event
// cost stays flat).
func BenchmarkFCFSOneOrAll(b *testing.B) {
	simtest.Bench(b, named(b, "one-or-all", 7), &fcfs.FCFS{}, 1000000)
}

// BenchmarkFCFSOneOrAllStable: the same at λ = 2.5, where FCFS is stable:
// steady state, so allocations per event are the set-up's alone.
func BenchmarkFCFSOneOrAllStable(b *testing.B) {
	simtest.Bench(b, named(b, "one-or-all", 2.5), &fcfs.FCFS{}, 1000000)
}

// BenchmarkFCFSBorgB: FCFS on the 26-class Borg cell B workload (k = 2048)
// at λ = 2 (ρ ≈ 0.41), the point every policy package benchmarks; FCFS is
// past its stability limit there, so this measures the per-event cost with a
// growing queue.
func BenchmarkFCFSBorgB(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 2), &fcfs.FCFS{}, 1000000)
}

// BenchmarkFCFSBorgBStable: FCFS on Borg cell B at λ = 1, inside FCFS's
// stable region (at λ = 2 head-of-line blocking behind the 2000-core class
// makes the queue grow).
func BenchmarkFCFSBorgBStable(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 1), &fcfs.FCFS{}, 1000000)
}
