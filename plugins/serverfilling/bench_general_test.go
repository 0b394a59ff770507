package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// The members issue #35 leaves on the general O(|M|) path: Gittins ranks
// from a rank table that is not monotone in age (bounded Pareto, lognormal
// durations), and DivisorFilling-SRPT and -Gittins when k has a prime
// factor ≥ 5. These benchmarks measure what that path costs against L and
// on the named workloads that reach it (design.md, issue #35).

// twoClass2048BPareto is twoClass2048 with bounded-Pareto durations of the
// same means, α = 2 and upper bound 12000 × the mean (the named
// *-bpareto workloads' law, workload.BoundedPareto): its rank table falls
// before the lower bound, rises over the body and falls again near the
// upper bound, so ServerFilling-Gittins takes the general path.
func twoClass2048BPareto(rate float64) *sim.Workload {
	w := twoClass2048(rate)
	w.Name = "two-class-2048-bpareto"
	for i := range w.Classes {
		m := w.Classes[i].Service.Mean()
		w.Classes[i].Service = dist.Must(dist.NewBoundedParetoMean(2, m, 12000*m))
	}
	return w
}

// twoClass2048Lognormal is twoClass2048 with lognormal durations of the
// same means and C² = 4: the rank falls, then rises in the tail.
func twoClass2048Lognormal(rate float64) *sim.Workload {
	w := twoClass2048(rate)
	w.Name = "two-class-2048-lognormal"
	for i := range w.Classes {
		w.Classes[i].Service = dist.Must(dist.NewLognormal(w.Classes[i].Service.Mean(), 4))
	}
	return w
}

// twoClass1920 is twoClass2048 at k = 1920 = 2^7·3·5 (largest prime
// factor 5: DivisorFilling-SRPT and -Gittins take the general path), the
// rate scaled by 1920/2048 so that a rate of levelRates gives the same
// load.
func twoClass1920(rate float64) *sim.Workload {
	w := twoClass2048(rate * 1920 / 2048)
	w.Name, w.Servers = "two-class-1920", 1920
	return w
}

// onGeneralPath reports whether p, after a run, took the general path.
func onGeneralPath(p *Policy) bool {
	return p.pl == nil && p.df == nil && p.ds == nil && p.gr == nil && !p.static && !p.fastSRPT
}

// benchGeneral is benchL for a policy that must take the general path.
func benchGeneral(b *testing.B, w *sim.Workload, p *Policy, arrivals int64) {
	benchL(b, w, p, arrivals)
	if !onGeneralPath(p) {
		b.Fatalf("%s: not on the general path", w.Name)
	}
}

// levelRatesGeneral are the rates of levelRates that give ServerFilling
// L ≈ 10, 1300 and 5000 jobs (issue #35's sweep).
var levelRatesGeneral = []struct {
	L    int
	rate float64
}{{10, 1}, {500, 52.5}, {1300, 125}, {5000, 137}}

// BenchmarkLevelsGeneralPath: the members still on the general path
// against L at k = 2048 (k = 1920 for the DivisorFilling members, whose
// general path here is due to k's prime factor 5), 10^5 measured arrivals
// per replication (-benchtime=1x).
func BenchmarkLevelsGeneralPath(b *testing.B) {
	type mix struct {
		name string
		o    Order
		proc Procedure
		mk   func(float64) *sim.Workload
	}
	mixes := []mix{
		{"serverfilling-gittins/bpareto", GittinsOrder, ServerFilling, twoClass2048BPareto},
		{"serverfilling-gittins/lognormal", GittinsOrder, ServerFilling, twoClass2048Lognormal},
		{"divisorfilling-gittins/bpareto", GittinsOrder, DivisorFilling, twoClass2048BPareto},
		{"divisorfilling-srpt/k=1920", SRPTOrder, DivisorFilling, twoClass1920},
		{"divisorfilling-gittins/k=1920", GittinsOrder, DivisorFilling, twoClass1920},
	}
	for _, m := range mixes {
		for _, lv := range levelRatesGeneral {
			b.Run(fmt.Sprintf("%s/L=%d", m.name, lv.L), func(b *testing.B) {
				benchGeneral(b, m.mk(lv.rate), New(m.o, m.proc), 100000)
			})
		}
	}
}

// BenchmarkNamedGeneralPath: the named workloads on which a member takes
// the general path, at ρ = 0.9, 0.95 and 0.98 (and ServerFilling or
// DivisorFilling beside them), 10^5 measured arrivals per replication
// (-benchtime=1x): the L they reach is the metric "L".
func BenchmarkNamedGeneralPath(b *testing.B) {
	cases := []struct {
		wl       string
		general  []string // members on the general path there
		baseline string
	}{
		{"borg-b-bpareto", []string{"serverfilling-gittins"}, "serverfilling"},
		{"borg-e-bpareto", []string{"serverfilling-gittins"}, "serverfilling"},
		{"killsmart-one-or-all-bpareto", []string{"serverfilling-gittins", "divisorfilling-gittins"}, "serverfilling"},
		{"four-class", []string{"divisorfilling-srpt", "divisorfilling-gittins"}, "divisorfilling"},
	}
	for _, c := range cases {
		for _, rho := range []float64{0.9, 0.95, 0.98} {
			w := simtest.Named(b, c.wl, 1)
			w = simtest.Named(b, c.wl, rho/w.Load())
			for _, name := range append([]string{c.baseline}, c.general...) {
				b.Run(fmt.Sprintf("%s/rho=%g/%s", c.wl, rho, name), func(b *testing.B) {
					p := newNamed(b, name)
					if name == c.baseline {
						benchL(b, w, p, 100000)
						return
					}
					benchGeneral(b, w, p, 100000)
				})
			}
		}
	}
}

// newNamed returns a new policy of the family by name.
func newNamed(b *testing.B, name string) *Policy {
	for _, sp := range Policies {
		if sp.Name == name {
			return sp.New().(*Policy)
		}
	}
	b.Fatalf("no policy %s", name)
	return nil
}

// BenchmarkMoveFloorGeneralPath is BenchmarkMoveFloor for the members on
// the general path: each policy and (floor/…) the replay of its recorded
// starts and preemptions, on the named workloads at ρ = 0.95 and on the
// L sweep's mixes at the L = 1300 and 5000 rates, 2·10^4 measured arrivals.
func BenchmarkMoveFloorGeneralPath(b *testing.B) {
	type fc struct {
		name, policy string
		w            func(b *testing.B) *sim.Workload
	}
	named := func(wl string) func(b *testing.B) *sim.Workload {
		return func(b *testing.B) *sim.Workload {
			w := simtest.Named(b, wl, 1)
			return simtest.Named(b, wl, 0.95/w.Load())
		}
	}
	mix := func(mk func(float64) *sim.Workload, rate float64) func(b *testing.B) *sim.Workload {
		return func(*testing.B) *sim.Workload { return mk(rate) }
	}
	cases := []fc{
		{"borg-b-bpareto/rho=0.95", "serverfilling-gittins", named("borg-b-bpareto")},
		{"borg-e-bpareto/rho=0.95", "serverfilling-gittins", named("borg-e-bpareto")},
		{"killsmart-one-or-all-bpareto/rho=0.95", "serverfilling-gittins", named("killsmart-one-or-all-bpareto")},
		{"killsmart-one-or-all-bpareto/rho=0.95", "divisorfilling-gittins", named("killsmart-one-or-all-bpareto")},
		{"four-class/rho=0.95", "divisorfilling-srpt", named("four-class")},
		{"four-class/rho=0.95", "divisorfilling-gittins", named("four-class")},
		{"bpareto/L=1300", "serverfilling-gittins", mix(twoClass2048BPareto, 125)},
		{"bpareto/L=5000", "serverfilling-gittins", mix(twoClass2048BPareto, 137)},
		{"k=1920/L=1300", "divisorfilling-srpt", mix(twoClass1920, 125)},
		{"k=1920/L=5000", "divisorfilling-srpt", mix(twoClass1920, 137)},
		{"k=1920/L=5000", "divisorfilling-gittins", mix(twoClass1920, 137)},
	}
	const arrivals = 20000
	cfg := sim.Config{Seed: 1, Warmup: arrivals / 10, Arrivals: arrivals}
	for _, c := range cases {
		w := c.w(b)
		b.Run(c.name+"/"+c.policy, func(b *testing.B) {
			benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, newNamed(b, c.policy), cfg) })
		})
		_, ms := recordMoves(b, w, newNamed(b, c.policy), cfg)
		b.Run(c.name+"/floor/"+c.policy, func(b *testing.B) {
			rp := &movesReplay{ms: ms}
			benchCPU(b, func() (*sim.Result, error) { return sim.Run(w, rp, cfg) })
			if rp.err != nil {
				b.Fatal(rp.err)
			}
		})
	}
}
