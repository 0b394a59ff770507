package sim

import (
	"fmt"

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
	// Undeparted counts the class's measured jobs still in the system when
	// the run stopped (cap, drain limit, trace end). When it is positive the
	// means above are over the jobs that left only, which are the short
	// ones: they are lower bounds, not estimates (LowerBound), and must not
	// be averaged with estimates.
	Undeparted int64 `json:"undeparted,omitempty"`
	LowerBound bool  `json:"lower_bound,omitempty"`
}

// Instability is the evidence behind an unstable or truncated flag.
type Instability struct {
	// Reasons lists the rules that fired:
	//   "truncated":   the number in system exceeded Config.MaxInSystem and
	//                  the run stopped there (Result.Truncated). This is not
	//                  evidence of instability by itself (the cap may just
	//                  be small); it makes the run's means lower bounds;
	//   "drain_limit": measured jobs were still waiting after
	//                  Config.DrainLimit further arrivals;
	//   "trace_ended": a replayed trace ended with measured jobs present;
	//   "overload":    the offered load ρ of a (non-trace) workload is at
	//                  least 1: no policy can be stable (a necessary
	//                  condition, exact whatever the sample path). It
	//                  catches overloads the growth test can miss: a
	//                  policy whose overloaded queue is a sawtooth of
	//                  growing amplitude (MSFQ switching phases past ρ = 1)
	//                  has batch means too irregular for a slope test;
	//   "growth":      the growth test fired (see Growth and the test's
	//                  description in stability.go: a batch-means slope
	//                  t-test over the second half of the window, with an
	//                  autocorrelation-aware critical value, plus a
	//                  material-growth guard);
	//   "deficit":     the work-deficit test fired on some quantity (the
	//                  total work, the total jobs or one class's jobs: see
	//                  Result.Deficits and deficit.go): over the second
	//                  half of the window, arrivals exceeded departures
	//                  significantly and materially.
	// Every reason but "truncated" is evidence of instability and sets
	// Result.Unstable. (Engines before 0.2.0 wrote "max_in_system" for
	// "truncated", and counted it as unstable.)
	Reasons []string `json:"reasons"`
	// SegmentMeanInSystem is the time-average number in system in each of
	// the 64 equal segments (by arrivals) of the measurement window.
	SegmentMeanInSystem []float64 `json:"segment_mean_in_system,omitempty"`
	// GrowthRate and GrowthT repeat Result.Growth's Rate and T.
	GrowthRate float64 `json:"growth_rate"`
	GrowthT    float64 `json:"growth_t"`
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

	// Unstable reports evidence of instability (see Instability.Reasons).
	Unstable bool `json:"unstable"`
	// Truncated reports that the run stopped at Config.MaxInSystem.
	Truncated bool `json:"truncated"`
	// LowerBound reports that measured jobs were still in the system when
	// the run stopped (Instability.Undeparted > 0): every per-job mean of the
	// result (response, waiting, PWait, weighted mean response; per class
	// where ClassStats.LowerBound) is a lower bound.
	LowerBound  bool         `json:"lower_bound"`
	Instability *Instability `json:"instability,omitempty"`
	// Growth is the growth test's statistics (nil when the window was too
	// short to run it or the run stopped inside it).
	Growth *Growth `json:"growth,omitempty"`
	// Deficits is the work-deficit test's evidence (deficit.go): the total
	// work, the total number of jobs, then each class's number of jobs, in
	// that order; nil when the window was too short to run it or the run
	// stopped inside it.
	Deficits []Deficit `json:"deficits,omitempty"`
	// Convergence is the run-length adequacy verdict and its evidence
	// (convergence.go; nil when the run stopped inside its window or had
	// too few arrivals to batch).
	Convergence *Convergence `json:"convergence,omitempty"`
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
	endInSys       int
	departures     int64
	// depSnap holds, at the growth test's segment boundaries, the
	// window's departures (segment i's at [i·(classes+1)]) followed by
	// each class's departures of measured jobs (recorder.depart's counts):
	// the work-deficit test's batches (deficit.go), read from counters the
	// departure path keeps anyway.
	depSnap []int64
	// segBusy and segWasted are the busy server-time and the discarded
	// (restarted) service at the same boundaries: delivered work.
	segBusy    [growthSegments + 1]float64
	segWasted  [growthSegments + 1]float64
	segT       [growthSegments + 1]float64
	segArea    [growthSegments + 1]float64
	segNext    int
	segAt      int64 // arrival index of boundary segNext
	nextSample float64
	// The run-wide batches of the converged verdict (convergence.go):
	// areaAll integrates the number in system over the whole run.
	areaAll   float64
	convT     [convBatches + 1]float64
	convArea  [convBatches + 1]float64
	convNext  int
	convAt    int64
	series    []Sample
	seriesMax int
	closed    bool
}

func newRecorder(w *Workload, cfg *Config) *recorder {
	nc := len(w.Classes)
	r := &recorder{w: w, cfg: cfg, cls: make([]classAcc, nc), depSnap: make([]int64, (growthSegments+1)*(nc+1))}
	r.seriesMax = cfg.SeriesMax
	if r.seriesMax == 0 {
		r.seriesMax = 10000
	}
	return r
}

// advance integrates the state held since the last event up to t.
func (r *recorder) advance(s *System, t float64) {
	dt := t - r.last
	r.areaAll += float64(s.inSys) * dt
	if s.measure {
		r.areaN += float64(s.inSys) * dt
		r.areaRun += float64(s.nRun) * dt
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
	if r.segNext == growthSegments {
		r.segT[growthSegments], r.segArea[growthSegments] = s.now, r.areaN
		r.segBusy[growthSegments], r.segWasted[growthSegments] = r.areaBusy, s.wasted
		r.snapDepartures(growthSegments)
		r.segNext++
	}
	if r.convNext == convBatches {
		r.convT[convBatches], r.convArea[convBatches] = s.now, r.areaAll
		r.convNext++
	}
}

// checkpoint records the area at the segment boundaries of the window.
func (r *recorder) checkpoint(s *System, id int64) {
	if !s.measure || r.segNext >= growthSegments || id != r.segAt || id <= r.cfg.Warmup {
		return
	}
	r.segT[r.segNext], r.segArea[r.segNext] = s.now, r.areaN
	r.segBusy[r.segNext], r.segWasted[r.segNext] = r.areaBusy, s.wasted
	r.snapDepartures(r.segNext)
	r.segNext++
	r.segAt = r.segBoundary(r.segNext)
}

// snapDepartures records the departure counts at segment boundary i.
func (r *recorder) snapDepartures(i int) {
	row := r.depSnap[i*(len(r.cls)+1) : (i+1)*(len(r.cls)+1)]
	row[0] = r.departures
	for c := range r.cls {
		row[c+1] = r.cls[c].n
	}
}

// segBoundary is the arrival index at which segment i of the window starts.
func (r *recorder) segBoundary(i int) int64 {
	return r.cfg.Warmup + r.cfg.Arrivals*int64(i)/growthSegments
}

// growth runs the growth test on the window's segments (stability.go).
func (r *recorder) growth() (*Growth, []float64) {
	if r.segNext != growthSegments+1 {
		return nil, nil // window too short to have its distinct segments, or cut short
	}
	return growthTest(&r.segT, &r.segArea)
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
	switch {
	case stop == stopMaxInSystem:
		res.Truncated = true
		ins.Reasons = append(ins.Reasons, "truncated")
	case stop.unstable():
		ins.Reasons = append(ins.Reasons, stop.String())
	}
	if w.Trace == nil && res.OfferedLoad >= 1 {
		ins.Reasons = append(ins.Reasons, "overload")
	}
	g, means := r.growth()
	res.Growth = g
	res.Deficits = r.deficits()
	res.Convergence = r.convergence(s.policy, res.Deficits)
	if g != nil && g.Fired {
		ins.Reasons = append(ins.Reasons, "growth")
	}
	for _, d := range res.Deficits {
		if d.Fired {
			ins.Reasons = append(ins.Reasons, "deficit")
			break
		}
	}
	if undeparted > 0 {
		res.LowerBound = true
		for i, n := range s.pool.undeparted(len(res.Classes)) {
			n += s.parkedTagged[i]
			res.Classes[i].Undeparted = n
			res.Classes[i].LowerBound = n > 0
		}
		res.Overall.Undeparted, res.Overall.LowerBound = undeparted, true
	}
	if len(ins.Reasons) > 0 {
		if g != nil {
			ins.SegmentMeanInSystem, ins.GrowthRate, ins.GrowthT = means, g.Rate, g.T
		}
		res.Unstable = !(len(ins.Reasons) == 1 && res.Truncated)
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
	switch {
	case r.Unstable:
		flag = fmt.Sprintf(" UNSTABLE%v", r.Instability.Reasons)
	case r.Truncated:
		flag = " TRUNCATED"
	}
	if r.LowerBound {
		flag += " (means are lower bounds)"
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
