package serverfilling

import (
	"fmt"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// BenchmarkLoadsDivisor is BenchmarkLoads for the DivisorFilling members
// beside ServerFilling, 2·10^5 measured arrivals per replication, on
// one-or-all (k = 32) at λ = 4 and λ = 7 (the rate of issue #35) and on
// Borg cell B with its needs rounded up to powers of two (borgBPow2) at
// ρ = 0.95: Borg cell B itself is not among them, since its needs (3, 5,
// 2000, ...) do not all divide k = 2048, which DivisorFilling requires.
func BenchmarkLoadsDivisor(b *testing.B) {
	type wl struct {
		name string
		mk   func(b *testing.B) *sim.Workload
	}
	cases := []wl{
		{"one-or-all/lambda=4", func(b *testing.B) *sim.Workload { return simtest.Named(b, "one-or-all", 4) }},
		{"one-or-all/lambda=7", func(b *testing.B) *sim.Workload { return simtest.Named(b, "one-or-all", 7) }},
		{"borg-b-pow2/rho=0.95", func(b *testing.B) *sim.Workload {
			w := borgBPow2(b, 1)
			return borgBPow2(b, 0.95/w.Load())
		}},
	}
	for _, sp := range Policies {
		if sp.Name != "serverfilling" && !strings.HasPrefix(sp.Name, "divisorfilling") {
			continue
		}
		for _, c := range cases {
			b.Run(sp.Name+"/"+c.name, func(b *testing.B) {
				benchL(b, c.mk(b), sp.New(), 200000)
			})
		}
	}
}

// BenchmarkMoveFloorDivisor is BenchmarkMoveFloor on borgBPow2 at ρ = 0.95,
// where the DivisorFilling members run (5·10^4 measured arrivals: the SRPT
// and Gittins orders preempt over 100 times per arrival there): each
// policy and (floor/…) the replay of its recorded moves.
func BenchmarkMoveFloorDivisor(b *testing.B) {
	w0 := borgBPow2(b, 1)
	w := borgBPow2(b, 0.95/w0.Load())
	const arrivals = 50000
	for _, sp := range Policies {
		if sp.Name != "serverfilling" && !strings.HasPrefix(sp.Name, "divisorfilling") {
			continue
		}
		cfg := sim.Config{Seed: 1, Warmup: arrivals / 10, Arrivals: arrivals}
		b.Run("borg-b-pow2/rho=0.95/"+sp.Name, func(b *testing.B) {
			benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, sp.New(), cfg) })
		})
		_, ms := recordMoves(b, w, sp.New(), cfg)
		b.Run("borg-b-pow2/rho=0.95/floor/"+sp.Name, func(b *testing.B) {
			rp := &movesReplay{ms: ms}
			benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
			if rp.err != nil {
				b.Fatal(rp.err)
			}
		})
	}
}

// manyClassWorkload has nc exponential classes on the needs 1, 2, ..., 2048
// of k = 2048 (one class per need first, then needs drawn at random),
// those above 64 rare, at load rho.
func manyClassWorkload(nc int, rho float64) *sim.Workload {
	r := rng.New(5, 5)
	const k = 2048
	needs := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}
	w := &sim.Workload{Name: fmt.Sprintf("classes-%d", nc), Servers: k}
	var work, total float64
	for i := range nc {
		n := needs[r.IntN(len(needs))]
		if i < len(needs) {
			n = needs[i]
		}
		share := 0.05 + r.Float64()
		if n > 64 {
			share *= 0.01
		}
		mean := 0.5 + 3*r.Float64()
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("c%d", i), Need: n, Share: share, Service: must(dist.NewExponential(mean))})
		work += share * float64(n) * mean
		total += share
	}
	w.ArrivalRate = rho * float64(k) * total / work
	return w
}

// BenchmarkDivisorGittinsClasses: DivisorFilling-Gittins on the divisor
// path with a bucket per class (classBuckets) against the general path, by
// the number of classes sharing k = 2048's 12 power-of-two needs, at
// ρ = 0.95, 2·10^4 measured arrivals: where maxClassBuckets comes from.
func BenchmarkDivisorGittinsClasses(b *testing.B) {
	for _, nc := range []int{12, 64, 200, 300, 700, 1000} {
		for _, general := range []bool{false, true} {
			b.Run(fmt.Sprintf("classes=%d/general=%v", nc, general), func(b *testing.B) {
				p := New(GittinsOrder, DivisorFilling)
				p.general = general
				p.forceClassBuckets = !general
				benchL(b, manyClassWorkload(nc, 0.95), p, 20000)
			})
		}
	}
}
