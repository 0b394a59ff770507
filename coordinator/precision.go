package coordinator

// Precision-driven replications (sweep.Precision; the sequential mode of
// docs/sweep.md).
//
// Each point of a precision campaign starts with the sweep's replications.
// When all of a point's replications have finished (result or failure
// record), the coordinator reads their records, summarises them with
// aggregate.Summarize and looks at the relative half-width of the chosen
// metric (stats.Summary.RelHalfWidth: 95% Student-t half-width / |mean|):
//
//   - at or below the target: the point is "met" and gets no more tasks;
//   - above it with max_replications reached: the point is "max_replications"
//     (reported as having hit the cap);
//   - above it otherwise: batch more replications are added (fewer if the
//     cap is closer), with the next replication indices and seeds derived
//     exactly as sweep derives them (sweep.Replicate), so their task ids are
//     those a sweep with more replications would produce;
//   - a point with a replication flagged unstable stops ("unstable": more
//     replications cannot make a diverging mean converge), and a point
//     where no replication measured the metric stops ("undefined").
//
// Failed replications do not stop a point; the interval is over the
// replications that measured the metric.
//
// Nothing extra is stored to resume: the added replications are derived
// from storage. A resumed (or re-submitted) campaign extends each point by
// the replications that have a result (contiguous indices from the initial
// count, rounded up to the batch grid so that a batch interrupted midway is
// completed) and then re-applies the rule above, which is a deterministic
// function of the stored records, so it reaches the same decisions.
//
// The outcome per point is written to campaigns/<id>/precision.csv (see
// archive.WritePrecisionCSV), copied into the report, and summarised in
// manifest.json ("precision").

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sweep"
)

// Point statuses of a precision campaign (archive.Decide decides them).
const (
	PrecisionPending   = archive.PrecisionPending
	PrecisionMet       = archive.PrecisionMet
	PrecisionCapped    = archive.PrecisionCapped
	PrecisionUnstable  = archive.PrecisionUnstable
	PrecisionUndefined = archive.PrecisionUndefined
)

// pointState is the precision state of one point.
type pointState struct {
	idx   int        // its place in c.porder
	tmpl  sweep.Task // replication 0: the template of added replications
	tasks []string   // task ids by replication index
	// status is "" until decided (PrecisionMet etc.); a point that grows
	// stays "".
	status string
	// The last judgement: metric estimate over the point's replications.
	n             int
	mean, hw, rel float64
}

// initPoints builds c.pts from c.tasks; the caller holds co.mu (or owns c).
func (c *campaign) initPoints() {
	if c.st.Spec == nil || c.st.Spec.Precision == nil {
		c.prec, c.pts, c.porder = nil, nil, nil
		return
	}
	c.prec, c.seed = c.st.Spec.Precision, c.st.Spec.Seed
	c.initial = c.st.Spec.Replications
	c.pts, c.porder, c.candidates = map[string]*pointState{}, nil, map[string]bool{}
	for _, t := range c.tl.Full() {
		ps := c.pts[t.Point]
		if ps == nil {
			ps = &pointState{idx: len(c.porder), tmpl: t, mean: math.NaN(), hw: math.NaN(), rel: math.NaN()}
			c.pts[t.Point] = ps
			c.porder = append(c.porder, t.Point)
		}
		ps.tasks = append(ps.tasks, t.ID)
	}
	c.undecided = len(c.porder)
}

// setStatus sets a point's status, keeping c.undecided; the caller holds
// co.mu.
func (c *campaign) setStatus(ps *pointState, status string) {
	switch {
	case ps.status == "" && status != "":
		c.undecided--
	case ps.status != "" && status == "":
		c.undecided++
	}
	ps.status = status
}

// addTask appends a task of an existing point; the caller holds co.mu.
func (c *campaign) addTask(t sweep.Task) {
	c.tl.Append(t)
	ps := c.pts[t.Point]
	ps.tasks = append(ps.tasks, t.ID)
	c.st.Total = c.tl.Len()
}

// decidedAll reports whether every point of a precision campaign has a
// final status; the caller holds co.mu.
func (c *campaign) decidedAll() bool { return c.undecided == 0 }

// pointReady reports whether every replication of the point has finished
// and the point is undecided; the caller holds co.mu.
func (c *campaign) pointReady(point string) bool {
	ps := c.pts[point]
	if ps == nil || ps.status != "" {
		return false
	}
	for _, tid := range ps.tasks {
		if !c.done.has(tid) && c.failed[tid] == "" {
			return false
		}
	}
	return true
}

// extendFromStorage adds to each undecided point the replications beyond
// its current count that have a result (stored) or a queued message
// (queued), contiguously, then rounds up to the batch grid. It returns the
// number of tasks added; the caller holds c.recMu, not co.mu.
func (co *Coordinator) extendFromStorage(c *campaign, stored, queued *taskSet) int {
	co.mu.Lock()
	defer co.mu.Unlock()
	if c.prec == nil {
		return 0
	}
	added := 0
	for _, pid := range c.porder {
		ps := c.pts[pid]
		if ps.status != "" {
			continue
		}
		r := len(ps.tasks)
		for r < c.prec.MaxReplications {
			t := sweep.Replicate(ps.tmpl, c.seed, r)
			if !stored.has(t.ID) && !queued.has(t.ID) {
				break
			}
			c.addTask(t)
			added++
			r++
		}
		if extra := r - c.initial; extra > 0 {
			b := c.prec.BatchSize()
			grid := min(c.initial+(extra+b-1)/b*b, c.prec.MaxReplications)
			for ; r < grid; r++ {
				c.addTask(sweep.Replicate(ps.tmpl, c.seed, r))
				added++
			}
		}
	}
	return added
}

// decide judges the undecided points whose replications have all
// finished, and adds replications to those above the target: among the
// candidates a finished task marked (next), or, with all, among every
// point (a resumed campaign's results, reused ones, a reconcile). It
// returns the added tasks (to be published by the caller); the caller
// holds c.recMu, not co.mu.
func (co *Coordinator) decide(ctx context.Context, c *campaign, all bool) []sweep.Task {
	type job struct {
		pid   string
		tasks []sweep.Task
	}
	co.mu.Lock()
	if c.prec == nil {
		co.mu.Unlock()
		return nil
	}
	prec := *c.prec
	var jobs []job
	var ids []string
	order := c.porder
	if !all {
		// In campaign order, as the scan of every point had them.
		order = make([]string, 0, len(c.candidates))
		for pid := range c.candidates {
			order = append(order, pid)
		}
		slices.SortFunc(order, func(a, b string) int { return c.pts[a].idx - c.pts[b].idx })
	}
	clear(c.candidates)
	for _, pid := range order {
		if !c.pointReady(pid) {
			continue
		}
		j := job{pid: pid}
		for _, tid := range c.pts[pid].tasks {
			t, _ := c.tl.Get(tid)
			j.tasks = append(j.tasks, t)
			ids = append(ids, tid)
		}
		jobs = append(jobs, j)
	}
	co.mu.Unlock()
	if len(jobs) == 0 {
		return nil
	}
	recs := co.readRecords(ctx, c.id, ids)
	var added []sweep.Task
	co.mu.Lock()
	defer co.mu.Unlock()
	for _, j := range jobs {
		complete := true
		for _, t := range j.tasks {
			complete = complete && recs[t.ID] != nil
		}
		ps := c.pts[j.pid]
		if !complete || ps.status != "" || len(ps.tasks) != len(j.tasks) {
			// A record vanished (reconcile re-publishes it) or decided
			// meanwhile: judged again at the next grow, as a full scan did.
			c.candidates[j.pid] = true
			continue
		}
		pt := aggregate.Summarize(j.tasks, recs)[0]
		reps := len(j.tasks)
		d := archive.Decide(&pt, reps, &prec)
		ps.n, ps.mean, ps.hw, ps.rel = d.N, d.Mean, d.HW, d.Relative
		c.setStatus(ps, d.Status)
		if d.Status == "" {
			for r := reps; r < min(reps+prec.BatchSize(), prec.MaxReplications); r++ {
				t := sweep.Replicate(ps.tmpl, c.seed, r)
				c.addTask(t)
				added = append(added, t)
			}
		}
	}
	return added
}

// grow decides the points that are ready (the candidates, or with all
// every point) and publishes the replications it adds; then finalises the
// campaign if that was the last decision.
func (co *Coordinator) grow(ctx context.Context, c *campaign, all bool) {
	c.recMu.Lock()
	added := co.decide(ctx, c, all)
	var err error
	if len(added) > 0 {
		err = co.publishAdded(ctx, c, added)
	}
	c.recMu.Unlock()
	if err != nil {
		co.o.Logf("coordinator: adding replications to %s: %v", c.id, err)
	}
	co.maybeFinalize(ctx, c)
}

// publishAdded publishes tasks added by decide in a new epoch.
func (co *Coordinator) publishAdded(ctx context.Context, c *campaign, added []sweep.Task) error {
	co.mu.Lock()
	if c.st.State != protocol.CampaignRunning {
		co.mu.Unlock()
		return nil
	}
	c.st.Epoch++
	epoch := c.st.Epoch
	co.mu.Unlock()
	if err := co.putState(ctx, c); err != nil {
		return err
	}
	co.o.Logf("coordinator: campaign %s: %d replications added for precision", c.id, len(added))
	return co.publish(ctx, c.id, epoch, added)
}

// maybeFinalize starts finalisation if the campaign is complete.
func (co *Coordinator) maybeFinalize(ctx context.Context, c *campaign) {
	co.mu.Lock()
	fin := c.st.State == protocol.CampaignRunning && c.complete() && !c.finalizing &&
		(c.incomplete < incompleteWarn || time.Since(c.incompleteAt) >= co.o.Reconcile/2)
	if fin {
		c.finalizing = true
	}
	co.mu.Unlock()
	if fin {
		go co.finalize(context.WithoutCancel(ctx), c)
	}
}

// precisionSummary snapshots c's precision state; nil without precision.
// The caller holds co.mu.
func (c *campaign) precisionSummary() *archive.PrecisionSummary {
	if c.prec == nil {
		return nil
	}
	s := &archive.PrecisionSummary{Precision: *c.prec, Initial: c.initial}
	s.Batch = c.prec.BatchSize()
	for _, pid := range c.porder {
		ps := c.pts[pid]
		st := cmp.Or(ps.status, PrecisionPending)
		s.Count(st)
		s.Points = append(s.Points, archive.PointPrecision{Point: pid, Policy: ps.tmpl.Policy, Params: ps.tmpl.Params,
			Axes: ps.tmpl.Axes, Replications: len(ps.tasks), N: ps.n, Mean: archive.Finite(ps.mean), HalfWidth: archive.Finite(ps.hw),
			RelHalfWidth: archive.Finite(ps.rel), Status: st})
	}
	return s
}
