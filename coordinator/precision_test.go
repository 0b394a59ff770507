package coordinator_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// synth returns a synthetic result whose mean response time is a
// known function of (arrival rate, replication), so the precision rule's
// decisions can be derived by hand:
//
//	rate 1: 2 in every replication: half-width 0, met at the initial 10;
//	rate 2: 1 + 0.15·(−1)^r: for even n the sample sd is 0.15·√(n/(n−1)),
//	        so rel_hw = t(0.975, n−1)·0.15/√(n−1): n=10 2.262·0.15/3 = 0.113,
//	        n=20 2.093·0.15/4.359 = 0.072, n=30 2.045·0.15/5.385 = 0.057,
//	        n=40 2.023·0.15/6.245 = 0.0486 ≤ 0.05: met at 40;
//	rate 3: 1 + (−1)^r: rel_hw = t·1/√(n−1) > 0.05 for every n ≤ 55: capped
//	        at max_replications 55 (10, 20, ..., 50, then a batch of 5).
func synthValue(rate float64, r int) float64 {
	sign := 1.0
	if r%2 == 1 {
		sign = -1
	}
	switch rate {
	case 1:
		return 2
	case 2:
		return 1 + 0.15*sign
	}
	return 1 + sign
}

func synth(t *sweep.Task) (*worker.Outcome, error) {
	v := synthValue(t.ArrivalRate, t.Replication)
	// A result the worker's checks accept (worker/resultcheck): the task's
	// echoes, and every measured job departed, all in the first class
	// (so the load-weighted mean is its mean, and Jain's index of one
	// class's mean is 1).
	n := t.Run.Arrivals
	classes := make([]sim.ClassStats, len(t.Workload.Classes))
	for i, cl := range t.Workload.Classes {
		classes[i] = sim.ClassStats{Name: cl.Name, Need: cl.Need}
	}
	classes[0].Count, classes[0].MeanResponse = n, v
	w, err := t.SimWorkload()
	if err != nil {
		return nil, err
	}
	res := &sim.Result{Engine: sim.Version, Workload: t.Workload.Name, Seed: t.Seed, Servers: t.Workload.Servers,
		Warmup: t.Run.Warmup, Arrivals: n, Window: 100, Overall: sim.ClassStats{Count: n, MeanResponse: v},
		Classes: classes, WeightedMeanResponse: v, Jain: 1, OfferedLoad: w.Load()}
	return &worker.Outcome{Result: res, Provenance: worker.Provenance{Runner: "synthetic"}}, nil
}

type synthFn func(t *sweep.Task) (*worker.Outcome, error)

func (f synthFn) Run(_ context.Context, t *sweep.Task, _ func(int64, int64)) (*worker.Outcome, error) {
	return f(t)
}

const precisionSweep = `name: precision
seed: 11
workload: one-or-all
axes:
  arrival_rate: [1, 2, 3]
policies: [fcfs]
replications: 10
precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 55, batch: 10}
run: {arrivals: 100}
`

// stopAt applies the precision rule to synthValue with stats.MeanCI: the
// replication count at which a point stops (and whether it met the target).
func stopAt(rate float64) (int, bool) {
	var xs []float64
	n := 10
	for {
		for len(xs) < n {
			xs = append(xs, synthValue(rate, len(xs)))
		}
		if stats.MeanCI(xs, 0.95).RelHalfWidth() <= 0.05 {
			return n, true
		}
		if n >= 55 {
			return n, false
		}
		n = min(n+10, 55)
	}
}

func readCSV(t *testing.T, st storage.Store, key string) []map[string]string {
	t.Helper()
	data, err := st.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// TestPrecision: a tight point stops at the initial count, a noisy one
// grows until the target, one hits the cap and is reported so; the
// summary, precision.csv, manifest and report agree; a fresh coordinator
// (new NATS server: no KV, no stream) on the same storage derives the added
// replications from storage, completes a batch whose results were lost,
// and runs nothing else.
//
// Complexity 37: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestPrecision(t *testing.T) {
	want := map[string]struct {
		reps   int
		status string
	}{}
	for _, r := range []float64{1, 2, 3} {
		n, met := stopAt(r)
		st := coordinator.PrecisionCapped
		if met {
			st = coordinator.PrecisionMet
		}
		want[aggregateRate(r)] = struct {
			reps   int
			status string
		}{n, st}
	}
	// The hand derivation above.
	if want["1"].reps != 10 || want["2"].reps != 40 || want["3"].reps != 55 || want["3"].status != coordinator.PrecisionCapped {
		t.Fatalf("rule gives %+v", want)
	}

	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	sr := countRunner{next: synthFn(synth)}
	e.startWorker(worker.Options{Concurrency: 4, Runner: &sr})
	f, err := sweep.Parse([]byte(precisionSweep), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if r.Tasks != 30 || r.Published != 30 {
		t.Fatalf("submit %+v", r)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	total := want["1"].reps + want["2"].reps + want["3"].reps // 105
	if s.State != protocol.CampaignDone || s.Done != total || s.Total != total || s.Failed != 0 {
		t.Fatalf("status %+v, want %d done", s, total)
	}
	if n, mx := sr.total(); n != total || mx != 1 {
		t.Fatalf("runs %d (max %d per task), want %d and 1", n, mx, total)
	}
	checkPrecisionOutputs(t, e.store, r.Campaign, want)

	// Every added task is the task a fixed-replication sweep would have.
	g := *f
	g.Precision, g.Replications = nil, 55
	big, _ := sweep.Expand(&g, builtin.Catalog{})
	ids := map[string]bool{}
	for _, tk := range big.Tasks {
		ids[tk.ID] = true
	}
	keys, _ := e.store.List(ctx, storage.ResultsPrefix(r.Campaign))
	if len(keys) != total {
		t.Fatalf("%d results", len(keys))
	}
	var lost []string
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(r.Campaign, k)
		if !ids[tid] {
			t.Fatalf("task %s is not a task of the 55-replication sweep", tid)
		}
		data, _ := e.store.Get(ctx, k)
		var rec struct{ Task sweep.Task }
		_ = json.Unmarshal(data, &rec)
		// Lose part of the last batch of the growing points.
		if (rec.Task.ArrivalRate == 2 && rec.Task.Replication >= 35) || (rec.Task.ArrivalRate == 3 && rec.Task.Replication >= 52) {
			lost = append(lost, k)
		}
	}
	if len(lost) != 8 {
		t.Fatalf("%d results to lose", len(lost))
	}
	for _, k := range lost {
		if err := e.store.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	_ = e.store.Delete(ctx, storage.SummaryKey(r.Campaign))

	// A fresh farm on the same storage.
	e2 := newEnv(t)
	e2.store = e.store
	co2, _ := e2.startCoordinator(protocol.Layout{})
	sr2 := countRunner{next: synthFn(synth)}
	e2.startWorker(worker.Options{Concurrency: 4, Runner: &sr2})
	r2, err := co2.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Campaign != r.Campaign || r2.Tasks != total || r2.AlreadyDone != total-8 || r2.Published != 8 {
		t.Fatalf("resubmit %+v", r2)
	}
	s2 := waitDone(t, co2, r.Campaign, 5*time.Minute)
	if s2.Done != total || s2.Total != total {
		t.Fatalf("status after resume %+v", s2)
	}
	if n, mx := sr2.total(); n != 8 || mx != 1 {
		t.Fatalf("resume ran %d tasks (max %d each), want the 8 lost ones", n, mx)
	}
	checkPrecisionOutputs(t, e.store, r.Campaign, want)
}

func aggregateRate(r float64) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Complexity 28: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func checkPrecisionOutputs(t *testing.T, st storage.Store, id string, want map[string]struct {
	reps   int
	status string
}) {
	t.Helper()
	sum := readCSV(t, st, storage.SummaryKey(id))
	prec := readCSV(t, st, archive.PrecisionKey(id))
	if len(sum) != 3 || len(prec) != 3 {
		t.Fatalf("%d summary rows, %d precision rows", len(sum), len(prec))
	}
	for i, row := range sum {
		w := want[row["arrival_rate"]]
		p := prec[i]
		if row["replications"] != itoa(w.reps) || row["n"] != itoa(w.reps) || p["replications"] != itoa(w.reps) ||
			p["status"] != w.status || p["point"] != row["point"] || p["metric"] != "mean_response" || p["target"] != "0.05" {
			t.Fatalf("rate %s: summary %v\nprecision %v\nwant %+v", row["arrival_rate"], row, p, w)
		}
		// precision.csv's interval is the summary's.
		if p["mean"] != row["mean_response_mean"] || p["hw"] != row["mean_response_hw"] {
			t.Fatalf("precision %v vs summary %v", p, row)
		}
		rel := parse(p["rel_hw"])
		if (w.status == coordinator.PrecisionMet) != (rel <= 0.05) {
			t.Fatalf("rate %s: rel_hw %v with status %s", row["arrival_rate"], rel, w.status)
		}
	}
	data, err := st.Get(context.Background(), storage.ManifestKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.Precision == nil || m.Precision.Met != 2 || m.Precision.Capped != 1 || m.Precision.Pending != 0 ||
		len(m.Precision.Points) != 3 || m.Precision.Initial != 10 || m.Tasks != 105 || m.TaskListSHA256 != listHash(id, st, t) || len(m.PointOrder) != 3 || m.Report == "" {
		t.Fatalf("manifest precision %+v, %d tasks, task list %s, report %q", m.Precision, m.Tasks, m.TaskListSHA256, m.Report)
	}
	for _, name := range []string{"index.html", "summary.csv", "manifest.json", "precision.csv"} {
		if _, err := st.Stat(context.Background(), storage.ReportPrefix(id)+name); err != nil {
			t.Fatalf("report file %s: %v", name, err)
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func parse(s string) float64 {
	var x float64
	if err := json.Unmarshal([]byte(s), &x); err != nil {
		return math.NaN()
	}
	return x
}

// TestSpecRoundTripPrecision: spec.yaml of a precision sweep (with a
// float in exponent form, which fmt.Sscan once truncated to 1) expands to
// the same campaign id.
func TestSpecRoundTripPrecision(t *testing.T) {
	f, err := sweep.Parse([]byte(strings.Replace(precisionSweep, "rel_half_width: 0.05", "rel_half_width: 1e-9", 1)), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c1, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := coordinator.SpecYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := sweep.Parse(y, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := sweep.Expand(g, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID != c2.ID || g.Precision == nil || g.Precision.RelHalfWidth != 1e-9 {
		t.Fatalf("ids %s %s, precision %+v\n%s", c1.ID, c2.ID, g.Precision, y)
	}
}

// TestPrecisionCoordinatorRestart: the coordinator stops after the first
// replications were added (their messages queued or running, workers
// still busy) and a new one on the same NATS server and storage finishes
// the campaign with the same decisions, every task run once.
func TestPrecisionCoordinatorRestart(t *testing.T) {
	e := newEnv(t)
	co, stop := e.startCoordinator(protocol.Layout{})
	slow := synthFn(func(t *sweep.Task) (*worker.Outcome, error) {
		time.Sleep(20 * time.Millisecond)
		return synth(t)
	})
	sr := countRunner{next: slow}
	e.startWorker(worker.Options{Concurrency: 2, Runner: &sr})
	f, err := sweep.Parse([]byte(precisionSweep), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, _ := co.Status(ctx, r.Campaign)
		if s.Total > 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replications added: %+v", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	co2, _ := e.startCoordinator(protocol.Layout{})
	s := waitDone(t, co2, r.Campaign, 5*time.Minute)
	if s.Done != 105 || s.Total != 105 {
		t.Fatalf("status %+v", s)
	}
	if n, mx := sr.total(); n != 105 || mx != 1 {
		t.Fatalf("runs %d (max %d per task), want 105 and 1", n, mx)
	}
	checkPrecisionOutputs(t, e.store, r.Campaign, map[string]struct {
		reps   int
		status string
	}{"1": {10, coordinator.PrecisionMet}, "2": {40, coordinator.PrecisionMet}, "3": {55, coordinator.PrecisionCapped}})
}

// TestPrecisionAllFailed: a point whose replications all fail has no
// estimate: it stops as "undefined" and the campaign finishes.
func TestPrecisionAllFailed(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{MaxDeliver: 1})
	var fr failRunner
	e.startWorker(worker.Options{Concurrency: 2, Runner: &fr, RetryDelay: 10 * time.Millisecond})
	f, err := sweep.Parse([]byte(strings.Replace(strings.Replace(precisionSweep, "[1, 2, 3]", "[1]", 1), "replications: 10", "replications: 2", 1)), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
	if err != nil {
		t.Fatal(err)
	}
	s := waitDone(t, co, r.Campaign, 5*time.Minute)
	if s.Failed != 2 || s.Total != 2 {
		t.Fatalf("status %+v", s)
	}
	prec := readCSV(t, e.store, archive.PrecisionKey(r.Campaign))
	if len(prec) != 1 || prec[0]["status"] != coordinator.PrecisionUndefined || prec[0]["n"] != "0" || prec[0]["mean"] != "" {
		t.Fatalf("precision.csv %v", prec)
	}
}
