package main

import (
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

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
	n := ff.fs.Int("workers", runtime.NumCPU(), "replications run at once")
	storeDir := ff.fs.String("store-dir", "", "JetStream store directory (default: a temporary directory, removed at exit)")
	ackWait := ff.fs.Duration("ack-wait", protocol.DefaultAckWait, "redelivery timeout of a task without heartbeat")
	maxDeliver := ff.fs.Int("max-deliver", protocol.DefaultMaxDeliver, "attempts per task before it is recorded as failed")
	retry := ff.fs.Bool("retry-failed", false, "run the failed tasks of an earlier run again")
	verbose := ff.fs.BoolP("v", "v", false, "log coordinator and worker events to stderr")
	quiet := ff.fs.BoolP("q", "q", false, "no progress line")
	cpuProfile := ff.fs.String("cpuprofile", "", "write a CPU profile of the whole run (coordinator, workers, NATS) to this file")
	runLog := ff.fs.String("run-log", "", "append one line per task start/finish/duplicate/failure/release to this file")
	dry := ff.fs.Bool("dry-run", false, "print the plan (points, tasks, already stored, to run, estimated CPU and wall time on --workers) and write nothing")
	rf := addRunnerFlags(ff.fs)
	mf := addMonitorFlags(ff.fs, "http", "serve the live campaign page, /metrics, /healthz and /readyz on this address (e.g. 127.0.0.1:8080)")
	linger := ff.fs.Duration("http-linger", 0, "with --http: keep serving the page this long after the campaign finished; the summary is printed first, and Ctrl-C ends the wait with exit 0")
	profile := ff.fs.String("profile", "", profileUsage)
	maxTrace := traceSizeFlag(ff.fs)
	verify := addVerifyFlag(ff.fs)
	// Flags may follow the sweep file: msjfarm run sweep.yaml --http :8080.
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		pos := ff.fs.Args()
		if len(pos) != 1 {
			return fail("run: want one sweep file (msjfarm run [flags] sweep.yaml)")
		}
		slogger, err := mf.logger(*verbose)
		if err != nil {
			fmt.Fprintf(os.Stderr, "msjfarm: run: %v\n", err)
			return 2
		}
		if *n < 1 {
			return fail("run: --workers must be >= 1")
		}
		traceLimit, err := parseSize("max-trace-size", *maxTrace)
		if err != nil {
			return usagef("run: %v", err)
		}
		reserveFarmProc(*n)
		ctx, stop := signalContext()
		defer stop()
		// Validate against the policy registry (built-ins and the plugins on
		// the search path) before anything is created.
		if code := rf.applySandbox("run", true); code != 0 {
			return code
		}
		cfg := rf.config(*n, logf(slogger, *verbose))
		pr := cfg.Prepare(ctx)
		if lf, err := sweep.LoadProfile(pos[0], *profile); err == nil && lf.Limit != nil {
			// A limit block: a search by rounds of probe campaigns (runlimit.go).
			plan, err := sweep.PlanLimit(lf, withPolicyNames(pr.Registry))
			pr.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "msjfarm: run: %v\n", err)
				return 2
			}
			if *dry {
				return limitDryRun(os.Stdout, "run", lf, plan)
			}
			rf.stateSandbox("run")
			st, err := ff.store(ctx)
			if err != nil {
				return fail("run: %v", err)
			}
			if err := storage.CheckWritable(ctx, st); err != nil {
				return fail("run: %v", err)
			}
			o := local.Options{StoreDir: *storeDir, AckWait: *ackWait, MaxDeliver: *maxDeliver, RetryFailed: *retry, Logf: logf(slogger, *verbose)}
			return runLimitFile(ctx, "run", lf, plan, st, localProbeRun(cfg, st, *n, o, *quiet, os.Stderr), os.Stdout)
		}
		// The dry run generates the tasks one at a time (local.PlanCampaign):
		// planned, not materialised, its memory is O(points), not O(tasks).
		f, camp, trace, err := planSweep(pos[0], pr.Registry, *profile, traceLimit, nil)
		if err == nil {
			err = applyVerify(ff.fs, *verify, f)
		}
		if err == nil && !*dry {
			if err = camp.Materialize(); err != nil {
				err = fmt.Errorf("%s: %w", pos[0], err)
			}
		}
		if err != nil {
			pr.Close()
			warn("run", pr.Registry.Warnings())
			fmt.Fprintf(os.Stderr, "msjfarm: run: %v\n", err)
			return 2
		}
		if *dry {
			return dryRun("run", ff, camp, *n)
		}
		rf.stateSandbox("run")
		// The HTTP address is opened before any work, so that a busy or
		// invalid one fails at once.
		ln, err := mf.listen()
		if err != nil {
			pr.Close()
			fmt.Fprintf(os.Stderr, "msjfarm: run: %v\n", err)
			return 2
		}
		if ln != nil {
			defer ln.Close()
		}
		start := time.Now()
		if *cpuProfile != "" {
			pf, err := os.Create(*cpuProfile)
			if err != nil {
				return fail("run: %v", err)
			}
			defer pf.Close()
			if err := pprof.StartCPUProfile(pf); err != nil {
				return fail("run: %v", err)
			}
			defer pprof.StopCPUProfile()
		}

		st, err := ff.store(ctx)
		if err != nil {
			pr.Close()
			return fail("run: %v", err)
		}
		if err := storage.CheckWritable(ctx, st); err != nil {
			return fail("run: %v", err)
		}
		metrics := monitor.NewMetrics()
		st = metrics.InstrumentStore(st)
		ch, err := worker.ForCampaignWith(ctx, cfg, pr, st, camp)
		if ch != nil {
			warn("run", ch.Warnings)
		}
		if err != nil {
			return fail("run: runner: %v", err)
		}
		fmt.Fprintf(os.Stderr, "msjfarm run: runner %s\n", ch.Desc)
		// The trace goes to storage first, as with submit: the workers
		// replay the uploaded content (local.Run then only checks it).
		if desc, err := local.UploadTrace(ctx, st, f, trace); err != nil {
			return fail("run: %v", err)
		} else if desc != "" {
			fmt.Fprintf(os.Stderr, "msjfarm run: %s\n", desc)
		}
		pluginStarts(metrics, ch.Runner)
		if ln != nil {
			httpURLLine("run", ln, "live campaign page")
		}
		if c, ok := ch.Runner.(io.Closer); ok {
			defer c.Close() // the worker closes it too; again is harmless
		}
		var rl io.Writer
		if *runLog != "" {
			f, err := os.OpenFile(*runLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return fail("run: --run-log: %v", err)
			}
			defer f.Close()
			rl = f
		}
		p := newProgress(os.Stderr, 0).describe(camp)
		// The summary is printed once the campaign finished: before the
		// --http-linger wait when there is one (so that a Ctrl-C ending
		// the linger ends a run that has said everything, and "done in"
		// does not count the linger), else after Run.
		printed, code := false, 0
		summarize := func(ctx context.Context, s *protocol.Status, id string) {
			printed, code = true, printRunSummary(ctx, st, p, s, id)
		}
		out, err := local.Run(ctx, local.Options{Spec: f, MaxTraceSize: traceLimit, Store: st, Runner: ch.Runner, Pins: ch.Pins, Workers: *n, StoreDir: *storeDir,
			AckWait: *ackWait, MaxDeliver: *maxDeliver, RetryFailed: *retry, Logf: logf(slogger, *verbose), RunLog: rl,
			HTTP: ln, Linger: *linger, Metrics: metrics, Log: taskLogger(slogger, *verbose),
			Lingering: func(s *protocol.Status) {
				summarize(ctx, s, s.Campaign)
				fmt.Fprintf(os.Stderr, "\nmsjfarm run: campaign %s (%d done, %d failed); the live page stays at %s for %s (Ctrl-C ends it)\n",
					s.State, s.Done, s.Failed, monitor.URL(ln), *linger)
			},
			Submitted: func(rep protocol.SubmitReply) {
				fmt.Fprintf(os.Stderr, "msjfarm run: campaign %s (%s): %d tasks in %d points, %d already done (%d reused from other campaigns), %d to run; %d workers; storage %s; start-up %s\n",
					rep.Campaign, rep.Name, rep.Tasks, camp.Points, rep.AlreadyDone, rep.Reused, rep.Tasks-rep.AlreadyDone, *n, st.URL(), time.Since(start).Round(time.Millisecond))
				p = newProgress(os.Stderr, rep.AlreadyDone).describe(camp)
			},
			Progress: func(s *protocol.Status) {
				if !*quiet {
					p.update(s)
				}
			}})
		if err != nil {
			return fail("run: %v", err)
		}
		id, s := out.Submit.Campaign, out.Status
		if out.Interrupted {
			done := "no"
			if s != nil {
				done = fmt.Sprintf("%d/%d", s.Done+s.Failed, s.Total)
			}
			fmt.Fprintf(os.Stderr, "\nmsjfarm run: interrupted with %s tasks finished; run the same command again to resume (results are in %s)\n",
				done, st.URL())
			return 130
		}
		if !printed {
			// The reads below must not fail because a signal ended ctx
			// after the campaign finished.
			summarize(context.WithoutCancel(ctx), s, id)
		}
		return code
	}
}

// printRunSummary prints a finished campaign's end: the progress's final
// line (s), the summary table, and where the summary, precision table
// and report are; it returns run's exit status (1 if a task failed).
func printRunSummary(ctx context.Context, st storage.Store, p *progress, s *protocol.Status, id string) int {
	p.finish(s)
	data, err := st.Get(ctx, storage.SummaryKey(id))
	if err != nil {
		return fail("run: %v", err)
	}
	fmt.Println()
	if err := printSummaryTable(os.Stdout, data); err != nil {
		return fail("run: %v", err)
	}
	fmt.Printf("\nsummary: %s\n", storedLocation(st, storage.SummaryKey(id)))
	if prec, err := st.Get(ctx, archive.PrecisionKey(id)); err == nil {
		fmt.Printf("precision: %s — %s\n", precisionLine(prec), storedLocation(st, archive.PrecisionKey(id)))
	}
	if _, err := st.Stat(ctx, storage.ReportPrefix(id)+"index.html"); err == nil {
		fmt.Printf("report: %s\n", reportLocation(st, id))
	} else {
		fmt.Printf("report: not rendered (%v); msjfarm report %s regenerates it\n", err, id)
	}
	if s.Failed > 0 {
		fmt.Fprintf(os.Stderr, "msjfarm run: %d of %d tasks failed (see above; --retry-failed runs them again)\n", s.Failed, s.Total)
		return 1
	}
	return 0
}
