package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// expMix is a random workload of exponential classes (constant Gittins
// ranks: the static path) at load rho: k servers, n classes whose needs
// are drawn from needs and whose means from a few values, so that keys
// (need/k × mean) tie within and across needs and several classes share a
// need; shares uneven, so that some buckets are empty most of the time.
func expMix(name string, k, n int, needs []int, rho float64, seed uint64) *sim.Workload {
	r := rng.New(seed, 7)
	means := []float64{0.25, 0.5, 1, 2, 4}
	w := &sim.Workload{Name: name, Servers: k}
	for i := range n {
		w.Classes = append(w.Classes, sim.Class{
			Name:    fmt.Sprintf("c%d", i),
			Need:    needs[r.IntN(len(needs))],
			Share:   0.05 + r.Float64()*r.Float64(),
			Service: must(dist.NewExponential(means[r.IntN(len(means))])),
		})
	}
	atLoad(w, rho)
	return w
}

// TestStaticPathExact: ServerFilling-Gittins on the static path (static.go:
// decisions from the first bucket whose count changed, stopping where the
// servers left match the last decision's; only occupied buckets visited)
// takes exactly the decisions of the general path (exhaustive), event for
// event, under both packing readings: Borg cell B at issue #35's load
// (ρ = 0.95) and at saturation, one-or-all, and random exponential mixes
// with tied keys, classes sharing a need and more than 64 distinct needs
// (the occupied buckets' bitset spans words), below and past saturation.
func TestStaticPathExact(t *testing.T) { staticPathCases(t, 4, 1) }

// staticPathCases runs TestStaticPathExact's comparisons over seeds random
// mixes of each kind, every run scale times its default length.
func staticPathCases(t *testing.T, seeds int, scale int64) {
	many := make([]int, 0, 150)
	for n := 1; n <= 150; n++ {
		many = append(many, n)
	}
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	wls := []wl{
		{namedWorkload(t, "borg-b", 4.65378), 20000},
		{namedWorkload(t, "borg-b", 4.9), 20000},
		{namedWorkload(t, "one-or-all", 7), 40000},
		{expTies(), 40000},
	}
	if scale > 1 {
		wls = append(wls, wl{namedWorkload(t, "borg-b", 4.5), 20000}, wl{namedWorkload(t, "borg-b", 4.75), 20000},
			wl{namedWorkload(t, "one-or-all", 4), 40000})
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		wls = append(wls,
			wl{expMix(fmt.Sprintf("mix-12-%d", seed), 12, 6, []int{1, 2, 3, 4, 5, 6, 12}, 0.95, seed), 20000},
			wl{expMix(fmt.Sprintf("mix-64-%d", seed), 64, 10, []int{1, 2, 3, 8, 16, 30, 33, 64}, 1.05, seed), 20000},
			wl{expMix(fmt.Sprintf("mix-300-%d", seed), 300, 120, many, 0.97, seed), 10000})
	}
	for _, x := range wls {
		for _, packing := range []Packing{PackStop, PackSkip} {
			t.Run(fmt.Sprintf("%s@%.4g/packing=%d", x.w.Name, x.w.ArrivalRate, packing), func(t *testing.T) {
				t.Parallel()
				got, ref := New(GittinsOrder, ServerFilling), New(GittinsOrder, ServerFilling)
				got.packing, ref.packing = packing, packing
				ref.exhaustive = true
				n := x.arrivals * scale
				if testing.Short() {
					n /= 5
				}
				cfg := sim.Config{Seed: 5, Warmup: n / 10, Arrivals: n, MaxInSystem: 20000}
				simtest.SameTrace(t, x.w.Name, x.w, ref, got, cfg)
				if !got.static || ref.static {
					t.Fatalf("%s: static path %v, reference %v", x.w.Name, got.static, ref.static)
				}
			})
		}
	}
}
