package aggregate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// RoundInput undoes the floating-point noise of a value computed from
// decimal inputs, such as the offered load λ·Σ p_i n_i E[S_i]/k of a sweep
// whose λ, shares and means are short decimals (1·4.1/32 is computed as
// 0.12812500000000002): if the 15-significant-digit decimal of x is within
// 4 ulps of x, that decimal's float is returned, else x. Measured values are
// never passed through it: they are printed as they come.
func RoundInput(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	y, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 15, 64), 64)
	if err != nil {
		return x
	}
	a := math.Abs(x)
	if math.Abs(y-x) <= 4*(math.Nextafter(a, math.Inf(1))-a) {
		return y
	}
	return x
}

// Labels names each point by its policy and the parameters whose values
// differ between the points of that policy ("msfq threshold=31" when
// several thresholds are swept; "fcfs"; parameters in name order), as the
// report's legends do. Points of a policy with one parameter setting are
// labelled by the policy alone: params holds the full setting.
func Labels(pts []Point) []string {
	values := map[string]map[string]map[string]bool{} // policy → param → JSON values
	for _, p := range pts {
		if values[p.Policy] == nil {
			values[p.Policy] = map[string]map[string]bool{}
		}
		for k, v := range p.Params {
			if values[p.Policy][k] == nil {
				values[p.Policy][k] = map[string]bool{}
			}
			b, _ := json.Marshal(v)
			values[p.Policy][k][string(b)] = true
		}
	}
	// A parameter absent from some points of the policy also varies.
	counts := map[string]map[string]int{}
	npol := map[string]int{}
	for _, p := range pts {
		npol[p.Policy]++
		if counts[p.Policy] == nil {
			counts[p.Policy] = map[string]int{}
		}
		for k := range p.Params {
			counts[p.Policy][k]++
		}
	}
	out := make([]string, len(pts))
	for i, p := range pts {
		var keys []string
		for k := range p.Params {
			if len(values[p.Policy][k]) > 1 || counts[p.Policy][k] < npol[p.Policy] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		l := p.Policy
		for _, k := range keys {
			l += " " + k + "=" + formatAny(p.Params[k])
		}
		out[i] = l
	}
	return out
}

// axisKinds decides each axis column's kind: Float when every value is a
// number, String otherwise (e.g. a policy parameter taking names).
func axisKinds(pts []Point, axes []string) []Kind {
	kinds := make([]Kind, len(axes))
	for i, a := range axes {
		kinds[i] = Float
		for _, p := range pts {
			if v, ok := p.Axes[a]; ok && !isNumber(v) {
				kinds[i] = String
				break
			}
		}
	}
	return kinds
}

func isNumber(v any) bool {
	switch v.(type) {
	case float64, float32, int, int64, uint64:
		return true
	}
	return false
}

func number(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return math.NaN()
}

// idColumnsFor are the columns identifying a point, shared by the tables:
// point, policy, params, label, workload, servers, the axes, arrival_rate,
// load (the order of WriteCSV's summary.csv).
func idColumnsFor(pts []Point) (cols []Column, row func(i int) []any) {
	axes := axisNames(pts)
	kinds := axisKinds(pts, axes)
	cols = []Column{{"point", String}, {"policy", String}, {"params", String}, {"label", String},
		{"workload", String}, {"servers", Int}}
	for i, a := range axes {
		cols = append(cols, Column{AxisColumn(a), kinds[i]})
	}
	cols = append(cols, Column{"arrival_rate", Float}, Column{"load", Float})
	labels := Labels(pts)
	row = func(i int) []any {
		p := &pts[i]
		servers := int64(p.Servers)
		if v, ok := p.Axes["servers"]; ok && isNumber(v) {
			servers = int64(number(v))
		}
		r := []any{p.Point, p.Policy, paramsJSON(p.Params), labels[i], p.Workload, servers}
		for j, a := range axes {
			v, ok := p.Axes[a]
			switch {
			case kinds[j] == Float && ok:
				r = append(r, number(v))
			case kinds[j] == Float:
				r = append(r, math.NaN())
			default:
				r = append(r, formatAny(v))
			}
		}
		return append(r, fixedNumber(p, "arrival_rate", p.ArrivalRate), fixedNumber(p, "load", p.Load))
	}
	return cols, row
}

// fixedNumber is the value of a fixed column: the axis value as written
// when the axis is swept, else the computed value with its rounding noise
// removed (RoundInput).
func fixedNumber(p *Point, axis string, v float64) float64 {
	if a, ok := p.Axes[axis]; ok && isNumber(a) {
		return number(a)
	}
	return RoundInput(v)
}

func paramsJSON(params map[string]any) string {
	if len(params) == 0 {
		return "{}"
	}
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Sprint(params)
	}
	return string(b)
}

// WideTable is summary.csv as a typed table (columns: Header), one row per
// point: what WriteCSV writes and summary.parquet holds.
func WideTable(pts []Point) *Table { return WideTableStream(pts).Collect() }

// WideTableStream is WideTable generating its rows as it is written
// (WriteCSV, WriteParquet), never holding them all.
func WideTableStream(pts []Point) *Table {
	id, idRow := idColumnsFor(pts)
	t := &Table{Columns: id}
	t.Columns = append(t.Columns, Column{"replications", Int}, Column{"n", Int}, Column{"n_failed", Int},
		Column{"n_unstable", Int}, Column{"n_truncated", Int}, Column{"n_identical", Int}, Column{"lower_bound", Bool}, Column{"verdict", String})
	t.Columns = append(t.Columns, ConvergenceColumns...)
	t.Columns = append(t.Columns, EvidenceColumns...)
	mcols := metricColumns(pts)
	for _, m := range mcols {
		t.Columns = append(t.Columns, Column{m.Name + "_mean", Float}, Column{m.Name + "_hw", Float},
			Column{m.Name + "_n", Int})
	}
	t.Columns = append(t.Columns, pairedWideColumns(mcols)...)
	t.n = len(pts)
	t.gen = func(yield func([]any) error) error {
		for i := range pts {
			if err := yield(wideRow(&pts[i], idRow(i), mcols)); err != nil {
				return err
			}
		}
		return nil
	}
	return t
}

// wideRow is a point's row of the wide table after its id cells.
func wideRow(p *Point, id []any, mcols []Metric) []any {
	row := append(id, int64(p.Replications), int64(p.N), int64(p.NFailed), int64(p.NUnstable),
		int64(p.NTruncated), int64(p.NIdentical), p.LowerBound, p.Verdict)
	row = append(row, convergenceCells(p)...)
	row = append(row, evidenceCells(p)...)
	have := make(map[string]Metric, len(p.Metrics))
	for _, m := range p.Metrics {
		have[m.Name] = m
	}
	for _, c := range mcols {
		m, ok := have[c.Name]
		if !ok {
			row = append(row, math.NaN(), math.NaN(), int64(0))
			continue
		}
		row = append(row, m.Mean, m.HalfWidth, int64(m.N))
	}
	row = append(row, pairedWideCells(p, mcols)...)
	return row
}

// ConvergenceColumns are summary.csv's run-length adequacy columns, after
// verdict (see COLUMNS.md): converged is "true", "false" or "" (no
// replication has the evidence); n_unconverged counts the replications
// that failed it; mser_fraction is their median MSER-5 truncation point as
// a fraction of the run; min_cycles the fewest completed policy cycles of a
// replication's window (empty for a policy without cycles).
var ConvergenceColumns = []Column{{"converged", String}, {"n_unconverged", Int}, {"mser_fraction", Float}, {"min_cycles", Float}}

func convergenceCells(p *Point) []any {
	c := p.Convergence
	if c == nil {
		return []any{"", int64(0), math.NaN(), math.NaN()}
	}
	cycles := math.NaN()
	if c.MinCycles >= 0 {
		cycles = float64(c.MinCycles)
	}
	return []any{strconv.FormatBool(c.Converged), int64(c.Unconverged), c.MedianMSERFraction, cycles}
}

// EvidenceColumns are summary.csv's verdict-evidence columns, after the
// convergence columns (see COLUMNS.md): the rule that decided the verdict
// (verdict_test) with its statistic and critical value; the pooled work-
// deficit test's quantity closest to firing (deficit_quantity) with its
// mean relative deficit, half-width, t and Stouffer's z with their
// critical values; the total
// work's mean relative deficit; and the converged verdict's throughput
// shortfall (whole window) with the replications it failed.
var EvidenceColumns = []Column{{"verdict_test", String}, {"verdict_statistic", Float}, {"verdict_critical", Float},
	{"deficit_quantity", String}, {"deficit_mean", Float}, {"deficit_hw", Float}, {"deficit_t", Float}, {"deficit_critical", Float},
	{"deficit_z", Float}, {"deficit_z_critical", Float},
	{"work_deficit_mean", Float}, {"work_deficit_hw", Float},
	{"throughput_deficit_mean", Float}, {"throughput_deficit_hw", Float}, {"n_low_throughput", Int}}

func evidenceCells(p *Point) []any {
	nan := math.NaN()
	out := []any{"", nan, nan, "", nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, int64(0)}
	if v := p.Evidence; v != nil {
		out[0], out[1], out[2] = v.Test, v.Statistic, v.Critical
		if d, ok := v.StrongestDeficit(); ok {
			out[3], out[4], out[5], out[6], out[7], out[8], out[9] = d.Name, d.Mean, d.HalfWidth, d.T, d.Critical, d.Z, d.ZCritical
		}
		for _, d := range v.Deficits {
			if d.Name == sim.DeficitWork && d.Class == -1 {
				out[10], out[11] = d.Mean, d.HalfWidth
			}
		}
	}
	if c := p.Convergence; c != nil {
		if th := c.Throughput; th != nil {
			out[12], out[13] = th.Mean, th.HalfWidth
		}
		out[14] = int64(c.LowThroughput)
	}
	return out
}

// LongColumns documents the long table (summary_long.csv/.parquet) after
// the point columns; see COLUMNS.md.
var LongColumns = []Column{{"metric", String}, {"class", String}, {"class_index", Int}, {"mean", Float},
	{"hw", Float}, {"n", Int}, {"replications", Int}, {"n_failed", Int}, {"n_unstable", Int},
	{"unstable", Bool}, {"undefined", Bool}, {"unbounded", Bool}, {"metric_label", String}, {"unit", String}, {"metric_doc", String}}

// LongTable is the tidy form of the summary: one row per point × metric ×
// class (every metric of every point, in the point's metric order), with
// the point's columns, metric (the quantity without class prefix, e.g.
// "mean_response" or "counter_phase1_time"; a per-class counter's column
// without its class, "counter_preempted_fraction"), class and class_index
// (the class name and index of a per-class metric or per-class counter,
// Metric.ClassCounter; "" and -1 for a whole-system metric or counter), mean, hw, n and the flags: unstable (the point has
// replications flagged unstable: response times are lower bounds),
// undefined (n = 0: no replication measured it) and unbounded (n = 1: no
// confidence interval), and metric_label, unit and metric_doc: a
// counter's label, unit and doc as its policy describes them (Metric.Label;
// empty otherwise).
func LongTable(pts []Point) *Table { return LongTableStream(pts).Collect() }

// LongTableStream is LongTable generating its rows as it is written
// (WriteCSV, WriteParquet), never holding them all.
func LongTableStream(pts []Point) *Table {
	id, idRow := idColumnsFor(pts)
	t := &Table{Columns: append(append(id, LongColumns...), PairedLongColumns...)}
	for i := range pts {
		t.n += len(pts[i].Metrics)
	}
	t.gen = func(yield func([]any) error) error {
		for i := range pts {
			if err := longRows(&pts[i], idRow(i), yield); err != nil {
				return err
			}
		}
		return nil
	}
	return t
}

// longRows yields a point's rows of the long table, one per metric.
func longRows(p *Point, base []any, yield func([]any) error) error {
	for _, m := range p.Metrics {
		cname, ci := "", m.Class
		if m.ClassCounter {
			ci = m.CounterClass
		}
		if ci >= 0 && ci < len(p.Classes) {
			cname = p.Classes[ci].Name
		}
		row := append(append([]any(nil), base...), m.Base, cname, int64(ci), m.Mean, m.HalfWidth,
			int64(m.N), int64(p.Replications), int64(p.NFailed), int64(p.NUnstable), p.Bound(m),
			m.N == 0, m.N == 1, m.Label, m.Unit, m.Doc)
		row = append(row, pairedLongCells(p, m.Name)...)
		if err := yield(row); err != nil {
			return err
		}
	}
	return nil
}

// ReplicationColumns are the per-replication table's columns after the
// point columns and before the metrics; see COLUMNS.md.
var ReplicationColumns = []Column{{"task", String}, {"replication", Int}, {"seed", String}, {"status", String},
	{"error", String}, {"unstable", Bool}, {"runner", String}, {"engine", String},
	{"wall_seconds", Float}, {"cpu_seconds", Float}}

// ReplicationTable is one row per task (replication) of the points, in
// the order of tasks: the point's columns, ReplicationColumns, then one
// column per metric (summary.csv's stems without _mean: base metrics,
// per-class metrics, counters), the replication's own value of it (empty
// where the replication did not measure it, failed or is pending). status
// is done, failed or pending; seed is the task's seed in decimal (a string:
// it does not fit int64).
func ReplicationTable(pts []Point, tasks []sweep.Task, recs map[string]*record.Record) *Table {
	id, idRow := idColumnsFor(pts)
	t := &Table{Columns: append(id, ReplicationColumns...)}
	mcols := metricColumns(pts)
	for _, m := range mcols {
		t.Columns = append(t.Columns, Column{m.Name, Float})
	}
	byPoint := map[string]int{}
	for i, p := range pts {
		byPoint[p.Point] = i
	}
	for _, task := range tasks {
		i, ok := byPoint[task.Point]
		if !ok {
			continue
		}
		r := recs[task.ID]
		status, errMsg, unstable := "pending", "", false
		runner, engine := "", ""
		wall, cpu := math.NaN(), math.NaN()
		vals := map[string]float64{}
		if r != nil {
			runner, engine = r.Provenance.Runner, r.Provenance.Engine
			if r.Provenance.WallSeconds > 0 {
				wall = r.Provenance.WallSeconds
			}
			if r.Provenance.CPUSeconds > 0 {
				cpu = r.Provenance.CPUSeconds
			}
			if r.Failed() {
				status, errMsg = "failed", r.Error
				if errMsg == "" {
					errMsg = "no result"
				}
			} else {
				status, unstable = "done", r.Result.Unstable
				vals = replicationValues(&pts[i], r)
			}
		}
		row := append(idRow(i), task.ID, int64(task.Replication), strconv.FormatUint(task.Seed, 10), status,
			errMsg, unstable, runner, engine, wall, cpu)
		for _, m := range mcols {
			v, ok := vals[m.Name]
			if !ok {
				v = math.NaN()
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// replicationValues are the metric values of one successful replication,
// by column stem, measured as summarizePoint measures them.
func replicationValues(p *Point, r *record.Record) map[string]float64 {
	out := map[string]float64{}
	res := r.Result
	for _, m := range metric.Base {
		if v, ok := m.Value(res); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[m.Name] = v
		}
	}
	for ci := range res.Classes {
		c := &res.Classes[ci]
		if ci >= len(p.Classes) || c.Count == 0 {
			continue
		}
		pre := metric.ClassPrefix(ci, p.Classes[ci].Name)
		for _, m := range metric.Class {
			if v := m.Value(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
				out[pre+m.Name] = v
			}
		}
	}
	for _, c := range res.Counters {
		col := metric.CounterColumn(c.Name)
		if _, dup := out[col]; !dup && !math.IsNaN(c.Value) && !math.IsInf(c.Value, 0) {
			out[col] = c.Value
		}
	}
	return out
}
