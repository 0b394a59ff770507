package main

import (
	"github.com/spf13/pflag"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/stats"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// paramFlags collects repeated --param name=value flags.
type paramFlags map[string]any

func (p paramFlags) String() string { return fmt.Sprint(map[string]any(p)) }

// Type names the value in the help (pflag.Value).
func (p paramFlags) Type() string { return "name=value" }

func (p paramFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	switch {
	case v == "true" || v == "false":
		p[k] = v == "true"
	default:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			p[k] = f
		} else {
			p[k] = v
		}
	}
	return nil
}

// count parses run lengths written like 1e6.
type count int64

func (c *count) String() string { return strconv.FormatInt(int64(*c), 10) }

// Type names the value in the help (pflag.Value).
func (c *count) Type() string { return "count" }

func (c *count) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > 1<<62 {
		return fmt.Errorf("want a non-negative whole number such as 1e6, got %q", s)
	}
	*c = count(f)
	return nil
}

func defSimulate(fs *pflag.FlagSet) func([]string) int {
	wl := fs.String("workload", "one-or-all", "named workload (see 'msjfarm workloads')")
	pol := fs.String("policy", "fcfs", "policy (see 'msjfarm policies')")
	rate := fs.Float64("rate", 0, "total arrival rate λ (exclusive with --load)")
	load := fs.Float64("load", 0, "offered load ρ; sets λ = ρ / (load per unit rate)")
	seed := fs.Uint64("seed", 1, "seed; replication r uses rng.Mix(seed, r)")
	reps := fs.Int("reps", 10, "independent replications")
	par := fs.Int("parallel", runtime.NumCPU(), "replications run at once")
	asJSON := fs.Bool("json", false, "print every replication's result as JSON lines")
	mser := fs.Bool("mser", false, "MSER-5 truncation instead of the fixed warm-up")
	arrivals, warmup := count(1000000), count(100000)
	fs.Var(&arrivals, "arrivals", "measured arrivals per replication")
	fs.Var(&warmup, "warmup", "discarded warm-up arrivals per replication")
	var maxInSystem count
	fs.Var(&maxInSystem, "max-in-system", "stop a replication when this many jobs are in the system (0: the engine's memory-budget default); its means are then lower bounds")
	swfPath := fs.String("swf", "", "replay this SWF trace instead of a named workload (no --rate, --load or --workload with it)")
	servers := fs.Int("servers", 0, "with --swf: number of servers k (0: the trace header's MaxProcs)")
	timeScale := fs.Float64("time-scale", 1, "with --swf: multiply submit times by this (< 1 raises the load)")
	params := paramFlags{}
	fs.Var(params, "param", "policy parameter name=value (repeatable)")
	pluginPath := fs.String("plugin-path", "", "colon-separated plugin directories searched (before $"+pluginhost.EnvPath+") for a --policy that is not built in")
	readable := fs.StringArray("plugin-readable", nil, readableHelp)
	return func(args []string) int {
		if fs.NArg() > 0 {
			return usagef("simulate: unexpected argument %q", fs.Arg(0))
		}
		sb, code := readingSandbox("simulate", *readable, storeDirs("", ""), secretPlaces(""))
		if code != 0 {
			return code
		}
		// The policy resolves through the registry: a built-in one runs in
		// this process, a plugin's in its binary.
		host := pluginhost.New(pluginhost.Config{MaxConcurrent: max(*par, 1), Sandbox: sb})
		defer host.Close()
		reg := registry.New(context.Background(), registry.Options{Dirs: pluginhost.SearchPath(*pluginPath, nil), Host: host})
		entry, err := reg.Lookup(*pol)
		if err != nil {
			warn("simulate", reg.Warnings())
			return usagef("simulate: --policy: %v", policyErr(reg, *pol, err))
		}
		var ps wire.Entry
		var counters sim.CounterInfos // the policy's description of its counters
		if entry.Source == registry.BuiltIn {
			if ps, err = builtin.Lookup(*pol); err != nil {
				return fail("simulate: --policy: %v", err)
			}
			counters = ps.CounterInfo()
		}
		if code := checkSimulateArgs(*rate, *load, *swfPath != "", *reps, *par, int64(arrivals)); code != 0 {
			return code
		}
		if code := checkTraceFlags(fs, *swfPath != ""); code != 0 {
			return code
		}
		// The engine checks the run's bounds too (warm-up plus arrivals
		// within 2^53, max_in_system at most 2^25), but only once a
		// replication runs, where its error names the sweep file's key
		// and exits 1 as a failed run.
		cfg := wire.RunConfig{Warmup: int64(warmup), Arrivals: int64(arrivals), MaxInSystem: int(maxInSystem)}
		if err := cfg.Validate(); err != nil {
			return usagef("simulate: %s", runKeyAsFlag(err, fs))
		}
		w, err := buildWorkload(*swfPath, *servers, *timeScale, *wl, *rate, *load)
		if err != nil {
			return usagef("simulate: %v", err)
		}
		if m := int(maxInSystem); m > 0 && m < w.Servers {
			return usagef("simulate: --max-in-system: %d is below the workload's %d servers: a replication could not even fill them (0, the default, is %d)", m, w.Servers, sim.DefaultMaxInSystem)
		}
		if *swfPath == "" && (w.ArrivalRate < sweep.MinMagnitude || w.ArrivalRate > sweep.MaxMagnitude) {
			return usagef("simulate: the arrival rate %v is outside [%g, %g], the range of rates msjfarm accepts (docs/sweep.md, Validation)", w.ArrivalRate, sweep.MinMagnitude, sweep.MaxMagnitude)
		}
		// Check the parameters up front so errors surface before anything
		// runs, with the workload when the range depends on it (MSFQ's
		// threshold ≤ k−1): exit 2, a usage error, not a failed run.
		if _, err := reg.CheckParams(entry.Policy, params); err != nil {
			return usagef("simulate: %v", err)
		}
		if err := reg.CheckWorkload(entry.Policy, params, w); err != nil {
			return usagef("simulate: policy %s: %v", entry.Policy, err)
		}
		run := func(r int) (*sim.Result, error) {
			return ps.Run(w, params, sim.Config{
				Seed: rng.Mix(*seed, uint64(r)), Warmup: int64(warmup), Arrivals: int64(arrivals), MSER: *mser, MaxInSystem: int(maxInSystem),
			})
		}
		if entry.Source != registry.BuiltIn {
			if *swfPath != "" {
				return fail("simulate: --swf: the plugin runner does not replay traces (policy %s is served by the plugin %s)", entry.Policy, entry.Path)
			}
			rc := wire.RunConfig{Warmup: int64(warmup), Arrivals: int64(arrivals), MSER: *mser, MaxInSystem: int(maxInSystem)}
			run = pluginReplication(host, entry, params, *wl, w.ArrivalRate, *seed, rc)
			fmt.Fprintf(stderr, "msjfarm simulate: policy %s from plugin %s %s (%s)\n", entry.Policy, entry.Plugin, entry.Version, entry.Path)
			bin, _ := entry.Binary()
			counters = pluginCounterInfo(host, bin, entry.Policy)
		}

		start := time.Now()
		results, errs := runReplications(*reps, *par, run)
		elapsed := time.Since(start)
		for r, err := range errs {
			if err != nil {
				return fail("simulate: replication %d: %v", r, err)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			for _, r := range results {
				if err := enc.Encode(r); err != nil {
					return fail("simulate: %v", err)
				}
			}
			return 0
		}
		printSummary(w, entry.Policy, params, results, counters, elapsed)
		return 0
	}
}

// runKeyAsFlag is a run-configuration error (sim.Config.Validate's
// "run.max_in_system: ...") with the run key replaced by the flag that
// set the value, when fs has that flag and it was given: a user who typed
// --max-in-system was told about run.max_in_system, a sweep file's key.
func runKeyAsFlag(err error, fs *pflag.FlagSet) string {
	msg := err.Error()
	key, rest, ok := strings.Cut(msg, ":")
	name, isRun := strings.CutPrefix(key, "run.")
	if !ok || !isRun {
		return msg
	}
	flag := strings.ReplaceAll(name, "_", "-")
	if f := fs.Lookup(flag); f == nil || !f.Changed {
		return msg
	}
	return "--" + flag + ":" + rest
}

// maxSimulateReps bounds simulate's --reps: every result is held until
// they are pooled, 2.9 KB each for a named workload of two classes
// (measured: 908 MB resident after 3·10⁵ replications), so 10⁶ are about
// 3 GB, and at half a millisecond a replication through a plugin, nine
// minutes.
const maxSimulateReps = 1_000_000 // limit's --reps too

// checkSimulateArgs refuses the flag values simulate cannot run (exit
// 2): a rate or load that is negative or not a number, neither or both
// of them (without an SWF trace, which sets its own arrivals), no
// replications or no parallelism.
func checkSimulateArgs(rate, load float64, trace bool, reps, par int, arrivals int64) int {
	switch {
	case arrivals < 1:
		// The engine refuses it too, but only once a replication runs:
		// exit 1, as if the run had failed.
		return usagef("simulate: --arrivals must be >= 1, got %d", arrivals)
	case rate < 0 || math.IsNaN(rate):
		return usagef("simulate: --rate must be > 0, got %v", rate)
	case load < 0 || math.IsNaN(load):
		return usagef("simulate: --load must be > 0, got %v", load)
	case !trace && (rate > 0) == (load > 0):
		return usagef("simulate: give exactly one of --rate > 0 or --load > 0")
	case reps < 1:
		return usagef("simulate: --reps must be >= 1, got %d", reps)
	case reps > maxSimulateReps:
		return usagef("simulate: --reps %d is more than %d: simulate keeps every replication's result in memory to pool them (about 3 KB each, more with many classes), so 10^8 would have run for hours and then run out of memory with nothing printed; for more, run a sweep file (msjfarm run), which stores each result as it comes", reps, maxSimulateReps)
	case par < 1:
		return usagef("simulate: --parallel must be >= 1, got %d", par)
	}
	return 0
}

// checkTraceFlags refuses the flags that do not apply: --servers and
// --time-scale without --swf, --rate, --load and --workload with it. They
// were ignored without a word: `simulate --rate 1 --servers 16` ran the
// workload's 32 servers, and its user believed k = 16.
func checkTraceFlags(fs *pflag.FlagSet, trace bool) int {
	for _, name := range []string{"servers", "time-scale"} {
		if !trace && fs.Changed(name) {
			return usagef("simulate: --%s applies to a replayed trace (--swf); a named workload (--workload) has its own servers and arrival process", name)
		}
	}
	for _, name := range []string{"rate", "load", "workload"} {
		if trace && fs.Changed(name) {
			return usagef("simulate: --%s does not apply to --swf: a replayed trace's jobs and arrivals are the trace's (--time-scale rescales its arrival times, --servers sets k)", name)
		}
	}
	// A negative k was taken as 0 (the trace's MaxProcs) without a word.
	if k, _ := fs.GetInt("servers"); k < 0 {
		return usagef("simulate: --servers %d: must be at least 1 (or 0: the trace header's MaxProcs)", k)
	}
	return 0
}

// pluginReplication runs replication r of a policy served by a plugin
// binary: the request names the workload by name (the plugin builds it)
// at the given rate, with replication r's seed.
func pluginReplication(host *pluginhost.Host, entry registry.Entry, params paramFlags, wl string, rate float64, seed uint64, rc wire.RunConfig) func(int) (*sim.Result, error) {
	spec, _ := workload.Named(wl)
	bin, _ := entry.Binary()
	return func(r int) (*sim.Result, error) {
		req := &wire.RunRequest{Policy: entry.Policy, Params: params, Workload: spec, ArrivalRate: rate,
			Run: wire.Run{Seed: rng.Mix(seed, uint64(r)), RunConfig: rc}}
		out, err := host.Run(context.Background(), bin, req, pluginhost.RunOptions{})
		if err != nil {
			return nil, err
		}
		return out.Result, nil
	}
}

// runReplications runs replications 0..reps-1, par at a time, and
// returns each one's result and error by index.
func runReplications(reps, par int, run func(int) (*sim.Result, error)) ([]*sim.Result, []error) {
	results := make([]*sim.Result, reps)
	errs := make([]error, reps)
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for r := 0; r < reps; r++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(r int) {
			defer func() { <-sem; wg.Done() }()
			results[r], errs[r] = run(r)
		}(r)
	}
	wg.Wait()
	return results, errs
}

// buildWorkload makes the simulated workload: a replayed SWF trace, or a
// named workload at the given rate (or at the rate giving the given load).
func buildWorkload(swfPath string, servers int, timeScale float64, name string, rate, load float64) (*sim.Workload, error) {
	if swfPath != "" {
		tr, err := swf.ReadFile(swfPath, servers)
		if err != nil {
			// Not quoted, as a sweep's trace.file is not: a file of
			// secrets given by mistake was printed in part.
			if _, parse := errors.AsType[*swf.ParseError](err); parse {
				return nil, fmt.Errorf("--swf %s is not an SWF trace (%s)", swfPath, sweep.SWFReason(err))
			}
			return nil, fmt.Errorf("--swf: %w", err)
		}
		return workload.FromTrace(filepath.Base(swfPath), tr, timeScale)
	}
	spec, err := workload.Named(name)
	if err != nil {
		return nil, fmt.Errorf("--workload: %w", err)
	}
	if load > 0 {
		unit, err := spec.Build(1)
		if err != nil {
			return nil, err
		}
		rate = load / unit.Load()
	}
	return spec.Build(rate)
}

func printSummary(w *sim.Workload, policy string, params paramFlags, rs []*sim.Result, counters sim.CounterInfos, elapsed time.Duration) {
	var events uint64
	for _, r := range rs {
		events += r.Events
	}
	v, _ := sim.Pool(rs) // rs is non-empty and has no nil result
	fmt.Printf("workload %s: k=%d, %d classes, λ=%.6g, load ρ=%.4f\n", w.Name, w.Servers, len(w.Classes), w.ArrivalRate, w.Load())
	fmt.Printf("policy %s %v; %d replications × %d arrivals (warm-up %d); %.3g events in %.2fs (%.3g events/s over all cores)\n",
		policy, map[string]any(params), len(rs), rs[0].Arrivals, rs[0].Warmup, float64(events), elapsed.Seconds(), float64(events)/elapsed.Seconds())
	printVerdict(v, rs)
	printConvergence(rs)
	if v.LowerBound {
		fmt.Printf("WARNING: measured jobs were still in the system when some replications stopped: per-job means are lower bounds (≥), without a confidence interval\n")
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric\tmean\t±95% CI\t")
	// bounded rows print a lower bound as one: ≥ the mean over the
	// replications, and no CI (the replications' values are not estimates
	// of one quantity).
	boundedRow := func(name string, bound func(*sim.Result) bool, f func(*sim.Result) float64) {
		xs := make([]float64, len(rs))
		lb := false
		for i, r := range rs {
			xs[i] = f(r)
			lb = lb || bound(r)
		}
		s := stats.MeanCI(xs, 0.95)
		if lb {
			fmt.Fprintf(tw, "%s\t≥ %.6g\t-\t\n", name, s.Mean)
			return
		}
		fmt.Fprintf(tw, "%s\t%.6g\t%.3g\t\n", name, s.Mean, s.HalfWidth)
	}
	row := func(name string, f func(*sim.Result) float64) {
		boundedRow(name, func(*sim.Result) bool { return false }, f)
	}
	overallBound := func(r *sim.Result) bool { return r.LowerBound }
	boundedRow("mean response time", overallBound, func(r *sim.Result) float64 { return r.Overall.MeanResponse })
	boundedRow("weighted mean response time", overallBound, func(r *sim.Result) float64 { return r.WeightedMeanResponse })
	boundedRow("mean waiting time", overallBound, func(r *sim.Result) float64 { return r.Overall.MeanWait })
	row("P(wait > 0)", func(r *sim.Result) float64 { return r.Overall.PWait })
	row("mean jobs in system", func(r *sim.Result) float64 { return r.MeanInSystem })
	row("mean jobs in queue", func(r *sim.Result) float64 { return r.MeanInQueue })
	row("utilisation", func(r *sim.Result) float64 { return r.Utilization })
	row("throughput", func(r *sim.Result) float64 { return r.Throughput })
	row("Jain's fairness index", func(r *sim.Result) float64 { return r.Jain })
	for i, c := range w.Classes {
		i := i
		boundedRow(fmt.Sprintf("E[T] class %s (need %d)", c.Name, c.Need), func(r *sim.Result) bool { return r.Classes[i].LowerBound },
			func(r *sim.Result) float64 { return r.Classes[i].MeanResponse })
	}
	names := map[string]bool{}
	for _, r := range rs {
		for _, c := range r.Counters {
			names[c.Name] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		row(counterRow(counters, k), func(r *sim.Result) float64 {
			if v, ok := r.Counter(k); ok {
				return v
			}
			return math.NaN()
		})
	}
	tw.Flush()
}

// pluginCounterInfo is the plugin policy's description of its counters
// (nil if it has none or the plugin does not answer: the run reports that).
func pluginCounterInfo(host *pluginhost.Host, bin pluginhost.Binary, policy string) sim.CounterInfos {
	in, err := host.Info(context.Background(), bin)
	if err != nil {
		return nil
	}
	pi, _ := in.Policy(policy)
	if pi == nil {
		return nil
	}
	return pi.CounterInfo
}

// counterRow names counter k in the table: the policy's label and unit,
// or "counter <name>" for one it does not describe.
func counterRow(counters sim.CounterInfos, k string) string {
	if d, ok := counters.Lookup(k); ok {
		return d.AxisLabel()
	}
	return "counter " + k
}

// printVerdict prints the replications' stability verdict when it is not
// a plain "stable". The pooled verdict (sim.Pool) decides, as in
// summary.csv; every flagged replication is still reported so a minority
// is not hidden.
func printVerdict(v sim.PointVerdict, rs []*sim.Result) {
	switch {
	case v.Verdict == sim.VerdictUnstable && v.Test != sim.TestMajority:
		d, _ := v.StrongestDeficit()
		fmt.Printf("WARNING: UNSTABLE: the pooled work deficit (%s) fired: %.4g against %.4g; %s delivered %.3g%% ± %.3g%% short of the offer (%d of %d replications flagged on their own): the means below are not steady-state values\n",
			v.Test, v.Statistic, v.Critical, d.Name, 100*d.Mean, 100*d.HalfWidth, v.Unstable, v.N)
	case v.Verdict == sim.VerdictUnstable:
		fmt.Printf("WARNING: UNSTABLE: %d of %d replications flagged unstable (%v): the means below are not steady-state values\n",
			v.Unstable, v.N, firstReasons(rs, func(r *sim.Result) bool { return r.Unstable }))
	case v.Verdict == sim.VerdictUndecided:
		fmt.Printf("WARNING: UNDECIDED: rule %s would call this point unstable (%d of %d replications flagged), but class %s delivered nothing for an eighth of the window or more in %d of them: it is served in episodes longer than the tests' batches, and in a window this short a stable point with such cycles shows what an overload shows; run longer (more --arrivals): the means below are not steady-state values\n",
			v.Overruled, v.Unstable, v.N, v.Episodic, v.EpisodicReps)
	case v.Verdict == sim.VerdictTruncated:
		fmt.Printf("WARNING: TRUNCATED: %d of %d replications hit max_in_system (and %d flagged unstable): no verdict; raise the cap for one\n",
			v.Truncated, v.N, v.Unstable)
	case v.Unstable+v.Truncated > 0:
		fmt.Printf("verdict stable; %d of %d replications flagged (%d unstable %v, %d truncated): a minority, outvoted\n",
			v.Unstable+v.Truncated, v.N, v.Unstable, firstReasons(rs, func(r *sim.Result) bool { return r.Unstable }), v.Truncated)
	}
}

// printConvergence prints whether the replications converged (MSER-5
// point, policy cycles, throughput), when any reported it.
func printConvergence(rs []*sim.Result) {
	cv := sim.PoolConvergence(rs)
	if cv.N == 0 {
		return
	}
	cyc := ""
	if cv.MinCycles >= 0 {
		cyc = fmt.Sprintf(", fewest policy cycles %d (need %d)", cv.MinCycles, sim.MinCycles)
	}
	if cv.Converged {
		fmt.Printf("converged: %d of %d replications not converged; median MSER-5 point at %.3g of the run%s\n", cv.Unconverged, cv.N, cv.MedianMSERFraction, cyc)
		return
	}
	short := ""
	if th := cv.Throughput; th != nil {
		short = fmt.Sprintf("; throughput %.3g%% ± %.3g%% below the arrival rate", 100*th.Mean, 100*th.HalfWidth)
		if th.Fired {
			short += " (significant)"
		}
	}
	episodes := ""
	if cv.Episodes > 0 {
		episodes = fmt.Sprintf(", %d with class %s silent for an eighth of the window (served in episodes as long as the run)", cv.Episodes, cv.SilentClass)
	}
	fmt.Printf("WARNING: NOT CONVERGED: %d of %d replications (%d MSER-5 point beyond half the run, %d too few cycles, %d throughput short%s)%s; median MSER-5 point at %.3g of the run%s: run longer\n",
		cv.Unconverged, cv.N, cv.MSERLate, cv.FewCycles, cv.LowThroughput, episodes, short, cv.MedianMSERFraction, cyc)
}

// firstReasons is the instability reasons of the first replication
// matching flagged.
func firstReasons(rs []*sim.Result, flagged func(*sim.Result) bool) []string {
	for _, r := range rs {
		if flagged(r) && r.Instability != nil {
			return r.Instability.Reasons
		}
	}
	return nil
}

// runPolicies and runWorkloads take no arguments (noArgs refuses them).
func runPolicies([]string) int {
	for _, s := range builtin.All() {
		fmt.Printf("%-24s %s\n", s.Name, s.Doc)
		for _, p := range s.Params() {
			fmt.Printf("    %-20s %-6s default %v  %s\n", p.Name, p.Type, p.Default, p.Doc)
		}
	}
	return 0
}

func runWorkloads([]string) int {
	printWorkloads(os.Stdout)
	return 0
}

// printWorkloads lists the named workloads in aligned columns (a
// tabwriter: the longest name, killsmart-one-or-all-bpareto, overflowed
// the fixed width the columns had).
func printWorkloads(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range workload.Names() {
		s, _ := workload.Named(n)
		fmt.Fprintf(tw, "%s\tk=%d\t%d classes\t(%s)\n", n, s.Servers, len(s.Classes), s.Source)
	}
	tw.Flush()
}
