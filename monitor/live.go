package monitor

import (
	"context"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// Campaign is the JSON the live page polls (/api/campaigns/<id>).
type Campaign struct {
	Campaign    string    `json:"campaign"`
	Name        string    `json:"name"`
	State       string    `json:"state"`
	Total       int       `json:"total"`
	Done        int       `json:"done"`
	Failed      int       `json:"failed"`
	Running     int       `json:"running"`
	Queued      int       `json:"queued"`
	Redelivered int       `json:"redelivered"`
	Created     time.Time `json:"created,omitzero"`
	Finished    time.Time `json:"finished,omitzero"`
	Now         time.Time `json:"now"`
	// Rate is the tasks finished per second in this run, computed as the
	// terminal's progress line computes it (RunRate): the tasks finished
	// since the run began over the time since; ETA the seconds left at
	// that rate (-1: unknown); RunStarted when the run's first task began.
	Rate       float64   `json:"rate"`
	ETA        float64   `json:"eta"`
	RunStarted time.Time `json:"run_started,omitzero"`
	// Points and PointsDone count the parameter points and those with at
	// least one result (plotted).
	Points     int         `json:"points"`
	PointsDone int         `json:"points_done"`
	Workers    []WorkerRow `json:"workers"`
	// Failures are the failed tasks (at most maxFailures; FailuresTotal
	// counts them all).
	Failures      []Failure `json:"failures"`
	FailuresTotal int       `json:"failures_total"`
	// X is the swept axis of the plots.
	X     string `json:"x"`
	Plots []Plot `json:"plots"`
	// Report is the link to the final report, once it is written.
	Report string `json:"report,omitempty"`
	// Verify is the campaign's spot verification as the coordinator
	// counts it (absent when not asked for): what `msjfarm status`
	// prints under the campaign.
	Verify *protocol.VerifyStatus `json:"verify,omitempty"`
	// Problems say why a running campaign does not move, in the words of
	// `msjfarm status`: its tasks cannot be queued or its summary
	// written, task messages workers refused, a campaign of another
	// store. The page showed "0 running, ETA ?" and nothing else.
	Problems []string `json:"problems,omitempty"`
}

// WorkerRow is one worker of the page's table.
type WorkerRow struct {
	Worker string `json:"worker"`
	Host   string `json:"host"`
	Slots  int    `json:"slots"`
	// Running counts this campaign's tasks the worker runs now.
	Running int `json:"running"`
	// PerMinute is the tasks the worker finished per minute (all
	// campaigns) over the last minute of heartbeats.
	PerMinute     float64   `json:"per_minute"`
	Done          int64     `json:"done"`
	Failed        int64     `json:"failed"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	Stopping      bool      `json:"stopping,omitempty"`
	// hbRunning is what the worker's last heartbeat says it runs (all
	// campaigns); hb that there was one.
	hbRunning int
	hb        bool
}

// Failure is one failed task.
type Failure struct {
	Task   string         `json:"task"`
	Policy string         `json:"policy"`
	Params map[string]any `json:"params"`
	Axes   map[string]any `json:"axes"`
	Error  string         `json:"error"`
}

// Plot is one metric against the swept axis, one series per policy (and
// policy parameters / other scenario axes).
type Plot struct {
	Metric string   `json:"metric"`
	Label  string   `json:"label"`
	Series []Series `json:"series"`
}

// Series is one curve.
type Series struct {
	Name   string      `json:"name"`
	Points []PlotPoint `json:"points"`
}

// PlotPoint is one point's estimate: HW is the 95% CI half-width (null
// when unbounded, n = 1, and for a bound). Unstable marks a lower bound
// (aggregate.Point.Bound: the point's verdict is not stable or some
// replication's means are bounds, and the metric is one an overload
// drives up).
type PlotPoint struct {
	X        float64  `json:"x"`
	Y        float64  `json:"y"`
	HW       *float64 `json:"hw"`
	N        int      `json:"n"`
	Unstable bool     `json:"unstable,omitempty"`
}

const (
	maxFailures = 100
	rateWindow  = time.Minute
)

// headline are the metrics plotted, in order, when the points have them.
var headline = []struct{ name, label string }{
	{"mean_response", "mean response time E[T]"},
	{"weighted_mean_response", "weighted mean response time"},
	{"mean_wait", "mean waiting time E[W]"},
	{"p_wait", "probability of waiting"},
	{"utilization", "utilization"},
}

// RunProgress counts the tasks finished in this run — records whose
// attempt ended at or after since (when this server started: `msjfarm run`
// starts it with the run; a coordinator with its own process) — and
// returns when the earliest of them began, the run's start. Records
// finished before (an earlier run's, or reused from other campaigns) are
// left out, as the terminal leaves out the tasks finished when it started.
func RunProgress(recs map[string]*record.Record, since time.Time) (n int, start time.Time) {
	for _, r := range recs {
		p := r.Provenance
		if p.Started.IsZero() {
			continue
		}
		end := p.Started.Add(time.Duration(p.WallSeconds * float64(time.Second)))
		if end.Before(since) {
			continue
		}
		n++
		if start.IsZero() || p.Started.Before(start) {
			start = p.Started
		}
	}
	return n, start
}

// RunRate is the terminal's rate and ETA (cmd/msjfarm progress): n tasks
// finished in elapsed, remaining to go, at the same mean pace: rate = n /
// elapsed per second, eta = remaining / rate seconds (-1 when unknown:
// no task finished, or less than a second elapsed).
func RunRate(n int, elapsed time.Duration, remaining int) (rate, eta float64) {
	if n <= 0 || elapsed < time.Second {
		// Under a second, as rateOf: tasks that finished as the run
		// started (stored results read back) made the first line say
		// 493000 tasks/s.
		return 0, -1
	}
	rate = float64(n) / elapsed.Seconds()
	return rate, float64(max(remaining, 0)) / rate
}

type sample struct {
	at time.Time
	n  int64
}

// rateOf is the slope of the samples over the last rateWindow, per second
// (0 with fewer than 2 samples a second apart).
func rateOf(ss []sample) float64 {
	if len(ss) < 2 {
		return 0
	}
	a, b := ss[0], ss[len(ss)-1]
	dt := b.at.Sub(a.at).Seconds()
	if dt < 1 {
		return 0
	}
	return float64(b.n-a.n) / dt
}

func addSample(ss []sample, s sample) []sample {
	ss = append(ss, s)
	i := 0
	for i < len(ss)-2 && s.at.Sub(ss[i].at) > rateWindow {
		i++
	}
	return ss[i:]
}

// campaignCache holds what the page knows of one campaign: each point's
// summary and run progress, with the number of finished tasks it was
// read at. A poll reads again only the points whose count moved (their
// records, one point at a time, summarised then dropped), so that what
// is held is O(points), never a record per finished task.
type campaignCache struct {
	mu sync.Mutex
	// pts, run and finished are per point (the campaign's point order);
	// read says whether the point was read at all.
	pts      []aggregate.Point
	run      []runProgress
	finished []int32
	read     []bool
	last     []byte
	lastAt   time.Time
	report   string
	used     time.Time // last poll (guarded by Server.mu)
}

// runProgress is RunProgress over one point's records.
type runProgress struct {
	n     int
	start time.Time
}

// update reads again the points of v whose finished count moved since
// the last poll (all of them the first time) and summarises them.
func (c *campaignCache) update(ctx context.Context, st storage.Store, id string, v *coordinator.LiveView, since time.Time) {
	if len(c.pts) != v.Points {
		c.pts, c.run = make([]aggregate.Point, v.Points), make([]runProgress, v.Points)
		c.finished, c.read = make([]int32, v.Points), make([]bool, v.Points)
	}
	for k := range v.Points {
		if c.read[k] && c.finished[k] == v.Finished[k] {
			continue
		}
		tasks := v.PointTasks(k)
		var recs map[string]*record.Record
		if v.Finished[k] > 0 {
			ids := make([]string, len(tasks))
			for i, t := range tasks {
				ids[i] = t.ID
			}
			recs = record.ReadMany(ctx, st, id, ids, nil) // a task not stored yet is pending
		}
		c.pts[k] = aggregate.SummarizePoint(tasks, recs)
		n, start := RunProgress(recs, since)
		c.run[k] = runProgress{n, start}
		c.finished[k], c.read[k] = v.Finished[k], true
	}
}

// progress is RunProgress over every point read.
func (c *campaignCache) progress() (n int, start time.Time) {
	for _, r := range c.run {
		n += r.n
		if !r.start.IsZero() && (start.IsZero() || r.start.Before(start)) {
			start = r.start
		}
	}
	return n, start
}

func (s *Server) cache(id string) *campaignCache {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.camps[id]
	if c == nil {
		c = &campaignCache{}
		s.camps[id] = c
	}
	c.used = time.Now()
	// A long-lived coordinator sees many campaigns: forget the summaries
	// of those nobody has watched for a while (read again if watched again).
	for k, x := range s.camps {
		if k != id && time.Since(x.used) > cacheIdle {
			delete(s.camps, k)
		}
	}
	return c
}

// cacheIdle is how long a campaign's records stay cached without a poll.
const cacheIdle = 10 * time.Minute

// campaignJSON builds the page's JSON for a campaign, at most once per
// minInterval (polls in between get the previous answer).
func (s *Server) campaignJSON(ctx context.Context, id string) ([]byte, error) {
	v, err := s.o.Coordinator.Live(id)
	if err != nil {
		return nil, err
	}
	c := s.cache(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != nil && time.Since(c.lastAt) < s.minInterval {
		return c.last, nil
	}
	now := time.Now().UTC()
	st := v.Status
	out := Campaign{Campaign: id, Name: st.Name, State: st.State, Total: st.Total, Done: st.Done,
		Failed: st.Failed, Running: st.Running, Queued: st.Queued, Redelivered: v.Redeliveries,
		Created: st.Created, Finished: st.Finished, Now: now, ETA: -1}
	c.update(ctx, s.o.Store, id, v, s.started)
	var n int
	n, out.RunStarted = c.progress()
	var eta float64
	out.Rate, eta = RunRate(n, now.Sub(out.RunStarted), st.Total-st.Done-st.Failed)
	switch {
	case st.State != protocol.CampaignRunning:
		out.ETA = 0
	case out.Rate > 0:
		out.ETA = eta
	}
	out.Workers = s.workerRows(v)
	// Running: the tasks workers actually run. The coordinator's count
	// (tasks handed out and not yet finished) also holds a task whose
	// result is written but not yet acknowledged, or one redelivered while
	// its first delivery still runs, so it can exceed the slots.
	out.Running = 0
	for _, w := range out.Workers {
		out.Running += w.Running
	}
	out.Failures, out.FailuresTotal = failures(v)
	out.Verify = st.Verify
	if v.Points > 0 {
		out.Points = v.Points
		for i := range c.pts {
			if c.pts[i].N > 0 {
				out.PointsDone++
			}
		}
		out.X, out.Plots = plots(c.pts)
	}
	if st.State == protocol.CampaignDone {
		if c.report == "" {
			if _, err := s.o.Store.Stat(ctx, storage.ReportPrefix(id)+"index.html"); err == nil {
				c.report = "/report/" + id + "/index.html"
			}
		}
		out.Report = c.report
	}
	data, err := json.Marshal(&out)
	if err != nil {
		return nil, err
	}
	c.last, c.lastAt = data, time.Now()
	return data, nil
}

func failures(v *coordinator.LiveView) ([]Failure, int) {
	ids := make([]string, 0, len(v.Failed))
	for t := range v.Failed {
		ids = append(ids, t)
	}
	sort.Strings(ids)
	out := []Failure{}
	for _, id := range ids {
		if len(out) == maxFailures {
			break
		}
		f := Failure{Task: id, Error: v.Failed[id]}
		if t, ok := v.Task(id); ok {
			f.Policy, f.Params, f.Axes = t.Policy, t.Params, t.Axes
		}
		out = append(out, f)
	}
	return out, len(ids)
}

// xAxis picks the swept axis: the arrival rate or load when swept, else
// the first scenario axis with numeric values.
func xAxis(pts []aggregate.Point) string {
	set := map[string]bool{}
	for _, p := range pts {
		for a := range p.Axes {
			if _, isParam := p.Params[a]; !isParam {
				set[a] = true
			}
		}
	}
	switch {
	case set["arrival_rate"]:
		return "arrival_rate"
	case set["load"]:
		return "load"
	}
	var names []string
	for a := range set {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		if _, ok := aggregate.Number(pts[0].Axes[a]); ok {
			return a
		}
	}
	return "load"
}

func xValue(p *aggregate.Point, x string) (float64, bool) {
	switch x {
	case "arrival_rate":
		return p.ArrivalRate, true
	case "load":
		return p.Load, true
	}
	return aggregate.Number(p.Axes[x])
}

// seriesName names a point's curve: its policy, then its values of the
// axes other than x.
func seriesName(p *aggregate.Point, x string) string {
	var keys []string
	for a := range p.Axes {
		if a != x {
			keys = append(keys, a)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(p.Policy)
	for _, a := range keys {
		if a == "policy" {
			continue
		}
		b.WriteString(" " + a + "=")
		j, _ := json.Marshal(p.Axes[a])
		b.WriteString(strings.Trim(string(j), `"`))
	}
	return b.String()
}

// Plots are the live page's headline plots of pts and their x axis, as
// the campaign's JSON serves them.
func Plots(pts []aggregate.Point) (x string, ps []Plot) { return plots(pts) }

// plots builds the headline plots from the points with results: one plot
// per headline metric (the weighted mean only when classes differ), one
// series per policy and other axes. A metric no point has yet is left
// out, except the mean response time, which the page always shows.
func plots(pts []aggregate.Point) (string, []Plot) {
	if len(pts) == 0 {
		return "", nil
	}
	x := xAxis(pts)
	multi := multiClass(pts)
	order := seriesOrder(pts, x)
	var out []Plot
	for _, h := range headline {
		if h.name == "weighted_mean_response" && !multi {
			continue
		}
		if pl, has := headlinePlot(pts, x, h.name, h.label, order); has || h.name == "mean_response" {
			out = append(out, pl)
		}
	}
	return x, out
}

// multiClass says whether any point has more than one job class.
func multiClass(pts []aggregate.Point) bool {
	for _, p := range pts {
		if len(p.Classes) > 1 {
			return true
		}
	}
	return false
}

// seriesOrder lists the series names in order of first appearance, so
// colours stay put as points fill in.
func seriesOrder(pts []aggregate.Point, x string) []string {
	var order []string
	seen := map[string]bool{}
	for i := range pts {
		n := seriesName(&pts[i], x)
		if !seen[n] {
			seen[n] = true
			order = append(order, n)
		}
	}
	return order
}

// headlinePlot is the plot of metric, every series of order present
// (empty until its points have results), each sorted by x; has says
// whether a point had the metric.
func headlinePlot(pts []aggregate.Point, x, metric, label string, order []string) (pl Plot, has bool) {
	by := map[string][]PlotPoint{}
	for i := range pts {
		p := &pts[i]
		if pp, ok := plotPoint(p, x, metric); ok {
			n := seriesName(p, x)
			by[n] = append(by[n], pp)
			has = true
		}
	}
	pl = Plot{Metric: metric, Label: label, Series: []Series{}}
	for _, n := range order {
		ps := by[n]
		if ps == nil {
			ps = []PlotPoint{}
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].X < ps[j].X })
		pl.Series = append(pl.Series, Series{Name: n, Points: ps})
	}
	return pl, has
}

// plotPoint is p's value of metric at its x, if it has a finite one. One
// rule for every output (aggregate.Point.Reading): a bound has no interval.
func plotPoint(p *aggregate.Point, x, metric string) (PlotPoint, bool) {
	if p.N == 0 {
		return PlotPoint{}, false
	}
	m, ok := p.Metric(metric)
	xv, okx := xValue(p, x)
	if !ok || !okx || m.N == 0 || math.IsNaN(m.Mean) || math.IsInf(m.Mean, 0) {
		return PlotPoint{}, false
	}
	pp := PlotPoint{X: xv, Y: m.Mean, N: m.N, Unstable: p.Reading(m) == aggregate.ReadLowerBound}
	if !pp.Unstable && !math.IsNaN(m.HalfWidth) && !math.IsInf(m.HalfWidth, 0) {
		hw := m.HalfWidth
		pp.HW = &hw
	}
	return pp, true
}
