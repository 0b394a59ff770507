package serverfilling

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// restChecker follows a decision trace and checks a property at every rest
// state: once all the actions of a decision are applied, i.e. just before
// the next arrival or completion, before the starts and preemptions of a
// timer decision (a later instant), and at the end. It tracks the jobs and
// total need present from Arrive and Complete events, and the busy servers
// from Event.Busy.
type restChecker struct {
	t         testing.TB
	name      string
	check     func(jobs, need, busy int) string
	jobs      int
	need      int
	busy      int
	last      float64
	started   bool
	states    int64
	saturated int64 // states in which the property's premise held
	failed    bool
}

func (c *restChecker) observe(e sim.TraceRecord) {
	if c.started && (e.Kind == sim.TraceArrive || e.Kind == sim.TraceComplete || e.Time > c.last) {
		c.verify(e.Time)
	}
	switch e.Kind {
	case sim.TraceArrive:
		c.jobs++
		c.need += e.Need
	case sim.TraceComplete:
		c.jobs--
		c.need -= e.Need
	}
	c.busy, c.last, c.started = e.Busy, e.Time, true
}

func (c *restChecker) verify(at float64) {
	c.states++
	if msg := c.check(c.jobs, c.need, c.busy); msg != "" && !c.failed {
		c.failed = true
		c.t.Errorf("%s: t=%g (before the next event at %g): %d jobs, total need %d, %d busy: %s",
			c.name, c.last, at, c.jobs, c.need, c.busy, msg)
	}
}

// fillProperty is S Lemma 3.1 with its converse (S §3.2: "either all
// servers are busy, or all jobs are in service"): busy = min(k, total need).
// It holds for ServerFilling in any order when k and all needs are powers of
// two.
func fillProperty(c *restChecker, k int) func(jobs, need, busy int) string {
	return func(jobs, need, busy int) string {
		if need >= k {
			c.saturated++
		}
		if want := min(k, need); busy != want {
			return fmt.Sprintf("busy should be min(k, need) = %d (Lemma 3.1)", want)
		}
		return ""
	}
}

// theoremC1 is S Theorem C.1: with at least k jobs present, DivisorFilling
// serves jobs of total need exactly k.
func theoremC1(c *restChecker, k int) func(jobs, need, busy int) string {
	return func(jobs, need, busy int) string {
		if jobs >= k {
			c.saturated++
			if busy != k {
				return fmt.Sprintf("at least k = %d jobs present, so all %d servers should be busy (Theorem C.1)", k, k)
			}
		}
		return ""
	}
}

// mixedWorkload has one class per need in needs, with shares and duration
// distributions drawn from seed (exponential, hyperexponential, lognormal,
// bounded Pareto, uniform, Weibull, deterministic, empirical: every kind of
// Gittins rank), at the arrival rate giving load rho.
func mixedWorkload(name string, k int, needs []int, rho float64, seed uint64) *sim.Workload {
	r := rng.New(seed, 99)
	w := &sim.Workload{Name: name, Servers: k}
	var work float64 // Σ share·need·mean
	for i, n := range needs {
		mean := 0.5 + 2*r.Float64()
		var d dist.Dist
		switch i % 8 {
		case 0:
			d = must(dist.NewExponential(mean))
		case 1:
			d = must(dist.NewHyperExp(mean, 1+9*r.Float64()))
		case 2:
			d = must(dist.NewLognormal(mean, 0.5+4*r.Float64()))
		case 3:
			d = must(dist.NewBoundedParetoMean(1.5, mean, 50*mean))
		case 4:
			d = must(dist.NewUniform(0.2*mean, 1.8*mean))
		case 5:
			d = must(dist.NewWeibullMean(0.6+r.Float64(), mean))
		case 6:
			d = must(dist.NewDeterministic(mean))
		case 7:
			d = must(dist.NewEmpirical([]float64{0.2 * mean, mean, 1.8 * mean, 0.5 * mean, 1.5 * mean}))
		}
		share := 0.2 + r.Float64()
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("need-%d", n), Need: n, Share: share, Service: d})
		work += share * float64(n) * d.Mean()
	}
	var total float64
	for _, c := range w.Classes {
		total += c.Share
	}
	w.ArrivalRate = rho * float64(k) * total / work
	return w
}

func divisors(k int) []int {
	var ds []int
	for d := 1; d <= k; d++ {
		if k%d == 0 {
			ds = append(ds, d)
		}
	}
	return ds
}

func powersOfTwo(k int) []int {
	var ps []int
	for n := 1; n <= k; n *= 2 {
		ps = append(ps, n)
	}
	return ps
}

func namedWorkload(t testing.TB, name string, rate float64) *sim.Workload {
	t.Helper()
	spec, err := workload.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(rate)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// p2Rate is the arrival rate of the powers-of-two workloads at load rho:
// ρ = λ·E[need]·E[D]/k = λ·3.75/8.
func p2Rate(rho float64) float64 { return rho * 8 / 3.75 }

var (
	sfPolicies = []struct {
		name string
		o    Order
	}{{"serverfilling", ArrivalOrder}, {"serverfilling-srpt", SRPTOrder}, {"serverfilling-gittins", GittinsOrder}}
	dfPolicies = []struct {
		name string
		o    Order
	}{{"divisorfilling", ArrivalOrder}, {"divisorfilling-srpt", SRPTOrder}, {"divisorfilling-gittins", GittinsOrder}}
)

// TestFillProperty checks S Lemma 3.1 at every rest state of long random
// runs of the three ServerFilling policies, on the paper's powers-of-two
// workloads (k = 8) near saturation and on a k = 64 workload with needs 1,
// 2, …, 64 and every kind of duration distribution.
func TestFillProperty(t *testing.T) {
	type wl struct {
		w        *sim.Workload
		arrivals int64
	}
	wls := []wl{
		{namedWorkload(t, "powers-of-two", p2Rate(0.95)), 60000},
		{namedWorkload(t, "powers-of-two-h2", p2Rate(0.95)), 60000},
		{mixedWorkload("mixed-64", 64, powersOfTwo(64), 0.95, 7), 30000},
		{borgBPow2(t, 4), 30000}, // k = 2048, ρ ≈ 0.89
	}
	for _, x := range wls {
		for _, pol := range sfPolicies {
			for _, crossings := range []bool{true, false} {
				if !crossings && pol.o != SRPTOrder {
					continue
				}
				p := New(pol.o, ServerFilling)
				p.crossings = crossings && pol.o == SRPTOrder
				name := x.w.Name + "/" + pol.name
				if pol.o == SRPTOrder {
					name += fmt.Sprintf("/crossings=%v", crossings)
				}
				c := &restChecker{t: t, name: name}
				c.check = fillProperty(c, x.w.Servers)
				r, err := sim.Run(x.w, p, sim.Config{Seed: 3, Warmup: 1000, Arrivals: x.arrivals, Observer: c.observe})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				c.verify(math.Inf(1))
				t.Logf("%s: %d rest states, %d with total need ≥ k; E[T] = %.4g, %d crossing decisions",
					c.name, c.states, c.saturated, r.Overall.MeanResponse, p.timers)
				if c.saturated < c.states/10 {
					t.Errorf("%s: only %d of %d states saturated: the test is too lightly loaded", c.name, c.saturated, c.states)
				}
			}
		}
	}
}

// TestTheoremC1 checks S Theorem C.1 at every rest state of long random runs
// of the DivisorFilling policies on divisible workloads: every divisor of k
// is a need, k = 12 and 36 (Case 2 only: 2^a·3^b), 60 and 35 (Case 3, p = 5
// and 7), with the literal recursion and with backfill.
func TestTheoremC1(t *testing.T) {
	for _, k := range []int{12, 36, 60, 35} {
		w := mixedWorkload(fmt.Sprintf("divisible-%d", k), k, divisors(k), 0.97, uint64(k))
		for _, pol := range dfPolicies {
			for _, backfill := range []bool{true, false} {
				p := New(pol.o, DivisorFilling)
				p.backfill = backfill
				c := &restChecker{t: t, name: fmt.Sprintf("k=%d/%s/backfill=%v", k, pol.name, backfill)}
				c.check = theoremC1(c, k)
				// The literal recursion can strand jobs (see Policy): bound the
				// queue, and let the run end flagged unstable if it must.
				r, err := sim.Run(w, p, sim.Config{Seed: 5, Warmup: 1000, Arrivals: 20000, MaxInSystem: 5000, Observer: c.observe})
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				c.verify(math.Inf(1))
				t.Logf("%s: %d rest states, %d with ≥ k jobs; E[T] = %.4g, utilisation %.3f",
					c.name, c.states, c.saturated, r.Overall.MeanResponse, r.Utilization)
				if c.saturated < c.states/10 {
					t.Errorf("%s: only %d of %d states with ≥ k jobs: the test is too lightly loaded", c.name, c.saturated, c.states)
				}
			}
		}
	}
}

// TestInvariantsLongRuns runs simtest.CheckInvariants on every policy on
// long runs of several workloads, including Borg cell B (k = 2048, 26
// classes, needs not powers of two: ServerFilling only).
func TestInvariantsLongRuns(t *testing.T) {
	type wl struct {
		w        *sim.Workload
		arrivals int64
		df       bool
	}
	wls := []wl{
		{namedWorkload(t, "powers-of-two", p2Rate(0.9)), 40000, true},
		{namedWorkload(t, "powers-of-two-h2", p2Rate(0.9)), 40000, true},
		{namedWorkload(t, "borg-b", 2), 20000, false},
		{namedWorkload(t, "four-class", 4.5), 30000, true}, // k = 15: needs 1, 3, 5, 15 divide it
		{mixedWorkload("divisible-30", 30, divisors(30), 0.9, 30), 30000, true},
	}
	for _, x := range wls {
		for _, sp := range Policies {
			p := sp.New().(*Policy)
			if p.proc == DivisorFilling && !x.df {
				// Needs that do not divide k: DivisorFilling is undefined.
				_, err := sim.Run(x.w, p, sim.Config{Seed: 1, Arrivals: 10})
				if err == nil || !strings.Contains(err.Error(), "does not divide") {
					t.Errorf("%s/%s: err = %v, want a divisibility error", x.w.Name, sp.Name, err)
				}
				continue
			}
			r, evs := simtest.Record(t, x.w, p, sim.Config{Seed: 11, Warmup: 2000, Arrivals: x.arrivals})
			simtest.CheckInvariants(t, x.w, p, evs, false)
			t.Logf("%s/%s: E[T] = %.4g, %d events, %d preemptions, unstable=%v",
				x.w.Name, sp.Name, r.Overall.MeanResponse, r.Events, r.Preemptions, r.Unstable)
		}
	}
}

// TestShortcutsExact: the arrival shortcuts (a job behind a full M; a job
// that fits when every job is served) and the completion shortcut (every
// job still served) must not change a single decision: the decision traces
// with and without them are identical, event for event.
func TestShortcutsExact(t *testing.T) {
	wls := []*sim.Workload{
		namedWorkload(t, "powers-of-two", p2Rate(0.7)),
		namedWorkload(t, "powers-of-two-h2", p2Rate(0.95)),
		namedWorkload(t, "four-class", 3),
		mixedWorkload("divisible-12", 12, divisors(12), 0.8, 12),
	}
	for _, w := range wls {
		for _, sp := range Policies {
			for _, backfill := range []bool{true, false} {
				fast, slow := sp.New().(*Policy), sp.New().(*Policy)
				if !backfill && fast.proc != DivisorFilling {
					continue
				}
				fast.backfill, slow.backfill = backfill, backfill
				slow.exhaustive = true
				cfg := sim.Config{Seed: 9, Warmup: 100, Arrivals: 20000, MaxInSystem: 5000}
				_, a := simtest.Record(t, w, fast, cfg)
				_, b := simtest.Record(t, w, slow, cfg)
				if len(a) != len(b) {
					t.Errorf("%s/%s/backfill=%v: %d events with shortcuts, %d without", w.Name, sp.Name, backfill, len(a), len(b))
					continue
				}
				for i := range a {
					if a[i] != b[i] {
						t.Errorf("%s/%s/backfill=%v: event %d: %+v with shortcuts, %+v without", w.Name, sp.Name, backfill, i, a[i], b[i])
						break
					}
				}
			}
		}
	}
}

// TestCrossingTimersSuffice checks the argument of Policy (SRPT orderings)
// that only some crossings can change the choice: ServerFilling-SRPT arms a
// timer only for the boundary job overtaking a served job (or the first
// misfit) whose need is at most M's excess over k, DivisorFilling-SRPT only
// after a Case 3 extraction. A variant that decides again at every crossing
// of any two jobs of M (allPairs) must produce the same decision trace.
// Under packing=skip no first misfit needs watching: a job of M that is
// not served leaves its need's take unchanged when it leaves M.
func TestCrossingTimersSuffice(t *testing.T) {
	wls := []*sim.Workload{
		namedWorkload(t, "powers-of-two", p2Rate(0.95)),
		namedWorkload(t, "four-class", 4.5), // k = 15: Case 3 (p = 5)
		mixedWorkload("mixed-64", 64, powersOfTwo(64), 0.95, 7),
		mixedWorkload("divisible-60", 60, divisors(60), 0.95, 60),
		mixedWorkload("nondivisible-24", 24, []int{1, 3, 5, 7, 10, 16}, 0.9, 24),
	}
	for _, w := range wls {
		for _, proc := range []Procedure{ServerFilling, DivisorFilling} {
			if proc == DivisorFilling && w.Name == "nondivisible-24" {
				continue
			}
			for _, packing := range []Packing{PackStop, PackSkip} {
				if packing == PackSkip && proc != ServerFilling {
					continue
				}
				lean, all := New(SRPTOrder, proc), New(SRPTOrder, proc)
				lean.packing, all.packing = packing, packing
				all.allPairs = true
				cfg := sim.Config{Seed: 13, Warmup: 100, Arrivals: 6000}
				_, a := simtest.Record(t, w, lean, cfg)
				_, b := simtest.Record(t, w, all, cfg)
				t.Logf("%s/procedure %d/packing %d: %d crossing decisions (every pair: %d)", w.Name, proc, packing, lean.timers, all.timers)
				if len(a) != len(b) {
					t.Errorf("%s/procedure %d/packing %d: %d events, %d with every crossing", w.Name, proc, packing, len(a), len(b))
					continue
				}
				for i := range a {
					// The same crossing instant computed from another pair may
					// differ in the last bits.
					x, y := a[i], b[i]
					y.Time = x.Time
					if x != y || math.Abs(a[i].Time-b[i].Time) > 1e-12*math.Max(1, a[i].Time) {
						t.Errorf("%s/procedure %d/packing %d: event %d: %+v, with every crossing %+v", w.Name, proc, packing, i, a[i], b[i])
						break
					}
				}
			}
		}
	}
}

// TestErlangC: with every need 1 and exponential durations, ServerFilling
// (arrival order) is FCFS on an M/M/k, and so is ServerFilling-Gittins
// (every job has the same constant rank, ties by arrival). Their mean
// response time must be Erlang C's: k = 4, λ = 3, μ = 1 (ρ = 0.75), inside
// the 99% CI over 10 replications.
func TestErlangC(t *testing.T) {
	w := &sim.Workload{Name: "mmk", Servers: 4, ArrivalRate: 3, Classes: []sim.Class{
		{Need: 1, Share: 1, Service: must(dist.NewExponential(1))},
	}}
	want := stats.MMkMeanResponse(4, 3, 1)
	for _, o := range []Order{ArrivalOrder, GittinsOrder} {
		var ts []float64
		for seed := uint64(1); seed <= 10; seed++ {
			r, err := sim.Run(w, New(o, ServerFilling), sim.Config{Seed: seed, Warmup: 2000, Arrivals: 40000})
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, r.Overall.MeanResponse)
		}
		ci := stats.MeanCI(ts, 0.99)
		t.Logf("order %d: E[T] = %.4f ± %.4f, Erlang C %.4f", o, ci.Mean, ci.HalfWidth, want)
		if math.Abs(ci.Mean-want) > ci.HalfWidth {
			t.Errorf("order %d: E[T] = %.4f ± %.4f, Erlang C %.4f", o, ci.Mean, ci.HalfWidth, want)
		}
	}
}
