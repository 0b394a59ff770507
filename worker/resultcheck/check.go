// Package resultcheck checks a replication's result before the worker
// stores it: against the task that was sent (the fields a result echoes)
// and against what any honest run of the engine can measure. A policy
// plugin is someone else's code; what it returns is a claim, and a claim
// that no honest engine could produce — a negative mean, a utilisation of
// 1.7, nine classes for a two-class workload, another seed, a mean of
// 1e300 beside a number in system that Little's law contradicts — must not
// reach a summary. The worker makes a violation a permanent task error
// naming the field and the plugin's sha256 (never stored, never retried).
//
// What is checked, each with the tolerance it needs and why:
//
//   - size: the result as received is at most MaxBytes plus SampleBytes
//     per time-series sample the task allows (Limit);
//   - echoes, exact: engine version (the one the plugin declared), workload
//     name, servers, seed, the number of classes and each class's name and
//     need (not for a replayed trace, which defines them and which only
//     the worker itself runs); warmup and arrivals (under MSER,
//     warmup+arrivals and warmup = 5 × mser_batches);
//   - every float finite (wire.NonFinite) and at most MaxValue (1e100) in
//     magnitude, every mean, count, time and rate non-negative;
//   - preemption: none of it under "none", wasted work only under
//     "restart", no more preempted jobs than arrived;
//   - derived quantities, from their sources: Jain's index and the
//     load-weighted mean response from the class means and the task's
//     class loads, and the throughput at most the arrivals over the
//     window;
//   - ranges: p_wait and utilisation in [0, 1], Jain's index at most 1,
//     each within RoundingTol (float sums of up to 10^9 terms);
//     mean in queue ≤ mean in system ≤ warmup + arrivals (no more jobs can
//     be present than have arrived); mean wait ≤ mean response, and mean
//     size ≤ servers × mean response (a job needs at least its size on
//     one server, or size/k on a reference model's pooled server of
//     speed k);
//   - counts: the classes' departures and undeparted jobs sum to the
//     overall ones, and departed + undeparted = arrivals (≤ when the run
//     was truncated at max_in_system);
//   - the seed's jobs: on a plugin's result, the window's length, each
//     class's measured arrivals and their mean size are those the task's
//     seed gives (seedjobs.go);
//   - mean response = mean wait + mean size, overall and per class, under
//     preemption none and for every engine policy (Expect.EnginePolicy),
//     to the rounding (splitTol);
//   - Little's law on the measurement window (Little);
//   - counter names: CounterName;
//   - the time series: at most series_max samples, none when not asked
//     for, times non-negative and non-decreasing.
package resultcheck

import (
	"fmt"
	"math"
	"strings"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
	"github.com/msjfarm/msjfarm/sweep"
)

// MaxBytes bounds a result as received (its JSON), without its time
// series: the largest honest result of the built-in families is a few
// kilobytes (64 classes and 64 counters are under 20 KiB), so 1 MiB
// leaves room for any plausible workload and refuses a result that would
// fill a coordinator's memory.
const MaxBytes = 1 << 20

// SampleBytes is the allowance per time-series sample: a sample
// {"t":<float>,"n":<int>}, is at most 2+4+24+1+4+20+1+1 = 57 bytes.
const SampleBytes = 64

// DefaultSeriesMax is the engine's number of samples when series_max is 0.
const DefaultSeriesMax = 10000

// maxEvents bounds a result's events (counts): 2^53, exact as a float64.
const maxEvents = 1 << 53

// RoundingTol is the tolerance of the range checks on quantities that are
// float sums over events: the error of a running sum of n terms is at most
// about n·2^-53 relative, 1.1e-7 for 10^9 events; 1e-6 leaves a margin of
// nine.
const RoundingTol = 1e-6

// Error is a violation: the field (as in the result's JSON) and why.
type Error struct {
	Field  string
	Reason string
	// SHA256 is the binary that produced the result ("" if unknown).
	SHA256 string
}

func (e *Error) Error() string {
	who := "the runner"
	if e.SHA256 != "" {
		who = "plugin sha256 " + e.SHA256
	}
	return fmt.Sprintf("impossible result from %s: %s: %s", who, e.Field, e.Reason)
}

// Expect is what a result is checked against.
type Expect struct {
	Task *sweep.Task
	// Engine is the engine version the producer declared (a plugin's
	// Info; sim.Version in process); "" skips that echo.
	Engine string
	// SHA256 names the producer in errors.
	SHA256 string
	// Plugin: a plugin binary produced the result, not this engine (in
	// process, or msjfarm's own families served by msjfarm itself): its
	// job sequence is drawn again (seedJobs).
	Plugin bool
	// EnginePolicy: the policy is an engine policy, not a reference
	// model (its entry, or its plugin's Info, says so): every job is
	// served at rate one, so its response is at least its size whatever
	// the preemption, and mean response = mean wait + mean size is
	// checked under every preemption mode, not only none.
	EnginePolicy bool
	// Bytes is the result's size as received (0: not measured, as for an
	// in-process result, which is never encoded before it is stored).
	Bytes int
}

// Limit is the size bound of a task's result: MaxBytes, plus SampleBytes
// per sample when the task asks for a time series.
func Limit(t *sweep.Task) int {
	if t.Run.SeriesInterval <= 0 {
		return MaxBytes
	}
	return MaxBytes + SampleBytes*seriesMax(t)
}

func seriesMax(t *sweep.Task) int {
	if t.Run.SeriesMax > 0 {
		return t.Run.SeriesMax
	}
	return DefaultSeriesMax
}

// Check returns nil or the first violation, an *Error.
func Check(r *sim.Result, e Expect) error {
	c := &checker{r: r, t: e.Task, sha: e.SHA256, plugin: e.Plugin, engine: e.EnginePolicy}
	if e.Bytes > Limit(e.Task) {
		return c.fail("result", "%d bytes, over the limit of %d", e.Bytes, Limit(e.Task))
	}
	if r == nil {
		return c.fail("result", "missing")
	}
	for _, step := range []func() error{
		func() error { return c.echoes(e.Engine) },
		c.finite, c.magnitude, c.ranges, c.counts, c.seedJobs, c.preemption, c.consistent, c.derived, c.verdict, c.little, c.counters, c.series,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

type checker struct {
	r   *sim.Result
	t   *sweep.Task
	sha string
	// plugin: a plugin's result (Expect.Plugin), not this engine's.
	plugin bool
	// engine: an engine policy's result (Expect.EnginePolicy).
	engine bool
}

func (c *checker) fail(field, format string, a ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, a...), SHA256: c.sha}
}

// echoes: what the result says was run is what the task asked for.
func (c *checker) echoes(engine string) error {
	r, t := c.r, c.t
	if engine != "" && r.Engine != engine {
		return c.fail("engine", "%q, but the plugin declared engine %q", r.Engine, engine)
	}
	if r.Seed != t.Seed {
		return c.fail("seed", "%d, the task's is %d", r.Seed, t.Seed)
	}
	if t.Trace != nil {
		// A replayed trace defines the servers and classes (the worker
		// parses it and runs it in process: no plugin replays traces).
		return c.runLength()
	}
	switch {
	case r.Workload != t.Workload.Name:
		return c.fail("workload", "%q, the task's is %q", r.Workload, t.Workload.Name)
	case r.Servers != t.Workload.Servers:
		return c.fail("servers", "%d, the task's workload has %d", r.Servers, t.Workload.Servers)
	case len(r.Classes) != len(t.Workload.Classes):
		return c.fail("classes", "%d classes, the task's workload has %d", len(r.Classes), len(t.Workload.Classes))
	}
	for i, cl := range t.Workload.Classes {
		if got := r.Classes[i]; got.Need != cl.Need || got.Name != cl.Name {
			return c.fail(fmt.Sprintf("classes[%d]", i), "class %q need %d, the task's is %q need %d", got.Name, got.Need, cl.Name, cl.Need)
		}
	}
	return c.runLength()
}

// runLength: warmup and arrivals as asked (under MSER the split is the
// engine's, the total is the task's).
func (c *checker) runLength() error {
	r, run := c.r, c.t.Run
	if !run.MSER {
		if r.Warmup != run.Warmup {
			return c.fail("warmup", "%d, the task's is %d", r.Warmup, run.Warmup)
		}
		if r.Arrivals != run.Arrivals {
			return c.fail("arrivals", "%d, the task's is %d", r.Arrivals, run.Arrivals)
		}
		return nil
	}
	if r.Warmup+r.Arrivals != run.Warmup+run.Arrivals || r.Warmup < 0 || r.Arrivals < 0 {
		return c.fail("arrivals", "warmup %d + arrivals %d, the task's total is %d", r.Warmup, r.Arrivals, run.Warmup+run.Arrivals)
	}
	if r.Warmup != 5*r.MSERBatches {
		return c.fail("warmup", "%d, but MSER truncated %d batches of 5", r.Warmup, r.MSERBatches)
	}
	return nil
}

// finite: no NaN or infinity anywhere, and the quantities that cannot be
// negative are not.
func (c *checker) finite() error {
	if f := wire.NonFinite(c.r); f != "" {
		return c.fail(f, "not a finite number")
	}
	r := c.r
	top := [...]float64{r.Window, r.WeightedMeanResponse, r.Jain, r.MeanInSystem, r.MeanInQueue, r.Utilization,
		r.Throughput, r.OfferedLoad, r.WastedWork, float64(r.Preemptions), float64(r.PreemptedJobs),
		float64(r.MSERBatches), float64(r.Warmup), float64(r.Arrivals)}
	for i, v := range top {
		if v < 0 {
			return c.fail(topNames[i], "%g is negative", v)
		}
	}
	if err := c.classNonNegative("overall", r.Overall); err != nil {
		return err
	}
	for i, cs := range r.Classes {
		if err := c.classNonNegative(fmt.Sprintf("classes[%d]", i), cs); err != nil {
			return err
		}
	}
	return nil
}

var topNames = [...]string{"window", "weighted_mean_response", "jain", "mean_in_system", "mean_in_queue", "utilization",
	"throughput", "offered_load", "wasted_work", "preemptions", "preempted_jobs", "mser_batches", "warmup", "arrivals"}

var classNames = [...]string{"count", "undeparted", "mean_response", "var_response", "mean_wait", "p_wait", "mean_size"}

func (c *checker) classNonNegative(prefix string, cs sim.ClassStats) error {
	vals := [...]float64{float64(cs.Count), float64(cs.Undeparted), cs.MeanResponse, cs.VarResponse, cs.MeanWait, cs.PWait, cs.MeanSize}
	for i, v := range vals {
		if v < 0 {
			return c.fail(prefix+"."+classNames[i], "%g is negative", v)
		}
	}
	return nil
}

// MaxValue bounds every float of a result but a counter's
// (MaxCounterValue): no mean, variance, time or rate of a run comes near
// 1e100, and finite is not enough, since two replications' 1e308 sum to
// +Inf (a throughput of 1.7e308 made the summary's mean "inf"), while the
// squares of values up to 1e100 still add up.
const MaxValue = 1e100

// magnitude: every float at most MaxValue in magnitude.
func (c *checker) magnitude() error {
	r := c.r
	for i, v := range [...]float64{r.Window, r.WeightedMeanResponse, r.Jain, r.MeanInSystem, r.MeanInQueue, r.Utilization,
		r.Throughput, r.OfferedLoad, r.WastedWork} {
		if math.Abs(v) > MaxValue {
			return c.fail(topNames[i], "%g: larger than the %g any quantity of a run may be", v, MaxValue)
		}
	}
	for i, cs := range append([]sim.ClassStats{r.Overall}, r.Classes...) {
		prefix := "overall"
		if i > 0 {
			prefix = fmt.Sprintf("classes[%d]", i-1)
		}
		for j, v := range [...]float64{cs.MeanResponse, cs.VarResponse, cs.MeanWait, cs.PWait, cs.MeanSize} {
			if math.Abs(v) > MaxValue {
				return c.fail(prefix+"."+classNames[j+2], "%g: larger than the %g any quantity of a run may be", v, MaxValue)
			}
		}
	}
	for i, sm := range r.Series {
		if math.Abs(sm.T) > MaxValue {
			return c.fail(fmt.Sprintf("series[%d].t", i), "%g: larger than the %g any quantity of a run may be", sm.T, MaxValue)
		}
	}
	return nil
}

// preemption: what the result says of preemption is one of the engine's
// modes and its counts are that mode's: a policy that does not preempt
// preempts nothing (the engine fails such a call), and only a restart
// wastes work. A plugin stored 2^62 preemptions and a wasted work of
// 1.7e308 beside "none".
func (c *checker) preemption() error {
	r := c.r
	switch r.Preemption {
	case "none":
		if r.Preemptions != 0 || r.PreemptedJobs != 0 {
			return c.fail("preemptions", "%d preemptions of %d jobs, but the policy's preemption is none", r.Preemptions, r.PreemptedJobs)
		}
	case "resume", "restart", "":
	default:
		return c.fail("preemption", "%q: not none, resume or restart", r.Preemption)
	}
	if r.WastedWork != 0 && r.Preemption != "restart" {
		return c.fail("wasted_work", "%g, but only a restart wastes work (preemption %q)", r.WastedWork, r.Preemption)
	}
	// Not preempted_jobs ≤ preemptions: the preemptions are the window's,
	// the jobs those departing in it, preempted in the warm-up or not.
	if r.PreemptedJobs > r.Warmup+r.Arrivals {
		return c.fail("preempted_jobs", "%d, more than the %d jobs that arrived", r.PreemptedJobs, r.Warmup+r.Arrivals)
	}
	return nil
}

// derived: the quantities the engine computes from others are those
// others' (sim's recorder.result). The weighted mean response is the
// class means weighted by the task's class loads, Jain's index that of
// the class means (both over the classes with departures), and the
// throughput is departures over the window, so at most every job that
// arrived: a plugin stored a weighted mean and a throughput of 1.7e308
// and a Jain's index of 0 beside honest class means.
func (c *checker) derived() error {
	r := c.r
	if d := r.Throughput * r.Window; d > float64(r.Warmup+r.Arrivals)*(1+RoundingTol)+1 {
		return c.fail("throughput", "%g over a window of %g is %g departures, but only %d jobs arrived", r.Throughput, r.Window, d, r.Warmup+r.Arrivals)
	}
	var means []float64
	for _, cs := range r.Classes {
		if cs.Count > 0 {
			means = append(means, cs.MeanResponse)
		}
	}
	if len(means) > 0 {
		if j := stats.Jain(means); !near(r.Jain, j) {
			return c.fail("jain", "%g, but its classes' mean responses give %g", r.Jain, j)
		}
	}
	if c.t.Trace != nil {
		return nil // the trace defines the classes, and only the worker replays one
	}
	w, err := c.t.SimWorkload()
	if err != nil {
		return nil
	}
	rho := w.ClassLoads()
	var rhoSum, wsum float64
	for i, cs := range r.Classes {
		if cs.Count > 0 && i < len(rho) {
			rhoSum += rho[i]
			wsum += rho[i] * cs.MeanResponse
		}
	}
	if rhoSum > 0 && !near(r.WeightedMeanResponse, wsum/rhoSum) {
		return c.fail("weighted_mean_response", "%g, but its classes' mean responses weighted by their loads give %g", r.WeightedMeanResponse, wsum/rhoSum)
	}
	return nil
}

// ranges: fractions in [0, 1], orderings every sample path obeys.
func (c *checker) ranges() error {
	r := c.r
	up := 1 + RoundingTol
	switch {
	case r.Utilization > up:
		return c.fail("utilization", "%g > 1: more servers busy than there are", r.Utilization)
	case r.Jain > up:
		return c.fail("jain", "%g > 1", r.Jain)
	case r.MeanInQueue > r.MeanInSystem*up:
		return c.fail("mean_in_queue", "%g > mean_in_system %g", r.MeanInQueue, r.MeanInSystem)
	case r.MeanInSystem > float64(r.Warmup+r.Arrivals):
		return c.fail("mean_in_system", "%g jobs on average, but only %d ever arrived", r.MeanInSystem, r.Warmup+r.Arrivals)
	}
	if err := c.classRanges("overall", r.Overall); err != nil {
		return err
	}
	for i, cs := range r.Classes {
		if err := c.classRanges(fmt.Sprintf("classes[%d]", i), cs); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) classRanges(prefix string, cs sim.ClassStats) error {
	up := 1 + RoundingTol
	switch {
	case cs.PWait > up:
		return c.fail(prefix+".p_wait", "%g > 1", cs.PWait)
	case cs.MeanWait > cs.MeanResponse*up:
		return c.fail(prefix+".mean_wait", "%g > mean_response %g", cs.MeanWait, cs.MeanResponse)
	case cs.MeanSize*float64(max(cs.Need, 1)) > cs.MeanResponse*float64(c.r.Servers)*up:
		// A job of need n and size s is n·s of server time, done by at
		// most the k servers at once: in the system at least n·s/k, in
		// every model, the resource-pooled reference models included
		// (where it is the equality when the job never waits). The
		// overall line (need 0) bounds with need 1.
		return c.fail(prefix+".mean_size", "%g × need %d > %d servers × mean_response %g: a job cannot leave before its work is done, all servers at once", cs.MeanSize, max(cs.Need, 1), c.r.Servers, cs.MeanResponse)
	case (c.r.Preemption == "none" || c.engine) && math.Abs(cs.MeanResponse-cs.MeanWait-cs.MeanSize) > c.splitTol(cs):
		return c.fail(prefix+".mean_response", "%g, but mean_wait %g + mean_size %g is %g: the engine measures a job's wait as its response time less its size, so the two sides agree but for rounding",
			cs.MeanResponse, cs.MeanWait, cs.MeanSize, cs.MeanWait+cs.MeanSize)
	}
	return nil
}

// splitTol bounds |mean_response − (mean_wait + mean_size)| for an honest
// result of a policy that preempts nothing. The engine adds to a
// departing job's wait exactly its response time less its size (sim's
// recorder.depart), and a job that never waited left after exactly its
// size, but for the rounding of its departure time, when it is served at
// rate one: so the identity holds per job to a few units in the last
// place of the instants involved, and for the means to the running sums'
// rounding (RoundingTol of the terms) plus those units. Not every policy
// serves at rate one: the resource-pooled single servers of the papers
// (srpt-1) serve a job of need n on k servers n/k as long, so a job that
// never waited leaves before its size, and the identity fails by far;
// they are reference models, not engine policies, and preempt, so the
// check is made where preemption is none or the policy is known to be an
// engine policy (Expect.EnginePolicy). Under preemption a job's
// departure is its last start plus its remaining size, which carries the
// rounding of each preemption's subtraction: a few units in the last
// place of the instants per preemption, still within 10⁻¹⁴ of the run's
// end for the means (TestHonestResultsPass runs every preempting family
// of the examples through it). Checked only under none, a preempting
// plugin's halved response and waiting times and mean in system passed
// beside its honest sizes.
// The instants are at most about the window's length times (warmup +
// arrivals) / arrivals (the time since the start, at the window's
// arrival rate); 10⁻¹⁴ of that is 45 units in the last place. Without this check a plugin halved its
// response and waiting times and mean in system alike (Little's law held)
// and its result was stored beside an honest mean size.
func (c *checker) splitTol(cs sim.ClassStats) float64 {
	r := c.r
	tEnd := r.Window
	if r.Arrivals > 0 {
		tEnd *= float64(r.Warmup+r.Arrivals) / float64(r.Arrivals)
	}
	return RoundingTol*(math.Abs(cs.MeanResponse)+math.Abs(cs.MeanWait)+math.Abs(cs.MeanSize)) + 1e-14*math.Abs(tEnd)
}

// counts: the classes add up to the whole, and every measured arrival
// either departed or is counted as undeparted.
func (c *checker) counts() error {
	r := c.r
	var n, u int64
	for _, cs := range r.Classes {
		n += cs.Count
		u += cs.Undeparted
	}
	switch {
	case n != r.Overall.Count:
		return c.fail("classes[].count", "the classes' departures sum to %d, overall.count is %d", n, r.Overall.Count)
	case u != r.Overall.Undeparted:
		return c.fail("classes[].undeparted", "the classes' undeparted jobs sum to %d, overall.undeparted is %d", u, r.Overall.Undeparted)
	case r.Truncated && n+u > r.Arrivals:
		return c.fail("overall.count", "%d departed + %d undeparted > %d arrivals", n, u, r.Arrivals)
	case !r.Truncated && n+u != r.Arrivals:
		return c.fail("overall.count", "%d departed + %d undeparted, but %d measured arrivals", n, u, r.Arrivals)
	}
	// No run handles 2^53 events (some twenty years of a core at the
	// engine's 1.5·10^7 a second): a plugin's 2^64−1 was stored and fed the workers'
	// events counter and rate on the monitoring page.
	if r.Events > maxEvents {
		return c.fail("events", "%d, more than 2^53: no replication handles that many", r.Events)
	}
	// The means are lower bounds exactly when measured jobs were left in
	// the system (the engine sets the flags from the counts). A plugin that
	// set lower_bound with none left switched off the Little's-law check,
	// and its halved response times were stored beside an honest mean in
	// system.
	bound := func(field string, flag bool, left int64) error {
		if flag != (left > 0) {
			return c.fail(field, "%v, but %d measured jobs were left in the system: the means are lower bounds exactly when some were", flag, left)
		}
		return nil
	}
	if err := bound("lower_bound", r.LowerBound, r.Overall.Undeparted); err != nil {
		return err
	}
	if err := bound("overall.lower_bound", r.Overall.LowerBound, r.Overall.Undeparted); err != nil {
		return err
	}
	for i, cs := range r.Classes {
		if err := bound(fmt.Sprintf("classes[%d].lower_bound", i), cs.LowerBound, cs.Undeparted); err != nil {
			return err
		}
	}
	return nil
}

// CounterName is the pattern of a counter name (wire.CounterName, shared
// with the check of a plugin's counter descriptions), optionally followed
// by "/" and the name of one of the task's classes (a per-class counter).
var CounterName = wire.CounterName

// CounterNameMax bounds a counter name (without a class suffix);
// CounterWordMax one of its words; MaxCounters their number (wire's).
const (
	CounterNameMax = wire.CounterNameMax
	CounterWordMax = wire.CounterWordMax
	MaxCounters    = wire.MaxCounters
)

// MaxCounterValue bounds a counter's magnitude (counters).
const MaxCounterValue = 1e100

func (c *checker) counters() error {
	if len(c.r.Counters) > MaxCounters {
		return c.fail("counters", "%d counters, more than %d", len(c.r.Counters), MaxCounters)
	}
	seen := make(map[string]bool, len(c.r.Counters))
	for i, ct := range c.r.Counters {
		field := fmt.Sprintf("counters[%d].name", i)
		if why := c.badCounterName(ct.Name); why != "" {
			// The name is not quoted back: errors are logged and stored,
			// and must not become the channel it was refused for.
			return c.fail(field, "a name of %d bytes %s", len(ct.Name), why)
		}
		if seen[ct.Name] {
			return c.fail(field, "%q appears twice", ct.Name)
		}
		// Finite is not enough: two replications' 1e308 sum to +Inf, and
		// the summary's mean and interval were infinite. No count, time
		// or rate of a run comes near 1e100, and the squares of such
		// values still add up.
		if math.Abs(ct.Value) > MaxCounterValue {
			return c.fail(fmt.Sprintf("counters[%d].value", i), "%g: larger than the %g a counter may be", ct.Value, MaxCounterValue)
		}
		seen[ct.Name] = true
	}
	return nil
}

// badCounterName says why name is not a counter name ("" if it is).
func (c *checker) badCounterName(name string) string {
	base, class, perClass := strings.Cut(name, "/")
	if perClass && !c.isClass(class) {
		return "names no class of the task's workload after \"/\""
	}
	return wire.BadCounterName(base)
}

// isClass: name is one of the result's classes (checked against the
// task's by echoes; a trace's are the trace's).
func (c *checker) isClass(name string) bool {
	for _, cl := range c.r.Classes {
		if cl.Name != "" && cl.Name == name {
			return true
		}
	}
	return false
}

func (c *checker) series() error {
	r := c.r
	if c.t.Run.SeriesInterval <= 0 && len(r.Series) > 0 {
		return c.fail("series", "%d samples, but the task asked for none", len(r.Series))
	}
	if len(r.Series) > seriesMax(c.t) {
		return c.fail("series", "%d samples, more than series_max %d", len(r.Series), seriesMax(c.t))
	}
	last := 0.0
	for i, s := range r.Series {
		if s.T < last || s.N < 0 {
			return c.fail(fmt.Sprintf("series[%d]", i), "t %g n %d: times must not decrease, counts not be negative", s.T, s.N)
		}
		last = s.T
	}
	return nil
}

// verdict: a run that reached the end of its window with at least
// sim.ConvergenceMinArrivals arrivals has a convergence verdict, from
// the engine. A plugin that left it out switched off the Little's-law
// check (which skips a run not called converged), and summary.csv
// flagged nothing: halved response times, or a mean of 1e300, passed.
func (c *checker) verdict() error {
	r := c.r
	if r.Convergence != nil || r.LowerBound || r.Truncated || r.Unstable || r.Warmup+r.Arrivals < sim.ConvergenceMinArrivals {
		return nil
	}
	return c.fail("convergence", "missing: the engine gives every run of %d arrivals or more that reached the end of its window a convergence verdict (this one had %d)",
		sim.ConvergenceMinArrivals, r.Warmup+r.Arrivals)
}

// consistentTol is how far apart two computations of one quantity may be:
// the engine's overall means and the count-weighted class means are sums
// over the same jobs in another order, 10^-12 apart at 10^8 jobs.
const consistentTol = 1e-9

// consistent: what the result states twice agrees, and what the task
// fixes is the task's. The overall means are the class means weighted by
// their counts (a plugin gave class means a quarter of the overall, or an
// overall a third of the classes', and both were stored), and the offered
// load is the task's workload's, not the plugin's to say (×0.001 moved
// the point's ρ column).
func (c *checker) consistent() error {
	r := c.r
	if c.t.Trace == nil {
		if w, err := c.t.SimWorkload(); err == nil && !near(r.OfferedLoad, w.Load()) {
			return c.fail("offered_load", "%g, the task's workload has %g", r.OfferedLoad, w.Load())
		}
	}
	o := r.Overall
	if o.Count == 0 || o.Undeparted > 0 || len(r.Classes) == 0 {
		return nil
	}
	var resp, wait, pwait, size float64
	for _, cs := range r.Classes {
		f := float64(cs.Count) / float64(o.Count)
		resp, wait, pwait, size = resp+f*cs.MeanResponse, wait+f*cs.MeanWait, pwait+f*cs.PWait, size+f*cs.MeanSize
	}
	for _, q := range []struct {
		field       string
		stated, sum float64
	}{
		{"overall.mean_response", o.MeanResponse, resp}, {"overall.mean_wait", o.MeanWait, wait},
		{"overall.p_wait", o.PWait, pwait}, {"overall.mean_size", o.MeanSize, size},
	} {
		if !near(q.stated, q.sum) {
			return c.fail(q.field, "%g, but its classes' means weighted by their counts give %g", q.stated, q.sum)
		}
	}
	return nil
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= consistentTol*math.Max(math.Abs(a), math.Abs(b)) || math.Abs(a-b) < 1e-300
}
