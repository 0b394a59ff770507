package sim

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/sim/stats"
)

// ClassStats are the statistics of the measured jobs of one class (or of all
// jobs, for Result.Overall).
//
// Waiting time is response time minus the job's own size: the time it spent
// in the system not being served to completion. For a non-preemptive policy
// that is the delay before service; under preemption it includes the time
// spent preempted and, under restart, the discarded service. PWait is the
// fraction of jobs that were ever not in service while in the system.
type ClassStats struct {
	Name         string  `json:"name,omitempty"`
	Need         int     `json:"need"`
	Count        int64   `json:"count"`
	MeanResponse float64 `json:"mean_response"`
	VarResponse  float64 `json:"var_response"`
	MeanWait     float64 `json:"mean_wait"`
	PWait        float64 `json:"p_wait"`
	MeanSize     float64 `json:"mean_size"`
}

// Instability is the evidence behind an unstable flag.
type Instability struct {
	// Reasons lists the rules that fired:
	//   "max_in_system": the number in system exceeded Config.MaxInSystem;
	//   "drain_limit":   measured jobs were still present after
	//                    Config.DrainLimit further arrivals;
	//   "trace_ended":   a replayed trace ended with measured jobs present;
	//   "growth":        the number in system was still growing through the
	//                    second half of the window: the least-squares slope
	//                    of the segment averages over the second half is
	//                    significant (t > 4 against its standard error from
	//                    the residuals, 6 degrees of freedom) AND material
	//                    (the growth it implies over the second half exceeds
	//                    25% of the second half's mean plus 2 jobs). The
	//                    significance test keeps a stable queue that merely
	//                    oscillates (e.g. on a policy's cycle) from being
	//                    flagged; the size test keeps a statistically clear
	//                    but negligible drift from being flagged.
	Reasons []string `json:"reasons"`
	// SegmentMeanInSystem is the time-average number in system in each of
	// the 16 equal segments (by arrivals) of the measurement window.
	SegmentMeanInSystem []float64 `json:"segment_mean_in_system,omitempty"`
	// GrowthRate is the least-squares slope, in jobs per unit time, of the
	// second half's segment averages against the segments' mid-times.
	GrowthRate float64 `json:"growth_rate"`
	// GrowthT is GrowthRate divided by its standard error (0 when the
	// residuals are exactly zero).
	GrowthT float64 `json:"growth_t"`
	// InSystemAtEnd is the number in system when the window closed.
	InSystemAtEnd int `json:"in_system_at_end"`
	// Undeparted is the number of measured jobs that never left.
	Undeparted int64 `json:"undeparted"`
}

// Sample is one point of the optional jobs-in-system time series.
type Sample struct {
	T float64 `json:"t"`
	N int     `json:"n"`
}

// Result is everything one replication measured. Means are over the measured
// jobs (those arriving in the window) that departed; time averages are over
// the window, from the first measured arrival to the first arrival after it.
type Result struct {
	Engine     string `json:"engine"`
	Workload   string `json:"workload"`
	Seed       uint64 `json:"seed"`
	Servers    int    `json:"servers"`
	Preemption string `json:"preemption"`
	SizeAware  bool   `json:"size_aware"`

	Warmup      int64   `json:"warmup"`
	Arrivals    int64   `json:"arrivals"`
	MSERBatches int64   `json:"mser_batches,omitempty"`
	Window      float64 `json:"window"`
	Events      uint64  `json:"events"`

	Overall ClassStats   `json:"overall"`
	Classes []ClassStats `json:"classes"`

	WeightedMeanResponse float64 `json:"weighted_mean_response"`
	Jain                 float64 `json:"jain"`
	MeanInSystem         float64 `json:"mean_in_system"`
	MeanInQueue          float64 `json:"mean_in_queue"`
	Utilization          float64 `json:"utilization"`
	Throughput           float64 `json:"throughput"`
	OfferedLoad          float64 `json:"offered_load"`

	Preemptions   int64     `json:"preemptions"`
	PreemptedJobs int64     `json:"preempted_jobs"`
	WastedWork    float64   `json:"wasted_work"`
	Counters      []Counter `json:"counters,omitempty"`

	Unstable    bool         `json:"unstable"`
	Instability *Instability `json:"instability,omitempty"`
	Series      []Sample     `json:"series,omitempty"`
}

// classAcc accumulates one class's measured departures. The response
// time's variance comes from Welford's accumulator (the naive
// Σt² − n·mean² cancels catastrophically once the mean is large against the
// spread, as on long or heavily loaded runs); its mean stays the plain sum
// over n, which has no cancellation (positive terms) and is no less accurate.
type classAcc struct {
	n, nWait   int64
	resp       stats.Acc
	sumT, sumW float64
	sumS       float64
}

// recorder accumulates statistics on the per-event path without allocating.
type recorder struct {
	w   *Workload
	cfg *Config
	cls []classAcc

	last, t0, t1   float64
	areaN, areaRun float64
	areaBusy       float64
	departures     int64
	endInSys       int
	segT           [segments + 1]float64
	segArea        [segments + 1]float64
	segNext        int
	segAt          int64 // arrival index of boundary segNext
	nextSample     float64
	series         []Sample
	seriesMax      int
	closed         bool
}

func newRecorder(w *Workload, cfg *Config) *recorder {
	r := &recorder{w: w, cfg: cfg, cls: make([]classAcc, len(w.Classes))}
	r.seriesMax = cfg.SeriesMax
	if r.seriesMax == 0 {
		r.seriesMax = 10000
	}
	return r
}

// advance integrates the state held since the last event up to t.
func (r *recorder) advance(s *System, t float64) {
	if s.measure {
		dt := t - r.last
		r.areaN += float64(s.inSys) * dt
		r.areaRun += float64(len(s.running)) * dt
		r.areaBusy += float64(s.busy) * dt
		if r.cfg.SeriesInterval > 0 {
			for r.nextSample <= t && len(r.series) < r.seriesMax {
				r.series = append(r.series, Sample{T: r.nextSample - r.t0, N: s.inSys})
				r.nextSample += r.cfg.SeriesInterval
			}
		}
	}
	r.last = t
}

func (r *recorder) start(s *System) {
	r.t0, r.last = s.now, s.now
	r.segT[0], r.segNext, r.segAt = s.now, 1, r.segBoundary(1)
	r.nextSample = s.now
}

func (r *recorder) end(s *System) {
	if r.closed {
		return
	}
	r.t1 = s.now
	r.endInSys = s.inSys
	r.closed = true
	if r.segNext == segments {
		r.segT[segments], r.segArea[segments] = s.now, r.areaN
		r.segNext++
	}
}

// segments is the number of equal parts (by arrivals) of the measurement
// window whose time averages feed the growth test.
const segments = 16

// checkpoint records the area at the segment boundaries of the window.
func (r *recorder) checkpoint(s *System, id int64) {
	if !s.measure || r.segNext >= segments || id != r.segAt || id <= r.cfg.Warmup {
		return
	}
	r.segT[r.segNext], r.segArea[r.segNext] = s.now, r.areaN
	r.segNext++
	r.segAt = r.segBoundary(r.segNext)
}

// segBoundary is the arrival index at which segment i of the window starts.
func (r *recorder) segBoundary(i int) int64 {
	return r.cfg.Warmup + r.cfg.Arrivals*int64(i)/segments
}

// growth fits the second half's segment averages against time and returns
// the slope, its t statistic, and whether the growth test fires.
func (r *recorder) growth(ins *Instability) bool {
	if r.segNext != segments+1 {
		return false // window too short to have 16 distinct segments
	}
	means := make([]float64, segments)
	mid := make([]float64, segments)
	for i := range means {
		d := r.segT[i+1] - r.segT[i]
		if d <= 0 {
			return false
		}
		means[i] = (r.segArea[i+1] - r.segArea[i]) / d
		mid[i] = (r.segT[i] + r.segT[i+1]) / 2
	}
	ins.SegmentMeanInSystem = means
	xs, ys := mid[segments/2:], means[segments/2:]
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/n, my/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx <= 0 {
		return false
	}
	b := sxy / sxx
	var sse float64
	for i := range xs {
		e := ys[i] - my - b*(xs[i]-mx)
		sse += e * e
	}
	se := math.Sqrt(sse / (n - 2) / sxx)
	ins.GrowthRate = b
	if se > 0 { // an exact fit (se = 0) leaves GrowthT at 0: JSON has no infinity
		ins.GrowthT = b / se
	}
	span := r.segT[segments] - r.segT[segments/2]
	return b > 0 && (se == 0 || b/se > 4) && b*span > 0.25*my+2
}

func (r *recorder) depart(s *System, j *Job, batches []float64, winStart int64) {
	t := s.now - j.arrival
	c := &r.cls[j.class]
	c.n++
	c.sumT += t
	c.resp.Add(t)
	c.sumS += j.size
	if j.delayed {
		c.nWait++
		if w := t - j.size; w > 0 {
			c.sumW += w
		}
	}
	if j.preempted > 0 {
		s.preemptedN++
	}
	if batches != nil {
		if b := (j.id - winStart) / 5; b < int64(len(batches)) {
			batches[b] += t
		}
	}
}

func (r *recorder) result(s *System, events uint64, undeparted int64, stop stopReason) *Result {
	w := r.w
	res := &Result{
		Engine:        Version,
		Workload:      w.Name,
		Seed:          r.cfg.Seed,
		Servers:       w.Servers,
		Preemption:    s.info.Preemption.String(),
		SizeAware:     s.info.SizeAware,
		Warmup:        r.cfg.Warmup,
		Arrivals:      r.cfg.Arrivals,
		Events:        events,
		Window:        r.t1 - r.t0,
		Preemptions:   s.preemptions,
		PreemptedJobs: s.preemptedN,
		WastedWork:    s.wasted,
		OfferedLoad:   w.Load(),
	}
	if cr, ok := s.policy.(CounterReporter); ok {
		res.Counters = cr.Counters()
	}
	var all classAcc
	res.Classes = make([]ClassStats, len(w.Classes))
	for i, c := range r.cls {
		res.Classes[i] = c.stats(w.Classes[i].Name, w.Classes[i].Need)
		all.n += c.n
		all.nWait += c.nWait
		all.sumT += c.sumT
		all.resp.Merge(c.resp)
		all.sumW += c.sumW
		all.sumS += c.sumS
	}
	res.Overall = all.stats("all", 0)
	rho := w.ClassLoads()
	var rhoSum, wsum float64
	means := make([]float64, 0, len(res.Classes)) // of the classes with departures
	for i, cs := range res.Classes {
		if cs.Count == 0 {
			continue
		}
		rhoSum += rho[i]
		wsum += rho[i] * cs.MeanResponse
		means = append(means, cs.MeanResponse)
	}
	if rhoSum > 0 {
		res.WeightedMeanResponse = wsum / rhoSum
	}
	if len(means) > 0 { // stats.Jain is NaN for none, which JSON cannot carry: 0 then
		res.Jain = stats.Jain(means)
	}
	if win := res.Window; win > 0 {
		res.MeanInSystem = r.areaN / win
		res.MeanInQueue = (r.areaN - r.areaRun) / win
		res.Utilization = r.areaBusy / (win * float64(w.Servers))
		res.Throughput = float64(r.departures) / win
	}
	res.Series = r.series

	ins := &Instability{InSystemAtEnd: r.endInSys, Undeparted: undeparted}
	if stop.unstable() {
		ins.Reasons = append(ins.Reasons, stop.String())
	}
	if r.growth(ins) {
		ins.Reasons = append(ins.Reasons, "growth")
	}
	if len(ins.Reasons) > 0 {
		res.Unstable = true
		res.Instability = ins
	}
	return res
}

func (c classAcc) stats(name string, need int) ClassStats {
	cs := ClassStats{Name: name, Need: need, Count: c.n}
	if c.n == 0 { // no measured job of the class departed: means stay 0, read Count
		return cs
	}
	n := float64(c.n)
	cs.MeanResponse = c.sumT / n
	if c.n > 1 {
		cs.VarResponse = c.resp.Var()
	}
	cs.MeanWait = c.sumW / n
	cs.PWait = float64(c.nWait) / n
	cs.MeanSize = c.sumS / n
	return cs
}

// String is a one-line summary for logs.
func (r *Result) String() string {
	flag := ""
	if r.Unstable {
		flag = fmt.Sprintf(" UNSTABLE%v", r.Instability.Reasons)
	}
	return fmt.Sprintf("E[T]=%.6g E[Tw]=%.6g util=%.4f N=%.4g jobs=%d%s",
		r.Overall.MeanResponse, r.WeightedMeanResponse, r.Utilization, r.MeanInSystem, r.Overall.Count, flag)
}

// Counter returns the value of the policy counter called name.
func (r *Result) Counter(name string) (float64, bool) {
	for _, c := range r.Counters {
		if c.Name == name {
			return c.Value, true
		}
	}
	return 0, false
}
