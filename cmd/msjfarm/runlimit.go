package main

import (
	"bytes"

	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nats-io/nats.go"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// A sweep file's limit block runs on the farm as rounds of ordinary
// campaigns: the search loop (sim/limit.SearchRounds) runs here, on the
// submitting side; each round of one policy variant is the sweep
// sweep.ProbeFile (its probe rates × the file's replications), submitted to
// the coordinator and run by the workers like any campaign, so its records
// are stored and reused by content — running the file again replays the
// search from storage without simulating. The search's result is written
// beside the rounds' campaigns under limits/<id>/ (id: a content hash of
// the limit file): limits.csv and limits.json (one row per variant: the
// bracket, estimate and confidence), summary.csv of every probe point, and
// report/ with each variant's λ_max drawn as a labelled vertical line.

// limitsPrefix is the storage prefix of a limit search's outputs.
func limitsPrefix(id string) string { return "limits/" + id + "/" }

// limitID is the content hash of a limit file (16 hex digits, as campaign
// ids): the same search has the same outputs.
func limitID(f *sweep.File) (string, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:16], nil
}

// probeRun runs one probe campaign to the end and returns its id and
// tasks; interrupted reports that ctx ended first.
type probeRun func(ctx context.Context, pf *sweep.File) (id string, tasks []sweep.Task, interrupted bool, err error)

// limitResult is one variant's search: its target and the limit found, and
// the campaigns of its rounds.
type limitResult struct {
	sweep.LimitTarget
	*limit.Limit
	Campaigns []string `json:"campaigns"`
}

// limitSearch runs plan's searches, one variant after the other, through
// run, and returns the results and every probe point's summary (with its
// tasks and records, for the report).
type limitSearch struct {
	f    *sweep.File
	plan *sweep.LimitPlan
	st   storage.Store
	run  probeRun
	log  io.Writer

	results []limitResult
	points  []aggregate.Point
	tasks   []sweep.Task
	records map[string]*record.Record
}

var errInterrupted = errors.New("interrupted")

func (s *limitSearch) search(ctx context.Context) error {
	s.records = map[string]*record.Record{}
	opt := limit.Options{Lo: s.plan.Lo, Hi: s.plan.Hi, Reps: s.f.Replications, RelTol: s.plan.RelTol}
	for _, t := range s.plan.Targets {
		res := limitResult{LimitTarget: t}
		round := 0
		eval := func(rates []float64) ([]limit.Point, error) {
			round++
			pf := sweep.ProbeFile(s.f, t, rates)
			id, tasks, interrupted, err := s.run(ctx, pf)
			if err != nil {
				return nil, err
			}
			if interrupted {
				return nil, errInterrupted
			}
			res.Campaigns = append(res.Campaigns, id)
			ps, err := s.collect(ctx, id, tasks, rates)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d (campaign %s): %w", t.Label, round, id, err)
			}
			fmt.Fprintf(s.log, "msjfarm: limit: %s round %d: %s\n", t.Label, round, roundLine(ps))
			return ps, nil
		}
		l, err := limit.SearchRounds(eval, opt, s.plan.Probes)
		if err != nil {
			return err
		}
		res.Limit = l
		s.results = append(s.results, res)
	}
	return nil
}

// collect reads a finished probe campaign's records and pools each rate's
// replications. A failed replication fails the round: a verdict needs all
// of them (run again with --retry-failed).
func (s *limitSearch) collect(ctx context.Context, id string, tasks []sweep.Task, rates []float64) ([]limit.Point, error) {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	var readErr error
	recs := record.ReadMany(ctx, s.st, id, ids, func(tid string, err error) {
		if readErr == nil {
			readErr = fmt.Errorf("task %s: %w", tid, err)
		}
	})
	if readErr != nil {
		return nil, readErr
	}
	byRate := map[float64][]*sim.Result{}
	for _, t := range tasks {
		r := recs[t.ID]
		switch {
		case r == nil:
			return nil, fmt.Errorf("λ = %v: task %s has no result", t.ArrivalRate, t.ID)
		case r.Failed():
			return nil, fmt.Errorf("λ = %v: replication %d failed: %s (msjfarm run --retry-failed runs it again)", t.ArrivalRate, t.Replication, r.Error)
		}
		byRate[t.ArrivalRate] = append(byRate[t.ArrivalRate], r.Result)
		s.records[t.ID] = r
	}
	s.tasks = append(s.tasks, tasks...)
	s.points = append(s.points, aggregate.Summarize(tasks, recs)...)
	out := make([]limit.Point, len(rates))
	for i, lam := range rates {
		p, err := limit.PointOf(lam, byRate[lam])
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func roundLine(ps []limit.Point) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("λ = %s %s (%d of %d flagged)", sig(p.Lambda, 5), p.Verdict.Verdict, p.Verdict.Unstable+p.Verdict.Truncated, p.Verdict.N)
	}
	return strings.Join(parts, ", ")
}

// limitsCSVHeader documents limits.csv's columns (docs/results.md).
var limitsCSVHeader = []string{"label", "policy", "params", "outcome", "lo", "hi", "estimate", "estimate_load",
	"confidence", "truncated", "rates", "runs", "saturation_throughput", "campaigns", "undecided"}

// limitsCSV is one row per searched variant. lo and hi bracket λ_max
// (equal for the one-sided outcomes, see sim/limit.Outcome); estimate is
// the bracket's geometric midpoint (empty unless found) and estimate_load
// the same as an offered load; confidence the search's lower bound on the
// probability that the result is right; rates the number of rates
// evaluated and runs the replications; saturation_throughput the mean
// departure rate of the unstable rates (limit.SaturationThroughput: λ_max
// itself for FCFS-like policies only; empty when no rate was unstable);
// campaigns the rounds' campaign ids, space-separated; undecided whether
// some rate was undecided (engine ≥ 0.7.4), counted as unstable like a
// truncated one.
func limitsCSV(rs []limitResult, rate1 float64) []byte {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	_ = w.Write(limitsCSVHeader)
	for _, r := range rs {
		params, _ := json.Marshal(r.Params)
		if len(r.Params) == 0 {
			params = []byte("{}")
		}
		est, estLoad := "", ""
		if r.Outcome == limit.Found {
			est, estLoad = aggregate.FormatFloat(r.Estimate), aggregate.FormatFloat(r.Estimate/rate1)
		}
		sat := ""
		if m, n := limit.SaturationThroughput(r.Limit); n > 0 {
			sat = aggregate.FormatFloat(m)
		}
		_ = w.Write([]string{r.Label, r.Policy, string(params), string(r.Outcome), aggregate.FormatFloat(r.Lo),
			aggregate.FormatFloat(r.Hi), est, estLoad, aggregate.FormatFloat(r.Confidence), strconv.FormatBool(r.Truncated),
			strconv.Itoa(len(r.Points)), strconv.Itoa(r.Runs), sat, strings.Join(r.Campaigns, " "), strconv.FormatBool(r.Undecided)})
	}
	w.Flush()
	return buf.Bytes()
}

// reportLimits are the lines the report draws: each found λ_max by the
// label of its variant's series (the policy name when the file has one
// variant of it).
func reportLimits(rs []limitResult) map[string]float64 {
	perPolicy := map[string]int{}
	for _, r := range rs {
		perPolicy[r.Policy]++
	}
	out := map[string]float64{}
	for _, r := range rs {
		if r.Outcome != limit.Found {
			continue
		}
		key := r.Label
		if perPolicy[r.Policy] == 1 {
			key = r.Policy
		}
		out[key] = r.Estimate
	}
	return out
}

// write stores the search's outputs under limits/<id>/ and returns the
// report's location.
func (s *limitSearch) write(ctx context.Context, id string) error {
	pre := limitsPrefix(id)
	js, err := json.MarshalIndent(struct {
		Name    string        `json:"name"`
		Rate1   float64       `json:"rate_at_load_1"`
		Limits  []limitResult `json:"limits"`
		Written time.Time     `json:"written"`
	}{s.f.Name, s.plan.Rate1, s.results, time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	var sum bytes.Buffer
	if err := aggregate.WriteCSV(&sum, s.points); err != nil {
		return err
	}
	files, err := report.Render(report.Campaign{Points: s.points, Tasks: s.tasks, Records: s.records, Limits: reportLimits(s.results)})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	put := map[string][]byte{pre + "limits.csv": limitsCSV(s.results, s.plan.Rate1), pre + "limits.json": js, pre + "summary.csv": sum.Bytes()}
	for name, data := range files {
		put[pre+"report/"+name] = data
	}
	keys := make([]string, 0, len(put))
	for k := range put {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := s.st.Put(ctx, k, put[k]); err != nil {
			return err
		}
	}
	return nil
}

// printLimits prints one line per variant and the points' table.
func (s *limitSearch) print(w io.Writer) {
	for _, r := range s.results {
		printLimit(w, limitReport{Policy: r.Label, Limit: r.Limit}, s.plan.Rate1)
	}
}

// storedLocation is where a stored key can be opened: a path for local
// storage, else the URL with the key in its path (storage.Location).
func storedLocation(st storage.Store, key string) string { return storage.Location(st.URL(), key) }

// localProbeRun runs each probe campaign on the embedded farm (local.Run),
// with a runner chosen for that campaign.
func localProbeRun(cfg worker.RunnerConfig, st storage.Store, workers int, o local.Options, quiet bool, log io.Writer) probeRun {
	return func(ctx context.Context, pf *sweep.File) (string, []sweep.Task, bool, error) {
		pr := cfg.Prepare(ctx)
		camp, err := sweep.Expand(pf, pr.Registry)
		if err != nil {
			pr.Close()
			return "", nil, false, err
		}
		ch, err := worker.ForCampaignWith(ctx, cfg, pr, st, camp)
		if err != nil {
			return "", nil, false, fmt.Errorf("runner: %w", err)
		}
		ro := o
		ro.Spec, ro.Store, ro.Runner, ro.Pins, ro.Workers = pf, st, ch.Runner, ch.Pins, workers
		var p *progress
		ro.Submitted = func(rep protocol.SubmitReply) {
			if !quiet {
				p = newProgress(log, rep.AlreadyDone).describe(camp)
			}
		}
		ro.Progress = func(s *protocol.Status) {
			if p != nil {
				p.update(s)
			}
		}
		out, err := local.Run(ctx, ro)
		if err != nil {
			return "", nil, false, err
		}
		if p != nil && out.Status != nil {
			p.finish(out.Status)
		}
		if out.Interrupted {
			return out.Submit.Campaign, camp.Tasks, true, nil
		}
		if out.Status != nil && out.Status.Failed > 0 {
			return "", nil, false, fmt.Errorf("campaign %s: %d of %d tasks failed (--retry-failed runs them again)", out.Submit.Campaign, out.Status.Failed, out.Status.Total)
		}
		return out.Submit.Campaign, camp.Tasks, false, nil
	}
}

// runLimitFile runs a sweep file's limit block with probe campaigns run by
// run, writes the outputs and prints the result (msjfarm run and submit
// with a limit file).
func runLimitFile(ctx context.Context, cmd string, f *sweep.File, plan *sweep.LimitPlan, st storage.Store, run probeRun, out io.Writer) int {
	id, err := limitID(f)
	if err != nil {
		return fail("%s: limit: %v", cmd, err)
	}
	start := time.Now()
	fmt.Fprintf(stderr, "msjfarm %s: limit search %s (%s): %d policy variants, λ in [%s, %s], rel_tol %v, %d probes per round × %d replications; storage %s\n",
		cmd, id, f.Name, len(plan.Targets), sig(plan.Lo, 5), sig(plan.Hi, 5), plan.RelTol, plan.Probes, f.Replications, st.URL())
	s := &limitSearch{f: f, plan: plan, st: st, run: run, log: os.Stderr}
	if err := s.search(ctx); err != nil {
		if errors.Is(err, errInterrupted) {
			fmt.Fprintf(stderr, "\nmsjfarm %s: interrupted; run the same command again to resume (finished rounds are reused from %s)\n", cmd, st.URL())
			return interruptCode(ctx)
		}
		return fail("%s: limit: %v", cmd, err)
	}
	if err := s.write(ctx, id); err != nil {
		return fail("%s: limit: writing the results: %v", cmd, err)
	}
	fmt.Fprintln(out)
	s.print(out)
	pre := limitsPrefix(id)
	fmt.Fprintf(out, "\nlimits: %s\nsummary: %s\nreport: %s\n", storedLocation(st, pre+"limits.csv"), storedLocation(st, pre+"summary.csv"),
		storedLocation(st, pre+"report/index.html"))
	fmt.Fprintf(stderr, "msjfarm %s: limit search done in %s\n", cmd, time.Since(start).Round(time.Millisecond))
	return 0
}

// farmProbeRun submits each probe campaign to a running farm's coordinator
// (msjfarm submit with a limit file) and waits for it to finish; the
// records are read from st, the farm's storage. Third-party plugins are
// pinned as submit pins them.
func farmProbeRun(nc *nats.Conn, st storage.Store, fs farmStore, reg *registry.Registry, pin, retry, quiet bool, log io.Writer) probeRun {
	return func(ctx context.Context, pf *sweep.File) (string, []sweep.Task, bool, error) {
		camp, err := sweep.Expand(pf, reg)
		if err != nil {
			return "", nil, false, err
		}
		req := protocol.SubmitRequest{Spec: pf, RetryFailed: retry, Store: fs.id}
		pins, _, warnings, err := worker.PinForSubmit(ctx, st, camp, reg, pin)
		warn("submit", warnings)
		if err != nil {
			return "", nil, false, fmt.Errorf("pinning plugins: %w", err)
		}
		if pins != nil {
			req.Pins = pins.Policies
		}
		rctx, cancel := context.WithTimeout(ctx, submitWait)
		defer cancel()
		var rep protocol.SubmitReply
		if err := protocol.RequestRetry(rctx, nc, protocol.APISubmit, req, &rep, waitingForCoordinator("limit")); err != nil {
			if ctx.Err() != nil {
				return "", nil, true, nil
			}
			return "", nil, false, refusedStore(ctx, nc, err, fs.given, fs.id, fs.made)
		}
		// Taken: the store is the farm's, and holds this round's
		// results; a later refusal (another coordinator, on another
		// store) must not remove it.
		fs.made = ""
		var p *progress
		if !quiet {
			p = newProgress(log, rep.AlreadyDone).describe(camp)
		}
		for {
			var s protocol.Status
			if err := protocol.Request(ctx, nc, protocol.APIStatus, protocol.StatusRequest{Campaign: rep.Campaign}, &s); err != nil {
				if ctx.Err() != nil {
					return rep.Campaign, camp.Tasks, true, nil
				}
				return "", nil, false, err
			}
			if p != nil {
				p.update(&s)
			}
			if s.State != protocol.CampaignRunning {
				if p != nil {
					p.finish(&s)
				}
				if s.Failed > 0 || s.State != protocol.CampaignDone {
					return "", nil, false, fmt.Errorf("campaign %s %s: %d of %d tasks failed (--retry-failed runs them again)", rep.Campaign, s.State, s.Failed, s.Total)
				}
				return rep.Campaign, camp.Tasks, false, nil
			}
			select {
			case <-ctx.Done():
				return rep.Campaign, camp.Tasks, true, nil
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
}

// submitLimit runs a sweep file's limit block on a farm (msjfarm submit):
// ok is false for a file without one. The search needs the farm's storage
// (--storage) to read the rounds' records, and waits for every round
// whatever --wait says (the next round's rates depend on this one's).
// f is the file as read (a limit search past 64 MiB had been read with
// the default limit, failed, and was taken for a campaign).
func submitLimit(ctx context.Context, ff *farmFlags, reg *registry.Registry, path string, f *sweep.File, pin, retry, wait, dry bool, creating func()) (int, bool) {
	if f.Limit == nil {
		return 0, false
	}
	plan, err := sweep.PlanLimit(f, withPolicyNames(reg))
	if err != nil {
		errorf("submit: %v", err)
		return 2, true
	}
	if dry {
		return limitDryRun(os.Stdout, "submit", f, plan), true
	}
	if *ff.storage == "" {
		errorf("submit: %s has a limit block: the search reads each round's results, so give the farm's --storage", path)
		return 2, true
	}
	creating()
	// The store is checked as a plain submission's is (submitStore): its
	// identity goes with every round, so the coordinator refuses a store
	// that is not its own, and one that does not exist while the farm's
	// coordinator runs is refused here, made by nothing. It was made
	// whatever --storage said and sent no identity: a mistyped
	// --storage was a new store that the farm's coordinator never saw,
	// its rounds' records never in it, and no round was refused.
	conn, closeConn := ff.lazyConn("msjfarm-submit")
	defer closeConn()
	st, id, made, err := submitStore(ctx, ff, conn)
	if errors.As(err, new(notFarmStore)) {
		return usagef("submit: %v", err), true
	}
	if err != nil {
		return fail("submit: %v", err), true
	}
	nc, err := conn()
	if err != nil {
		return fail("submit: %v", err), true
	}
	fs := farmStore{given: *ff.storage, id: id, made: made}
	return runLimitFile(ctx, "submit", f, plan, st, farmProbeRun(nc, st, fs, reg, pin, retry, !wait, os.Stderr), os.Stdout), true
}

// farmStore is a limit search's --storage as submitStore found it: the
// path given, its identity, and its directory when the search made it.
type farmStore struct{ given, id, made string }

// limitDryRun prints a limit search's plan (msjfarm run/submit --dry-run)
// and writes nothing: the rates after the first round depend on its
// verdicts, so the plan is the bound on rounds and tasks.
func limitDryRun(w io.Writer, cmd string, f *sweep.File, plan *sweep.LimitPlan) int {
	opt := limit.Options{Lo: plan.Lo, Hi: plan.Hi, Reps: f.Replications, RelTol: plan.RelTol}
	rounds := opt.MaxRounds(plan.Probes)
	rates := plan.Probes + 2 + (rounds-1)*plan.Probes
	fmt.Fprintf(w, "%s: limit search %s: %d policy variants; λ in [%s, %s] (load %s to %s), rel_tol %v; at most %d rounds of %d probe rates (%d in the first), %d rates per variant\n",
		cmd, f.Name, len(plan.Targets), sig(plan.Lo, 5), sig(plan.Hi, 5), sig(plan.Lo/plan.Rate1, 4), sig(plan.Hi/plan.Rate1, 4), plan.RelTol,
		rounds, plan.Probes, plan.Probes+2, rates)
	fmt.Fprintf(w, "at most %d tasks (%d variants × %d rates × %d replications of %d arrivals + %d warm-up); a one-sided outcome ends after the first round\n",
		len(plan.Targets)*rates*f.Replications, len(plan.Targets), rates, f.Replications, f.Run.Arrivals, f.Run.Warmup)
	return 0
}
