package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// maxUsefulResolution: a run length whose resolution is wider than this
// (fewer than about 8,100 arrivals) gets a warning with the default
// tolerance.
const maxUsefulResolution = 0.25

// limitRelTol resolves --rel-tol for a run length of arrivals: 0 means
// the growth test's resolution there (rounded up to three significant
// digits), so that the defaults — the README's `msjfarm limit --workload
// one-or-all --policy fcfs` — never warn; a tolerance below the
// resolution gets a warning, since it narrows the bracket, not the error.
func limitRelTol(relTol float64, arrivals int64) (float64, string) {
	res := sweep.LimitResolutionAt(arrivals)
	if relTol == 0 {
		tol, warn := sweep.LimitRelTol(arrivals), ""
		if res > maxUsefulResolution {
			// `--arrivals 1` stopped after three rates, [2.1, 11.7] with
			// "confidence ≥ 0.999", and said nothing of its length.
			warn = fmt.Sprintf("at %d arrivals the growth test resolves λ_max only to about ±%.0f%% (2.25%% at 10^6, ∝ 1/√arrivals), so the bracket is that wide, and its confidence assumes the error rates calibrated at 10^6 arrivals: lengthen --arrivals", arrivals, 100*res)
		}
		return tol, warn
	}
	if relTol < res*(1-1e-9) {
		return relTol, fmt.Sprintf("--rel-tol %v is below the verdict's resolution ≈ %.3g at %d arrivals (the growth test's 2.25%% at 10^6, ∝ 1/√arrivals); "+
			"the combined verdict (growth, work deficit, pooled over replications) is documented at 10^6 arrivals × 10 replications (docs/design.md, verdict calibration): "+
			"0 of 3300 stable points at ρ ≤ 0.97 called unstable (false-verdict rate ≤ 0.091%% per point, exact 95%% bound), 336 of 336 overloads 1%% past saturation called unstable (power ≥ 99.1%%); "+
			"neither holds nearer λ_max, so the bracket will be narrower than it is accurate (lengthen --arrivals)", relTol, res, arrivals)
	}
	return relTol, ""
}

// limitOut is where limit prints its results (a variable so that tests
// read them).
var limitOut io.Writer = os.Stdout

// limitTarget is one policy variant whose λ_max is searched.
type limitTarget struct {
	Policy string         `json:"policy"`
	Params map[string]any `json:"params"`
	run    limit.RunFunc
}

// limitReport is one target's result, as printed and as --json emits it.
type limitReport struct {
	Policy string         `json:"policy"`
	Params map[string]any `json:"params"`
	*limit.Limit
}

func defLimit(fs *pflag.FlagSet) func([]string) int {
	wl := fs.String("workload", "one-or-all", "named workload (see 'msjfarm workloads'); without a sweep file")
	pol := fs.String("policy", "", "policy (see 'msjfarm policies'); without a sweep file")
	params := paramFlags{}
	fs.Var(params, "param", "policy parameter name=value (repeatable); without a sweep file")
	lo := fs.Float64("lo", 0, "lowest arrival rate searched (0: 0.05 × the rate at load 1)")
	hi := fs.Float64("hi", 0, "highest arrival rate searched (0: 1.5 × the rate at load 1)")
	reps := fs.Int("reps", 5, "replications per evaluated rate (odd avoids ties)")
	relTol := fs.Float64("rel-tol", 0, "stop when hi/lo − 1 ≤ this (0: the growth test's resolution at --arrivals, 0.0225 at 10^6; a sweep file's limit.rel_tol otherwise)")
	seed := fs.Uint64("seed", 1, "seed; replication r uses rng.Mix(seed, r) at every rate (common random numbers)")
	workers := fs.Int("workers", runtime.NumCPU(), "replications run at once")
	asJSON := fs.Bool("json", false, "print one JSON object per policy")
	arrivals, warmup := count(1000000), count(100000)
	fs.Var(&arrivals, "arrivals", "measured arrivals per replication (a sweep file's run block otherwise)")
	fs.Var(&warmup, "warmup", "discarded warm-up arrivals per replication (a sweep file's run block otherwise)")
	pluginPath := fs.String("plugin-path", "", "colon-separated plugin directories searched (before $"+pluginhost.EnvPath+") for a policy that is not built in")
	readable := fs.StringArray("plugin-readable", nil, readableHelp)
	return func(args []string) int {
		return runLimit(fs, args, limitOut, limitFlags{
			workload: *wl, policy: *pol, params: params, lo: *lo, hi: *hi, reps: *reps, relTol: *relTol,
			seed: *seed, workers: *workers, json: *asJSON, arrivals: int64(arrivals), warmup: int64(warmup), pluginPath: *pluginPath,
			readable: *readable,
		})
	}
}

type limitFlags struct {
	workload, policy string
	params           paramFlags
	lo, hi, relTol   float64
	reps, workers    int
	seed             uint64
	json             bool
	arrivals, warmup int64
	pluginPath       string
	readable         []string
}

// usagef reports a usage or validation error (exit status 2).
func usagef(format string, a ...any) int {
	fail(format, a...)
	return 2
}

// limitSystem is what a search runs: a workload spec (with its
// interarrival law), a run block, the seed and the policy variants.
type limitSystem struct {
	spec    workload.Spec
	ia      *dist.Spec
	runCfg  wire.RunConfig
	seed    uint64
	targets []limitTarget
}

// runLimit is msjfarm limit: the flags checked, the system read from a
// sweep file or the flags, the bracket resolved, then one search per
// policy variant, printed as it ends. Every error before the first search
// is a usage error (exit status 2).
func runLimit(fs *pflag.FlagSet, args []string, out io.Writer, lf limitFlags) int {
	if err := checkLimitFlags(fs, args, lf); err != nil {
		return usagef("%v", err)
	}
	sb, code := readingSandbox("limit", lf.readable, storeDirs("", ""), secretPlaces(""))
	if code != 0 {
		return code
	}
	host := pluginhost.New(pluginhost.Config{MaxConcurrent: lf.workers, Sandbox: sb})
	defer host.Close()
	reg := registry.New(context.Background(), registry.Options{Dirs: pluginhost.SearchPath(lf.pluginPath, nil), Host: host})
	sys, rate1, err := limitSetup(fs, args, reg, host, &lf)
	if err != nil {
		return usagef("%v", err)
	}
	opt := limit.Options{Lo: lf.lo, Hi: lf.hi, Reps: lf.reps, RelTol: lf.relTol, Parallel: lf.workers}
	if err := opt.Validate(); err != nil {
		return usagef("%v", err)
	}
	enc := json.NewEncoder(out)
	for _, t := range sys.targets {
		l, err := limit.Search(t.run, opt)
		if err != nil {
			return fail("limit: %s: %v", t.Policy, err)
		}
		rep := limitReport{Policy: t.Policy, Params: t.Params, Limit: l}
		if !lf.json {
			printLimit(out, rep, rate1)
		} else if err := enc.Encode(rep); err != nil {
			return fail("limit: %v", err)
		}
	}
	return 0
}

// checkLimitFlags checks the flags on their own, before anything is read.
func checkLimitFlags(fs *pflag.FlagSet, args []string, lf limitFlags) error {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }
	switch {
	case len(args) > 1:
		return fmt.Errorf("limit: at most one sweep file, got %d arguments", len(args))
	case bad(lf.lo):
		return fmt.Errorf("limit: --lo must be a positive arrival rate, got %v", lf.lo)
	case bad(lf.hi):
		return fmt.Errorf("limit: --hi must be a positive arrival rate, got %v", lf.hi)
	case lf.lo > 0 && lf.hi > 0 && lf.lo >= lf.hi:
		return fmt.Errorf("limit: --lo (%v) must be below --hi (%v)", lf.lo, lf.hi)
	case lf.reps < 1:
		return fmt.Errorf("limit: --reps must be >= 1, got %d", lf.reps)
	case lf.reps > maxSimulateReps:
		return fmt.Errorf("limit: --reps %d is more than %d: each probe rate's results are held in memory until they are pooled (as simulate's)", lf.reps, maxSimulateReps)
	case math.IsNaN(lf.relTol) || math.IsInf(lf.relTol, 0) || lf.relTol < 0 || fs.Changed("rel-tol") && lf.relTol == 0:
		return fmt.Errorf("limit: --rel-tol must be > 0, got %v", lf.relTol)
	case lf.workers < 1:
		return fmt.Errorf("limit: --workers must be >= 1, got %d", lf.workers)
	case lf.arrivals < 1:
		return fmt.Errorf("limit: --arrivals must be >= 1, got %d", lf.arrivals)
	}
	return nil
}

// limitSetup reads the system (from the sweep file args[0] or the
// flags), resolves the bracket and tolerance into lf, checks every
// variant on the workload and builds each one's RunFunc. It returns the
// rate at offered load 1, the work-conserving bound.
func limitSetup(fs *pflag.FlagSet, args []string, reg *registry.Registry, host *pluginhost.Host, lf *limitFlags) (*limitSystem, float64, error) {
	var (
		sys *limitSystem
		err error
	)
	if len(args) == 1 {
		sys, err = limitSystemFromFile(fs, args[0], reg, lf)
	} else {
		sys, err = limitSystemFromFlags(reg, *lf)
	}
	if err != nil {
		return nil, 0, err
	}
	if err := sys.runCfg.Validate(); err != nil {
		// --arrivals and --warmup override the file's run block: the
		// error names the flag when one of them set the value.
		return nil, 0, errors.New("limit: " + runKeyAsFlag(err, fs))
	}
	rate1, err := limitBracketFlags(sys, reg, lf)
	if err != nil {
		return nil, 0, err
	}
	var warning string
	if lf.relTol, warning = limitRelTol(lf.relTol, sys.runCfg.Arrivals); warning != "" {
		fmt.Fprintf(stderr, "msjfarm limit: warning: %s\n", warning)
	}
	for i := range sys.targets {
		run, err := limitRunFunc(reg, host, &sys.targets[i], sys.spec, sys.ia, sys.runCfg, sys.seed)
		if err != nil {
			return nil, 0, fmt.Errorf("limit: %w", err)
		}
		sys.targets[i].run = run
	}
	return sys, rate1, nil
}

// limitSystemFromFile is the system of a sweep file: its first task's
// workload, its run block unless --arrivals or --warmup override it, its
// seed unless --seed does, and every distinct policy variant, in the
// file's order (the arrival-rate axis, and any other, is ignored).
func limitSystemFromFile(fs *pflag.FlagSet, path string, reg *registry.Registry, lf *limitFlags) (*limitSystem, error) {
	if fs.Changed("policy") || fs.Changed("param") || fs.Changed("workload") {
		return nil, fmt.Errorf("limit: --workload, --policy and --param come from the sweep file %s; give either the file or the flags", path)
	}
	f, camp, err := limitFileCampaign(path, reg, fs, lf)
	if err != nil {
		return nil, fmt.Errorf("limit: %w", err)
	}
	if len(camp.Tasks) == 0 {
		return nil, fmt.Errorf("limit: %s: no tasks", path)
	}
	t0 := camp.Tasks[0]
	if t0.Trace != nil {
		return nil, fmt.Errorf("limit: %s replays a trace: its arrival times are fixed, there is no rate to search", path)
	}
	sys := &limitSystem{spec: t0.Workload, ia: t0.Interarrival, runCfg: t0.Run.RunConfig, seed: lf.seed}
	if fs.Changed("arrivals") {
		sys.runCfg.Arrivals = lf.arrivals
	}
	if fs.Changed("warmup") {
		sys.runCfg.Warmup = lf.warmup
	}
	if !fs.Changed("seed") && f.Seed != 0 {
		sys.seed = f.Seed
	}
	seen := map[string]bool{}
	for _, t := range camp.Tasks {
		key, _ := json.Marshal([]any{t.Policy, t.Params})
		if !seen[string(key)] {
			seen[string(key)] = true
			sys.targets = append(sys.targets, limitTarget{Policy: t.Policy, Params: t.Params})
		}
	}
	return sys, nil
}

// limitSystemFromFlags is the system of --workload, --policy and --param.
func limitSystemFromFlags(reg *registry.Registry, lf limitFlags) (*limitSystem, error) {
	if lf.policy == "" {
		return nil, errors.New("limit: give --policy (with --workload) or a sweep file")
	}
	spec, err := workload.Named(lf.workload)
	if err != nil {
		return nil, fmt.Errorf("limit: --workload: %w", err)
	}
	if _, err := reg.CheckParams(lf.policy, lf.params); err != nil {
		if _, lerr := reg.Lookup(lf.policy); lerr != nil {
			warn("limit", reg.Warnings())
			return nil, fmt.Errorf("limit: --policy: %w", policyErr(reg, lf.policy, lerr))
		}
		return nil, fmt.Errorf("limit: %w", err)
	}
	return &limitSystem{spec: spec, runCfg: wire.RunConfig{Arrivals: lf.arrivals, Warmup: lf.warmup}, seed: lf.seed,
		targets: []limitTarget{{Policy: lf.policy, Params: map[string]any(lf.params)}}}, nil
}

// limitBracketFlags fills the default bracket into lf — wide around the
// rate at load 1, since no policy sustains a load above 1 — checks it,
// and checks every variant on the workload at its low end: a range that
// depends on the workload (MSFQ's threshold ≤ k−1) is a usage error now,
// not a failed replication in the first round. It returns the rate at
// load 1.
func limitBracketFlags(sys *limitSystem, reg *registry.Registry, lf *limitFlags) (float64, error) {
	unit, err := sys.spec.BuildArrivals(1, sys.ia, nil)
	if err != nil {
		return 0, fmt.Errorf("limit: workload: %w", err)
	}
	rate1 := 1 / unit.Load()
	if lf.lo == 0 {
		lf.lo = 0.05 * rate1
	}
	if lf.hi == 0 {
		lf.hi = 1.5 * rate1
	}
	if lf.lo >= lf.hi {
		return 0, fmt.Errorf("limit: --lo (%v) must be below --hi (%v)", lf.lo, lf.hi)
	}
	for _, r := range []struct {
		flag string
		v    float64
	}{{"lo", lf.lo}, {"hi", lf.hi}} {
		if r.v < sweep.MinMagnitude || r.v > sweep.MaxMagnitude {
			return 0, fmt.Errorf("limit: --%s %v is outside [%g, %g], the range of arrival rates msjfarm accepts", r.flag, r.v, sweep.MinMagnitude, sweep.MaxMagnitude)
		}
	}
	if w, err := sys.spec.BuildArrivals(lf.lo, sys.ia, nil); err == nil {
		for _, t := range sys.targets {
			if err := reg.CheckWorkload(t.Policy, t.Params, w); err != nil {
				return 0, fmt.Errorf("limit: policy %s: %w", t.Policy, err)
			}
		}
	}
	return rate1, nil
}

// limitRunFunc is the search's RunFunc for one target: the workload built
// at λ, replication r seeded with rng.Mix(seed, r) whatever λ (common random
// numbers, so that nearby rates' verdicts agree). A built-in policy runs in
// this process, another in its plugin binary.
func limitRunFunc(reg *registry.Registry, host *pluginhost.Host, t *limitTarget, spec workload.Spec, ia *dist.Spec, cfg wire.RunConfig, seed uint64) (limit.RunFunc, error) {
	entry, err := reg.Lookup(t.Policy)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", t.Policy, err)
	}
	if entry.Source == registry.BuiltIn {
		ps, err := builtin.Lookup(t.Policy)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", t.Policy, err)
		}
		return func(lambda float64, r int) (*sim.Result, error) {
			w, err := spec.BuildArrivals(lambda, ia, nil)
			if err != nil {
				return nil, err
			}
			return ps.Run(w, t.Params, cfg.Config(rng.Mix(seed, uint64(r))))
		}, nil
	}
	if ia != nil {
		return nil, fmt.Errorf("policy %s is served by the plugin %s, which is given a named workload only (no interarrival law)", t.Policy, entry.Path)
	}
	bin, ok := entry.Binary()
	if !ok {
		return nil, fmt.Errorf("policy %s: no plugin binary to run it", t.Policy)
	}
	fmt.Fprintf(stderr, "msjfarm limit: policy %s from plugin %s %s (%s)\n", entry.Policy, entry.Plugin, entry.Version, entry.Path)
	return func(lambda float64, r int) (*sim.Result, error) {
		req := &wire.RunRequest{Policy: entry.Policy, Params: t.Params, Workload: spec, ArrivalRate: lambda,
			Run: wire.Run{Seed: rng.Mix(seed, uint64(r)), RunConfig: cfg}}
		o, err := host.Run(context.Background(), bin, req, pluginhost.RunOptions{})
		if err != nil {
			return nil, err
		}
		return o.Result, nil
	}, nil
}

// printLimit prints one policy's search: the outcome in words, the
// bracket and estimate (also as loads), the confidence, and every point.
func printLimit(w io.Writer, r limitReport, rate1 float64) {
	name := r.Policy
	if len(r.Params) > 0 {
		keys := make([]string, 0, len(r.Params))
		for k := range r.Params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		name += " {"
		for i, k := range keys {
			if i > 0 {
				name += ", "
			}
			name += fmt.Sprintf("%s=%v", k, r.Params[k])
		}
		name += "}"
	}
	l := r.Limit
	switch l.Outcome {
	case limit.Found:
		fmt.Fprintf(w, "%s: λ_max in [%s, %s], estimate %s (load %s), confidence ≥ %s\n", name,
			sig(l.Lo, 5), sig(l.Hi, 5), sig(l.Estimate, 5), sig(l.Estimate/rate1, 4), sig(l.Confidence, 4))
	case limit.NoLimitInRange:
		fmt.Fprintf(w, "%s: no limit in range: stable at the highest rate %s (load %s), so λ_max ≥ %s; confidence ≥ %s\n", name,
			sig(l.Hi, 5), sig(l.Hi/rate1, 4), sig(l.Lo, 5), sig(l.Confidence, 4))
	case limit.UnstableAtLowest:
		fmt.Fprintf(w, "%s: unstable at the lowest rate %s (load %s), so λ_max ≤ %s; confidence ≥ %s\n", name,
			sig(l.Lo, 5), sig(l.Lo/rate1, 4), sig(l.Hi, 5), sig(l.Confidence, 4))
	}
	if m, n := limit.SaturationThroughput(l); n > 0 {
		fmt.Fprintf(w, "  saturation throughput %s (mean departure rate of the %d unstable rates: λ_max itself for FCFS-like policies, whose overloaded throughput is monotone)\n", sig(m, 5), n)
	}
	if l.Truncated {
		fmt.Fprintf(w, "  note: some rate hit max_in_system without a majority and counted as unstable (raise run.max_in_system for a verdict)\n")
	}
	if l.Undecided {
		fmt.Fprintf(w, "  note: some rate was undecided (a class served in episodes longer than the run's batches) and counted as unstable: the upper end may be stable with cycles longer than the run; run longer (more arrivals) to place it\n")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  λ\tload\tverdict\tunstable\ttruncated\tthroughput\tmedian growth t")
	for _, p := range l.Points {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d of %d\t%d\t%s\t%s\n", sig(p.Lambda, 5), sig(p.Lambda/rate1, 4), p.Verdict.Verdict,
			p.Verdict.Unstable, p.Verdict.N, p.Verdict.Truncated, sig(p.Throughput, 5), sig(p.Verdict.MedianGrowthT, 3))
	}
	tw.Flush()
	fmt.Fprintf(w, "  %d replications\n", l.Runs)
}

// limitFileCampaign reads a sweep file for limit: an ordinary sweep is
// expanded as is (its arrival-rate axis is ignored); one with a limit
// block is planned (sweep.PlanLimit) and its first round's probe
// campaigns stand for it, every policy variant at limit.lo, and the
// block's lo, hi and rel_tol apply unless the flags set them.
func limitFileCampaign(path string, reg sweep.Catalog, fs *pflag.FlagSet, lf *limitFlags) (*sweep.File, *sweep.Campaign, error) {
	f, err := sweep.Load(path)
	if err != nil {
		return nil, nil, err
	}
	if f.Limit == nil {
		f, c, _, err := validateSweep(path, reg, "", storage.DefaultMaxTraceSize)
		return f, c, err
	}
	plan, err := sweep.PlanLimit(f, withPolicyNames(reg))
	if err != nil {
		return nil, nil, err
	}
	if !fs.Changed("lo") {
		lf.lo = plan.Lo
	}
	if !fs.Changed("hi") {
		lf.hi = plan.Hi
	}
	if !fs.Changed("rel-tol") && f.Limit.RelTol != 0 {
		// The block's own; without one, the resolution at the run
		// length this search uses (limitRelTol), --arrivals's if given.
		lf.relTol = plan.RelTol
	}
	all := &sweep.Campaign{File: f}
	for _, t := range plan.Targets {
		c, err := sweep.Expand(sweep.ProbeFile(f, t, []float64{plan.Lo}), reg)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		all.Tasks = append(all.Tasks, c.Tasks...)
		all.Points += c.Points
	}
	return f, all, nil
}
