// Package aggregate turns the per-replication results of a campaign into one
// summary per parameter point: for every metric, the mean over the
// independent replications of the point and the half-width of its 95%
// Student-t confidence interval (docs/design.md), plus the counts a reader needs
// to judge it (replications done, failed, flagged unstable).
//
// Why over replications: each replication of a point has its own seed and
// its own warm-up, so its per-run means are independent and identically
// distributed, which is what the Student-t interval assumes. The jobs inside
// one run are correlated; batches of one run are never used here.
//
// Undefined values (no replication measured the quantity) are NaN and
// unbounded ones (one replication: no variance estimate) are +Inf, as in
// package stats. [WriteCSV] and [WriteJSON] encode them explicitly (empty
// cell / "inf"; null).
package aggregate

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/results/metric"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
	"github.com/msjfarm/msjfarm/sweep"
)

// Level is the confidence level of every half-width.
const Level = 0.95

// Metric is the estimate of one quantity at one point: what the quantity
// is (MetricDesc, shared by every point that has it) and its values.
//
// A campaign holds a summary of every point while it finalises and while a
// reader reads it, 18 to 30 metrics a point. With the description copied
// into each, a metric took 136 bytes and 10^5 points 250 MB of them; a
// pointer to one shared description and the three values take 32 bytes.
// The description's fields read as the metric's own (m.Name, m.Label); it
// is shared, so it is never written through a Metric: build a MetricDesc
// and make the metric with NewMetric.
type Metric struct {
	*MetricDesc
	// Mean is the mean over the N replications that measured the quantity;
	// NaN if N == 0.
	Mean float64
	// HalfWidth is the half-width of the 95% Student-t confidence interval
	// of Mean: t(0.975, N-1)·s/√N. +Inf if N == 1, NaN if N == 0.
	HalfWidth float64
	// N is the number of replications that measured the quantity. It is
	// below Point.N when some replications did not: a class with no
	// measured departure (its mean is undefined, not 0), a counter the
	// policy did not report.
	N int
}

// MetricDesc says what a Metric estimates: the same for every point that
// has the quantity, so points share one (NewMetric).
type MetricDesc struct {
	// Name is the column stem in the summary table: a base metric name
	// ("mean_response"), a per-class one ("class1_heavy_mean_response") or
	// a policy counter ("counter_phase1_time").
	Name string
	// Class is the class index of a per-class metric, -1 otherwise.
	Class int
	// Base is the quantity without the class prefix: "mean_response",
	// "mean_wait", "p_wait" for per-class metrics; Name otherwise.
	Base string
	// Label, Unit, Kind and Doc describe a policy counter as the policy
	// did (sim.CounterInfo, from the records' counter_info): empty for
	// the other metrics and for a counter its policy does not describe,
	// which outputs then name by its column. They passed the worker's
	// check (wire.CheckCounterInfo): short plain text.
	Label string
	Unit  string
	Kind  sim.CounterKind
	Doc   string
	// ClassCounter marks a policy counter reported once per class, this
	// metric being class CounterClass's (an index into Point.Classes);
	// Base is then the counter's column without the class
	// ("counter_preempted_fraction"). Decided here, once, for every
	// output (classcounter.go): the report's figures and heat maps draw
	// such a counter as one figure with a panel per class, and
	// summary_long names its class. Class stays -1: it is not one of the
	// per-class metrics (metric.Class).
	ClassCounter bool
	CounterClass int
}

// NewMetric is the metric d with its values, d shared with every other
// metric described alike.
func NewMetric(d MetricDesc, mean, halfWidth float64, n int) Metric {
	return Metric{MetricDesc: descs.intern(d), Mean: mean, HalfWidth: halfWidth, N: n}
}

// descs are the descriptions metrics share. A process sees few distinct
// ones (the base metrics, three per class name, the policies' counters),
// but a long-running coordinator sees every campaign's, so the table is
// bounded: past maxDescs distinct descriptions a metric gets its own
// copy, as before it was shared (correct, only larger).
var descs = descTable{m: map[MetricDesc]*MetricDesc{}}

const maxDescs = 1 << 14

type descTable struct {
	mu sync.Mutex
	m  map[MetricDesc]*MetricDesc
}

func (t *descTable) intern(d MetricDesc) *MetricDesc {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.m[d]; ok {
		return p
	}
	p := &d
	if len(t.m) < maxDescs {
		t.m[d] = p
	}
	return p
}

// noMetric is what Point.Metric returns for a metric the point does not
// have: its description is empty, not nil, so reading it is safe.
var noMetric = Metric{MetricDesc: &MetricDesc{}}

// DisplayName is how outputs name the metric to a reader: a described
// counter's label with its unit ("mean duration of phase 1 (time)"),
// otherwise "" (the caller's own label for the column applies).
func (m Metric) DisplayName() string {
	if m.Label == "" {
		return ""
	}
	return sim.CounterInfo{Label: m.Label, Unit: m.Unit}.AxisLabel()
}

// jsonMetric is the JSON form of Metric: NaN and ±Inf become null, which
// encoding/json cannot otherwise encode. (A null half-width with n = 1 means
// unbounded; with n = 0, undefined.)
type jsonMetric struct {
	Name      string   `json:"name"`
	Class     int      `json:"class"`
	Base      string   `json:"base"`
	Mean      *float64 `json:"mean"`
	HalfWidth *float64 `json:"hw"`
	N         int      `json:"n"`
	// A described counter's label, unit and kind (absent otherwise, and
	// in summaries written before they existed).
	Label string          `json:"label,omitempty"`
	Unit  string          `json:"unit,omitempty"`
	Kind  sim.CounterKind `json:"kind,omitempty"`
	Doc   string          `json:"doc,omitempty"`
	// A per-class counter's class (absent otherwise).
	ClassCounter bool `json:"class_counter,omitempty"`
	CounterClass int  `json:"counter_class,omitempty"`
}

func finitePtr(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON encodes NaN and ±Inf as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonMetric{m.Name, m.Class, m.Base, finitePtr(m.Mean), finitePtr(m.HalfWidth), m.N, m.Label, m.Unit, m.Kind, m.Doc, m.ClassCounter, m.CounterClass})
}

// UnmarshalJSON reads what MarshalJSON wrote. A null mean is NaN; a null
// half-width is +Inf when n == 1 and NaN otherwise, as MeanCI would give.
func (m *Metric) UnmarshalJSON(b []byte) error {
	var j jsonMetric
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	mean, hw := math.NaN(), math.NaN()
	if j.Mean != nil {
		mean = *j.Mean
	}
	switch {
	case j.HalfWidth != nil:
		hw = *j.HalfWidth
	case j.N == 1:
		hw = math.Inf(1)
	}
	*m = NewMetric(MetricDesc{Name: j.Name, Class: j.Class, Base: j.Base, Label: j.Label, Unit: j.Unit, Kind: j.Kind,
		Doc: j.Doc, ClassCounter: j.ClassCounter, CounterClass: j.CounterClass}, mean, hw, j.N)
	return nil
}

// Class describes one job class of a point's workload.
type Class struct {
	Name string `json:"name"`
	Need int    `json:"need"`
	// Share, Service and ServiceMean describe the class as the sweep gave
	// it (empty for a replayed trace): what analytical overlays need.
	Share       float64 `json:"share,omitempty"`
	Service     string  `json:"service,omitempty"`
	ServiceMean float64 `json:"service_mean,omitempty"`
}

// Point is the summary of one parameter point: the replications that share
// sweep.Task.Point (same scenario, policy and parameters).
type Point struct {
	// Point is the point id (sweep.Task.Point).
	Point string `json:"point"`
	// Scenario is the scenario id (the point without the policy).
	Scenario string `json:"scenario"`
	// Workload is the workload name.
	Workload string `json:"workload"`
	// Servers is k.
	Servers int `json:"servers"`
	// Policy and Params are the policy name and its resolved parameters.
	Policy string         `json:"policy"`
	Params map[string]any `json:"params"`
	// Axes are the point's values of the swept axes.
	Axes map[string]any `json:"axes"`
	// ArrivalRate and Load are the scenario's total arrival rate and
	// offered load ρ (0 for a replayed trace).
	ArrivalRate float64 `json:"arrival_rate"`
	Load        float64 `json:"load"`
	// Replications is the number of tasks of the point; N of them have a
	// result, NFailed failed, and the rest are still pending.
	Replications int `json:"replications"`
	N            int `json:"n"`
	NFailed      int `json:"n_failed"`
	// NUnstable counts the replications (among N) flagged unstable by the
	// engine. Their values ARE included in the means (so a mean stays
	// reproducible from the records), but a point with NUnstable > 0 is
	// unstable: its response-time means are lower bounds of a quantity
	// that diverges, and reports mark it as such instead of plotting it as a
	// finite estimate.
	NUnstable int `json:"n_unstable"`
	// NTruncated counts the other replications (among N) that hit the
	// jobs-in-system cap; LowerBound reports that some replication's means
	// are lower bounds (measured jobs were still in the system when it
	// stopped), so the point's means are bounds, not estimates. Verdict
	// pools the replications (sim.Pool: unstable when at least half show
	// evidence, so one outlier does not overturn nine clear runs).
	NTruncated int `json:"n_truncated"`
	// NIdentical counts the replications (among N) whose result repeats,
	// to the bit, another replication's of a different seed
	// (identicalReplications): the policy's code did not use its seed, so
	// the point is one run counted several times and its ±0 interval is no
	// precision. Always 0 for a replayed trace or a D/D/k workload, whose
	// replications are the same jobs.
	NIdentical int    `json:"n_identical,omitempty"`
	LowerBound bool   `json:"lower_bound"`
	Verdict    string `json:"verdict"`
	// Convergence pools the replications' run-length adequacy verdicts
	// (sim.PoolConvergence: MSER-5 truncation point against the run
	// length, completed policy cycles in the window); nil when no
	// replication carries one (engines before 0.4.0, runs stopped inside
	// their window). Not converged is a warning: the means may still be
	// dominated by the initial transient or by too few policy cycles.
	Convergence *sim.ConvergenceVerdict `json:"convergence,omitempty"`
	// Evidence is the pooled verdict with its evidence (sim.Pool): the
	// rule that decided it, its statistic and critical value, and the
	// pooled work-deficit test of every quantity; nil when no replication
	// produced a result.
	Evidence *sim.PointVerdict `json:"verdict_evidence,omitempty"`
	// Errors are the distinct error messages of the failed replications
	// (at most 5).
	Errors []string `json:"errors,omitempty"`
	// Classes are the workload's classes, in index order.
	Classes []Class `json:"classes,omitempty"`
	// Metrics are the estimates, in a fixed order: the base metrics
	// ([metric.Base]), then per class the [metric.Class], then the policy
	// counters in the order the policy reports them.
	Metrics []Metric `json:"metrics"`
	// Compare is the point's paired comparison with the baseline series at
	// its scenario (Compare, paired.go).
	Compare *Comparison `json:"compare,omitempty"`
	// recs are the replications the metrics are estimated from, kept for
	// Compare (not encoded).
	recs []*record.Record
}

// Unstable reports whether the point's means must not be read as finite
// estimates: its pooled verdict is not stable (unstable or truncated), or
// some replication's means are lower bounds. Reports then draw them as
// bounds and tables print them as such.
func (p *Point) Unstable() bool {
	return IsBound(p.Verdict, p.LowerBound)
}

// Unconverged reports that the point's pooled converged verdict failed (a
// warning on a point whose means are otherwise estimates).
func (p *Point) Unconverged() bool { return p.Convergence != nil && !p.Convergence.Converged }

// Metric returns the metric with the given name (column stem).
func (p *Point) Metric(name string) (Metric, bool) {
	for _, m := range p.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return noMetric, false
}

type acc struct {
	xs []float64
}

func (a *acc) add(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return // cannot come from a JSON record; ignore defensively
	}
	a.xs = append(a.xs, x)
}

func (a *acc) metric(name, base string, class int) Metric {
	return a.described(MetricDesc{Name: name, Class: class, Base: base})
}

// described is the metric d of the values added.
func (a *acc) described(d MetricDesc) Metric {
	s := stats.MeanCI(a.xs, Level)
	return NewMetric(d, s.Mean, s.HalfWidth, s.N)
}

// Summarize groups the tasks by point, in the order of first appearance of
// each point in tasks (deterministic), and summarises the records found in
// results (keyed by task id). A task without a record is pending; a record
// with an error or without a result is failed; the others are the
// replications the metrics are estimated from.
//
// Per-class metrics use only the replications in which the class had a
// measured departure (otherwise the class mean is undefined, not 0).
// Counters use the replications that reported them.
func Summarize(tasks []sweep.Task, results map[string]*record.Record) []Point {
	idx := map[string]int{}
	var groups [][]sweep.Task
	for _, t := range tasks {
		i, ok := idx[t.Point]
		if !ok {
			i = len(groups)
			idx[t.Point] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], t)
	}
	pts := make([]Point, len(groups))
	recs := make([][]*record.Record, len(groups))
	for i, g := range groups {
		pts[i], recs[i] = summarizeGroup(g, results)
	}
	keepRecords(pts, recs)
	_ = Compare(pts, "") // the default baseline always resolves
	return pts
}

// SummarizePoint summarises one point from its tasks (all of the same
// sweep.Task.Point, in replication order) and their records, as Summarize
// does, without keeping the records: a caller that streams a campaign a
// point at a time (the coordinator's finalisation) holds one point's
// records at once and pairs the points afterwards with ComparePaired.
func SummarizePoint(tasks []sweep.Task, results map[string]*record.Record) Point {
	p, _ := summarizeGroup(tasks, results)
	return p
}

// summarizeGroup is the point of tasks (one point's) and the successful
// replications its metrics are estimated from.
func summarizeGroup(tasks []sweep.Task, results map[string]*record.Record) (Point, []*record.Record) {
	if len(tasks) == 0 {
		return Point{}, nil
	}
	t := tasks[0]
	p := Point{
		Point: t.Point, Scenario: t.Scenario, Workload: t.Workload.Name, Servers: t.Workload.Servers,
		Policy: t.Policy, Params: t.Params, Axes: t.Axes, ArrivalRate: t.ArrivalRate, Load: t.Load,
	}
	for ci, c := range t.Workload.Classes {
		cl := Class{Name: metric.ClassName(ci, c.Name), Need: c.Need, Share: c.Share, Service: c.Service.Dist}
		if c.Service.Mean != nil {
			cl.ServiceMean = *c.Service.Mean
		}
		p.Classes = append(p.Classes, cl)
	}
	var recs []*record.Record
	for _, t := range tasks {
		p.Replications++
		if r := results[t.ID]; r != nil && p.count(r) {
			recs = append(recs, r)
		}
	}
	summarizePoint(&p, recs)
	p.NIdentical = identicalReplications(recs)
	if p.Servers == 0 && len(recs) > 0 {
		// A replayed trace whose k comes from its header: the task says 0
		// (resolved when it runs), the results say what ran; summary.csv
		// said servers=0.
		p.Servers = recs[0].Result.Servers
	}
	rs := make([]*sim.Result, 0, len(recs))
	for _, r := range recs {
		rs = append(rs, r.Result)
	}
	if v, err := sim.Pool(rs); err == nil {
		p.Verdict, p.LowerBound = string(v.Verdict), v.LowerBound
		p.Evidence = &v
	}
	if cv := sim.PoolConvergence(rs); cv.N > 0 {
		p.Convergence = &cv
	}
	return p, recs
}

// count counts record r of one of p's replications: failed (its error
// kept, at most 5 distinct) or successful (true: its metrics count).
func (p *Point) count(r *record.Record) bool {
	if r.Failed() {
		p.NFailed++
		msg := r.Error
		if msg == "" {
			msg = "no result"
		}
		if len(p.Errors) < 5 && !contains(p.Errors, msg) {
			p.Errors = append(p.Errors, msg)
		}
		return false
	}
	p.N++
	switch {
	case r.Result.Unstable:
		p.NUnstable++
	case r.Result.Truncated:
		p.NTruncated++
	}
	return true
}

// identicalReplications counts the replications among recs whose result
// repeats a replication of another seed: the same overall mean response,
// variance of the response time and mean number in system, to the bit.
// A generated workload draws other jobs for another seed, so honest runs
// never agree so (three sums over a million random terms); a plugin that
// seeds its own generator with a constant, by mistake or to look
// precise, returns one run for every seed, and its points read "3 ± 0"
// without a word. Results that spot verification cannot question either:
// it re-runs the same binary, which gives the same run again. A replayed
// trace is the same jobs in every replication, so a deterministic
// policy's replications are identical there by design (the submission
// warns of it): its records are left out, as are a workload's that draws
// no random number (drawsNothing) and runs with no departure (every mean
// 0).
func identicalReplications(recs []*record.Record) int {
	// A point's replications share their workload and trace: its task
	// says for them all.
	if len(recs) < 2 || recs[0].Task.Trace != nil || drawsNothing(&recs[0].Task) {
		return 0
	}
	type sums struct{ t, v, l uint64 }
	first := make(map[sums]uint64, len(recs)) // the seed of the first run with those sums
	n := 0
	for _, r := range recs {
		res := r.Result
		if res.Overall.Count == 0 {
			continue
		}
		k := sums{math.Float64bits(res.Overall.MeanResponse), math.Float64bits(res.Overall.VarResponse), math.Float64bits(res.MeanInSystem)}
		if seed, ok := first[k]; !ok {
			first[k] = r.Task.Seed
		} else if seed != r.Task.Seed {
			n++
		}
	}
	return n
}

// drawsNothing reports whether task t's jobs are the same whatever its
// seed: one class, with deterministic service times, arriving at
// deterministic intervals (a D/D/k system), whose deterministic policy's
// replications are identical by design, as a replayed trace's are. With
// two classes the class of each arrival is drawn.
func drawsNothing(t *sweep.Task) bool {
	if len(t.Workload.Classes) != 1 || t.Interarrival == nil {
		return false
	}
	det := func(sp dist.Spec) bool {
		d, err := sp.Build()
		_, ok := d.(*dist.Deterministic)
		return err == nil && ok
	}
	return det(t.Workload.Classes[0].Service) && det(*t.Interarrival)
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// summarizePoint fills p's metrics from its replications' records: the
// base metrics, each class's, and the counters (counterMetrics).
func summarizePoint(p *Point, recs []*record.Record) {
	base := make([]acc, len(metric.Base))
	pointClasses(p, recs)
	cls := make([][]acc, len(p.Classes))
	for i := range cls {
		cls[i] = make([]acc, len(metric.Class))
	}
	var cnames []string
	cnt := map[string]*acc{}
	for _, r := range recs {
		res := r.Result
		for i, m := range metric.Base {
			if v, ok := m.Value(res); ok {
				base[i].add(v)
			}
		}
		for ci := range res.Classes {
			c := &res.Classes[ci]
			if ci >= len(cls) || c.Count == 0 {
				continue
			}
			for mi, m := range metric.Class {
				cls[ci][mi].add(m.Value(c))
			}
		}
		for _, c := range res.Counters {
			a := cnt[c.Name]
			if a == nil {
				a = &acc{}
				cnt[c.Name] = a
				cnames = append(cnames, c.Name)
			}
			a.add(c.Value)
		}
	}
	p.Metrics = make([]Metric, 0, len(metric.Base)+len(cls)*len(metric.Class)+len(cnames))
	for i, m := range metric.Base {
		p.Metrics = append(p.Metrics, base[i].metric(m.Name, m.Name, -1))
	}
	for ci := range cls {
		pre := metric.ClassPrefix(ci, p.Classes[ci].Name)
		for mi, m := range metric.Class {
			p.Metrics = append(p.Metrics, cls[ci][mi].metric(pre+m.Name, m.Name, ci))
		}
	}
	p.Metrics = append(p.Metrics, counterMetrics(recs, cnames, cnt, p.Classes)...)
}

// counterMetrics is the counters' metrics, in first-seen order, each with
// the label and unit its policy gives it (counterInfo), the per-class
// ones marked (markClassCounters).
func counterMetrics(recs []*record.Record, cnames []string, cnt map[string]*acc, classes []Class) []Metric {
	var ds []MetricDesc
	var raw []string
	seen := map[string]bool{}
	info := counterInfo(recs)
	for _, n := range cnames {
		col := metric.CounterColumn(n)
		if seen[col] { // two counter names that sanitize alike: keep the first
			continue
		}
		seen[col] = true
		d := MetricDesc{Name: col, Class: -1, Base: col}
		if c, ok := info.Lookup(n); ok {
			d.Label, d.Unit, d.Kind, d.Doc = c.Label, c.Unit, c.Kind, c.Doc
		}
		ds = append(ds, d)
		raw = append(raw, n)
	}
	markClassCounters(ds, raw, classes)
	ms := make([]Metric, len(ds))
	for i, d := range ds {
		ms[i] = cnt[raw[i]].described(d)
	}
	return ms
}

// pointClasses names p's classes: a trace workload has no classes in its
// spec, so they are taken from the results (the first one with more
// classes wins).
func pointClasses(p *Point, recs []*record.Record) {
	for _, r := range recs {
		if len(r.Result.Classes) > len(p.Classes) {
			p.Classes = p.Classes[:0]
			for _, c := range r.Result.Classes {
				p.Classes = append(p.Classes, Class{Name: c.Name, Need: c.Need})
			}
		}
	}
	for ci := range p.Classes {
		p.Classes[ci].Name = metric.ClassName(ci, p.Classes[ci].Name)
	}
}

// counterInfo is the counter descriptions of a point's records: the
// replications of one point ran one policy, so any record that carries
// them will do (the first; records written before descriptions existed
// carry none). The worker checked them; they are checked again here, as
// a record may have been altered in storage, and descriptions that fail
// are ignored (the raw names are shown).
func counterInfo(recs []*record.Record) sim.CounterInfos {
	for _, r := range recs {
		if len(r.CounterInfo) > 0 && wire.CheckCounterInfo(r.CounterInfo) == nil {
			return r.CounterInfo
		}
	}
	return nil
}

// MaxCounterNames bounds the counters of a campaign's tables and report:
// the first MaxCounterNames distinct counter metrics, in point order, are
// kept. A result may carry wire.MaxCounters counters, but nothing bound
// their names across results: a plugin naming them after the seed made a
// summary of 30 864 columns and a report of 30 680 files from 20 tasks
// of 300 arrivals, in 4 minutes and 1.9 GB. msjfarm's own policies report
// a few dozen in all.
const MaxCounterNames = 1024

// keptCounters is the set of counter metric names CapCounters keeps, and
// the number of others; nil when every one is kept.
func keptCounters(pts []Point) (map[string]bool, int) {
	kept := map[string]bool{}
	dropped := map[string]bool{}
	for _, p := range pts {
		for _, m := range p.Metrics {
			if !strings.HasPrefix(m.Name, metric.CounterPrefix) || kept[m.Name] {
				continue
			}
			if len(kept) < MaxCounterNames {
				kept[m.Name] = true
			} else {
				dropped[m.Name] = true
			}
		}
	}
	if len(dropped) == 0 {
		return nil, 0
	}
	return kept, len(dropped)
}

// CapCounters is pts with only the first MaxCounterNames counters (the
// points copied, not changed, where any is dropped), and how many
// counter metrics it dropped.
func CapCounters(pts []Point) ([]Point, int) {
	kept, dropped := keptCounters(pts)
	if kept == nil {
		return pts, 0
	}
	out := make([]Point, len(pts))
	for i, p := range pts {
		ms := make([]Metric, 0, len(p.Metrics))
		for _, m := range p.Metrics {
			if !strings.HasPrefix(m.Name, metric.CounterPrefix) || kept[m.Name] {
				ms = append(ms, m)
			}
		}
		p.Metrics = ms
		out[i] = p
	}
	return out, dropped
}

// columns returns the union of the metric stems over the points, ordered:
// base metrics, then class metrics by class index and metric.Class order,
// then counters by first appearance.
func metricColumns(pts []Point) []Metric {
	pts, _ = CapCounters(pts)
	type key struct {
		group, class, order int
	}
	seen := map[string]key{}
	var out []Metric
	n := 0
	for _, p := range pts {
		for _, m := range p.Metrics {
			if _, ok := seen[m.Name]; ok {
				continue
			}
			k := key{order: n}
			n++
			switch {
			case m.Class >= 0:
				k.group, k.class = 1, m.Class
			case strings.HasPrefix(m.Name, metric.CounterPrefix):
				k.group = 2
			}
			seen[m.Name] = k
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := seen[out[i].Name], seen[out[j].Name]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.class != b.class {
			return a.class < b.class
		}
		return a.order < b.order
	})
	return out
}
