package serverfilling

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// twoClass2048 is the per-event-cost workload of issue #18: k = 2048, two
// classes, need 1 (share 0.95, exponential duration of mean 10) and need
// 128 (share 0.05, mean 1); both needs divide k, so every policy of the
// family runs on it. ρ = λ·(0.95·10 + 0.05·128)/2048 = λ·15.9/2048
// (saturation at λ ≈ 128.8), and the mean number in system is about 9.5·λ
// below saturation.
func twoClass2048(rate float64) *sim.Workload {
	return &sim.Workload{Name: "two-class-2048", Servers: 2048, ArrivalRate: rate, Classes: []sim.Class{
		{Name: "narrow", Need: 1, Share: 0.95, Service: dist.Must(dist.NewExponential(10))},
		{Name: "wide", Need: 128, Share: 0.05, Service: dist.Must(dist.NewExponential(1))},
	}}
}

// levelRates are arrival rates of twoClass2048 chosen so that ServerFilling
// holds about L = 10, 100, 500, 1300, 2000, 3500 and 5000 jobs in the
// system on average (measured; the last three are past saturation, where
// the population grows through the run and L is its time average). Each
// benchmark reports the L it measured as the metric "L": the SRPT and
// Gittins orderings hold fewer jobs at the same rate.
var levelRates = []struct {
	L    int
	rate float64
}{{10, 1}, {100, 10}, {500, 52.5}, {1300, 125}, {2000, 130}, {3500, 134}, {5000, 137}}

// countChanges makes benchL count, rather than time, what the policy does
// per event (-changes on the test binary; .ci/bench-sizebased.sh runs each
// row once so).
var countChanges = flag.Bool("changes", false, "benchL: report changes/event (the starts, preemptions and completions per engine event, counted through the trace) instead of timing")

// benchL is simtest.Bench plus the measured mean number in system and the
// process CPU time per event (user + system, getrusage): on a machine shared
// with other work the wall-clock ns/event grows with the load, the CPU time
// much less, so old-and-new comparisons use cpu-ns/event.
//
// With -changes it reports instead changes/event: the jobs started,
// preempted or completed per engine event over the whole run, warm-up
// included (the runs are seeded, so one replication gives the figure).
// Each change is at least an engine call and a move in the policy's
// structures, so where one policy makes many more changes per event than
// another, no implementation of it can cost as little per event: issue
// #35's DivisorFilling-SRPT on borg-b-pow2 makes 144 per event where
// ServerFilling makes 3.3. The counting observer costs time of its own,
// so its runs are not timed.
func benchL(b *testing.B, w *sim.Workload, p sim.Policy, arrivals int64) {
	if *countChanges {
		benchChanges(b, w, p, arrivals)
		return
	}
	var sumL float64
	var events uint64
	var preempts int64
	n := 0
	cpu0 := processCPU(b)
	simtest.BenchRun(b, func(cfg sim.Config) (*sim.Result, error) {
		r, err := sim.Run(w, p, cfg)
		if err == nil {
			sumL += r.MeanInSystem
			events += r.Events
			preempts += r.Preemptions
			n++
		}
		return r, err
	}, arrivals)
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
	b.ReportMetric(sumL/float64(n), "L")
	// Preemptive policies: each preemption is an engine call and a move the
	// policy pays for (O(log n) on the tree paths), so the per-event cost
	// of a policy that preempts more at higher load grows with it: the
	// preemptions in the measurement window per measured arrival.
	b.ReportMetric(float64(preempts)/float64(int64(n)*arrivals), "preemptions/arrival")
}

// benchChanges is benchL's -changes mode.
func benchChanges(b *testing.B, w *sim.Workload, p sim.Policy, arrivals int64) {
	var changes, events uint64
	for i := 0; i < b.N; i++ {
		cfg := sim.Config{Seed: uint64(i + 1), Warmup: arrivals / 10, Arrivals: arrivals}
		cfg.Observer = func(e sim.TraceRecord) {
			if e.Kind != sim.TraceArrive {
				changes++
			}
		}
		r, err := sim.Run(w, p, cfg)
		if err != nil {
			b.Fatal(err)
		}
		events += r.Events
	}
	b.ReportMetric(float64(changes)/float64(events), "changes/event")
}

// processCPU is the process's CPU time (user + system).
func processCPU(b *testing.B) time.Duration {
	d, ok := cputime.Process()
	if !ok {
		b.Fatal("process CPU time unavailable")
	}
	return d
}

// BenchmarkLevels: the per-event cost of every policy of the family against
// the number of jobs in system L on twoClass2048 (k = 2048), 10^5 measured
// arrivals per replication. The cost must be flat in L up to a log factor
// (issue #18). Run with -benchtime=1x: one replication is long enough.
func BenchmarkLevels(b *testing.B) {
	for _, sp := range Policies {
		if sp.Name == "divisorfilling-srpt" || sp.Name == "divisorfilling-gittins" {
			continue
		}
		for _, lv := range levelRates {
			b.Run(fmt.Sprintf("%s/L=%d", sp.Name, lv.L), func(b *testing.B) {
				benchL(b, twoClass2048(lv.rate), sp.New(), 100000)
			})
		}
	}
}

// BenchmarkLoads: the ServerFilling family on one-or-all (k = 32) at a
// stable load (λ = 4, ρ ≈ 0.52) and near saturation (λ = 7, ρ ≈ 0.91), and
// on Borg cell B (k = 2048, 26 classes) at λ = 2 (ρ ≈ 0.41), λ = 4.5
// (ρ ≈ 0.92) and ρ = 0.95 (λ = 4.65378, the load of issue #35's
// comparison), 2·10^5 measured arrivals per replication. The SRPT and
// Gittins orderings preempt ten to twenty times as often per arrival as
// arrival order there (the preemptions/arrival metric), and each
// preemption is two engine calls (the preemption and the later restart):
// compare cpu-ns/event with that in view.
func BenchmarkLoads(b *testing.B) {
	cases := []simtest.BenchCase{
		{Name: "one-or-all/lambda=4", Workload: "one-or-all", Rate: 4, Arrivals: 200000},
		{Name: "one-or-all/lambda=7", Workload: "one-or-all", Rate: 7, Arrivals: 200000},
		{Name: "borg-b/lambda=2", Workload: "borg-b", Rate: 2, Arrivals: 200000},
		{Name: "borg-b/lambda=4.5", Workload: "borg-b", Rate: 4.5, Arrivals: 200000},
		{Name: "borg-b/rho=0.95", Workload: "borg-b", Rate: 4.65378, Arrivals: 200000},
	}
	for _, sp := range Policies[:3] {
		for _, bc := range cases {
			b.Run(sp.Name+"/"+bc.Name, func(b *testing.B) {
				benchL(b, simtest.Named(b, bc.Workload, bc.Rate), sp.New(), bc.Arrivals)
			})
		}
	}
}

// twoClass2048H2 is twoClass2048 with hyperexponential durations (same
// means, C² = 10): the Gittins ranks then rise with age, so
// ServerFilling-Gittins takes the rising-rank path (gittinsrise.go) rather
// than the static one; BenchmarkLevelsGeneral has it on the general path.
func twoClass2048H2(rate float64) *sim.Workload {
	w := twoClass2048(rate)
	w.Name = "two-class-2048-h2"
	for i := range w.Classes {
		w.Classes[i].Service = dist.Must(dist.NewHyperExp(w.Classes[i].Service.Mean(), 10))
	}
	return w
}

// BenchmarkLevelsH2: ServerFilling-Gittins with age-dependent ranks (and
// ServerFilling-SRPT for comparison) against L on twoClass2048H2, 10^5
// measured arrivals per replication (-benchtime=1x).
func BenchmarkLevelsH2(b *testing.B) {
	for _, sp := range Policies[1:3] {
		for _, lv := range levelRates {
			b.Run(fmt.Sprintf("%s/L=%d", sp.Name, lv.L), func(b *testing.B) {
				benchL(b, twoClass2048H2(lv.rate), sp.New(), 100000)
			})
		}
	}
}

// twoClass2048Uniform is twoClass2048 with uniform durations on [0, 2·mean]
// (same means): the Gittins ranks (mean residual lives) fall with age, so
// ServerFilling-Gittins takes the O(C · log n) path of srptfast.go.
func twoClass2048Uniform(rate float64) *sim.Workload {
	w := twoClass2048(rate)
	w.Name = "two-class-2048-uniform"
	for i := range w.Classes {
		m := w.Classes[i].Service.Mean()
		w.Classes[i].Service = dist.Must(dist.NewUniform(0, 2*m))
	}
	return w
}

// BenchmarkLevelsMonotone: ServerFilling-Gittins with ranks that fall with
// age against L on twoClass2048Uniform, 10^5 measured arrivals per
// replication (-benchtime=1x).
func BenchmarkLevelsMonotone(b *testing.B) {
	for _, lv := range levelRates {
		b.Run(fmt.Sprintf("serverfilling-gittins/L=%d", lv.L), func(b *testing.B) {
			benchL(b, twoClass2048Uniform(lv.rate), Policies[2].New(), 100000)
		})
	}
}

// BenchmarkLevelsSRPTHigh: ServerFilling-SRPT holds fewer jobs than
// ServerFilling at the rates of levelRates (L ≈ 1430 at the highest), so
// these rates, further past saturation, take its L to several thousand:
// the per-event cost of its O(C · log n) path must stay flat there too.
// 10^5 measured arrivals per replication (-benchtime=1x).
func BenchmarkLevelsSRPTHigh(b *testing.B) {
	for _, rate := range []float64{145, 160, 200} {
		b.Run(fmt.Sprintf("serverfilling-srpt/rate=%g", rate), func(b *testing.B) {
			benchL(b, twoClass2048(rate), Policies[1].New(), 100000)
		})
	}
}

// BenchmarkLevelsDivisorFilling: DivisorFilling under arrival order
// (divisorfilling), under SRPT (divisorfilling-srpt) and under Gittins
// (divisorfilling-gittins: constant ranks, one class per need, so
// divisorsrpt.go's path) against L on twoClass2048, each on its fast path
// (divisorfast.go, divisorsrpt.go)
// and, for comparison, on the general path they replaced (the general test
// flag), 10^5 measured arrivals per replication (-benchtime=1x). The SRPT
// ordering holds fewer jobs at the same rate: the reported L says how many.
func BenchmarkLevelsDivisorFilling(b *testing.B) {
	for _, ord := range []struct {
		name string
		o    Order
	}{{"", ArrivalOrder}, {"srpt-", SRPTOrder}, {"gittins-", GittinsOrder}} {
		for _, path := range []string{"fast", "general"} {
			for _, lv := range levelRates {
				b.Run(fmt.Sprintf("%s%s/L=%d", ord.name, path, lv.L), func(b *testing.B) {
					p := New(ord.o, DivisorFilling)
					p.general = path == "general"
					benchL(b, twoClass2048(lv.rate), p, 100000)
				})
			}
		}
	}
}

// BenchmarkLevelsH2High: ServerFilling-Gittins holds at most about 1300
// jobs on twoClass2048H2 at the rates of levelRates; these rates, further
// past saturation, take its L to several thousand, on the rising-rank path
// and (for comparison) on the general path. 10^5 measured arrivals per
// replication (-benchtime=1x).
func BenchmarkLevelsH2High(b *testing.B) {
	for _, path := range []string{"rise", "general"} {
		for _, rate := range []float64{145, 160, 200} {
			b.Run(fmt.Sprintf("serverfilling-gittins/%s/rate=%g", path, rate), func(b *testing.B) {
				p := New(GittinsOrder, ServerFilling)
				p.general = path == "general"
				benchL(b, twoClass2048H2(rate), p, 100000)
			})
		}
	}
}
