package sim_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/workload"
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
// at λ = 2.
func BenchmarkFCFSBorgB(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 2), &fcfs.FCFS{}, 1000000)
}
