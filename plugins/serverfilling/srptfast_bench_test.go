package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// twoClassWide is twoClass2048 with k servers and the wide class's need
// set to wide (mean duration 128/wide, so its work per job is that of
// twoClass2048), at ρ = 0.97 (λ = 0.97·k/15.9; k = 2048: λ ≈ 125, L ≈ 1300
// under arrival order).
func twoClassWide(k, wide int) *sim.Workload {
	w := twoClass2048(0.97 * float64(k) / 15.9)
	w.Name = fmt.Sprintf("two-class-%d-wide-%d", k, wide)
	w.Servers = k
	w.Classes[1].Need = wide
	w.Classes[1].Service = dist.Must(dist.NewExponential(128 / float64(wide)))
	return w
}

// BenchmarkPathChoice measures what initSRPT's criterion (the fast path
// only when no class needs more than k/2 servers) rests on:
// ServerFilling-SRPT on the fast path (forced) and on the general path, on
// two-class workloads (need 1 and a wide need, ρ = 0.97) whose widest need
// is k/16, k/4, k/2 and k at k = 2048, and k/4 and k/2 at k = 256 and 32,
// one-or-all (need k = 32, λ = 7) and Borg cell
// B (needs up to 2000 of 2048, λ = 4.5). 10^5 measured arrivals per
// replication (-benchtime=1x); compare cpu-ns/event of the paths. Where a
// class is wider than k/2, "fast" is the treaps (forceTreap) and "slices"
// the path taken there (srptwide.go).
func BenchmarkPathChoice(b *testing.B) {
	cases := []struct {
		name string
		w    func(testing.TB) *sim.Workload
	}{
		{"k=2048/wide=128", func(testing.TB) *sim.Workload { return twoClassWide(2048, 128) }},
		{"k=2048/wide=512", func(testing.TB) *sim.Workload { return twoClassWide(2048, 512) }},
		{"k=2048/wide=1024", func(testing.TB) *sim.Workload { return twoClassWide(2048, 1024) }},
		{"k=2048/wide=2048", func(testing.TB) *sim.Workload { return twoClassWide(2048, 2048) }},
		{"k=256/wide=64", func(testing.TB) *sim.Workload { return twoClassWide(256, 64) }},
		{"k=256/wide=128", func(testing.TB) *sim.Workload { return twoClassWide(256, 128) }},
		{"k=32/wide=8", func(testing.TB) *sim.Workload { return twoClassWide(32, 8) }},
		{"k=32/wide=16", func(testing.TB) *sim.Workload { return twoClassWide(32, 16) }},
		{"one-or-all/lambda=7", func(t testing.TB) *sim.Workload { return simtest.Named(t, "one-or-all", 7) }},
		{"borg-b/lambda=4.5", func(t testing.TB) *sim.Workload { return simtest.Named(t, "borg-b", 4.5) }},
	}
	for _, c := range cases {
		w := c.w(b)
		paths := []string{"fast", "general"}
		if widestNeed(w) > w.Servers/2 {
			paths = append(paths, "slices")
		}
		for _, path := range paths {
			b.Run(c.name+"/"+path, func(b *testing.B) {
				p := New(SRPTOrder, ServerFilling)
				p.forceFast = path == "fast"
				p.forceTreap = path == "fast"
				p.general = path == "general"
				benchL(b, w, p, 100000)
			})
		}
	}
}

// BenchmarkLevelsGeneral: ServerFilling-SRPT on twoClass2048,
// ServerFilling-Gittins on twoClass2048Uniform (ranks that fall with age)
// and on twoClass2048H2 (ranks that rise with age) against L on the
// general path, the "before" of BenchmarkLevels, BenchmarkLevelsMonotone
// and BenchmarkLevelsH2, which take the fast paths (-benchtime=1x).
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
	for _, lv := range levelRates {
		b.Run(fmt.Sprintf("serverfilling-gittins-h2/L=%d", lv.L), func(b *testing.B) {
			p := New(GittinsOrder, ServerFilling)
			p.general = true
			benchL(b, twoClass2048H2(lv.rate), p, 100000)
		})
	}
}

// widestNeed is the largest need of w's classes.
func widestNeed(w *sim.Workload) int {
	m := 0
	for _, c := range w.Classes {
		m = max(m, c.Need)
	}
	return m
}
