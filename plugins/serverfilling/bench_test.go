package serverfilling

import (
	"math/bits"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// borgBPow2 is Borg cell B (K Table 1) with every need rounded up to a power
// of two (2000 → 2048), so that the DivisorFilling policies, which need
// divisors of k = 2048, have a k = 2048 benchmark too.
func borgBPow2(t testing.TB, rate float64) *sim.Workload {
	w := namedWorkload(t, "borg-b", rate)
	for i := range w.Classes {
		if n := w.Classes[i].Need; n&(n-1) != 0 {
			w.Classes[i].Need = 1 << bits.Len(uint(n))
		}
	}
	w.Name = "borg-b-pow2"
	return w
}

// BenchmarkPolicies: every policy of the family and FCFS, 10^6 measured
// arrivals per replication, on
//   - powers-of-two (S Fig. 3, k = 8) at ρ = 0.9 (λ = 1.92);
//   - one-or-all (Q §6.2, k = 32) at λ = 7 (ρ ≈ 0.9; FCFS is unstable there);
//   - borg-b (k = 2048, 26 classes) at λ = 2 (ServerFilling only: the needs
//     do not divide 2048);
//   - borg-b-pow2 at λ = 2 (needs rounded up to powers of two: every policy).
func BenchmarkPolicies(b *testing.B) {
	type wl struct {
		name string
		mk   func(b *testing.B) *sim.Workload
		df   bool
	}
	for _, x := range []wl{
		{"powers-of-two", func(b *testing.B) *sim.Workload { return namedWorkload(b, "powers-of-two", p2Rate(0.9)) }, true},
		{"one-or-all", func(b *testing.B) *sim.Workload { return namedWorkload(b, "one-or-all", 7) }, true},
		{"borg-b", func(b *testing.B) *sim.Workload { return namedWorkload(b, "borg-b", 2) }, false},
		{"borg-b-pow2", func(b *testing.B) *sim.Workload { return borgBPow2(b, 2) }, true},
	} {
		b.Run(x.name+"/fcfs", func(b *testing.B) { simtest.Bench(b, x.mk(b), &fcfs.FCFS{}, 1000000) })
		for _, sp := range Policies {
			p := sp.New().(*Policy)
			if p.proc == DivisorFilling && !x.df {
				continue
			}
			b.Run(x.name+"/"+sp.Name, func(b *testing.B) { simtest.Bench(b, x.mk(b), p, 1000000) })
		}
	}
}
