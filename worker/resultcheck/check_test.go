package resultcheck_test

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/resultcheck"
)

// The task and its honest result, derived by hand:
//
//	workload w: 4 servers, class a (need 1), class b (need 4); seed 7;
//	10^4 warm-up + 10^5 measured arrivals, a window of 50,000; converged.
//	class a: 90,000 departures, E[T] 2, Var 4, E[W] 0.5, P(wait) 0.25, E[S] 1.5
//	class b: 10,000 departures, E[T] 12, Var 100, E[W] 8, P(wait) 0.8, E[S] 4
//	overall: E[T] = (0.9·2 + 0.1·12) = 3; E[W] = 0.45 + 0.8 = 1.25;
//	  P(wait) = 0.225 + 0.08 = 0.305; E[S] = 1.35 + 0.4 = 1.75;
//	  E[T²] = 0.9·(4+4) + 0.1·(100+144) = 31.6, Var = 31.6 − 9 = 22.6.
//	Little: Σ T = 10^5·3 = 300,000 = mean_in_system × window → 6.
//	  Allowance: λ = 10^5/50,000 = 2, E[T²] as the check estimates it =
//	  22.6·99,999/10^5 + 9 = 31.599774, edge = λ·E[T²]/2 = 31.599774;
//	  burstiness E[T²]/(2·E[T]²) = 31.599774/18 = 1.755543; 20 scaled
//	  edges = 20·1.755543·31.599774 = 1109.4952, + (floor 2500/10^5 +
//	  rounding 1e-6) of the larger side. Below: 1109.4952 + 0.025001·
//	  300,000 = 8609.7952, so mean_in_system ≥ 6 − 8609.7952/50,000 =
//	  5.8278: 5.83 passes, 5.82 does not. Above: area − 300,000 ≤
//	  1109.4952 + 0.025001·area, area ≤ 301,109.4952/0.974999 =
//	  308,830.6, mean_in_system ≤ 6.1766: 6.17 passes, 6.18 does not.
//	Jain's index of the class means (2, 12): (2 + 12)² / (2·(4 + 144)) =
//	  196/296 = 0.66216. Throughput 2 over the window of 50,000: 100,000
//	  departures of the 110,000 jobs that arrived (2.2 would be 110,000,
//	  the most; 2.3 is 115,000).
func honest() (*sweep.Task, *sim.Result) {
	t := &sweep.Task{Seed: 7, Policy: "p",
		Workload: workload.Spec{Name: "w", Servers: 4, Classes: []workload.ClassSpec{{Name: "a", Need: 1}, {Name: "b", Need: 4}}}}
	t.Run.Arrivals, t.Run.Warmup = 100000, 10000
	r := &sim.Result{Engine: "1.2.3", Workload: "w", Seed: 7, Servers: 4, Warmup: 10000, Arrivals: 100000, Window: 50000,
		Convergence: &sim.Convergence{Converged: true},
		Overall:     sim.ClassStats{Name: "all", Count: 100000, MeanResponse: 3, VarResponse: 22.6, MeanWait: 1.25, PWait: 0.305, MeanSize: 1.75},
		Classes: []sim.ClassStats{
			{Name: "a", Need: 1, Count: 90000, MeanResponse: 2, VarResponse: 4, MeanWait: 0.5, PWait: 0.25, MeanSize: 1.5},
			{Name: "b", Need: 4, Count: 10000, MeanResponse: 12, VarResponse: 100, MeanWait: 8, PWait: 0.8, MeanSize: 4}},
		WeightedMeanResponse: 5, Jain: 196.0 / 296, MeanInSystem: 6, MeanInQueue: 2, Utilization: 0.5, Throughput: 2, OfferedLoad: 0.5,
		Counters: []sim.Counter{{Name: "kills", Value: 3}, {Name: "preempted_fraction/a", Value: 0.1}}}
	return t, r
}

// halveTimes halves honest()'s response and waiting times and its means
// in system and in queue (Little's law still holds), keeps its sizes, and
// gives it preemption p.
func halveTimes(r *sim.Result, p string) {
	r.Preemption = p
	scaleResponses(r, 0.5)
	r.Overall.MeanWait, r.Classes[0].MeanWait, r.Classes[1].MeanWait = 0.625, 0.25, 4
	r.MeanInSystem, r.MeanInQueue = 3, 1
}

// scaleResponses multiplies every mean response time of r by f.
func scaleResponses(r *sim.Result, f float64) {
	r.Overall.MeanResponse *= f
	for i := range r.Classes {
		r.Classes[i].MeanResponse *= f
	}
}

// loaded gives the task's workload its shares and sizes (honest's leaves
// them out, so that the checks needing them are skipped): class a 0.9 of
// the arrivals, exponential of mean 1.5; class b 0.1, mean 4; λ = 2.
func loaded(t *sweep.Task) {
	mean := func(m float64) *float64 { return &m }
	t.ArrivalRate = 2
	t.Workload.Classes[0].Share, t.Workload.Classes[0].Service = 0.9, dist.Spec{Dist: "exp", Mean: mean(1.5)}
	t.Workload.Classes[1].Share, t.Workload.Classes[1].Service = 0.1, dist.Spec{Dist: "exp", Mean: mean(4)}
}

func TestCheck(t *testing.T) {
	long := strings.Repeat("a", 49)
	for _, c := range []struct {
		name  string
		edit  func(t *sweep.Task, r *sim.Result, e *resultcheck.Expect)
		field string // "" = accepted
	}{
		{"honest", func(*sweep.Task, *sim.Result, *resultcheck.Expect) {}, ""},
		{"engine", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Engine = "9.9.9" }, "engine"},
		{"engine not declared", func(_ *sweep.Task, _ *sim.Result, e *resultcheck.Expect) { e.Engine = "" }, ""},
		{"workload", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Workload = "v" }, "workload"},
		{"servers", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Servers = 8 }, "servers"},
		{"seed", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Seed = 8 }, "seed"},
		{"classes", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes = append(r.Classes, r.Classes[0]) }, "classes"},
		{"class need", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[1].Need = 2 }, "classes[1]"},
		{"warmup", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Warmup = 9999 }, "warmup"},
		{"arrivals", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Arrivals = 99999 }, "arrivals"},
		// MSER: 1000 batches of 5 truncated, 5000 + 105,000 = the task's 110,000.
		// The overall means stay the count-weighted class means: class a's
		// Σ T = 300,000 − 10,000·12 = 180,000 over 95,000 jobs, its Σ W =
		// 1.2·105,000 − 10,000·8 = 46,000; P(wait) (95,000·0.25 +
		// 10,000·0.8)/105,000, E[S] (95,000·1.5 + 10,000·4)/105,000.
		{"mser", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			t.Run.MSER, r.Warmup, r.Arrivals, r.MSERBatches = true, 5000, 105000, 1000
			r.Classes[0].Count, r.Overall.Count = 95000, 105000
			r.Overall.MeanResponse = 300000.0 / 105000 // Σ T = 300,000 = mean_in_system 6 × window 50,000
			r.Overall.MeanWait = 1.2
			r.Classes[0].MeanResponse, r.Classes[0].MeanWait = 180000.0/95000, 46000.0/95000
			r.Overall.PWait, r.Overall.MeanSize = 31750.0/105000, 182500.0/105000
			a := 180000.0 / 95000 // Jain's index of (a, 12)
			r.Jain = (a + 12) * (a + 12) / (2 * (a*a + 144))
		}, ""},
		{"mser split", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			t.Run.MSER, r.Warmup, r.Arrivals, r.MSERBatches = true, 5000, 105000, 999
		}, "warmup"},
		{"NaN", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[0].MeanResponse = math.NaN() }, "classes[0].mean_response (NaN)"},
		{"+Inf", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Throughput = math.Inf(1) }, "throughput (+Inf)"},
		{"negative var", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[1].VarResponse = -1 }, "classes[1].var_response"},
		{"negative window", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Window = -500 }, "window"},
		// 1 + 5e-7 is within RoundingTol (1e-6), 1 + 1e-5 is not.
		{"utilisation rounding", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Utilization = 1 + 5e-7 }, ""},
		{"utilisation 1.00001", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Utilization = 1.00001 }, "utilization"},
		{"utilisation 1.7", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Utilization = 1.7 }, "utilization"},
		{"p_wait", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[0].PWait = 1.2 }, "classes[0].p_wait"},
		{"jain", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Jain = 1.5 }, "jain"},
		// Derived quantities are their sources' (a plugin stored these
		// beside honest class means).
		{"jain 0", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Jain = 0 }, "jain"},
		{"throughput 1.7e308", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Throughput = 1.7e308 }, "throughput"},
		{"throughput 2.2", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Throughput = 2.2 }, ""},
		{"throughput 2.3", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Throughput = 2.3 }, "throughput"},
		{"wasted 1.7e308", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption, r.WastedWork = "restart", 1.7e308
		}, "wasted_work"},
		{"preemptions beside none", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption, r.Preemptions = "none", 1<<62
		}, "preemptions"},
		{"preemptions beside resume", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption, r.Preemptions, r.PreemptedJobs = "resume", 12, 30
		}, ""},
		{"wasted beside resume", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption, r.Preemptions, r.WastedWork = "resume", 12, 3
		}, "wasted_work"},
		{"preempted jobs past arrivals", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption, r.Preemptions, r.PreemptedJobs = "restart", 12, 110001
		}, "preempted_jobs"},
		{"preemption mode", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Preemption = "sometimes" }, "preemption"},
		{"var 1e101", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[1].VarResponse = 1e101 }, "classes[1].var_response"},
		// With the task's loads: class a 0.9 × need 1 × E[S] 1.5 = 1.35,
		// class b 0.1 × 4 × 4 = 1.6 (per arrival); weighted mean
		// (1.35·2 + 1.6·12)/2.95 = 21.9/2.95 = 7.42373; ρ = 2 × 2.95 / 4
		// = 1.475.
		{"weighted mean from the loads", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			loaded(t)
			r.OfferedLoad, r.WeightedMeanResponse = 1.475, 21.9/2.95
		}, ""},
		{"weighted mean forged", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			loaded(t)
			r.OfferedLoad, r.WeightedMeanResponse = 1.475, 1.7e100
		}, "weighted_mean_response"},
		{"queue > system", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInQueue = 7 }, "mean_in_queue"},
		// 110,000 jobs arrived in all: 200,000 cannot be present on average.
		{"more present than arrived", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem = 200000 }, "mean_in_system"},
		{"wait > response", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[1].MeanWait = 13 }, "classes[1].mean_wait"},
		// 4 servers × E[T] 2 = 8 ≥ E[S]: 7.9 passes, 8.1 does not.
		{"size ≤ k·response", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Classes[0].MeanSize, r.Overall.MeanSize = 7.9, 0.9*7.9+0.1*4
		}, ""},
		{"size > k·response", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[0].MeanSize = 8.1 }, "classes[0].mean_size"},
		// Class b's jobs need 4 of the 4 servers: E[S] 12.1 × 4 > 4 × E[T]
		// 12, though 12.1 ≤ 4 × 12 (the bound before counted need 1).
		{"need·size > k·response", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Classes[1].MeanSize, r.Overall.MeanSize = 12.1, 0.9*1.5+0.1*12.1
		}, "classes[1].mean_size"},
		{"class counts", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[0].Count = 89999 }, "classes[].count"},
		{"class undeparted", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[0].Undeparted = 5 }, "classes[].undeparted"},
		{"lost arrivals", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Classes[0].Count, r.Overall.Count = 89999, 99999
		}, "overall.count"},
		// Truncated: 99,998 + 1 undeparted ≤ 10^5 arrivals; means are lower bounds, Little not applied.
		{"truncated", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Truncated, r.LowerBound, r.Overall.LowerBound, r.Classes[0].LowerBound = true, true, true, true
			r.Classes[0].Count, r.Overall.Count, r.Classes[0].Undeparted, r.Overall.Undeparted = 89998, 99998, 1, 1
			r.MeanInSystem = 9
		}, ""},
		// events: at most 2^53.
		{"events 2^64-1", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Events = math.MaxUint64 }, "events"},
		{"events 2^53+1", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Events = 1<<53 + 1 }, "events"},
		{"events 2^53", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Events = 1 << 53 }, ""},
		// The lower-bound flags are the undeparted counts' (a plugin set
		// lower_bound with none left, which switched off Little's law).
		{"lower bound with none left", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.LowerBound, r.Overall.LowerBound = true, true
		}, "lower_bound"},
		{"class lower bound with none left", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Classes[1].LowerBound = true }, "classes[1].lower_bound"},
		{"undeparted without lower bound", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Truncated, r.Overall.LowerBound, r.Classes[0].LowerBound = true, true, true
			r.Classes[0].Count, r.Overall.Count, r.Classes[0].Undeparted, r.Overall.Undeparted = 89998, 99998, 1, 1
		}, "lower_bound"},
		// Preemption none: response = wait + size, per class and overall
		// (the fixture's 3 = 1.25 + 1.75, 2 = 0.5 + 1.5, 12 = 8 + 4), to
		// RoundingTol of the three (6e-6 overall) plus 10⁻¹⁴ of the
		// instants (5.5e-10 here). Every response time scaled alike keeps
		// the class-weighted means, Jain's index and Little's law.
		{"split none", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Preemption = "none" }, ""},
		{"split rounding", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption = "none"
			scaleResponses(r, 1+5e-7) // 1.5e-6 off overall
		}, ""},
		{"split 1e-5", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Preemption = "none"
			scaleResponses(r, 1+1e-5) // 3e-5 off overall
		}, "overall.mean_response"},
		// Halved response and waiting times with the mean in system halved
		// too (Little holds), beside honest sizes: stored before.
		{"times halved", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { halveTimes(r, "none") }, "overall.mean_response"},
		// A preempting policy is not checked so: a resource-pooled server
		// serves faster than its jobs' sizes (see splitTol).
		{"times halved, preempting", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { halveTimes(r, "resume") }, ""},
		{"Little 6.17", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem = 6.17 }, ""},
		{"Little 6.18", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem = 6.18 }, "mean_in_system"},
		{"Little 5.83", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem = 5.83 }, ""},
		{"Little 5.82", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem = 5.82 }, "mean_in_system"},
		{"Little skipped when unstable", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.MeanInSystem, r.Unstable = 9, true }, ""},
		{"Little skipped when not converged", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.MeanInSystem, r.Convergence.Converged = 9, false
		}, ""},
		{"means of 1e300", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Overall.MeanResponse, r.Overall.MeanWait = 1e300, 1e300
		}, "overall.mean_response"},
		// What the result states twice agrees; what the task fixes is
		// the task's (a plugin gave class means a quarter of the overall,
		// an overall a third of its classes', ρ a thousandth).
		{"overall ≠ its classes", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Overall.MeanResponse = 2.9 }, "overall.mean_response"},
		{"classes ≠ their overall", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Classes[0].MeanWait, r.Classes[1].MeanWait = 0.125, 2
		}, "overall.mean_wait"},
		{"overall p_wait", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Overall.PWait = 0.3 }, "overall.p_wait"},
		// Without it the Little check is off: a run of 110,000 arrivals
		// that reached its window's end always has one.
		{"convergence dropped", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Convergence = nil }, "convergence"},
		{"no convergence when unstable", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Convergence, r.Unstable = nil, true }, ""},
		{"counter upper case", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[0].Name = "Kills" }, "counters[0].name"},
		{"counter unknown class", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[1].Name = "preempted_fraction/z" }, "counters[1].name"},
		{"counter 48 chars", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Counters[0].Name = strings.Repeat("abcdefghijklmno_", 3)[:47] + "p"
		}, ""},
		{"counter 49 chars", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[0].Name = long }, "counters[0].name"},
		{"counter word of 17", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[0].Name = "a_abcdefghijklmnopq" }, "counters[0].name"},
		{"counter secret", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			r.Counters[0].Name = "wJalrXUtnFEMI/K7MDENG"
		}, "counters[0].name"},
		{"counter twice", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[1].Name = "kills" }, "counters[1].name"},
		{"counter 1e100", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[0].Value = -1e100 }, ""},
		{"counter 1e308", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters[0].Value = -1e308 }, "counters[0].value"},
		{"257 counters", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Counters = make([]sim.Counter, 257) }, "counters"},
		{"series not asked for", func(_ *sweep.Task, r *sim.Result, _ *resultcheck.Expect) { r.Series = []sim.Sample{{T: 0, N: 1}} }, "series"},
		{"series backwards", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			t.Run.SeriesInterval = 1
			r.Series = []sim.Sample{{T: 0, N: 1}, {T: 2, N: 1}, {T: 1, N: 1}}
		}, "series[2]"},
		{"series over series_max", func(t *sweep.Task, r *sim.Result, _ *resultcheck.Expect) {
			t.Run.SeriesInterval, t.Run.SeriesMax = 1, 2
			r.Series = []sim.Sample{{T: 0, N: 1}, {T: 1, N: 1}, {T: 2, N: 1}}
		}, "series"},
		{"1 MiB", func(_ *sweep.Task, _ *sim.Result, e *resultcheck.Expect) { e.Bytes = 1 << 20 }, ""},
		{"1 MiB + 1", func(_ *sweep.Task, _ *sim.Result, e *resultcheck.Expect) { e.Bytes = 1<<20 + 1 }, "result"},
		// series_max 100 allows 100 × 64 more bytes.
		{"1 MiB + series", func(t *sweep.Task, _ *sim.Result, e *resultcheck.Expect) {
			t.Run.SeriesInterval, t.Run.SeriesMax, e.Bytes = 1, 100, 1<<20+6400
		}, ""},
		{"no result", func(_ *sweep.Task, _ *sim.Result, e *resultcheck.Expect) {}, "result"},
	} {
		t.Run(c.name, func(t *testing.T) {
			task, r := honest()
			e := resultcheck.Expect{Task: task, Engine: "1.2.3", SHA256: "5b4c44cc"}
			c.edit(task, r, &e)
			if c.name == "no result" {
				r = nil
			}
			err := resultcheck.Check(r, e)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *resultcheck.Error
			if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, c.field) || ce.SHA256 != "5b4c44cc" || !strings.Contains(err.Error(), "5b4c44cc") {
				t.Fatalf("got %v, want a refusal of %s naming the sha256", err, c.field)
			}
		})
	}
}

// BenchmarkCheck is the cost of checking one result, with and without
// the default 10,000-sample time series. Besides wall time per op it
// reports the checking thread's CPU time per op (cpu-ns/op), which other
// load on the machine distorts far less.
func BenchmarkCheck(b *testing.B) {
	task, r := honest()
	bench := func(b *testing.B) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		c0, _ := cputime.Thread()
		for range b.N {
			if err := resultcheck.Check(r, resultcheck.Expect{Task: task, Engine: "1.2.3"}); err != nil {
				b.Fatal(err)
			}
		}
		c1, _ := cputime.Thread()
		b.ReportMetric(float64((c1-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("2-class", bench)
	task.Run.SeriesInterval = 1
	r.Series = make([]sim.Sample, resultcheck.DefaultSeriesMax)
	for i := range r.Series {
		r.Series[i] = sim.Sample{T: float64(i), N: i % 7}
	}
	b.Run("2-class+series", bench)
}
