package local

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// Plan is what running a campaign would do: `msjfarm run -dry-run` and
// `msjfarm submit -dry-run` print it and write nothing.
type Plan struct {
	Campaign string
	Name     string
	Points   int
	Tasks    int
	// Stored counts the tasks that would not run: the campaign already has
	// an entry for them (a result or a recorded failure), or their result
	// is in the content-addressed store under the code the campaign
	// expects (Reusable of them).
	Stored   int
	Reusable int
	ToRun    int
	// Workers is the number of replications run at once the wall time is
	// estimated for; Cores the cores of this machine, which bound the
	// parallelism of a local run.
	Workers int
	Cores   int
	// CPU is the estimated CPU time of the tasks to run, Wall the
	// estimated wall time on Workers workers (see EstimateMethod): Run,
	// the tasks' schedule, plus Finalise, the start-up and the
	// finalisation (summary, checksums, report).
	CPU      time.Duration
	Wall     time.Duration
	Run      time.Duration
	Finalise time.Duration
	// Classes counts the cost classes of the tasks to run (one policy on
	// one system, estimate.go), Calibrated the calibrations run over them,
	// CalibrationArrivals the arrivals each ran, Calibration their CPU
	// time.
	Classes             int
	Calibrated          int
	CalibrationArrivals int64
	Calibration         time.Duration
	// Contention is the calibration's wall time over its CPU time: how
	// much other processes slow this machine down now (1: idle).
	Contention float64
	// Precision: the sweep adds replications until a target is met, so
	// the tasks and the estimate are those of the initial replications.
	Precision bool
	// Verify is the spot-verification fraction (sweep.File.Verify) and
	// Sampled the tasks it re-runs on another worker (sweep.Sampled, the
	// coordinator's choice), stored or not: each costs one more
	// replication, two on a mismatch. Not in CPU or Wall.
	Verify  float64
	Sampled int
}

// EstimateMethod says how Plan estimates time.
const EstimateMethod = "calibration per cost class (one policy with its workload, arrival process or trace; " +
	"its parameters and the arrival rate vary within it), not per point: 2 to 5 rates of each class, spread over its " +
	"range (how many: the calibration line above), each a short replication from an empty system (in-process, or in its plugin binary for a policy that is not built in) at two lengths " +
	"whose thread CPU time is fitted as set-up + cost per arrival, interpolated linearly in the rate for the points " +
	"between and applied to each task's warmup+arrivals; wall time is the longest-processing-time-first schedule of " +
	"the tasks on min(workers, cores) slots, each taking its CPU time stretched by the contention plus 2.5 ms of " +
	"farm overhead (plugin call, storing its result), plus the start-up (0.3 s and 70 µs per point) and the " +
	"finalisation (0.12 ms per task and 0.7 ms per point) CPU, stretched by the contention measured now (as many busy threads as slots for 0.15 s, once before and four times after the " +
	"calibration, the median of their wall time over the CPU time they got, i.e. the share of the cores other " +
	"processes take)"

// calibrationBudget bounds the arrivals of the whole calibration (about a
// second of CPU at the engine's usual speed), and the per-calibration bounds keep
// each calibration long enough to see the queue build up and short enough
// for large sweeps.
const (
	calibrationBudget = 2_000_000
	calibrationMin    = 2_000
	calibrationMax    = 50_000
)

// PlanCampaign plans camp against st (nil: nothing stored) for the given
// number of workers, calibrating the speed of each point to run on this
// machine: a built-in policy in-process, any other through plugins (the
// run's plugin runner; nil: none, and such a policy cannot be calibrated).
// It writes nothing.
func PlanCampaign(ctx context.Context, st storage.Store, camp *sweep.Campaign, workers int, plugins worker.Runner) (*Plan, error) {
	if workers < 1 {
		return nil, fmt.Errorf("workers must be >= 1, got %d", workers)
	}
	p := &Plan{Campaign: camp.ID, Name: camp.File.Name, Points: camp.Points, Tasks: camp.Len(),
		Workers: workers, Cores: runtime.NumCPU(), Precision: camp.File.Precision != nil, Verify: camp.File.Verify}
	have, err := storedTasks(ctx, st, camp.ID)
	if err != nil {
		return nil, err
	}
	// One pass over the tasks, generated, never listed (a 10^7-task sweep
	// does not fit in memory as tasks): the tasks to run are counted by
	// cost class, rate and length, and each point is filed under its
	// class (estimate.go).
	classes := newCostClasses()
	type groupKey struct {
		class    int
		rate     float64
		arrivals int64
	}
	count := map[groupKey]int{}
	if err := camp.Each(func(t sweep.Task) error {
		if sweep.Sampled(p.Verify, camp.File.Seed, t.ID) {
			p.Sampled++
		}
		if stored, reusable := have(t); stored {
			p.Stored++
			if reusable {
				p.Reusable++
			}
			return nil
		}
		p.ToRun++
		ci, err := classes.add(&t)
		if err != nil {
			return err
		}
		count[groupKey{ci, t.ArrivalRate, int64(t.Run.Warmup + t.Run.Arrivals)}]++
		return nil
	}); err != nil {
		return nil, err
	}
	if p.ToRun == 0 {
		return p, nil
	}
	cals := classes.plan()
	n := int64(calibrationBudget / len(cals))
	n = min(max(n, calibrationMin), calibrationMax)
	p.CalibrationArrivals = n
	p.Classes = len(classes.list)
	// Contention first, on as many threads as the run will keep busy: the
	// calibrations leave garbage whose collection would take the probe's
	// cores. The calibrations then run on as many goroutines.
	par := min(workers, p.Cores)
	runtime.GC()
	probes := []float64{measureContention(par, contentionProbe)}
	// Calibrated at the pace replications run (submit plans at the
	// reader's).
	restore := gcpace.Simulating()
	p.Calibration, err = classes.calibrateClasses(ctx, cals, n, par, newCalibrationTraces(camp), plugins)
	restore()
	if err != nil {
		return nil, err
	}
	p.Calibrated = len(cals)
	// More probes after the calibration: other processes come and go, and
	// the median of five is less at the mercy of one burst.
	runtime.GC()
	for range 4 {
		probes = append(probes, measureContention(par, contentionProbe))
	}
	sort.Float64s(probes)
	p.Contention = probes[len(probes)/2]
	groups := make([]taskGroup, 0, len(count))
	var total float64
	for k, c := range count {
		m := classes.cost(k.class, k.rate)
		cost := m.setup + m.perArrival*float64(k.arrivals)
		total += cost * float64(c)
		groups = append(groups, taskGroup{cost: cost*p.Contention + taskOverhead.Seconds(), n: c})
	}
	p.CPU = seconds(total)
	p.Run = seconds(makespanGroups(groups, par))
	fixed := startOverhead.Seconds() + (startPerPoint.Seconds()+finalPerPoint.Seconds())*float64(p.Points) +
		finalPerTask.Seconds()*float64(p.Tasks)
	p.Finalise = seconds(fixed * p.Contention)
	p.Wall = p.Run + p.Finalise
	if p.Wall < p.Run { // past the longest Duration
		p.Wall = math.MaxInt64
	}
	return p, nil
}

// seconds is s seconds as a Duration, at most the longest one (292
// years): a sweep of 2^50 arrivals a replication was estimated at
// "-2562047h47m16s" of CPU, the conversion having wrapped.
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return math.MaxInt64
	}
	return time.Duration(s * 1e9)
}

// storedTasks returns what reports whether a task of campaign id would not
// run: it has an entry in the campaign (a result or a recorded failure),
// or its result is in the content-addressed store under the code the
// campaign expects (reusable). Nothing is stored without st. Its memory
// is that of the store's listings, not of the campaign's tasks.
func storedTasks(ctx context.Context, st storage.Store, id string) (func(sweep.Task) (stored, reusable bool), error) {
	if st == nil {
		return func(sweep.Task) (bool, bool) { return false, false }, nil
	}
	// The keys are walked a page at a time (storage.Walk): the sets hold
	// each key once, without a list of them all beside.
	here := map[string]bool{}
	err := storage.Walk(ctx, st, storage.ResultsPrefix(id), func(k string) error {
		if tid, ok := storage.ResultTaskID(id, k); ok {
			here[tid] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stored := map[string]bool{}
	err = storage.Walk(ctx, st, storage.StoredResultsPrefix, func(k string) error {
		if ck, ok := storage.StoredResultContentKey(k); ok {
			stored[ck] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Imported results no run here has confirmed are not reused
	// (record.Reusable).
	err = storage.Walk(ctx, st, storage.ImportedPrefix, func(k string) error {
		if ck, ok := storage.ImportedContentKey(k); ok {
			delete(stored, ck)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	impls, err := record.ExpectedImpls(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return func(t sweep.Task) (bool, bool) {
		switch {
		case here[t.ID]:
			return true, false
		case stored[record.ExpectedKey(impls, t)]:
			return true, true
		}
		return false, false
	}, nil
}

// taskOverhead is a task's time on its slot outside its replication's
// CPU time in a local run (the plugin call, fetch, task-state updates,
// storing the result and its reference, each a file written and synced,
// ack): not stretched by the contention, since on the 12,000-task
// campaign below it was the same (3 ms per task and slot) under a load
// average of 7 and of 30. startOverhead and startPerPoint are the
// embedded server's and coordinator's start-up and the planning and
// submission of the points; finalPerTask and finalPerPoint the
// finalisation's CPU time per record read (summary, checksums) and per
// point (aggregation and the report's tables and figures), stretched by
// the contention. Fitted on a shared 2-core machine (load average 7–37)
// to two campaigns of short tasks, where they are most of the wall time:
// 12,000 points × 1 replication and 5,000 points × 20 (docs/results.md).
// finalPerPoint was 3 ms until the point summaries shrank and the report
// streamed its files: refitted then on the same two campaigns on an idle
// machine (the 12,000-point finalisation took 9.8 s, 0.7 ms a point once
// its 1.4 s of records are taken out).
const (
	taskOverhead  = 2500 * time.Microsecond
	startOverhead = 300 * time.Millisecond
	startPerPoint = 70 * time.Microsecond
	finalPerTask  = 120 * time.Microsecond
	finalPerPoint = 700 * time.Microsecond
)

// calibrate runs t's scenario for up to n arrivals from an empty system
// in-process and returns its thread CPU time (its wall time where the
// platform has no thread clock), its wall time and the arrivals run.
func calibrate(ctx context.Context, t sweep.Task, n int64, plugins worker.Runner) (cpu, wall time.Duration, arrivals int64, err error) {
	t.Run.Arrivals = min(n, max(t.Run.Warmup+t.Run.Arrivals, 1))
	t.Run.Warmup, t.Run.MSER = 0, false
	t.Run.Deadline = 0
	var run worker.Runner = worker.InProcess{}
	if _, err := builtin.Lookup(t.Policy); err != nil && plugins != nil && t.Trace == nil {
		run = plugins // a third party's policy: only its binary runs it
	}
	start := time.Now()
	out, err := run.Run(ctx, &t, nil)
	wall = time.Since(start)
	if err != nil {
		return 0, 0, 0, err
	}
	if out == nil {
		return 0, 0, 0, errors.New("no outcome")
	}
	cpu = out.Provenance.CPU
	if cpu <= 0 {
		cpu = wall
	}
	return cpu, wall, t.Run.Arrivals, nil
}

// makespan is the finishing time of the longest-processing-time-first
// schedule of costs on slots identical workers.
func makespan(costs []float64, slots int) float64 {
	groups := make([]taskGroup, len(costs))
	for i, c := range costs {
		groups[i] = taskGroup{cost: c, n: 1}
	}
	return makespanGroups(groups, slots)
}

// taskGroup is n tasks of the same cost.
type taskGroup struct {
	cost float64
	n    int
}

// makespanGroups is makespan of groups of equal tasks: the tasks of a
// point cost the same, so a 10^7-task campaign is a few thousand groups,
// and the schedule keeps the slots' loads in a heap instead of a list of
// every task's cost.
func makespanGroups(groups []taskGroup, slots int) float64 {
	g := slices.Clone(groups)
	sort.Slice(g, func(i, j int) bool { return g[i].cost > g[j].cost })
	load := make(loads, max(slots, 1))
	for _, x := range g {
		for range x.n {
			load[0] += x.cost // the least loaded slot
			heap.Fix(&load, 0)
		}
	}
	return slices.Max(load)
}

// loads is a min-heap of the slots' loads.
type loads []float64

func (l loads) Len() int           { return len(l) }
func (l loads) Less(i, j int) bool { return l[i] < l[j] }
func (l loads) Swap(i, j int)      { l[i], l[j] = l[j], l[i] }
func (l *loads) Push(x any)        { *l = append(*l, x.(float64)) }
func (l *loads) Pop() any          { old := *l; x := old[len(old)-1]; *l = old[:len(old)-1]; return x }

// contentionProbe is how long measureContention spins.
const contentionProbe = 150 * time.Millisecond

// measureContention spins par threads for d and returns d over the mean
// thread CPU time they got: 1 on an idle machine, k when other processes
// leave each thread 1/k of a core. Not the calibration's own ratio: a
// replication's garbage collector runs on other threads and would be
// counted as contention.
func measureContention(par int, d time.Duration) float64 {
	var mu sync.Mutex
	var got time.Duration
	var wg sync.WaitGroup
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0, ok := cputime.Thread()
			if !ok {
				return
			}
			end := time.Now().Add(d)
			x := 0
			for time.Now().Before(end) {
				for i := range 10000 {
					x += i
				}
			}
			c1, _ := cputime.Thread()
			mu.Lock()
			got += c1 - c0
			mu.Unlock()
			_ = x
		}()
	}
	wg.Wait()
	if got <= 0 {
		return 1 // no thread clock: assume an idle machine
	}
	return max(1, float64(d)*float64(par)/float64(got))
}

// costModel is a replication's CPU seconds: setup + perArrival × arrivals.
type costModel struct{ setup, perArrival float64 }

// fitCost fits a costModel through two calibrations (c1 seconds for n1
// arrivals, c2 for n2 > n1). A fit the timer noise makes meaningless (a
// negative set-up or slope) falls back to the longer run's average cost
// per arrival, with no set-up.
func fitCost(c1, n1, c2, n2 float64) costModel {
	if n2 > n1 {
		b := (c2 - c1) / (n2 - n1)
		if a := c1 - b*n1; b > 0 && a >= 0 {
			return costModel{setup: a, perArrival: b}
		}
	}
	return costModel{perArrival: c2 / n2}
}
