package main

import (
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// runRun runs a whole sweep in this process (package local: embedded NATS
// server, coordinator, local workers and, by default, local storage) and
// prints its summary. Running the same command again resumes.
func defRun(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	r := &runCommand{ff: ff}
	r.n = ff.fs.Int("workers", runtime.NumCPU(), "replications run at once")
	r.storeDir = ff.fs.String("store-dir", "", "JetStream store directory (default: a temporary directory, removed at exit)")
	r.ackWait = ff.fs.Duration("ack-wait", protocol.DefaultAckWait, "redelivery timeout of a task without heartbeat")
	r.maxDeliver = ff.fs.Int("max-deliver", protocol.DefaultMaxDeliver, "attempts per task before it is recorded as failed")
	r.retry = ff.fs.Bool("retry-failed", false, "run the failed tasks of an earlier run again")
	r.verbose = ff.fs.BoolP("v", "v", false, "log coordinator and worker events to stderr")
	r.quiet = ff.fs.BoolP("q", "q", false, "no progress line (why the campaign does not move is still said: a paused store, tasks that cannot be published)")
	r.cpuProfile = ff.fs.String("cpuprofile", "", "write a CPU profile of the whole command (reading and planning the sweep, a dry run's too; coordinator, workers, NATS) to this file")
	r.runLog = ff.fs.String("run-log", "", "append one line per task start/finish/duplicate/failure/release to this file")
	r.dry = ff.fs.Bool("dry-run", false, "print the plan (points, tasks, already stored, to run, estimated CPU and wall time on --workers) and write nothing")
	r.rf = addRunnerFlags(ff.fs)
	r.mf = addMonitorFlags(ff.fs, "http", "serve the live campaign page, /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:8080)")
	r.linger = ff.fs.Duration("http-linger", 0, "with --http: keep serving the page this long after the campaign finished; the summary is printed first, and Ctrl-C ends the wait with exit 0")
	r.profile = ff.fs.String("profile", "", profileUsage)
	r.maxTrace = traceSizeFlag(ff.fs)
	r.verify = addVerifyFlag(ff.fs)
	r.trial = trialFlag(ff.fs)
	r.lim = addSweepLimitFlags(ff.fs)
	// Flags may follow the sweep file: msjfarm run sweep.yaml --http :8080.
	return func([]string) int { return r.main() }
}

// runCommand is msjfarm run: its flags, then what main finds out before the
// campaign starts.
type runCommand struct {
	ff         *farmFlags
	rf         *runnerFlags
	mf         *monitorFlags
	n          *int
	storeDir   *string
	ackWait    *time.Duration
	maxDeliver *int
	retry      *bool
	trial      trialFlags
	lim        *sweepLimits
	verbose    *bool
	quiet      *bool
	cpuProfile *string
	runLog     *string
	dry        *bool
	linger     *time.Duration
	profile    *string
	maxTrace   *string
	verify     *float64

	slogger    *slog.Logger
	traceLimit int64
	creating   func() // exitOnInterrupt's: called before anything is created
}

// main checks the flags, validates the sweep against the policy registry
// (built-ins and the plugins on the search path) before anything is
// created, and runs it: a limit block as rounds of probe campaigns
// (runlimit.go), any other sweep as one campaign.
func (r *runCommand) main() int {
	if err := r.ff.parse(); err != nil {
		return 2
	}
	pos := r.ff.fs.Args()
	if len(pos) != 1 {
		return usagef("run: want one sweep file (msjfarm run [flags] sweep.yaml), got %d arguments", len(pos))
	}
	if err := r.checkFlags(); err != nil {
		return usagef("run: %v", err)
	}
	var err error
	if r.slogger, err = r.mf.logger(*r.verbose); err != nil {
		errorf("run: %v", err)
		return 2
	}
	if r.traceLimit, err = parseSize("max-trace-size", *r.maxTrace); err != nil {
		return usagef("run: %v", err)
	}
	// From the start: reading and planning a large sweep (a dry run
	// included) is where its time goes before any task runs.
	if *r.cpuProfile != "" {
		stopProfile, err := startCPUProfile(*r.cpuProfile)
		if err != nil {
			return usagef("run: --cpuprofile: %v", err)
		}
		defer stopProfile()
	}
	reserveFarmProc(*r.n)
	ctx, stop := signalContext()
	defer stop()
	r.creating = exitOnInterrupt("run")
	defer r.creating() // the guard ends with the command, whatever it created
	r.rf.store, r.rf.configFile = *r.ff.storage, r.ff.configFile()
	if code := r.rf.applySandbox("run", true); code != 0 {
		return code
	}
	cfg := r.rf.config(*r.n, r.logf())
	pr := cfg.Prepare(ctx)
	if pr.Registry, err = r.trial.apply(pr.Registry); err != nil {
		return usagef("run: %v", err)
	}
	// Read with --max-spec-size, its errors reported: read with the
	// default limit and its error dropped, a lowered limit was no bound
	// on this read (19 s and 3.2 GB for a 20 MB file under 1MiB), and a
	// limit search past 64 MiB went down the campaign path.
	lf, err := r.lim.load(pos[0], *r.profile)
	if err != nil {
		pr.Close()
		warn("run", pr.Registry.Warnings())
		errorf("run: %v", err)
		return 2
	}
	noteOverrides("run", pos[0], lf)
	if lf.Limit != nil {
		return interrupted(ctx, r.limit(ctx, lf, cfg, pr))
	}
	return interrupted(ctx, r.campaign(ctx, pos[0], lf, cfg, pr))
}

// interrupted is code, or the signal's status (interruptCode: 130 SIGINT,
// 143 SIGTERM) when a signal ended ctx and the command failed for it: a
// Ctrl-C before the campaign started ended in "context canceled" and exit
// 1, where an interrupted run exits 130.
func interrupted(ctx context.Context, code int) int {
	if code == 1 && ctx.Err() != nil {
		fmt.Fprintln(stderr, "msjfarm run: interrupted; run the same command again to resume")
		return interruptCode(ctx)
	}
	return code
}

// checkFlags refuses flag values that would be taken silently, before
// anything is created: --http-linger without --http did nothing, a dry
// run did not look at --http at all (checkDelivery: the others).
func (r *runCommand) checkFlags() error {
	if err := checkDelivery(*r.maxDeliver, *r.ackWait); err != nil {
		return err
	}
	switch {
	case *r.n < 1:
		return fmt.Errorf("--workers must be >= 1, got %d", *r.n)
	case *r.linger < 0:
		return fmt.Errorf("--http-linger must be >= 0, got %v", *r.linger)
	case *r.linger > 0 && *r.mf.http == "":
		return fmt.Errorf("--http-linger %v keeps the --http page up, and there is no --http", *r.linger)
	case *r.quiet && *r.verbose:
		// Both were taken, and the run was as verbose as -v alone.
		return fmt.Errorf("-q (quiet: no progress line) and -v (verbose: coordinator and worker events on stderr) ask for opposite things: give one of them")
	}
	return r.mf.check()
}

// checkDelivery refuses the delivery flags of run and coordinator that
// were taken silently: --max-deliver 0 became the default 5, and a
// negative --ack-wait was taken.
func checkDelivery(maxDeliver int, ackWait time.Duration) error {
	switch {
	case maxDeliver < 1:
		return fmt.Errorf("--max-deliver must be >= 1 (the attempts a task gets before it is recorded as failed), got %d", maxDeliver)
	case ackWait <= 0:
		return fmt.Errorf("--ack-wait must be positive, got %v", ackWait)
	}
	return nil
}

// logf is where coordinator and worker events go (-v: stderr).
func (r *runCommand) logf() func(string, ...any) { return logf(r.slogger, *r.verbose) }

// limit runs a sweep with a limit block: a search by rounds of probe
// campaigns, each on the embedded farm.
func (r *runCommand) limit(ctx context.Context, lf *sweep.File, cfg worker.RunnerConfig, pr *worker.PluginRunner) int {
	plan, err := sweep.PlanLimit(lf, withPolicyNames(pr.Registry))
	pr.Close()
	if err != nil {
		errorf("run: %v", err)
		return 2
	}
	if *r.dry {
		return limitDryRun(os.Stdout, "run", lf, plan)
	}
	r.creating()
	r.rf.stateSandbox("run")
	st, err := r.ff.store(ctx)
	if err != nil {
		return fail("run: %v", err)
	}
	if err := storage.CheckWritable(ctx, st); err != nil {
		return fail("run: %v", err)
	}
	o := local.Options{StoreDir: *r.storeDir, AckWait: *r.ackWait, MaxDeliver: *r.maxDeliver, RetryFailed: *r.retry, Logf: r.logf()}
	return runLimitFile(ctx, "run", lf, plan, st, localProbeRun(cfg, st, *r.n, o, *r.quiet, os.Stderr), os.Stdout)
}

// campaign runs one sweep as one campaign: validated, then (unless a dry
// run) with the live page's address opened before any work, so that a
// busy or invalid one fails at once, the store checked writable, the
// runner chosen and the trace uploaded; then local.Run, and the summary.
func (r *runCommand) campaign(ctx context.Context, path string, lf *sweep.File, cfg worker.RunnerConfig, pr *worker.PluginRunner) int {
	// Reading and planning at the collector's default pace: planning keeps
	// some 500 bytes a point live and leaves its hashing's garbage (JSON
	// encodings) behind, so at the simulation pace (five times the live
	// heap) a dry run of 10⁶ points grew to 2.3 GB; at the default, 1.1 GB
	// in the same wall time. A dry run keeps it to the end (its
	// calibrations switch to the simulation pace: gcpace.Simulating).
	release := gcpace.Hold()
	defer release()
	// The dry run generates the tasks one at a time (local.PlanCampaign):
	// planned, not materialised, its memory is O(points), not O(tasks).
	f, camp, trace, err := planSweep(path, lf, pr.Registry, *r.profile, r.traceLimit, r.lim, storedTrace(ctx, r.ff, r.traceLimit))
	if err == nil {
		err = applyVerify(r.ff.fs, *r.verify, f)
	}
	if err == nil && !*r.dry {
		if err = camp.Materialize(); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		pr.Close()
		warn("run", pr.Registry.Warnings())
		errorf("run: %v", err)
		return 2
	}
	if *r.dry {
		defer pr.Close()
		// What the run would refuse (ForCampaignWith), said by the dry
		// run too.
		if err := cfg.CheckEngines(camp, pr.Registry); err != nil {
			return fail("run: runner: %v", err)
		}
		return dryRun("run", r.ff, camp, *r.n, pr)
	}
	release()
	// The flags that name files, before anything is written: a bad
	// --run-log was found after the plugin binaries (19 MB) and the
	// campaign's pins were in storage.
	var rl io.Writer
	if *r.runLog != "" {
		f, err := os.OpenFile(*r.runLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			pr.Close()
			return usagef("run: --run-log: %v", err)
		}
		defer f.Close()
		rl = f
	}
	if fi, err := os.Stat(*r.storeDir); *r.storeDir != "" && err == nil && !fi.IsDir() {
		pr.Close()
		return usagef("run: --store-dir %s: not a directory", *r.storeDir)
	}
	r.creating()
	r.rf.stateSandbox("run")
	ln, err := r.mf.listen()
	if err != nil {
		pr.Close()
		errorf("run: %v", err)
		return 2
	}
	if ln != nil {
		defer ln.Close()
	}
	start := time.Now()
	st, err := r.ff.store(ctx)
	if err != nil {
		pr.Close()
		return fail("run: %v", err)
	}
	if err := storage.CheckWritable(ctx, st); err != nil {
		return fail("run: %v", err)
	}
	unlock, err := lockCampaign(ctx, st, camp.ID)
	if err != nil {
		pr.Close()
		return fail("run: %v", err)
	}
	defer unlock()
	metrics := monitor.NewMetrics()
	st = metrics.InstrumentStore(st)
	ch, code := runnerFor(ctx, cfg, pr, st, f, camp, trace)
	if code != 0 {
		return code
	}
	pluginStarts(metrics, ch.Runner)
	if ln != nil {
		httpURLLine("run", ln, "live campaign page")
	}
	if c, ok := ch.Runner.(io.Closer); ok {
		defer c.Close() // the worker closes it too; again is harmless
	}
	o := local.Options{Spec: f, MaxTraceSize: r.traceLimit, Store: st, Runner: ch.Runner, Pins: ch.Pins, Workers: *r.n, StoreDir: *r.storeDir,
		AckWait: *r.ackWait, MaxDeliver: *r.maxDeliver, RetryFailed: *r.retry, Logf: r.logf(), RunLog: rl,
		HTTP: ln, Linger: *r.linger, Metrics: metrics, Log: taskLogger(r.slogger, *r.verbose)}
	return r.run(ctx, o, camp, start)
}

// startCPUProfile writes a CPU profile to path until the returned
// function is called.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// runnerFor chooses the campaign's runner (reusing the processes the
// registry started) and uploads its trace to storage first, as submit
// does: the workers replay the uploaded content (local.Run then only
// checks it). A non-zero code is the command's exit status.
func runnerFor(ctx context.Context, cfg worker.RunnerConfig, pr *worker.PluginRunner, st storage.Store, f *sweep.File, camp *sweep.Campaign, trace []byte) (*worker.Choice, int) {
	ch, err := worker.ForCampaignWith(ctx, cfg, pr, st, camp)
	if ch != nil {
		warn("run", ch.Warnings)
	}
	if err != nil {
		return nil, fail("run: runner: %v", err)
	}
	fmt.Fprintf(stderr, "msjfarm run: runner %s\n", ch.Desc)
	if desc, err := local.UploadTrace(ctx, st, f, trace); err != nil {
		return nil, fail("run: %v", err)
	} else if desc != "" {
		fmt.Fprintf(stderr, "msjfarm run: %s\n", desc)
	}
	return ch, 0
}

// run runs the campaign with local.Run, showing progress, and prints its
// end. The summary is printed once the campaign finished: before the
// --http-linger wait when there is one (so that a Ctrl-C ending the
// linger ends a run that has said everything, and "done in" does not
// count the linger), else after Run.
func (r *runCommand) run(ctx context.Context, o local.Options, camp *sweep.Campaign, start time.Time) int {
	st := o.Store
	p := newProgress(os.Stderr, 0).describe(camp)
	p.quiet = *r.quiet
	printed, code := false, 0
	var reportErr error
	summarize := func(ctx context.Context, s *protocol.Status, id string) {
		printed, code = true, printRunSummary(ctx, st, p, s, id, reportErr)
	}
	o.Lingering = func(s *protocol.Status) {
		summarize(ctx, s, s.Campaign)
		fmt.Fprintf(stderr, "\nmsjfarm run: campaign %s (%d done, %d failed); the live page stays at %s for %s (Ctrl-C ends it)\n",
			s.State, s.Done, s.Failed, monitor.URL(o.HTTP), *r.linger)
	}
	o.Submitted = func(rep protocol.SubmitReply) {
		fmt.Fprintf(stderr, "msjfarm run: campaign %s (%s): %d tasks in %d points, %d already done (%d reused from other campaigns), %d to run; %d workers; storage %s; start-up %s\n",
			rep.Campaign, rep.Name, rep.Tasks, camp.Points, rep.AlreadyDone, rep.Reused, rep.Tasks-rep.AlreadyDone, *r.n, st.URL(), time.Since(start).Round(time.Millisecond))
		p = newProgress(os.Stderr, rep.AlreadyDone).describe(camp)
		p.quiet = *r.quiet
	}
	o.Progress = func(s *protocol.Status) { p.update(s) }
	out, err := local.Run(ctx, o)
	if err != nil {
		return fail("run: %v", err)
	}
	id, s := out.Submit.Campaign, out.Status
	reportErr = out.ReportError
	if out.Interrupted {
		done := "no"
		if s != nil {
			done = fmt.Sprintf("%d/%d", s.Done+s.Failed, s.Total)
		}
		fmt.Fprintf(stderr, "\nmsjfarm run: interrupted with %s tasks finished; run the same command again to resume (results are in %s)\n",
			done, st.URL())
		return interruptCode(ctx)
	}
	if !printed {
		// The reads below must not fail because a signal ended ctx
		// after the campaign finished.
		summarize(context.WithoutCancel(ctx), s, id)
	}
	return code
}

// printRunSummary prints a finished campaign's end: the progress's final
// line (s), the summary table, and where the summary, precision table
// and report are; it returns run's exit status (1 if a task failed).
func printRunSummary(ctx context.Context, st storage.Store, p *progress, s *protocol.Status, id string, reportErr error) int {
	p.finish(s)
	if s.State == protocol.CampaignCancelled {
		// Cancelled from elsewhere (msjfarm cancel): no summary is
		// written, and run ended on "getfile …/summary.csv: not found".
		fmt.Fprintf(stderr, "msjfarm run: campaign %s was cancelled (%d of %d tasks done, kept in %s); running the sweep again resumes it\n",
			id, s.Done, s.Total, st.URL())
		return 1
	}
	data, err := storedSummary(ctx, st, id)
	if err != nil {
		return fail("run: %v", err)
	}
	defer data.Close()
	fmt.Println()
	if err := printSummaryTable(os.Stdout, data); err != nil {
		return fail("run: %v", err)
	}
	fmt.Printf("\nsummary: %s\n", storedLocation(st, storage.SummaryKey(id)))
	if prec, err := st.Get(ctx, archive.PrecisionKey(id)); err == nil {
		fmt.Printf("precision: %s — %s\n", precisionLine(prec), storedLocation(st, archive.PrecisionKey(id)))
	}
	_, err = st.Stat(ctx, storage.ReportPrefix(id)+"index.html")
	rendered := err == nil
	if rendered {
		fmt.Printf("report: %s\n", reportLocation(st, id))
	} else {
		if reportErr != nil {
			err = reportErr // the cause (a full disk), not the missing page
		}
		fmt.Printf("report: not rendered (%v); msjfarm report --store --storage %s %s stores it again\n", err, st.URL(), id)
	}
	code := 0
	if s.Failed > 0 {
		fmt.Fprintf(stderr, "msjfarm run: %d of %d tasks failed (see above; --retry-failed runs them again)\n", s.Failed, s.Total)
		code = 1
	}
	if !rendered {
		// Exit 0 said all was made, and a script went on to copy a
		// report that was not there (a full disk).
		fmt.Fprintf(stderr, "msjfarm run: the report was not rendered (above); the results and summary are stored\n")
		code = 1
	}
	return code
}
