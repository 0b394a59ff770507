package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// twoClassWide is twoClass2048 with the wide class's need set to wide
// (mean duration 128/wide, so its work per job and the load at a given
// rate are those of twoClass2048).
func twoClassWide(rate float64, wide int) *sim.Workload {
	w := twoClass2048(rate)
	w.Name = fmt.Sprintf("two-class-2048-wide-%d", wide)
	w.Classes[1].Need = wide
	w.Classes[1].Service = dist.Must(dist.NewExponential(128 / float64(wide)))
	return w
}

// BenchmarkPathChoice measures what initSRPT's criterion (the fast path
// only when no class needs more than k/4 servers) rests on:
// ServerFilling-SRPT on the fast path (forced) and on the general path, on
// workloads whose widest need is k/16, k/4, k/2 and k (two-class k = 2048
// near saturation, λ = 125), one-or-all (need k = 32, λ = 7) and Borg cell
// B (needs up to 2000 of 2048, λ = 4.5). 10^5 measured arrivals per
// replication (-benchtime=1x); compare cpu-ns/event of the two paths.
func BenchmarkPathChoice(b *testing.B) {
	cases := []struct {
		name string
		w    func(testing.TB) *sim.Workload
	}{
		{"two-class-wide=128", func(testing.TB) *sim.Workload { return twoClassWide(125, 128) }},
		{"two-class-wide=512", func(testing.TB) *sim.Workload { return twoClassWide(125, 512) }},
		{"two-class-wide=1024", func(testing.TB) *sim.Workload { return twoClassWide(125, 1024) }},
		{"two-class-wide=2048", func(testing.TB) *sim.Workload { return twoClassWide(125, 2048) }},
		{"one-or-all/lambda=7", func(t testing.TB) *sim.Workload { return simtest.Named(t, "one-or-all", 7) }},
		{"borg-b/lambda=4.5", func(t testing.TB) *sim.Workload { return simtest.Named(t, "borg-b", 4.5) }},
	}
	for _, c := range cases {
		for _, path := range []string{"fast", "general"} {
			b.Run(c.name+"/"+path, func(b *testing.B) {
				p := New(SRPTOrder, ServerFilling)
				p.forceFast = path == "fast"
				p.general = path == "general"
				benchL(b, c.w(b), p, 100000)
			})
		}
	}
}

// BenchmarkLevelsGeneral: ServerFilling-SRPT on twoClass2048 and
// ServerFilling-Gittins on twoClass2048Uniform (ranks that fall with age)
// against L on the general path, the "before" of BenchmarkLevels and
// BenchmarkLevelsMonotone, which take the fast path (-benchtime=1x).
func BenchmarkLevelsGeneral(b *testing.B) {
	for _, lv := range levelRates {
		b.Run(fmt.Sprintf("serverfilling-srpt/L=%d", lv.L), func(b *testing.B) {
			p := New(SRPTOrder, ServerFilling)
			p.general = true
			benchL(b, twoClass2048(lv.rate), p, 100000)
		})
	}
	for _, lv := range levelRates {
		b.Run(fmt.Sprintf("serverfilling-gittins-uniform/L=%d", lv.L), func(b *testing.B) {
			p := New(GittinsOrder, ServerFilling)
			p.general = true
			benchL(b, twoClass2048Uniform(lv.rate), p, 100000)
		})
	}
}
