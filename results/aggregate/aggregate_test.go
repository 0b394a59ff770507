package aggregate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/golden"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// t975 are t(0.975, df) quantiles from tables: df = 1, 2.
const (
	t975df1 = 12.706204736174698
	t975df2 = 4.302652729911275
)

func oneOrAll() workload.Spec {
	s, err := workload.Named("one-or-all")
	if err != nil {
		panic(err)
	}
	return s
}

func task(point string, rep int, policy string, params map[string]any, axes map[string]any, rate float64) sweep.Task {
	return sweep.Task{ID: point + "-r" + string(rune('0'+rep)), Point: point, Scenario: "sc-" + point, Replication: rep,
		Seed: uint64(rep + 1), Workload: oneOrAll(), ArrivalRate: rate, Policy: policy, Params: params, Axes: axes,
		Load: rate * (0.9*1 + 0.1*32) / 32}
}

// res builds a result with overall mean response t, class means c0 (light)
// and c1 (heavy; c1 < 0 means no heavy job departed in the window).
func res(t, c0, c1 float64) *sim.Result {
	r := &sim.Result{Window: 100, Overall: sim.ClassStats{Name: "all", Count: 100, MeanResponse: t, MeanWait: t - 1, PWait: 0.5},
		WeightedMeanResponse: 2 * t, Jain: 0.8, MeanInSystem: 3 * t, MeanInQueue: t, Utilization: 0.5, Throughput: 2}
	r.Classes = []sim.ClassStats{{Name: "light", Need: 1, Count: 90, MeanResponse: c0, MeanWait: c0 / 2, PWait: 0.25}}
	heavy := sim.ClassStats{Name: "heavy", Need: 32}
	if c1 >= 0 {
		heavy.Count, heavy.MeanResponse, heavy.MeanWait, heavy.PWait = 10, c1, c1-1, 1
	}
	r.Classes = append(r.Classes, heavy)
	return r
}

// fixture is three points:
//
//	A: fcfs, λ=2, three replications.
//	B: fcfs, λ=4, two replications with results (one unstable), one failed.
//	C: msfq threshold=31, λ=2, one replication with counters, one pending.
//
// A's replications converged; B's carry no converged verdict (records of
// an engine before 0.4.0); C's one replication had too few cycles.
func fixture() ([]sweep.Task, map[string]*record.Record) {
	axA := map[string]any{"arrival_rate": 2.0}
	axB := map[string]any{"arrival_rate": 4.0}
	axC := map[string]any{"arrival_rate": 2.0, "threshold": 31}
	var tasks []sweep.Task
	for r := 0; r < 3; r++ {
		tasks = append(tasks, task("A", r, "fcfs", map[string]any{}, axA, 2))
	}
	for r := 0; r < 3; r++ {
		tasks = append(tasks, task("B", r, "fcfs", map[string]any{}, axB, 4))
	}
	for r := 0; r < 2; r++ {
		tasks = append(tasks, task("C", r, "msfq", map[string]any{"threshold": 31}, axC, 2))
	}
	// Interleave to check that the order is by first appearance, not by id.
	tasks[1], tasks[3] = tasks[3], tasks[1]
	rec := map[string]*record.Record{}
	put := func(id string, r *sim.Result, err string) {
		for _, t := range tasks {
			if t.ID == id {
				rec[id] = &record.Record{Task: t, Result: r, Error: err}
			}
		}
	}
	for i, r := range []*sim.Result{res(1, 0.5, 4), res(2, 1.0, 6), res(3, 1.5, -1)} {
		r.Convergence = &sim.Convergence{Converged: true, MSERFraction: 0.1 * float64(i), Cycles: -1}
		put("A-r"+string(rune('0'+i)), r, "")
	}
	put("B-r0", res(10, 5, 50), "")
	u := res(20, 10, 100)
	u.Unstable = true
	u.Instability = &sim.Instability{Reasons: []string{"growth"}}
	put("B-r1", u, "")
	put("B-r2", nil, "plugin crashed: signal: killed")
	c := res(1.5, 1, 5)
	c.Counters = []sim.Counter{{Name: "phase1_time", Value: 3}, {Name: "Phase 2 time", Value: 7}}
	c.Convergence = &sim.Convergence{Reasons: []string{"cycles"}, MSERFraction: 0.05, CycleName: "cycles", Cycles: 12}
	put("C-r0", c, "")
	return tasks, rec
}

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return a == b || (math.IsNaN(a) && math.IsNaN(b))
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestSummarize(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	if len(pts) != 3 || pts[0].Point != "A" || pts[1].Point != "B" || pts[2].Point != "C" {
		t.Fatalf("points %v, want A, B, C in order of first appearance", pts)
	}
	a, b, c := pts[0], pts[1], pts[2]
	counts := []struct {
		p                     Point
		reps, n, failed, unst int
	}{
		{a, 3, 3, 0, 0},
		{b, 3, 2, 1, 1},
		{c, 2, 1, 0, 0}, // one pending: neither done nor failed
	}
	for _, x := range counts {
		if x.p.Replications != x.reps || x.p.N != x.n || x.p.NFailed != x.failed || x.p.NUnstable != x.unst {
			t.Errorf("point %s: reps/n/failed/unstable = %d/%d/%d/%d, want %d/%d/%d/%d", x.p.Point,
				x.p.Replications, x.p.N, x.p.NFailed, x.p.NUnstable, x.reps, x.n, x.failed, x.unst)
		}
	}
	if !b.Unstable() || a.Unstable() {
		t.Errorf("Unstable(): A %v B %v, want false true", a.Unstable(), b.Unstable())
	}
	if len(b.Errors) != 1 || !strings.Contains(b.Errors[0], "killed") {
		t.Errorf("B errors %q", b.Errors)
	}
	cases := []struct {
		p        Point
		metric   string
		mean, hw float64
		n        int
	}{
		// A: 1, 2, 3 → mean 2, s = 1, hw = t(0.975,2)·1/√3 = 4.302652730/1.7320508 = 2.484138.
		{a, "mean_response", 2, 2.4841377118, 3},
		// Weighted = 2t: 2, 4, 6 → mean 4, s = 2, hw = 2·2.484138 = 4.968275.
		{a, "weighted_mean_response", 4, 4.9682754236, 3},
		// Constant across replications → s = 0, hw = 0.
		{a, "utilization", 0.5, 0, 3},
		{a, "jain", 0.8, 0, 3},
		{a, "preemptions", 0, 0, 3},
		// light: 0.5, 1, 1.5 → mean 1, s = 0.5, hw = 2.484138/2 = 1.242069.
		{a, "class0_light_mean_response", 1, 1.2420688559, 3},
		// heavy: no departure in A-r2, so over 4 and 6 only: mean 5,
		// s = √2, hw = t(0.975,1)·√2/√2 = 12.706205.
		{a, "class1_heavy_mean_response", 5, t975df1, 2},
		{a, "class1_heavy_mean_wait", 4, t975df1, 2},
		// B: 10 and 20 (the unstable one included; the point is flagged)
		// → mean 15, s = 7.0710678, hw = 12.706205·7.0710678/√2 = 63.531024.
		{b, "mean_response", 15, 5 * t975df1, 2},
		// C: one replication → hw +Inf.
		{c, "mean_response", 1.5, math.Inf(1), 1},
		{c, "counter_phase1_time", 3, math.Inf(1), 1},
		{c, "counter_phase_2_time", 7, math.Inf(1), 1},
	}
	for _, x := range cases {
		m, ok := x.p.Metric(x.metric)
		if !ok {
			t.Errorf("point %s: no metric %s", x.p.Point, x.metric)
			continue
		}
		if !near(m.Mean, x.mean) || !near(m.HalfWidth, x.hw) || m.N != x.n {
			t.Errorf("point %s %s = %v ± %v (n=%d), want %v ± %v (n=%d)", x.p.Point, x.metric, m.Mean, m.HalfWidth, m.N, x.mean, x.hw, x.n)
		}
	}
	if _, ok := a.Metric("counter_phase1_time"); ok {
		t.Errorf("point A (fcfs) has a counter")
	}
	if m, _ := a.Metric("class1_heavy_mean_response"); m.Class != 1 || m.Base != "mean_response" {
		t.Errorf("class metric: class %d base %q", m.Class, m.Base)
	}
}

func TestNoResults(t *testing.T) {
	tasks, _ := fixture()
	pts := Summarize(tasks, nil)
	m, _ := pts[0].Metric("mean_response")
	if pts[0].N != 0 || !math.IsNaN(m.Mean) || !math.IsNaN(m.HalfWidth) || m.N != 0 {
		t.Errorf("no results: n=%d metric %+v, want NaN mean and half-width", pts[0].N, m)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, pts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"mean": null`) {
		t.Errorf("NaN mean not encoded as null")
	}
}

func TestCSVGolden(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	var buf bytes.Buffer
	if err := WriteCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/summary.golden.csv", buf.Bytes())

	rows, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want header + 3", len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		if _, dup := col[h]; dup {
			t.Errorf("duplicate column %q", h)
		}
		col[h] = i
	}
	get := func(r int, c string) string {
		i, ok := col[c]
		if !ok {
			t.Fatalf("no column %q in %v", c, rows[0])
		}
		return rows[r][i]
	}
	checks := []struct {
		row       int
		col, want string
	}{
		{1, "policy", "fcfs"},
		{1, "params", "{}"},
		{3, "params", `{"threshold":31}`},
		{3, "threshold", "31"},
		{1, "threshold", ""}, // A has no threshold axis
		{1, "arrival_rate", "2"},
		{2, "n_unstable", "1"},
		{2, "n_failed", "1"},
		{1, "mean_response_mean", "2"},
		{3, "mean_response_hw", "inf"},           // n = 1: unbounded
		{1, "counter_phase1_time_mean", ""},      // fcfs has no counter: undefined
		{1, "counter_phase1_time_n", "0"},        //
		{1, "class1_heavy_mean_response_n", "2"}, //
		{3, "counter_phase_2_time_mean", "7"},    //
		{1, "servers", "32"},                     //
		{1, "workload", "one-or-all"},            //
	}
	for _, c := range checks {
		if got := get(c.row, c.col); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.col, got, c.want)
		}
	}
}

func TestAxisCollision(t *testing.T) {
	pts := []Point{{Point: "x", Policy: "p", Axes: map[string]any{"n": 3, "load": 0.9, "class[0].need": 2}, Load: 0.8999999999999999}}
	h := Header(pts)
	want := "point,policy,params,label,workload,servers,class[0].need,axis_n,arrival_rate,load,replications,n,n_failed,n_unstable,n_truncated,n_identical,lower_bound,verdict,converged,n_unconverged,mser_fraction,min_cycles," +
		"verdict_test,verdict_statistic,verdict_critical,deficit_quantity,deficit_mean,deficit_hw,deficit_t,deficit_critical,deficit_z,deficit_z_critical," +
		"work_deficit_mean,work_deficit_hw,throughput_deficit_mean,throughput_deficit_hw,n_low_throughput,baseline,compare_note"
	if got := strings.Join(h, ","); got != want {
		t.Errorf("header\n got %s\nwant %s", got, want)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	// The swept load is written as given, not as the recomputed 0.8999999999999999.
	if !strings.Contains(buf.String(), ",2,3,0,0.9,") {
		t.Errorf("row %q: want class[0].need=2, axis_n=3, arrival_rate=0, load=0.9", buf.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, pts); err != nil {
		t.Fatal(err)
	}
	var back []Point
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(pts) {
		t.Fatalf("%d points back, want %d", len(back), len(pts))
	}
	for i := range pts {
		if len(back[i].Metrics) != len(pts[i].Metrics) {
			t.Fatalf("point %d: %d metrics back, want %d", i, len(back[i].Metrics), len(pts[i].Metrics))
		}
		for j, m := range pts[i].Metrics {
			g := back[i].Metrics[j]
			if g.Name != m.Name || g.N != m.N || g.Class != m.Class || !near(g.Mean, m.Mean) || !near(g.HalfWidth, m.HalfWidth) {
				t.Errorf("point %d metric %s: back %+v, want %+v", i, m.Name, g, m)
			}
		}
	}
	if back[1].NUnstable != 1 || back[1].Policy != "fcfs" {
		t.Errorf("point B back: %+v", back[1])
	}
}

// TestColumnsDocumented checks that every fixed column and metric of
// WriteCSV is documented in COLUMNS.md.
func TestColumnsDocumented(t *testing.T) {
	doc, err := os.ReadFile("COLUMNS.md")
	if err != nil {
		t.Fatal(err)
	}
	cols := []string{"point", "policy", "params", "label", "workload", "servers", "arrival_rate", "load",
		"replications", "n", "n_failed", "n_unstable", "_mean", "_hw", "_n", "axis_", "counter_", "class<i>_<name>_"}
	for _, c := range append(append(append(LongColumns, ReplicationColumns...), ConvergenceColumns...), EvidenceColumns...) {
		cols = append(cols, c.Name)
	}
	for _, c := range cols {
		if strings.Contains(string(doc), "`"+c+"`, ") || strings.Contains(string(doc), ", `"+c+"`") {
			continue // documented in a row naming several columns
		}
		if !bytes.Contains(doc, []byte("`"+c+"`")) {
			t.Errorf("COLUMNS.md does not document `%s`", c)
		}
	}
	for _, m := range metric.Base {
		if !bytes.Contains(doc, []byte("`"+m.Name+"`")) {
			t.Errorf("COLUMNS.md does not document metric `%s`", m.Name)
		}
	}
	for _, m := range metric.Class {
		if !bytes.Contains(doc, []byte("`class<i>_<name>_"+m.Name+"`")) {
			t.Errorf("COLUMNS.md does not document class metric `class<i>_<name>_%s`", m.Name)
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	golden.Check(t, path, want, got, golden.Text)
}

// A replayed trace whose k comes from its header has servers 0 in its
// tasks (resolved when it runs): the point takes k from its results, where
// summary.csv said servers=0.
func TestTraceServersFromResults(t *testing.T) {
	tk := task("T", 0, "fcfs", nil, nil, 0)
	tk.Workload = workload.Spec{Name: "w"} // no servers, no classes: a trace's
	r := res(2, 1, 3)
	r.Servers = 8
	p := SummarizePoint([]sweep.Task{tk}, map[string]*record.Record{tk.ID: {Task: tk, Result: r}})
	if p.Servers != 8 {
		t.Errorf("servers %d, want the results' 8", p.Servers)
	}
}

// A campaign's tables keep the first MaxCounterNames counters: a plugin
// that named its 256 counters after the seed made, from 20 tasks, a
// summary of 30 864 columns and a report of 30 680 files. Here three
// points of 500 distinct counters each: the first 1024 in point order
// are kept (all of the first two points', 24 of the third's), the points
// given are not changed.
func TestCapCounters(t *testing.T) {
	var pts []Point
	for p := range 3 {
		pt := Point{Metrics: []Metric{{MetricDesc: &MetricDesc{Name: "mean_response", Class: -1}}}}
		for i := range 500 {
			pt.Metrics = append(pt.Metrics, Metric{MetricDesc: &MetricDesc{Name: fmt.Sprintf("%sp%d_c%d", metric.CounterPrefix, p, i), Class: -1}})
		}
		pts = append(pts, pt)
	}
	capped, dropped := CapCounters(pts)
	if dropped != 476 || len(capped[0].Metrics) != 501 || len(capped[2].Metrics) != 25 || len(pts[2].Metrics) != 501 {
		t.Fatalf("dropped %d, kept %d, %d, %d (given %d)", dropped, len(capped[0].Metrics), len(capped[1].Metrics), len(capped[2].Metrics), len(pts[2].Metrics))
	}
	counters := 0
	for _, m := range metricColumns(pts) {
		if strings.HasPrefix(m.Name, metric.CounterPrefix) {
			counters++
		}
	}
	if counters != MaxCounterNames {
		t.Fatalf("%d counter columns, want %d", counters, MaxCounterNames)
	}
	if same, n := CapCounters(pts[:2]); n != 0 || &same[0] != &pts[0] {
		t.Fatalf("1000 counters: dropped %d, or copied", n)
	}
}

// TestIdenticalReplications: a point's replications that repeat, to the
// bit, the run of another seed are counted (a plugin that ignores its
// seed), and said in summary.csv; a replayed trace's and runs without a
// departure are not. Point D: four seeds, the first three results the same
// sums (res(1, 0.5, 4) each), the fourth another: 2 repeat the first. E:
// the same four on a replayed trace: 0. F: runs with no departure (every
// mean 0): 0. G: the same four as D on a D/D/k system (one class,
// deterministic service and inter-arrival times), which draws no random
// number: 0.
func TestIdenticalReplications(t *testing.T) {
	var tasks []sweep.Task
	rec := map[string]*record.Record{}
	one := 1.0
	det := dist.Spec{Dist: "det", Mean: &one}
	for _, pt := range []string{"D", "E", "F", "G"} {
		for r := range 4 {
			tk := task(pt, r, "fcfs", map[string]any{}, map[string]any{"arrival_rate": 2.0}, 2)
			switch pt {
			case "E":
				tk.Trace = &sweep.TraceRef{SHA256: strings.Repeat("a", 64), Size: 1, TimeScale: 1}
			case "G":
				tk.Workload = workload.Spec{Name: "dd", Servers: 2, Classes: []workload.ClassSpec{{Name: "only", Need: 1, Share: 1, Service: det}}}
				tk.Interarrival = &det
			}
			var out *sim.Result
			switch {
			case pt == "F":
				out = res(0, 0, -1)
				out.Overall.Count, out.Classes[0].Count = 0, 0
			case r < 3:
				out = res(1, 0.5, 4)
			default:
				out = res(1.25, 0.5, 4)
			}
			tasks = append(tasks, tk)
			rec[tk.ID] = &record.Record{Task: tk, Result: out}
		}
	}
	pts := Summarize(tasks, rec)
	for i, want := range []int{2, 0, 0, 0} {
		if got := pts[i].NIdentical; got != want {
			t.Errorf("point %s: %d identical replications, want %d", pts[i].Point, got, want)
		}
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(rows[0], "n_identical")
	if col < 0 || rows[1][col] != "2" || rows[2][col] != "0" {
		t.Errorf("n_identical column %d: %v", col, rows)
	}
}

// TestParquetTooWide: a table of more columns than a Parquet file holds
// is refused by WriteParquet before anything is written (parquet-go
// panicked at the 65,536th column: a workload of 3,200 classes, after its
// replications had run), and its CSV is written whole.
func TestParquetTooWide(t *testing.T) {
	n := MaxParquetColumns + 1
	tb := &Table{n: 1}
	for i := range n {
		tb.Columns = append(tb.Columns, Column{"c" + strconv.Itoa(i), Int})
	}
	tb.gen = func(yield func([]any) error) error {
		row := make([]any, n)
		for i := range row {
			row[i] = int64(i)
		}
		return yield(row)
	}
	var pq, csvOut bytes.Buffer
	if err := tb.WriteParquet(&pq); !errors.Is(err, ErrParquetColumns) || pq.Len() != 0 {
		t.Fatalf("WriteParquet of %d columns: %v, %d bytes written; want ErrParquetColumns and nothing", n, err, pq.Len())
	}
	if err := tb.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if rows, err := csv.NewReader(&csvOut).ReadAll(); err != nil || len(rows) != 2 || len(rows[1]) != n {
		t.Fatalf("the CSV: %d rows, %v", len(rows), err)
	}
}
