// Package campaigntest runs a small real campaign in-process for tests:
// the sweep is expanded with the built-in catalogue and every task run by
// the worker's in-process runner, so the records are what a farm would
// store (same seeds, hence the same jobs for every policy at a scenario).
package campaigntest

import (
	"context"
	"math"
	"sync/atomic"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// CRN is a campaign on the paper's one-or-all system (k = 32, p₁ = 0.9
// light 1-server jobs, 0.1 heavy 32-server jobs, exponential sizes of mean
// 1; the load-1 rate is 1/(0.9/32 + 0.1) ≈ 7.805), FCFS as the baseline
// against MSF and MSFQ, 10 replications of 3e4 arrivals. FCFS's
// head-of-line blocking ends its stability region far below load 1 (Q
// §6.2): measured, stable at λ = 3 (ρ = 0.38), unstable at λ = 5 (ρ =
// 0.64). 90 replications, about a second.
const CRN = `
name: crn
seed: 7
workload: one-or-all
axes:
  arrival_rate: [1.5, 3, 5]
policies:
  - fcfs
  - msf
  - {name: msfq, threshold: 31}
compare: {baseline: fcfs}
replications: 10
run: {arrivals: 3e4, warmup: 3e3}
`

// Run expands the YAML sweep spec and runs every task in-process.
func Run(t testing.TB, spec string) ([]sweep.Task, map[string]*record.Record, *sweep.File) {
	t.Helper()
	f, err := sweep.Parse([]byte(spec), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*record.Record{}
	for i := range camp.Tasks {
		task := &camp.Tasks[i]
		out, err := worker.InProcess{}.Run(context.Background(), task, nil)
		if err != nil {
			t.Fatalf("task %s: %v", task.ID, err)
		}
		recs[task.ID] = &record.Record{Task: *task, Result: out.Result, CounterInfo: out.CounterInfo}
	}
	return camp.Tasks, recs, f
}

// Points runs spec (Run) and summarises it as the coordinator does:
// aggregate.Summarize, then the paired comparisons against the sweep's
// baseline.
func Points(t testing.TB, spec string) []aggregate.Point {
	t.Helper()
	tasks, recs, f := Run(t, spec)
	pts := aggregate.Summarize(tasks, recs)
	if err := aggregate.Compare(pts, f.BaselineOf()); err != nil {
		t.Fatal(err)
	}
	return pts
}

// Jitter is a policy that is not deterministic, for spot-verification
// tests: it runs the replication in-process and moves the overall mean
// response time up by one ulp more at each run than at the last, on
// whichever worker, so that no two runs agree.
type Jitter struct{ runs atomic.Int64 }

func (j *Jitter) Run(ctx context.Context, t *sweep.Task, p func(int64, int64)) (*worker.Outcome, error) {
	out, err := worker.InProcess{}.Run(ctx, t, p)
	if err != nil {
		return out, err
	}
	r := *out.Result
	for range j.runs.Add(1) {
		r.Overall.MeanResponse = math.Nextafter(r.Overall.MeanResponse, math.Inf(1))
	}
	out.Result = &r
	return out, nil
}
