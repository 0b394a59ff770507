package main

import (
	"github.com/msjfarm/msjfarm/internal/redact"
	"github.com/msjfarm/msjfarm/internal/scratch"

	"github.com/spf13/pflag"

	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// exitOnInterrupt makes the first interrupt (ctx's end) exit at once
// (interruptStatus: 130 for SIGINT, 143 for SIGTERM)
// until creating is called, which the command calls before it creates
// anything (a store, a NATS connection, a campaign), and again as it
// returns (a test calls commands in one process, and a guard left behind
// by one that failed before creating anything took a later test's
// interrupt for its own). Reading, planning
// and checking a sweep — and a dry run — create nothing and did not look
// at the context: a sweep of 10^5 unknown keys or of 9·10^6 points held
// them for minutes while Ctrl-C and SIGTERM did nothing, and then they
// exited 2 or 1, not 130 (or 143).
//
// It listens for the signals itself: ctx also ends when the command
// returns (its stop), which is no interrupt.
func exitOnInterrupt(cmd string) (creating func()) {
	var mu sync.Mutex
	started := false
	stop := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sigs)
		select {
		case sig := <-sigs:
			mu.Lock() // held for good: creating never returns after this
			if started {
				mu.Unlock()
				return
			}
			fmt.Fprintf(stderr, "msjfarm %s: interrupted; nothing was created\n", cmd)
			scratch.Close()
			os.Exit(interruptStatus(sig))
		case <-stop:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			started = true
			mu.Unlock()
			close(stop)
		})
	}
}

// validateSweep loads and expands a sweep under its profile named profile
// ("" means $MSJFARM_PROFILE, if set), checking every policy and its
// parameters against cat (the policy registry: built-ins and plugins),
// printing warnings; nothing is written. A trace the sweep replays is read
// here, on the submitting machine only, within traceLimit bytes, and
// pinned by content (sweep.ReadTraceFile); its bytes are returned for
// upload (local.UploadTrace).
//
// Its errors are sweep.Errors: "file:line:col: key.path: what is wrong",
// with the nearest names for a misspelt one.
func validateSweep(path string, cat sweep.Catalog, profile string, traceLimit int64) (*sweep.File, *sweep.Campaign, []byte, error) {
	f, c, trace, err := planSweep(path, nil, cat, profile, traceLimit, nil, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := c.Materialize(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, c, trace, nil
}

func printWarnings(c *sweep.Campaign) {
	for _, w := range c.Warnings {
		errorf("warning: %s", w)
	}
}

// listedCatalog is a policy catalogue that also lists its policies
// (sweep.PolicyLister), so that a misspelt policy gets a "did you mean".
type listedCatalog struct {
	sweep.Catalog
	names []string
}

func (c listedCatalog) PolicyNames() []string { return c.names }

// withPolicyNames adds the policy names to the registry's catalogue: the
// built-in families' and those of the plugin binaries it found.
func withPolicyNames(cat sweep.Catalog) sweep.Catalog {
	if _, ok := cat.(sweep.PolicyLister); ok {
		return cat
	}
	names := builtin.Names()
	if r, ok := cat.(*registry.Registry); ok && r != nil {
		for _, in := range r.Binaries {
			for _, p := range in.Policies {
				names = append(names, strings.ToLower(p.Name))
			}
		}
	}
	lc := listedCatalog{cat, names}
	if wc, ok := cat.(sweep.WorkloadChecker); ok {
		return listedChecker{lc, wc}
	}
	return lc
}

// policyErr adds the nearest policy names to a registry's "unknown
// policy" error (--policy of simulate and limit).
func policyErr(reg *registry.Registry, name string, err error) error {
	l := withPolicyNames(reg).(sweep.PolicyLister)
	if sug := sweep.Suggest(name, l.PolicyNames()); len(sug) > 0 && strings.Contains(err.Error(), "unknown policy") {
		return fmt.Errorf("unknown policy %q (did you mean %s?; msjfarm policies lists them all)", name, sweep.QuoteOr(sug))
	}
	return err
}

// listedChecker is a listedCatalog whose catalogue also tries policy
// variants on a workload (sweep.WorkloadChecker), which it keeps doing.
type listedChecker struct {
	listedCatalog
	wc sweep.WorkloadChecker
}

func (c listedChecker) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	return c.wc.CheckWorkload(policy, params, w)
}

// CheckSpec keeps the catalogue's sweep.SpecChecker (the registry's plugin
// trials), or tries the built workload where it has none.
func (c listedChecker) CheckSpec(policy string, params map[string]any, spec workload.Spec, rate float64, ia *dist.Spec, w *sim.Workload) error {
	if sc, ok := c.wc.(sweep.SpecChecker); ok {
		return sc.CheckSpec(policy, params, spec, rate, ia, w)
	}
	return c.wc.CheckWorkload(policy, params, w)
}

// trialFlags are run's and submit's --plugin-trial and
// --plugin-trial-budget (registry.CheckSpec).
type trialFlags struct {
	on     *bool
	budget *time.Duration
}

func trialFlag(fs *pflag.FlagSet) trialFlags {
	return trialFlags{
		on:     fs.Bool("plugin-trial", true, "try each third-party plugin policy for 200 arrivals on each system of the sweep, in its sandboxed binary, and refuse the sweep if it fails (false: check its parameters against its schema only; env MSJFARM_PLUGIN_TRIAL)"),
		budget: fs.Duration("plugin-trial-budget", registry.DefaultTrialBudget, "the time all of a sweep's plugin trials may take; past it the rest are checked against the schema only, with a warning (env MSJFARM_PLUGIN_TRIAL_BUDGET)"),
	}
}

// apply gives reg the trials the flags say.
func (t trialFlags) apply(reg *registry.Registry) (*registry.Registry, error) {
	if !*t.on {
		return reg.WithoutTrials(), nil
	}
	if *t.budget <= 0 {
		return nil, fmt.Errorf("--plugin-trial-budget must be > 0 (to try nothing, --plugin-trial=false), got %s", *t.budget)
	}
	return reg.WithTrialBudget(*t.budget), nil
}

// traceSizeFlag adds --max-trace-size: the limit on a replayed trace's
// size, read by submit and run from the submitter's disk and by a worker
// from storage (env MSJFARM_MAX_TRACE_SIZE).
func traceSizeFlag(fs *pflag.FlagSet) *string {
	def := os.Getenv("MSJFARM_MAX_TRACE_SIZE")
	if def == "" {
		def = "512MiB"
	}
	return fs.String("max-trace-size", def, "largest SWF trace accepted, e.g. 512MiB, 2GiB or a number of bytes (env MSJFARM_MAX_TRACE_SIZE)")
}

// parseSize reads a byte count: a whole number with an optional unit
// B, KiB, MiB, GiB, TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000).
func parseSize(flag, s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult := map[string]int64{"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}[strings.ToLower(unit)]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 || n < 1 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--%s: %q is not a size (a whole number of bytes >= 1, optionally with KiB, MiB, GiB, kB, MB or GB)", flag, s)
	}
	return n * mult, nil
}

// coordinatorGoneWait is how long submit --wait waits for a coordinator
// that stopped answering: longer than a standby's takeover (the lease's
// time to live, 15 s by default) and a restart.
const coordinatorGoneWait = 2 * time.Minute

// statusTimeout bounds one status request of submit --wait.
const statusTimeout = 15 * time.Second

// submitWait is how long a submission waits for a coordinator to answer.
const submitWait = 5 * time.Minute

// waitingForCoordinator says, as cmd's, that no coordinator answers yet
// and that cmd waits submitWait for one.
func waitingForCoordinator(cmd string) func() {
	return func() {
		fmt.Fprintf(stderr, "msjfarm %s: no coordinator answers on this NATS system yet (is `msjfarm coordinator` running?): waiting up to %d minutes (Ctrl-C stops)\n", cmd, int(submitWait/time.Minute))
	}
}

// positiveDurations refuses a duration flag that is zero or negative,
// naming it: the coordinator took --verify-wait 0 or -1s as its default
// (10 min) and --reconcile 0s, --lease-ttl 0s without a word.
func positiveDurations(flags map[string]time.Duration) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if d := flags[name]; d <= 0 {
			return fmt.Errorf("--%s must be > 0, got %v", name, d)
		}
	}
	return nil
}

// profileUsage documents --profile of run and submit.
const profileUsage = "overlay the sweep file's profile of this name, e.g. paper (env MSJFARM_PROFILE; docs/sweep.md)"

func defCoordinator(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, true, "./msjfarm-data")
	listen := ff.fs.String("listen", "0.0.0.0:4222", "without --nats-url: address of the embedded NATS server (clients authenticate with --nats-token or --nats-user/--nats-password; --nats-cert/--nats-key are its TLS certificate, and --nats-ca makes it require client certificates)")
	storeDir := ff.fs.String("store-dir", "./msjfarm-nats", "without --nats-url: JetStream store directory of the embedded server")
	ackWait := ff.fs.Duration("ack-wait", protocol.DefaultAckWait, "time a worker may hold a task without a heartbeat before it is redelivered")
	maxDeliver := ff.fs.Int("max-deliver", protocol.DefaultMaxDeliver, "deliveries of a task before it is recorded as failed")
	reconcile := ff.fs.Duration("reconcile", 30*time.Second, "how often running campaigns are checked against storage and the stream")
	verifyWait := ff.fs.Duration("verify-wait", coordinator.DefaultVerifyWait, "spot verification: how long after a campaign's last task to wait for another worker to re-run a sampled task before reporting it unverified (must exceed the longest replication)")
	standby := ff.fs.Bool("coordinator-standby", true, "when another coordinator holds the lease on this NATS system, stand by and take over when it stops (false: exit with an error)")
	leaseTTL := ff.fs.Duration("lease-ttl", coordinator.DefaultLeaseTTL, "coordinator lease time to live: a standby takes over at most this long after the holder was killed")
	verbose := ff.fs.BoolP("v", "v", true, "log to stderr")
	mf := addMonitorFlags(ff.fs, "http", "serve the live campaign page, /metrics, /healthz and /readyz on this address (e.g. :8080)")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if err := checkDelivery(*maxDeliver, *ackWait); err != nil {
			return usagef("coordinator: %v", err)
		}
		if err := positiveDurations(map[string]time.Duration{"reconcile": *reconcile, "verify-wait": *verifyWait, "lease-ttl": *leaseTTL}); err != nil {
			return usagef("coordinator: %v", err)
		}
		if *leaseTTL < 100*time.Millisecond {
			return usagef("coordinator: --lease-ttl %v: at least 100ms (NATS keeps a key at least that long)", *leaseTTL)
		}
		if *ff.natsURL != "" && (ff.fs.Changed("listen") || ff.fs.Changed("store-dir")) {
			// Dropped without a word: the Slurm script's coordinator, given
			// -listen, went to a config file's nats-url, and its workers
			// could not find it.
			return usagef("coordinator: --listen and --store-dir set up the embedded NATS server, and --nats-url %s (flag, MSJFARM_NATS_URL or config file) says to use another: give one or the other", redact.URL(*ff.natsURL))
		}
		if err := mf.check(); err != nil {
			return usagef("coordinator: %v", err)
		}
		slogger, err := mf.logger(false)
		if err != nil {
			return fail("coordinator: %v", err)
		}
		ln, err := mf.listen()
		if err != nil {
			return usagef("coordinator: %v", err) // a busy or bad address, as run says it (exit 2)
		}
		if ln != nil {
			defer ln.Close()
		}
		ctx, stop := signalContext()
		defer stop()
		if *ff.natsURL == "" {
			s, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{Listen: *listen, StoreDir: *storeDir,
				User: *ff.user, Password: *ff.password, Token: *ff.token, TLSCert: *ff.tlsCert, TLSKey: *ff.tlsKey, TLSCA: *ff.tlsCA})
			if err != nil {
				return fail("coordinator: %v", err)
			}
			defer func() { s.Shutdown(); s.WaitForShutdown() }()
			*ff.natsURL = url
			fmt.Fprintf(stderr, "msjfarm coordinator: embedded NATS server on %s (store %s)\n", *listen, *storeDir)
			if *ff.user == "" && *ff.token == "" && !strings.HasPrefix(*listen, "127.") && !strings.HasPrefix(*listen, "localhost:") {
				fmt.Fprintf(stderr, "msjfarm coordinator: WARNING: the embedded NATS server accepts anyone who reaches %s: set --nats-token or --nats-user/--nats-password (and --nats-cert/--nats-key)\n", *listen)
			}
		}
		nc, err := ff.conn("msjfarm-coordinator")
		if err != nil {
			return fail("coordinator: %v", err)
		}
		defer nc.Close()
		st, err := ff.store(ctx)
		if err != nil {
			return fail("coordinator: %v", err)
		}
		metrics := monitor.NewMetrics()
		st = metrics.InstrumentStore(st)
		coordinator.LimitMemory()
		co, err := coordinator.New(ctx, coordinator.Options{Conn: nc, Store: st, FindUnknown: true, Reconcile: *reconcile, VerifyWait: *verifyWait,
			Layout: protocol.Layout{AckWait: *ackWait, MaxDeliver: *maxDeliver}, Logf: logf(slogger, *verbose),
			NoStandby: !*standby, LeaseTTL: *leaseTTL})
		if err != nil {
			return fail("coordinator: %v", err)
		}
		if ln != nil {
			srv, err := monitor.New(monitor.Options{Coordinator: co, Conn: nc, Store: st, Metrics: metrics,
				Ready: func() bool {
					select {
					case <-co.Ready():
						return true
					default:
						return false
					}
				}})
			if err != nil {
				return fail("coordinator: %v", err)
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			httpURLLine("coordinator", ln, "live campaign page")
		}
		go func() {
			select {
			case <-co.Ready():
				fmt.Fprintf(stderr, "msjfarm coordinator: ready (NATS %s, storage %s)\n", redact.URL(nc.ConnectedUrl()), st.URL())
			case <-ctx.Done():
			}
		}()
		if err := co.Run(ctx); err != nil {
			return fail("coordinator: %v", err)
		}
		return 0
	}
}

func defWorker(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, true, "./msjfarm-data")
	n := ff.fs.Int("workers", runtime.NumCPU(), "replications run at once")
	name := ff.fs.String("worker-name", "", "worker identity (default <hostname>-<pid>)")
	grace := ff.fs.Duration("grace", 10*time.Second, "on SIGTERM, let running tasks finish for this long, then release them")
	runLog := ff.fs.String("run-log", "", "append one line per task start/finish/failure/release to this file")
	verbose := ff.fs.BoolP("v", "v", false, "log to stderr")
	rf := addRunnerFlags(ff.fs)
	mf := addMonitorFlags(ff.fs, "metrics", "serve /metrics, /healthz and /readyz on this address (e.g. :9090)")
	maxTrace := traceSizeFlag(ff.fs)
	traceCache := ff.fs.String("trace-cache", "", "directory of the traces fetched from storage, named by sha256 (default: the user cache directory's msjfarm/traces)")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() > 0 {
			return usagef("worker: unexpected argument %q", ff.fs.Arg(0))
		}
		if *n < 1 {
			// 0 and -1 were taken: the worker announced "0 slots" and
			// idled for ever.
			return usagef("worker: --workers must be >= 1, got %d", *n)
		}
		if *grace < 0 {
			return usagef("worker: --grace must be >= 0, got %v", *grace)
		}
		if *name != "" {
			if err := worker.CheckName(*name); err != nil {
				return usagef("worker: --worker-name: %v", err)
			}
		}
		traceLimit, err := parseSize("max-trace-size", *maxTrace)
		if err != nil {
			return usagef("worker: %v", err)
		}
		if code := rf.checkStall("worker"); code != 0 {
			return code
		}
		slogger, err := mf.logger(*verbose)
		if err != nil {
			return fail("worker: %v", err)
		}
		// The plugin flags before any server is reached: a mistake in them
		// was found only once NATS and the store answered.
		rf.store, rf.configFile = *ff.storage, ff.configFile()
		if code := rf.applySandbox("worker", false); code != 0 {
			return code
		}
		ln, err := mf.listen()
		if err != nil {
			return usagef("worker: %v", err) // a busy or bad address, as run says it (exit 2)
		}
		if ln != nil {
			defer ln.Close()
		}
		reserveFarmProc(*n)
		ctx, stop := signalContext()
		defer stop()
		nc, err := ff.conn("msjfarm-worker")
		if err != nil {
			return fail("worker: %v", err)
		}
		defer nc.Close()
		st, err := ff.store(ctx)
		if err != nil {
			return fail("worker: %v", err)
		}
		metrics := monitor.NewMetrics()
		st = metrics.InstrumentStore(st)
		ch, err := worker.ForWorker(ctx, rf.config(*n, logf(slogger, *verbose)), st)
		if err != nil {
			return fail("worker: %v", err)
		}
		warn("worker", ch.Warnings)
		runner, how := ch.Runner, ch.Desc
		if c, ok := runner.(io.Closer); ok {
			defer c.Close() // the worker closes it too; again is harmless
		}
		pluginStarts(metrics, runner)
		o := worker.Options{Conn: nc, Store: st, Concurrency: *n, Name: *name, Grace: *grace, Logf: logf(slogger, *verbose), Runner: runner,
			Log: slogger, Observe: metrics.ObserveTask, TraceCache: *traceCache, MaxTraceSize: traceLimit}
		if *runLog != "" {
			f, err := os.OpenFile(*runLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fail("worker: %v", err)
			}
			defer f.Close()
			o.RunLog = f
		}
		w, err := worker.New(ctx, o)
		if err != nil {
			if errors.As(context.Cause(ctx), new(signalled)) {
				// A service's stop, before it took a task: as after a
				// drain, exit 0 (it exited 1 with "context canceled").
				fmt.Fprintf(stderr, "msjfarm worker: stopped (%v) before the coordinator created the JetStream layout; no task was taken\n", context.Cause(ctx))
				return 0
			}
			return fail("worker: %v", err)
		}
		fmt.Fprintf(stderr, "msjfarm worker %s: %d slots, NATS %s, storage %s, runner %s\n", w.Name(), *n, redact.URL(nc.ConnectedUrl()), st.URL(), how)
		if ln != nil {
			srv, err := monitor.New(monitor.Options{Conn: nc, Store: st, Metrics: metrics})
			if err != nil {
				return fail("worker: %v", err)
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			httpURLLine("worker", ln, "metrics")
		}
		if err := w.Run(ctx); err != nil {
			return fail("worker: %v", err)
		}
		fmt.Fprintf(stderr, "msjfarm worker %s: stopped (%d done, %d failed, %d released)\n", w.Name(),
			w.Stats.Done.Load(), w.Stats.Failed.Load(), w.Stats.Released.Load())
		return 0
	}
}

func defSubmit(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, true, "")
	retry := ff.fs.Bool("retry-failed", false, "run the failed tasks of a resubmitted campaign again")
	wait := ff.fs.Bool("wait", false, "show progress until the campaign is done")
	pin := ff.fs.Bool("pin-plugins", false, "also pin the built-in families' plugin binaries found on --plugin-path / $"+pluginhost.EnvPath+" (third-party plugins are always pinned), so that workers fetch and run exactly these")
	pluginPath := ff.fs.String("plugin-path", "", "colon-separated plugin directories searched first for the sweep's policies")
	readable := ff.fs.StringArray("plugin-readable", nil, readableHelp)
	dry := ff.fs.Bool("dry-run", false, "print the plan (points, tasks, already in --storage, to run, estimated CPU and wall time on --workers) and submit nothing")
	dryWorkers := ff.fs.Int("workers", runtime.NumCPU(), "with --dry-run: the farm's replication slots the wall time is estimated for")
	profile := ff.fs.String("profile", "", profileUsage)
	maxTrace := traceSizeFlag(ff.fs)
	lim := addSweepLimitFlags(ff.fs)
	verify := addVerifyFlag(ff.fs)
	trial := trialFlag(ff.fs)
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 1 {
			return usagef("submit: want one sweep file")
		}
		// Before the sweep is read: it was a failure (exit 1) found after
		// the whole plan, where run's is a usage error.
		if *dry && *dryWorkers < 1 {
			return usagef("submit: --workers must be >= 1, got %d", *dryWorkers)
		}
		traceLimit, err := parseSize("max-trace-size", *maxTrace)
		if err != nil {
			return usagef("submit: %v", err)
		}
		// Submit plans, uploads and watches a campaign: garbage of
		// generated tasks and decoded messages over a small live heap, the
		// reader's pace (the dry run's calibration goes back to the
		// simulation pace).
		paceReader()
		ctx, stop := signalContext()
		defer stop()
		creating := exitOnInterrupt("submit")
		defer creating() // the guard ends with the command, whatever it created
		sb, code := readingSandbox("submit", *readable, storeDirs(*ff.storage, ""), secretPlaces(ff.configFile()))
		if code != 0 {
			return code
		}
		h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1, Sandbox: sb})
		defer h.Close()
		reg, err := trial.apply(registry.New(ctx, registry.Options{Dirs: pluginhost.SearchPath(*pluginPath, nil), Host: h}))
		if err != nil {
			return usagef("submit: %v", err)
		}
		warn("submit", reg.Warnings())
		// Read once, under --max-spec-size, its errors reported: it was
		// read once more with the default limit and the error dropped, to
		// see whether it is a limit search (49 s and 970 MB before a
		// lowered --max-spec-size refused a 20 MB file).
		lf, err := lim.load(ff.fs.Arg(0), *profile)
		if err != nil {
			errorf("submit: %v", err)
			return 2
		}
		noteOverrides("submit", ff.fs.Arg(0), lf)
		if code, ok := submitLimit(ctx, ff, reg, ff.fs.Arg(0), lf, *pin, *retry, *wait, *dry, creating); ok {
			return code
		}
		// Planned within the limits, tasks not generated (the dry run
		// generates them one at a time, -wait only to name failed tasks
		// at the end).
		f, camp, trace, err := planSweep(ff.fs.Arg(0), lf, reg, *profile, traceLimit, lim, storedTrace(ctx, ff, traceLimit))
		if err == nil {
			err = applyVerify(ff.fs, *verify, f)
		}
		if err != nil {
			errorf("submit: %v", err)
			return 2
		}
		if *dry {
			return dryRun("submit", ff, camp, *dryWorkers, &worker.PluginRunner{Host: h, Registry: reg})
		}
		creating()
		// No fraction given (a verify of 0 in the file reads as none):
		// a campaign submitted before with one keeps it.
		req := protocol.SubmitRequest{Spec: f, RetryFailed: *retry, Verify: f.Verify, KeepVerify: !ff.fs.Changed("verify") && f.Verify == 0}
		// Storage is needed to pin plugin binaries (PinForSubmit says so
		// when one must be pinned and there is none), to upload a trace
		// and to pass a spec too large for a NATS message.
		conn, closeConn := ff.lazyConn("msjfarm-submit")
		defer closeConn()
		var st storage.Store
		made := "" // the store's directory, when this submission made it
		if *ff.storage != "" {
			st, req.Store, made, err = submitStore(ctx, ff, conn)
			if errors.As(err, new(notFarmStore)) {
				return usagef("submit: %v", err)
			}
			if err != nil {
				return fail("submit: %v", err)
			}
		}
		nc, err := conn()
		if err != nil {
			return fail("submit: %v", err)
		}
		if code := stageSubmission(ctx, nc, st, ff.fs.Arg(0), trace, camp, reg, *pin, &req); code != 0 {
			return code
		}
		rctx, cancel := context.WithTimeout(ctx, submitWait)
		defer cancel()
		var rep protocol.SubmitReply
		if err := protocol.RequestRetry(rctx, nc, protocol.APISubmit, req, &rep, waitingForCoordinator("submit")); err != nil {
			if st != nil {
				err = refusedStore(ctx, nc, err, *ff.storage, req.Store, made)
			}
			return fail("submit: %v", err)
		}
		fmt.Printf("campaign %s (%s): %d tasks in %d points; %d published, %d already queued, %d already done (%d reused from other campaigns)\n",
			rep.Campaign, rep.Name, rep.Tasks, rep.Points, rep.Published, rep.Queued, rep.AlreadyDone, rep.Reused)
		if req.KeepVerify && rep.Verify > 0 {
			fmt.Printf("campaign %s: spot verification of %g of its tasks kept from its earlier submission (--verify 0 turns it off)\n", rep.Campaign, rep.Verify)
		}
		if rep.Publishing > 0 {
			fmt.Printf("campaign %s: %d tasks still being published by the coordinator\n", rep.Campaign, rep.Publishing)
		}
		if !*wait {
			return 0
		}
		return waitCampaign(ctx, nc, rep, camp)
	}
}

// stageSubmission puts in storage what the submission refers to rather
// than carries: a spec too large for a NATS message, the trace, and the
// plugin pins (which it adds to req). A non-zero code is submit's exit
// status.
func stageSubmission(ctx context.Context, nc *nats.Conn, st storage.Store, path string, trace []byte, camp *sweep.Campaign, reg *registry.Registry, pin bool, req *protocol.SubmitRequest) int {
	f := req.Spec
	if key, err := specByReference(ctx, nc, st, path, req); err != nil {
		if errors.As(err, new(usageError)) {
			return usagef("submit: %v", err)
		}
		return fail("submit: %v", err)
	} else if key != "" {
		fmt.Fprintf(stderr, "msjfarm submit: spec stored at %s in %s\n", key, st.URL())
	}
	if f.Trace != nil {
		if st == nil {
			return usagef("submit: %s replays a trace: give the farm's --storage (or MSJFARM_STORAGE), where the trace is uploaded for the workers", path)
		}
		desc, err := local.UploadTrace(ctx, st, f, trace)
		if err != nil {
			return fail("submit: %v", err)
		}
		fmt.Fprintf(stderr, "msjfarm submit: %s\n", desc)
	}
	pins, desc, warnings, err := worker.PinForSubmit(ctx, st, camp, reg, pin)
	warn("submit", warnings)
	if err != nil {
		return fail("submit: pinning plugins: %v", err)
	}
	if pins != nil {
		req.Pins = pins.Policies
		fmt.Fprintf(stderr, "msjfarm submit: %s in %s\n", desc, st.URL())
	}
	return 0
}

// waitCampaign (submit --wait) shows the campaign's progress every
// second until it is no longer running: exit status 0 when it is done
// with no failed task, 1 otherwise, 130 (SIGINT) or 143 (SIGTERM) when
// interrupted.
func waitCampaign(ctx context.Context, nc *nats.Conn, rep protocol.SubmitReply, camp *sweep.Campaign) int {
	p := newProgress(os.Stderr, rep.AlreadyDone).describe(camp)
	var gone time.Time // since when no coordinator has answered
	for {
		var s protocol.Status
		// Each request bounded: a coordinator that stopped answering
		// without closing its connection (stopped, partitioned) held a
		// request with no deadline for ever.
		rctx, cancel := context.WithTimeout(ctx, statusTimeout)
		err := protocol.Request(rctx, nc, protocol.APIStatus, protocol.StatusRequest{Campaign: rep.Campaign}, &s)
		cancel()
		switch {
		case ctx.Err() != nil:
			// Interrupted during the request, which failed for it:
			// that exited 1.
			return interruptCode(ctx)
		case (errors.Is(err, protocol.ErrNoCoordinator) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil:
			// A coordinator restarting (or a standby taking over) answers
			// again within its lease: submit --wait exited 1 at the first
			// status no one answered.
			if gone.IsZero() {
				gone = time.Now()
				fmt.Fprintf(stderr, "msjfarm submit: no coordinator answers (restarting?): waiting up to %s for one\n", coordinatorGoneWait)
			} else if time.Since(gone) > coordinatorGoneWait {
				return fail("submit: %v for %s; the campaign goes on when one runs (msjfarm status %s)", err, coordinatorGoneWait, rep.Campaign)
			}
			select {
			case <-ctx.Done():
				return interruptCode(ctx)
			case <-time.After(time.Second):
			}
			continue
		case err != nil:
			return fail("submit: %v", err)
		}
		if !gone.IsZero() {
			fmt.Fprintf(stderr, "msjfarm submit: a coordinator answers again\n")
			gone = time.Time{}
		}
		p.update(&s)
		if s.State != protocol.CampaignRunning {
			p.finish(&s)
			if s.Failed > 0 || s.State != protocol.CampaignDone {
				return 1
			}
			return 0
		}
		select {
		case <-ctx.Done():
			return interruptCode(ctx)
		case <-time.After(time.Second):
		}
	}
}

func defStatus(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, true, "./msjfarm-data")
	asJSON := ff.fs.Bool("json", false, "print JSON")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() > 1 {
			return usagef("status: want at most one campaign: id, name or id prefix")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := farmOrStorageStatus(ctx, ff)
		if err != nil {
			return fail("status: %v", err)
		}
		if *asJSON {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			_ = enc.Encode(list)
		} else if len(list) > 0 {
			printStatus(os.Stdout, list)
		}
		if len(list) == 0 {
			where := "on the farm at " + redact.URL(*ff.natsURL)
			if *ff.natsURL == "" {
				where = "in " + *ff.storage
			}
			return fail("status: no campaigns %s", where)
		}
		return 0
	}
}

// farmOrStorageStatus asks the farm at --nats-url, or without one reads
// the campaigns in --storage (storageStatus).
func farmOrStorageStatus(ctx context.Context, ff *farmFlags) ([]protocol.Status, error) {
	arg := ff.fs.Arg(0)
	if *ff.natsURL == "" {
		// No farm given: the campaigns in storage, live from the server
		// of a `msjfarm run` that is running one.
		st, err := ff.existingStore(ctx)
		if errors.Is(err, errNoStore) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w (give --nats-url for a farm, or --storage for the campaigns of msjfarm run)", err)
		}
		return storageStatus(ctx, st, arg)
	}
	nc, err := ff.conn("msjfarm-status")
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	if arg == "" {
		var l protocol.ListReply
		if err := protocol.Request(ctx, nc, protocol.APIList, struct{}{}, &l); err != nil {
			return nil, err
		}
		return l.Campaigns, nil
	}
	id, err := resolveOnFarm(ctx, nc, arg, archive.Resolve)
	if err != nil {
		return nil, err
	}
	var s protocol.Status
	if err := protocol.Request(ctx, nc, protocol.APIStatus, protocol.StatusRequest{Campaign: id}, &s); err != nil {
		return nil, err
	}
	return []protocol.Status{s}, nil
}

// shownTime is how the tables print a time: the machine's local time with
// its zone, which a farm's machines need not share (a worker's TZ read
// four hours off with no zone to tell).
const shownTime = "2006-01-02 15:04:05 MST"

func printStatus(w io.Writer, list []protocol.Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CAMPAIGN\tNAME\tSTATE\tDONE\tFAILED\tRUNNING\tQUEUED\tTOTAL\tCREATED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Campaign, s.Name, s.State, s.Done, s.Failed,
			s.Running, s.Queued, s.Total, s.Created.Local().Format(shownTime))
	}
	tw.Flush()
	for _, s := range list {
		// Why a running campaign does not move: the table read "running"
		// (a worker of another msjfarm version refusing every task: 0
		// done, 0 running) and only --json said why.
		for _, why := range s.Problems() {
			fmt.Fprintf(w, "  %s: %s\n", s.Campaign, why)
		}
		for _, e := range s.Errors {
			fmt.Fprintf(w, "  failed: %s\n", e)
		}
		printVerify(w, &s)
	}
}

func defCancel(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, true, "./msjfarm-data")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 1 {
			return usagef("cancel: want one campaign: id, name or id prefix")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var nc *nats.Conn
		var err error
		if *ff.natsURL == "" {
			// No farm named: the `msjfarm run` running it, found in the
			// store as status finds it. cancel said "no NATS server" where
			// status showed the run's live progress.
			nc, err = localRunConn(ctx, ff, ff.fs.Arg(0))
		} else {
			nc, err = ff.conn("msjfarm-cancel")
		}
		if err != nil {
			return fail("cancel: %v", err)
		}
		defer nc.Close()
		id, err := resolveOnFarm(ctx, nc, ff.fs.Arg(0), archive.ResolveOne)
		if err != nil {
			return fail("cancel: %v", err)
		}
		var s protocol.Status
		if err := protocol.Request(ctx, nc, protocol.APICancel, protocol.StatusRequest{Campaign: id}, &s); err != nil {
			return fail("cancel: %v", err)
		}
		printStatus(os.Stdout, []protocol.Status{s})
		if s.State != protocol.CampaignCancelled {
			fmt.Fprintf(stderr, "msjfarm cancel: campaign %s is %s: nothing was cancelled\n", id, s.State)
		}
		return 0
	}
}

func defResults(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	raw := ff.fs.Bool("csv", false, "print summary.csv as stored")
	cmp := ff.fs.String("compare", "", "A,B: compare series A with the baseline B, paired over common random numbers (policy names or labels)")
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		var cmpA, cmpB string
		if *cmp != "" {
			var err error
			if cmpA, cmpB, err = parseCompare(*cmp); err != nil {
				fmt.Fprintf(stderr, "msjfarm results: %v\n", err)
				return 2
			}
		}
		if ff.fs.NArg() > 1 {
			return usagef("results: want at most one campaign: id, name or id prefix (none: list the campaigns in storage)")
		}
		switch {
		case ff.fs.NArg() == 0 && (*raw || *cmp != ""):
			// The campaigns were listed, and the flag ignored.
			return usagef("results: --csv and --compare read one campaign: name it (msjfarm results CAMPAIGN --compare A,B)")
		case *raw && *cmp != "":
			return usagef("results: --csv prints the stored summary, --compare a comparison: give one of them")
		}
		// Reading a campaign runs no simulation: the collector's default
		// pace keeps the records of the point being read from piling up
		// as garbage (at the simulation pace the heap grows to five times
		// what is live: 44 MB live, 270 MB resident on 10^5 tasks).
		paceReader()
		// As long as `msjfarm report` may take: the partial summary and
		// --compare read every record of the campaign (a point at a time),
		// 10^5 of them in 12 s of CPU but over 5 minutes on a loaded
		// machine.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		st, err := ff.existingStore(ctx)
		if err != nil {
			return fail("results: %v", err)
		}
		if ff.fs.NArg() == 0 {
			es, err := archive.List(ctx, st)
			if err != nil {
				return fail("results: %v", err)
			}
			if len(es) == 0 {
				return fail("results: no campaigns in %s (msjfarm run SWEEP.yaml stores one there)", st.URL())
			}
			for i := range es {
				es[i].State = storedState(ctx, st, es[i])
			}
			printCampaigns(os.Stdout, es)
			return 0
		}
		id, err := archive.ResolveIn(ctx, st, ff.fs.Arg(0))
		if err != nil {
			return fail("results: %v", err)
		}
		if cmpA != "" {
			return resultsCompare(ctx, st, id, cmpA, cmpB)
		}
		data, err := storedSummary(ctx, st, id)
		partial := false
		if errors.Is(err, storage.ErrNotFound) {
			partial = true
			// Not finished: summarise what is there.
			var warn []string
			data, warn, err = partialSummary(ctx, st, id)
			warnReader("results", warn)
			if err == nil {
				errorf("campaign %s is not finished: summary of the results so far", id)
			}
		}
		if err != nil {
			return fail("results: %v", err)
		}
		defer data.Close()
		if !partial {
			// The stored summary is read, not the records: the manifest's
			// provenance says whether two engine versions were pooled.
			warnReader("results", archive.StoredMixedEngines(ctx, st, id))
		}
		if *raw {
			if _, err := io.Copy(os.Stdout, data); err != nil {
				return fail("results: %v", err)
			}
			return 0
		}
		if err := printSummaryTable(os.Stdout, data); err != nil {
			return fail("results: %v", err)
		}
		if !partial {
			fmt.Printf("\nfull table: %s in %s (msjfarm results --csv %s)\n", storage.SummaryKey(id), st.URL(), id)
		}
		if prec, err := st.Get(ctx, archive.PrecisionKey(id)); err == nil {
			fmt.Printf("precision: %s (%s)\n", precisionLine(prec), archive.PrecisionKey(id))
		}
		return 0
	}
}

// resultsCompare prints the paired comparison of series a with the
// baseline b from the campaign's records.
func resultsCompare(ctx context.Context, st storage.Store, id, a, b string) int {
	cat, err := registry.ForCampaign(ctx, st, id)
	if err != nil {
		return fail("results: %v", err)
	}
	// The campaign is read a point at a time (archive.Reader), never
	// all its records at once.
	r, err := archive.Open(ctx, st, id, cat)
	if err != nil {
		return fail("results: %v", err)
	}
	defer r.Close()
	sum, err := r.Summarize(ctx)
	if err != nil {
		return fail("results: %v", err)
	}
	warnReader("results", r.Warnings)
	pts := sum.Points
	if _, err := aggregate.BaselineLabel(pts, b); err != nil {
		fmt.Fprintf(stderr, "msjfarm results: --compare: %v\n", err)
		return 2
	}
	if err := sum.Compare(ctx, b); err != nil {
		return fail("results: %v", err)
	}
	if err := printComparison(os.Stdout, pts, a); err != nil {
		fmt.Fprintf(stderr, "msjfarm results: %v\n", err)
		return 2
	}
	return 0
}

// partialSummary aggregates the records stored so far (including the
// replications added in precision mode), a point at a time, and returns
// the reader's warnings (results left out: modified after finalisation,
// unreadable, gone, not the campaign's). The summary is written to an
// unlinked temporary file, read back from its start: at 10^5 points it
// is 70 MB, held in a growing buffer it took 128 MB.
func partialSummary(ctx context.Context, st storage.Store, id string) (*os.File, []string, error) {
	cat, err := registry.ForCampaign(ctx, st, id)
	if err != nil {
		return nil, nil, err
	}
	r, err := archive.Open(ctx, st, id, cat)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	sum, err := r.Summarize(ctx)
	if err != nil {
		return nil, r.Warnings, err
	}
	if err := sum.CompareDefault(ctx); err != nil {
		return nil, r.Warnings, err
	}
	f, err := unlinkedTemp()
	if err != nil {
		return nil, r.Warnings, err
	}
	if err := writeRewound(f, func(w io.Writer) error { return aggregate.WriteCSV(w, sum.Points) }); err != nil {
		f.Close()
		return nil, r.Warnings, err
	}
	return f, r.Warnings, nil
}

// storedSummary is the campaign's stored summary.csv, copied to an
// unlinked temporary file (ErrNotFound if it has none): read a row at a
// time from there, never held (70 MB at 10^5 points).
func storedSummary(ctx context.Context, st storage.Store, id string) (*os.File, error) {
	dir, err := scratch.MkdirTemp("msjfarm-summary-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "summary.csv")
	if err := st.GetFile(ctx, storage.SummaryKey(id), path); err != nil {
		return nil, err
	}
	return os.Open(path) // still readable once its directory is removed
}

// unlinkedTemp is an empty temporary file already removed from its
// directory: it goes when it is closed or the process ends.
func unlinkedTemp() (*os.File, error) {
	f, err := scratch.CreateTemp("msjfarm-*.tmp")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// writeRewound writes f through a buffer with write and seeks back to
// its start.
func writeRewound(f *os.File, write func(w io.Writer) error) error {
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// warnReader prints a reader's warnings on stderr, one a line, as
// `msjfarm report` and `msjfarm reproduce` do.
func warnReader(cmd string, warn []string) {
	for _, w := range warn {
		fmt.Fprintf(stderr, "msjfarm %s: warning: %s\n", cmd, w)
	}
}

// printSummaryTable prints the main columns of a summary.csv: the point,
// replications, and mean ± 95% CI half-width of the response-time metrics.
//
// The CSV is read twice a row at a time (the header needs what every row
// says), never parsed whole: at 10^5 points its rows took 100 MB.
func printSummaryTable(w io.Writer, data io.ReadSeeker) error {
	if _, err := data.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("summary.csv: %w", err)
	}
	head, err := csv.NewReader(bufio.NewReader(data)).Read()
	if err == io.EOF {
		return errors.New("summary.csv is empty")
	}
	if err != nil {
		return fmt.Errorf("summary.csv: %w", err)
	}
	t := newSummaryTable(head)
	if err := eachSummaryRow(data, t.scan); err != nil {
		return err
	}
	var cols alignedColumns
	cols.fit(t.header())
	if err := eachSummaryRow(data, func(r []string) { cols.fit(t.cells(r)) }); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	cols.line(bw, t.header())
	if err := eachSummaryRow(data, func(r []string) { cols.line(bw, t.cells(r)) }); err != nil {
		return err
	}
	return bw.Flush()
}

// alignedColumns lays out lines of cells as text/tabwriter does with
// padding 2 (each cell but the last padded to its column's widest plus
// two, in runes), from widths measured in a pass of their own: a
// tabwriter holds every line until it is flushed, 50 MB of cells for
// the 10^5 lines of a 10^5-point summary.
type alignedColumns []int

// fit widens the columns to cells.
func (c *alignedColumns) fit(cells []string) {
	for i, s := range cells[:max(len(cells)-1, 0)] {
		for len(*c) <= i {
			*c = append(*c, 0)
		}
		(*c)[i] = max((*c)[i], utf8.RuneCountInString(s))
	}
}

// line writes cells as one line.
func (c alignedColumns) line(w *bufio.Writer, cells []string) {
	for i, s := range cells {
		w.WriteString(s)
		if i < len(cells)-1 {
			for range c[i] + 2 - utf8.RuneCountInString(s) {
				w.WriteByte(' ')
			}
		}
	}
	w.WriteByte('\n')
}

// eachSummaryRow calls fn with each row of summary.csv after the header
// (the slice is reused from row to row).
func eachSummaryRow(data io.ReadSeeker, fn func(r []string)) error {
	if _, err := data.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("summary.csv: %w", err)
	}
	cr := csv.NewReader(bufio.NewReader(data))
	cr.ReuseRecord = true
	if _, err := cr.Read(); err != nil {
		return fmt.Errorf("summary.csv: %w", err)
	}
	for {
		r, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("summary.csv: %w", err)
		}
		fn(r)
	}
}

// summaryTable is a summary.csv read by column name, so that summaries
// written by older versions (fewer columns) print too; a column a row
// lacks reads as "".
type summaryTable struct {
	col map[string]int
	// axes are the point's axis columns (between servers and
	// arrival_rate); params is shown when a policy has parameters;
	// compare when the summary has paired comparisons.
	axes    []string
	params  bool
	compare bool
	// baseline is the first baseline a row names.
	baseline string
	// varies holds the columns of the scenario (workload, servers) whose
	// value is not the same in every row, shown then: a swept servers
	// axis gave rows that differed only in λ, with no k (first holds the
	// first row's values).
	varies map[string]bool
	first  map[string]string
}

// scenarioColumns are the summary's columns of the scenario shown when
// they vary, with their headings.
var scenarioColumns = []struct{ col, head string }{{"workload", "workload"}, {"servers", "k"}}

func newSummaryTable(head []string) *summaryTable {
	t := &summaryTable{col: map[string]int{}}
	for i, h := range head {
		t.col[h] = i
	}
	if a, ok := t.col["servers"]; ok {
		if b, ok := t.col["arrival_rate"]; ok {
			t.axes = head[a+1 : b]
		}
	}
	_, t.compare = t.col["mean_response_cmp"]
	return t
}

// scan notes what a row says about the header: a policy with parameters,
// the baseline of the comparisons (the first row's that names one).
func (t *summaryTable) scan(r []string) {
	if p := t.get(r, "params"); p != "{}" && p != "" {
		t.params = true
	}
	if b := t.get(r, "baseline"); t.baseline == "" && b != "" {
		t.baseline = b
	}
	if t.first == nil {
		t.first, t.varies = map[string]string{}, map[string]bool{}
		for _, c := range scenarioColumns {
			t.first[c.col] = t.get(r, c.col)
		}
	}
	for _, c := range scenarioColumns {
		if t.get(r, c.col) != t.first[c.col] {
			t.varies[c.col] = true
		}
	}
}

func (t *summaryTable) get(r []string, name string) string {
	if i, ok := t.col[name]; ok && i < len(r) {
		return r[i]
	}
	return ""
}

// header is the table's first line: policy, params, the axes,
// arrival_rate, load, then the metrics, the paired comparison of E[T]
// with the baseline (summaries written before comparisons have no
// baseline column: no comparison column) and the point's status.
func (t *summaryTable) header() []string {
	head := []string{"policy"}
	if t.params {
		head = append(head, "params")
	}
	for _, c := range scenarioColumns {
		if t.varies[c.col] {
			head = append(head, c.head)
		}
	}
	head = append(head, t.axes...)
	head = append(head, "λ", "ρ", "n", "failed", "E[T]", "±95%", "weighted E[T]", "±95%", "Jain")
	if t.compare {
		head = append(head, "E[T] vs "+t.baseline)
	}
	return append(head, "")
}

// cells is one point's line, in header's columns.
func (t *summaryTable) cells(r []string) []string {
	cells := []string{t.get(r, "policy")}
	if t.params {
		cells = append(cells, t.get(r, "params"))
	}
	for _, c := range scenarioColumns {
		if t.varies[c.col] {
			cells = append(cells, t.get(r, c.col))
		}
	}
	for _, a := range t.axes {
		cells = append(cells, num(t.get(r, a)))
	}
	bound := t.bound(r)
	mean := func(m string) (string, string) {
		switch {
		case t.get(r, m+"_mean") == "":
			return "—", "-"
		case bound:
			return "≥ " + num(t.get(r, m+"_mean")), "-"
		}
		return meanAtHW(t.get(r, m+"_mean"), t.get(r, m+"_hw")), num(t.get(r, m+"_hw"))
	}
	et, etHW := mean("mean_response")
	wet, wetHW := mean("weighted_mean_response")
	rate, load := num(t.get(r, "arrival_rate")), num(t.get(r, "load"))
	if rate == "0" && load == "0" {
		// A replayed trace: its arrivals are the trace's, not a rate,
		// and the summary does not hold their measured λ and ρ.
		rate, load = "—", "—"
	}
	cells = append(cells, rate, load, t.get(r, "n"), t.get(r, "n_failed"),
		et, etHW, wet, wetHW, num(t.get(r, "jain_mean")))
	if t.compare {
		cells = append(cells, comparisonCell(t.get(r, "mean_response_cmp"), t.get(r, "mean_response_rel_diff"),
			t.get(r, "mean_response_rel_diff_lo"), t.get(r, "mean_response_rel_diff_hi")))
	}
	return append(cells, pointStatus(func(c string) string { return t.get(r, c) }))
}

// meanAtHW is a mean printed to the last decimal its half-width is
// printed to (num): "11 ± 1.085" read as if the mean were known to a
// unit, where it is 10.9977; now 10.998 ± 1.085. A half-width that is not
// a plain decimal (none, exponent form) leaves the mean to num.
func meanAtHW(mean, hw string) string {
	m, err := strconv.ParseFloat(mean, 64)
	h := num(hw)
	if err != nil || math.IsNaN(m) || math.IsInf(m, 0) || strings.ContainsAny(h, "eE") || math.Abs(m) >= 1e15 {
		return num(mean)
	}
	if _, err := strconv.ParseFloat(h, 64); err != nil {
		return num(mean)
	}
	dec := 0
	if _, frac, ok := strings.Cut(h, "."); ok {
		dec = len(frac)
	}
	return strconv.FormatFloat(m, 'f', dec, 64)
}

// bound says whether the point's means are lower bounds. A lower bound
// is shown as one (≥ x), without a confidence interval: the
// replications' means are not estimates of the same quantity, so their
// spread says nothing about the true mean. The rule is
// aggregate.IsBound's, as in the report and the live page; a summary
// without a verdict column falls back to its n_unstable count.
func (t *summaryTable) bound(r []string) bool {
	lb := t.get(r, "lower_bound") == "true"
	if _, ok := t.col["verdict"]; !ok && t.get(r, "n_unstable") != "" && t.get(r, "n_unstable") != "0" {
		lb = true
	}
	return aggregate.IsBound(t.get(r, "verdict"), lb)
}

// comparisonCell is a paired comparison as the terminal prints it:
// "-12.3% [-12.7%, -11.9%] better", "baseline", or "undefined" (a side is
// a bound, or too few pairs); "" where the point has no such metric. A
// summary.csv written before Fieller's interval (a rel_diff_hw column, no
// rel_diff_lo or rel_diff_hi) prints the difference without its
// delta-method interval, which overstated the evidence.
func comparisonCell(verdict, rel, lo, hi string) string {
	switch verdict {
	case "", aggregate.CmpBaseline, aggregate.CmpUndefined:
		return verdict
	}
	r, err := strconv.ParseFloat(rel, 64)
	if err != nil {
		return verdict
	}
	end := func(s string) float64 {
		x, err := strconv.ParseFloat(s, 64) // "inf" and "-inf" read as infinities
		if err != nil {
			return math.NaN()
		}
		return x
	}
	l, h := end(lo), end(hi)
	if verdict == aggregate.CmpIndistinguishable && aggregate.RelDiffExcludesZero(l, h) {
		// The interval is this comparison's own 95%: it excludes 0 exactly
		// when the unadjusted paired t-test rejects. The verdict is at the
		// level Holm's correction over the campaign's comparisons leaves:
		// "+27.2% [+24.6%, +29.9%] indistinguishable" read as a
		// contradiction.
		verdict += " after Holm's correction"
	}
	return aggregate.FormatRelDiff(r, l, h) + " " + verdict
}

// pointStatus is the status cell of a summary row: the pooled verdict
// (UNSTABLE or TRUNCATED with its count, UNDECIDED with its episodic
// class), or, for a stable point whose
// minority was flagged, how many were. A summary.csv written before the
// verdict column falls back to its n_unstable count. A point whose pooled
// converged verdict failed adds NOT CONVERGED with its count, and one with
// identical replications IDENTICAL with theirs.
func pointStatus(get func(string) string) string {
	notes := []string{verdictStatus(get)}
	// Replications that repeat another seed's run to the bit: the
	// policy's code ignored its seed, and the interval is ±0 for nothing.
	if n := get("n_identical"); n != "" && n != "0" {
		notes = append(notes, "IDENTICAL ("+n+" of "+get("n")+" repeat another seed's run: the policy ignores its seed)")
	}
	// Run-length adequacy is a warning next to a stable verdict (an
	// unstable point has no steady state to converge to: its verdict says
	// more).
	if get("converged") == "false" && get("verdict") != "unstable" && get("verdict") != "undecided" {
		notes = append(notes, "NOT CONVERGED ("+get("n_unconverged")+" of "+get("n")+")")
	}
	if notes[0] == "" {
		notes = notes[1:]
	}
	return strings.Join(notes, "; ")
}

func verdictStatus(get func(string) string) string {
	n := get("n")
	u, t := get("n_unstable"), get("n_truncated")
	switch get("verdict") {
	case "unstable":
		return "UNSTABLE (" + u + " of " + n + ")"
	case "truncated":
		return "TRUNCATED (" + t + " of " + n + ")"
	case "undecided":
		return "UNDECIDED (" + get("verdict_test") + ": run longer)"
	case "stable":
		ui, _ := strconv.Atoi(u)
		ti, _ := strconv.Atoi(t)
		if ui+ti > 0 {
			return fmt.Sprintf("stable (%d of %s flagged)", ui+ti, n)
		}
		return ""
	}
	if u != "" && u != "0" {
		return "UNSTABLE (" + u + " of " + n + ")"
	}
	return ""
}

// resolveOnFarm resolves a campaign id, name or id prefix against the
// campaigns the coordinator knows, with resolve (archive.Resolve: a name
// means its latest campaign; archive.ResolveOne: nothing that could mean
// two).
func resolveOnFarm(ctx context.Context, nc *nats.Conn, arg string, resolve func(string, []archive.Candidate) (string, error)) (string, error) {
	var l protocol.ListReply
	if err := protocol.Request(ctx, nc, protocol.APIList, struct{}{}, &l); err != nil {
		return "", err
	}
	cands := make([]archive.Candidate, len(l.Campaigns))
	for i, s := range l.Campaigns {
		cands[i] = archive.Candidate{ID: s.Campaign, Name: s.Name, Created: s.Created}
	}
	return resolve(arg, cands)
}

// printCampaigns prints the campaigns in storage, oldest first.
func printCampaigns(w io.Writer, es []archive.Entry) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCAMPAIGN\tCREATED\tTASKS\tFINISHED\tSTATE")
	for _, e := range es {
		created := "-"
		if !e.Created.IsZero() {
			created = e.Created.Local().Format(shownTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", e.Name, e.ID, created, e.Tasks, e.Finished, e.State)
	}
	tw.Flush()
}

// storageStatus is the status of the campaigns in st (or of the one arg
// names): live from the embedded server of a `msjfarm run` that is running
// it (protocol.LiveRun), else from storage (the manifest's task count and
// state, the result entries stored so far). A campaign whose manifest
// says running but whose run does not answer is reported "interrupted".
func storageStatus(ctx context.Context, st storage.Store, arg string) ([]protocol.Status, error) {
	es, err := archive.List(ctx, st)
	if err != nil {
		return nil, err
	}
	if arg != "" {
		id, err := archive.Resolve(arg, archive.Candidates(es))
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, st.URL())
		}
		for _, e := range es {
			if e.ID == id {
				es = []archive.Entry{e}
				break
			}
		}
	}
	list := []protocol.Status{}
	for _, e := range es {
		if s, ok := liveStatus(ctx, st, e.ID); ok {
			list = append(list, s)
			continue
		}
		state := e.State
		if state == protocol.CampaignRunning {
			state = "interrupted" // its run did not answer (storedState)
		}
		// A finished campaign's manifest tells results from failures;
		// Finished counts both, and a campaign whose every task failed
		// was shown "done  DONE 4  FAILED 0".
		done, failed := e.Finished, 0
		if state != "interrupted" && e.Done+e.Failed > 0 {
			done, failed = e.Done, e.Failed
		}
		if state == protocol.CampaignCancelled {
			// Its manifest is written at the cancellation, before the
			// tasks then running store their results: status said 9 done
			// where 14 results were stored and `results` listed 14.
			done = max(done, e.Finished-failed)
		}
		list = append(list, protocol.Status{Campaign: e.ID, Name: e.Name, State: state, Total: e.Tasks,
			Done: done, Failed: failed, Created: e.Created, Verify: storedVerify(ctx, st, e.ID)})
	}
	return list, nil
}

// storedState is the state of e as storage tells it: the manifest's,
// except that a campaign it says is running whose run does not answer
// (liveStatus) is "interrupted" (a killed `msjfarm run`). `status` said
// so and `results` said "running" of the same campaign.
func storedState(ctx context.Context, st storage.Store, e archive.Entry) string {
	if e.State != protocol.CampaignRunning {
		return e.State
	}
	if _, live := liveStatus(ctx, st, e.ID); live {
		return e.State
	}
	return "interrupted"
}

// localRunConn connects to the embedded server of the `msjfarm run` that
// runs the campaign arg names in --storage (its runs/<id>.json).
func localRunConn(ctx context.Context, ff *farmFlags, arg string) (*nats.Conn, error) {
	st, err := ff.existingStore(ctx)
	if err != nil {
		return nil, fmt.Errorf("no NATS server given (--nats-url, MSJFARM_NATS_URL), and %w", err)
	}
	es, err := archive.List(ctx, st)
	if err != nil {
		return nil, err
	}
	id, err := archive.ResolveOne(arg, archive.Candidates(es))
	if err != nil {
		return nil, err
	}
	nc, err := liveRunConn(ctx, st, id, "msjfarm-cancel")
	if errors.Is(err, errNoLiveRun) {
		return nil, fmt.Errorf("no NATS server given (--nats-url, MSJFARM_NATS_URL), and no msjfarm run is running campaign %s in %s", id, st.URL())
	}
	if errors.Is(err, errRunToken) {
		return nil, fmt.Errorf("campaign %s: %v: only its user, on its machine, reaches the msjfarm run running it", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("campaign %s: the msjfarm run that ran it does not answer (%v): it is not running", id, err)
	}
	return nc, nil
}

// errNoLiveRun: the store names no run of the campaign.
var errNoLiveRun = errors.New("no msjfarm run of the campaign")

// errRunToken: the run's token file cannot be read here.
var errRunToken = errors.New("cannot read the token of its msjfarm run's server")

// liveRunConn connects to the embedded server of the `msjfarm run` of
// campaign id that the store names (runs/<id>.json): errNoLiveRun when it
// names none.
func liveRunConn(ctx context.Context, st storage.Store, id, name string) (*nats.Conn, error) {
	var lr protocol.LiveRun
	data, err := st.Get(ctx, protocol.LiveRunKey(id))
	if err == nil {
		err = json.Unmarshal(data, &lr)
	}
	if err != nil || lr.NATSURL == "" {
		return nil, errNoLiveRun
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(2 * time.Second), nats.MaxReconnects(0)}
	if lr.TokenFile != "" {
		tok, err := os.ReadFile(lr.TokenFile)
		if err != nil {
			// Another user's run, or one on another machine sharing the store.
			return nil, fmt.Errorf("%w: %v", errRunToken, err)
		}
		opts = append(opts, nats.Token(strings.TrimSpace(string(tok))))
	}
	return nats.Connect(lr.NATSURL, opts...)
}

// liveStatus asks the server of the msjfarm run running campaign id, if
// there is one that answers.
func liveStatus(ctx context.Context, st storage.Store, id string) (protocol.Status, bool) {
	var s protocol.Status
	nc, err := liveRunConn(ctx, st, id, "msjfarm-status")
	if err != nil {
		return s, false
	}
	defer nc.Close()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := protocol.Request(rctx, nc, protocol.APIStatus, protocol.StatusRequest{Campaign: id}, &s); err != nil || s.Error != "" {
		return s, false
	}
	return s, true
}
