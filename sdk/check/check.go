// Package check is the conformance suite `msjfarm plugin check` runs on a
// policy plugin binary, through the same host the workers use (DESIGN.md
// §3). It needs nothing from the plugin but the protocol: any plugin, ours
// or a third party's, can be checked.
//
// Checks, per plugin:
//
//   - info: the plugin names itself, serves at least one policy, policy
//     names are unique lower-case-hyphenated words; an engine version other
//     than this msjfarm's is a warning (its results are not comparable bit
//     for bit).
//
// Per policy:
//
//   - schema: the parameter schema is valid (sim.ValidateSchema) and its
//     defaults resolve (sim.Resolve); a reference model declares none.
//   - rejects-bad-params: the plugin itself (host validation bypassed)
//     rejects an unknown parameter name and, for each bounded number, a
//     value just outside its bounds, with InvalidArgument and before
//     running anything.
//
// Per policy and conformance workload (one-or-all k=32, four-class k=15,
// powers-of-two k=8; Poisson arrivals at load Options.Load, default 0.3;
// Options.Arrivals measured arrivals, no warm-up). A policy whose Init
// declines a workload (an error from Init, e.g. a policy defined only for
// one-or-all) is skipped on it; declining all three fails. The run is made
// with the decision trace requested (proto RunRequest.trace: the plugin
// streams every arrival, start, preemption and completion, sim.TraceRecord) and
// the invariants are verified here, on the host, from the trace — not taken
// from the plugin's word:
//
//   - capacity: busy servers never exceed k nor drop below 0, and equal the
//     needs of the jobs in service after every event;
//   - lifecycle: a job starts only while waiting, is preempted or completes
//     only while running;
//   - preemption: no preemption unless the policy declares it; the result's
//     preemption mode and size-awareness are the declared ones;
//   - served: at this low load every measured job is started and completes
//     (in the trace and in the result: count = arrivals, not unstable);
//   - progress: progress was reported, never went backwards, and ended at
//     done = total;
//   - determinism: the same request twice more (concurrently, without the
//     trace) gives result bytes identical to each other and to the traced
//     run (so observing does not perturb the run either).
//
// A reference model (not an engine policy) may emit no trace: the trace
// checks are then skipped for it, the others apply. Work conservation is
// not checked: no capability declares it yet.
package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// Status of one check.
type Status string

// Statuses.
const (
	Pass Status = "pass"
	Fail Status = "FAIL"
	Warn Status = "warn"
	Skip Status = "skip"
)

// Item is the outcome of one check.
type Item struct {
	Policy   string `json:"policy,omitempty"`
	Workload string `json:"workload,omitempty"`
	Check    string `json:"check"`
	Status   Status `json:"status"`
	Detail   string `json:"detail,omitempty"`
}

// Report is the outcome of the suite on one binary.
type Report struct {
	Binary  string           `json:"binary"`
	Info    *pluginhost.Info `json:"info"`
	Items   []Item           `json:"items"`
	Elapsed string           `json:"elapsed"`
}

// Failed counts failed checks.
func (r *Report) Failed() int {
	n := 0
	for _, it := range r.Items {
		if it.Status == Fail {
			n++
		}
	}
	return n
}

// Options configure the suite.
type Options struct {
	// Arrivals per conformance run (0: 20000).
	Arrivals int64
	// Seed of the runs (0: 1).
	Seed uint64
	// Load of the conformance workloads (0: 0.3).
	Load float64
	// Deadline of each run (0: 2 min).
	Deadline time.Duration
	// Policies restricts the suite to these policies (default: all).
	Policies []string
}

// Workloads are the conformance workloads, by name (workload.Named).
var Workloads = []string{"one-or-all", "four-class", "powers-of-two"}

var policyName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Run checks the plugin binary b through h. The error is non-nil only if
// the plugin cannot be started or described at all.
func Run(ctx context.Context, h *pluginhost.Host, b pluginhost.Binary, opt Options) (*Report, error) {
	t0 := time.Now()
	if opt.Arrivals <= 0 {
		opt.Arrivals = 20000
	}
	if opt.Seed == 0 {
		opt.Seed = 1
	}
	if opt.Load <= 0 {
		opt.Load = 0.3
	}
	if opt.Deadline <= 0 {
		opt.Deadline = 2 * time.Minute
	}
	in, err := h.Info(ctx, b)
	if err != nil {
		return nil, err
	}
	r := &Report{Binary: in.Path, Info: in}
	if b.SHA256 == "" {
		b.SHA256 = in.SHA256 // check exactly the binary described
	}
	r.checkInfo(in)
	for _, p := range in.Policies {
		if len(opt.Policies) > 0 && !contains(opt.Policies, p.Name) {
			continue
		}
		c := &policyCheck{ctx: ctx, h: h, b: b, pol: p, opt: opt, r: r}
		c.run()
	}
	for _, want := range opt.Policies {
		if _, ok := in.Policy(want); !ok {
			r.add(Item{Policy: want, Check: "exists", Status: Fail, Detail: "the plugin does not serve this policy"})
		}
	}
	r.Elapsed = time.Since(t0).Round(time.Millisecond).String()
	return r, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}

func (r *Report) add(it Item) { r.Items = append(r.Items, it) }

func (r *Report) checkInfo(in *pluginhost.Info) {
	var probs []string
	if in.Name == "" {
		probs = append(probs, "the plugin has no name")
	}
	if len(in.Policies) == 0 {
		probs = append(probs, "the plugin serves no policies")
	}
	seen := map[string]bool{}
	for _, p := range in.Policies {
		if !policyName.MatchString(p.Name) {
			probs = append(probs, fmt.Sprintf("policy name %q is not lower-case-hyphenated", p.Name))
		}
		if seen[strings.ToLower(p.Name)] {
			probs = append(probs, fmt.Sprintf("policy %q listed twice", p.Name))
		}
		seen[strings.ToLower(p.Name)] = true
	}
	r.add(itemFrom("", "", "info", probs, fmt.Sprintf("%s %s, engine %s, protocol %d, %d policies", in.Name, in.Version, in.Engine, in.Protocol, len(in.Policies))))
	if in.Engine != sim.Version {
		r.add(Item{Check: "engine-version", Status: Warn,
			Detail: fmt.Sprintf("plugin links engine %s, this msjfarm is %s: results are not comparable bit for bit", in.Engine, sim.Version)})
	}
}

func itemFrom(policy, wl, check string, probs []string, okDetail string) Item {
	if len(probs) > 0 {
		return Item{Policy: policy, Workload: wl, Check: check, Status: Fail, Detail: strings.Join(probs, "; ")}
	}
	return Item{Policy: policy, Workload: wl, Check: check, Status: Pass, Detail: okDetail}
}

type policyCheck struct {
	ctx context.Context
	h   *pluginhost.Host
	b   pluginhost.Binary
	pol pluginhost.PolicyInfo
	opt Options
	r   *Report
}

func (c *policyCheck) add(wl, check string, probs []string, okDetail string) {
	c.r.add(itemFrom(c.pol.Name, wl, check, probs, okDetail))
}

func (c *policyCheck) run() {
	c.checkSchema()
	c.checkRejects()
	ran := 0
	var declined []string
	for _, name := range Workloads {
		ok, why := c.checkWorkload(name)
		if ok {
			ran++
		} else if why != "" {
			declined = append(declined, name+": "+why)
		}
	}
	if ran == 0 && len(declined) == len(Workloads) {
		c.add("", "runs", []string{"the policy declined every conformance workload (" + strings.Join(declined, "; ") + ")"}, "")
	}
}

func (c *policyCheck) checkSchema() {
	var probs []string
	if c.pol.Reference && len(c.pol.Params) > 0 {
		probs = append(probs, "a reference model declares parameters")
	}
	if err := sim.ValidateSchema(c.pol.Params); err != nil {
		probs = append(probs, err.Error())
	} else if _, err := sim.Resolve(c.pol.Params, nil); err != nil {
		probs = append(probs, "defaults do not resolve: "+err.Error())
	}
	c.add("", "schema", probs, fmt.Sprintf("%d parameters", len(c.pol.Params)))
}

// request is a conformance run of the policy on a named workload.
func (c *policyCheck) request(wl string) (*wire.RunRequest, error) {
	spec, err := workload.Named(wl)
	if err != nil {
		return nil, err
	}
	unit, err := spec.Build(1)
	if err != nil {
		return nil, err
	}
	return &wire.RunRequest{
		Policy: c.pol.Name, Workload: spec, ArrivalRate: c.opt.Load / unit.Load(),
		Run: wire.Run{Seed: c.opt.Seed, RunConfig: wire.RunConfig{Arrivals: c.opt.Arrivals}},
	}, nil
}

func (c *policyCheck) checkRejects() {
	base, err := c.request(Workloads[0])
	if err != nil {
		c.add("", "rejects-bad-params", []string{err.Error()}, "")
		return
	}
	bad := []map[string]any{{"no-such-parameter-xyzzy": 1}}
	for _, p := range c.pol.Params {
		if p.Type != sim.Int && p.Type != sim.Float {
			continue
		}
		if p.Min != nil {
			bad = append(bad, map[string]any{p.Name: *p.Min - 1})
		}
		if p.Max != nil {
			bad = append(bad, map[string]any{p.Name: *p.Max + 1})
		}
	}
	var probs []string
	for _, params := range bad {
		req := *base
		req.Params = params
		req.Run.Arrivals = 100
		_, err := c.h.Run(c.ctx, c.b, &req, pluginhost.RunOptions{SkipValidation: true, Deadline: c.opt.Deadline})
		if !errors.Is(err, pluginhost.ErrInvalid) {
			probs = append(probs, fmt.Sprintf("parameters %v: want a rejection (InvalidArgument), got %v", params, errOrNone(err)))
		}
	}
	c.add("", "rejects-bad-params", probs, fmt.Sprintf("%d bad parameter sets rejected", len(bad)))
}

func errOrNone(err error) string {
	if err == nil {
		return "a completed run"
	}
	return err.Error()
}

// checkWorkload runs the trace, served, progress and determinism checks on
// one workload. ok is false if the run did not happen; why then says
// whether the policy declined the workload (non-empty) or a failure was
// already recorded (empty).
func (c *policyCheck) checkWorkload(wl string) (ok bool, why string) {
	req, err := c.request(wl)
	if err != nil {
		c.add(wl, "runs", []string{err.Error()}, "")
		return false, ""
	}
	var prog []int64
	var lastTotal int64
	traced, err := c.h.Run(c.ctx, c.b, req, pluginhost.RunOptions{
		Trace: true, Deadline: c.opt.Deadline, ProgressInterval: 10 * time.Millisecond,
		Progress: func(done, total int64) { prog = append(prog, done); lastTotal = total },
	})
	if err != nil {
		var he *pluginhost.Error
		if errors.As(err, &he) && he.Kind == pluginhost.ErrPolicy && strings.Contains(he.Msg, "policy init") {
			c.r.add(Item{Policy: c.pol.Name, Workload: wl, Check: "runs", Status: Skip, Detail: "declined: " + he.Msg})
			return false, he.Msg
		}
		c.add(wl, "runs", []string{err.Error()}, "")
		return false, ""
	}
	k := req.Workload.Servers
	res := traced.Result

	if len(traced.Trace) == 0 && c.pol.Reference {
		c.r.add(Item{Policy: c.pol.Name, Workload: wl, Check: "trace", Status: Skip, Detail: "reference model: no decision trace"})
	} else {
		tc := CheckTrace(traced.Trace, k, c.pol.Preemption != sim.NoPreemption.String(), req.Run.Warmup+req.Run.Arrivals)
		c.add(wl, "capacity", tc.Capacity, fmt.Sprintf("%d events, at most %d of %d servers busy", len(traced.Trace), tc.MaxBusy, k))
		c.add(wl, "lifecycle", tc.Lifecycle, "every start, preemption and completion legal")
		c.add(wl, "preemption", append(tc.Preemption, declared(c.pol, res)...), fmt.Sprintf("declared %s, %d preemptions", c.pol.Preemption, tc.Preemptions))
		served := tc.Served
		served = append(served, resultServed(res, req.Run.Arrivals)...)
		c.add(wl, "served", served, fmt.Sprintf("all %d measured jobs served", req.Run.Arrivals))
	}
	if len(traced.Trace) == 0 && c.pol.Reference {
		c.add(wl, "served", resultServed(res, req.Run.Arrivals), fmt.Sprintf("all %d measured jobs served", req.Run.Arrivals))
	}
	c.add(wl, "progress", CheckProgress(prog, lastTotal, req.Run.Warmup+req.Run.Arrivals),
		fmt.Sprintf("%d progress messages", len(prog)))
	c.checkCounters(wl, res)

	// Determinism: two more runs at once, without the trace.
	var outs [2]*pluginhost.Outcome
	var errs [2]error
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = c.h.Run(c.ctx, c.b, req, pluginhost.RunOptions{Deadline: c.opt.Deadline})
		}(i)
	}
	wg.Wait()
	var probs []string
	for i, err := range errs {
		switch {
		case err != nil:
			probs = append(probs, fmt.Sprintf("repeat %d: %v", i+1, err))
		case !bytes.Equal(outs[i].ResultJSON, traced.ResultJSON):
			probs = append(probs, fmt.Sprintf("repeat %d gave different result bytes (E[T] %v vs %v)", i+1,
				outs[i].Result.Overall.MeanResponse, res.Overall.MeanResponse))
		}
	}
	c.add(wl, "determinism", probs, fmt.Sprintf("3 runs, identical %d result bytes", len(traced.ResultJSON)))
	return true, ""
}

// checkCounters: a policy that describes its counters (DescribeCounters)
// describes every counter it reports, so that no figure falls back to a
// raw name; one that describes none is told what it misses.
func (c *policyCheck) checkCounters(wl string, res *sim.Result) {
	if len(res.Counters) == 0 {
		return
	}
	if len(c.pol.CounterInfo) == 0 {
		c.r.add(Item{Policy: c.pol.Name, Workload: wl, Check: "counters", Status: Skip,
			Detail: fmt.Sprintf("%d counters, none described (DescribeCounters): outputs show their raw names", len(res.Counters))})
		return
	}
	var probs []string
	for _, ct := range res.Counters {
		if _, ok := c.pol.CounterInfo.Lookup(ct.Name); !ok {
			probs = append(probs, fmt.Sprintf("counter %s is reported but not described (DescribeCounters)", ct.Name))
		}
	}
	c.add(wl, "counters", probs, fmt.Sprintf("%d counters, all described", len(res.Counters)))
}

// declared compares the result's recorded capabilities with the Info.
func declared(p pluginhost.PolicyInfo, res *sim.Result) []string {
	var probs []string
	if res.Preemption != p.Preemption {
		probs = append(probs, fmt.Sprintf("result records preemption %q, Info declares %q", res.Preemption, p.Preemption))
	}
	if res.SizeAware != p.SizeAware {
		probs = append(probs, fmt.Sprintf("result records size_aware=%v, Info declares %v", res.SizeAware, p.SizeAware))
	}
	return probs
}

func resultServed(res *sim.Result, arrivals int64) []string {
	var probs []string
	if res.Unstable {
		probs = append(probs, fmt.Sprintf("run flagged unstable at low load (%v)", res.Instability.Reasons))
	}
	if res.Overall.Count != arrivals {
		probs = append(probs, fmt.Sprintf("%d of %d measured jobs departed", res.Overall.Count, arrivals))
	}
	return probs
}

// TraceCheck is what CheckTrace found: problems by category (empty: pass).
type TraceCheck struct {
	Capacity, Lifecycle, Preemption, Served []string
	MaxBusy                                 int
	Preemptions                             int
}

// maxProblems caps the problems listed per category.
const maxProblems = 3

func addProb(list *[]string, format string, a ...any) {
	if len(*list) < maxProblems {
		*list = append(*list, fmt.Sprintf(format, a...))
	} else if len(*list) == maxProblems {
		*list = append(*list, "...")
	}
}

// CheckTrace verifies a decision trace of a run on k servers: capacity,
// busy-server accounting, job lifecycle, preemption only if mayPreempt, and
// that every job with id < measured (the warm-up and measured arrivals)
// completed.
func CheckTrace(evs []sim.TraceRecord, k int, mayPreempt bool, measured int64) TraceCheck {
	const (
		waiting = 1
		running = 2
		done    = 3
	)
	var tc TraceCheck
	state := map[int64]uint8{}
	need := map[int64]int{}
	busy := 0
	for i, e := range evs {
		switch e.Kind {
		case sim.TraceArrive:
			if state[e.Job] != 0 {
				addProb(&tc.Lifecycle, "event %d (t=%g): job %d arrived twice", i, e.Time, e.Job)
			}
			state[e.Job] = waiting
			need[e.Job] = e.Need
		case sim.TraceStart:
			if state[e.Job] != waiting {
				addProb(&tc.Lifecycle, "event %d (t=%g): job %d started while %s", i, e.Time, e.Job, stateName(state[e.Job]))
			}
			state[e.Job] = running
			busy += e.Need
		case sim.TracePreempt:
			tc.Preemptions++
			if !mayPreempt {
				addProb(&tc.Preemption, "event %d (t=%g): job %d preempted by a policy that declared no preemption", i, e.Time, e.Job)
			}
			if state[e.Job] != running {
				addProb(&tc.Lifecycle, "event %d (t=%g): job %d preempted while %s", i, e.Time, e.Job, stateName(state[e.Job]))
			}
			state[e.Job] = waiting
			busy -= e.Need
		case sim.TraceComplete:
			if state[e.Job] != running {
				addProb(&tc.Lifecycle, "event %d (t=%g): job %d completed while %s", i, e.Time, e.Job, stateName(state[e.Job]))
			}
			state[e.Job] = done
			busy -= e.Need
		default:
			addProb(&tc.Lifecycle, "event %d: unknown kind %d", i, e.Kind)
		}
		if e.Need != need[e.Job] && e.Kind != sim.TraceArrive {
			addProb(&tc.Lifecycle, "event %d (t=%g): job %d needs %d servers, arrived needing %d", i, e.Time, e.Job, e.Need, need[e.Job])
		}
		if busy > k || busy < 0 {
			addProb(&tc.Capacity, "event %d (t=%g): %d of %d servers busy", i, e.Time, busy, k)
		}
		if busy != e.Busy {
			addProb(&tc.Capacity, "event %d (t=%g): the engine reports %d busy, the jobs in service need %d", i, e.Time, e.Busy, busy)
		}
		tc.MaxBusy = max(tc.MaxBusy, busy)
	}
	var missing, count int64
	first := int64(-1)
	for id := int64(0); id < measured; id++ {
		if state[id] != done {
			count++
			if first < 0 {
				first = id
				missing = int64(state[id])
			}
		}
	}
	if count > 0 {
		addProb(&tc.Served, "%d of %d jobs never completed (first: job %d, %s)", count, measured, first, stateName(uint8(missing)))
	}
	return tc
}

func stateName(s uint8) string {
	return [...]string{"not in the system", "waiting", "running", "done"}[s]
}

// CheckProgress verifies the progress reports of a run of total arrivals:
// at least one, never decreasing, the last equal to total.
func CheckProgress(done []int64, reportedTotal, total int64) []string {
	var probs []string
	if len(done) == 0 {
		return []string{"no progress reported"}
	}
	for i := 1; i < len(done); i++ {
		if done[i] < done[i-1] {
			probs = append(probs, fmt.Sprintf("progress went backwards: %d after %d", done[i], done[i-1]))
			break
		}
	}
	if last := done[len(done)-1]; last != total || reportedTotal != total {
		probs = append(probs, fmt.Sprintf("progress ended at %d of %d, want %d of %d", last, reportedTotal, total, total))
	}
	return probs
}
