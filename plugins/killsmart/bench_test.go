package killsmart

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// Benchmarks: Kill-Smart against FCFS on the same workloads and rates, 10^6
// measured arrivals per replication.
//
// killsmart-one-or-all (N = 2048): at λ = 1.3 both policies are stable (FCFS
// up to 1.455); at λ = 1.6 only Kill-Smart is (its limit is 1.92 with the
// defaults K = 21, ν = 102), and FCFS's queue grows through the run.

func BenchmarkKillSmartKSOneOrAll13(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.3), New(OneOrAll, DefaultKOneOrAll, -1), 1000000)
}

func BenchmarkFCFSKSOneOrAll13(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.3), &fcfs.FCFS{}, 1000000)
}

func BenchmarkKillSmartKSOneOrAll16(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.6), New(OneOrAll, DefaultKOneOrAll, -1), 1000000)
}

func BenchmarkKillSmartK7Nu19KSOneOrAll16(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.6), New(OneOrAll, 7, 19), 1000000)
}

func BenchmarkFCFSKSOneOrAll16(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.6), &fcfs.FCFS{}, 1000000)
}

// Quickswap's one-or-all (k = 32) at λ = 2.5, stable for both.

func BenchmarkKillSmartOneOrAll(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "one-or-all", 2.5), New(OneOrAll, DefaultKOneOrAll, -1), 1000000)
}

func BenchmarkFCFSOneOrAll(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "one-or-all", 2.5), &fcfs.FCFS{}, 1000000)
}

// Borg cell B (26 classes, k = 2048) at λ = 2: FCFS is past its stability
// limit there (queue growing); Kill-Smart with the defaults K = 5, ν = 512
// too, more slowly.

func BenchmarkKillSmartMultiClassBorgB(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "borg-b", 2), New(MultiClass, DefaultKMultiClass, -1), 1000000)
}

func BenchmarkFCFSBorgB(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "borg-b", 2), &fcfs.FCFS{}, 1000000)
}

// The multi-class policy on the one-or-all workload, for its per-event cost
// where kills are frequent.
func BenchmarkKillSmartMultiClassKSOneOrAll16(b *testing.B) {
	simtest.Bench(b, simtest.Named(b, "killsmart-one-or-all", 1.6), New(MultiClass, DefaultKOneOrAll, -1), 1000000)
}
