package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// runRun runs a whole sweep in this process (package local: embedded NATS
// server, coordinator, local workers and, by default, local storage) and
// prints its summary. Running the same command again resumes.
func runRun(args []string) int {
	ff := newFarmFlags("run", false, "./msjfarm-data")
	n := ff.fs.Int("workers", runtime.NumCPU(), "replications run at once")
	storeDir := ff.fs.String("store-dir", "", "JetStream store directory (default: a temporary directory, removed at exit)")
	ackWait := ff.fs.Duration("ack-wait", protocol.DefaultAckWait, "redelivery timeout of a task without heartbeat")
	maxDeliver := ff.fs.Int("max-deliver", protocol.DefaultMaxDeliver, "attempts per task before it is recorded as failed")
	retry := ff.fs.Bool("retry-failed", false, "run the failed tasks of an earlier run again")
	verbose := ff.fs.Bool("v", false, "log coordinator and worker events to stderr")
	quiet := ff.fs.Bool("q", false, "no progress line")
	cpuProfile := ff.fs.String("cpuprofile", "", "write a CPU profile of the whole run (coordinator, workers, NATS) to this file")
	rf := addRunnerFlags(ff.fs)
	profile := ff.fs.String("profile", "", profileUsage)
	if err := ff.parse(args); err != nil {
		return 2
	}
	if ff.fs.NArg() != 1 {
		return fail("run: want one sweep file (msjfarm run [flags] sweep.yaml)")
	}
	if *n < 1 {
		return fail("run: -workers must be >= 1")
	}
	// Validate before anything is created.
	f, camp, err := validateSweep(ff.fs.Arg(0), *profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "msjfarm: run: %v\n", err)
		return 2
	}
	reserveFarmProc(*n)
	ctx, stop := signalContext()
	defer stop()
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
		return fail("run: %v", err)
	}
	ch, err := worker.ForCampaign(ctx, rf.config(*n, logger(*verbose)), st, camp)
	if ch != nil {
		warn("run", ch.Warnings)
	}
	if err != nil {
		return fail("run: runner: %v", err)
	}
	fmt.Fprintf(os.Stderr, "msjfarm run: runner %s\n", ch.Desc)
	if c, ok := ch.Runner.(io.Closer); ok {
		defer c.Close() // the worker closes it too; again is harmless
	}
	p := newProgress(os.Stderr, 0)
	out, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: ch.Runner, Workers: *n, StoreDir: *storeDir,
		AckWait: *ackWait, MaxDeliver: *maxDeliver, RetryFailed: *retry, Logf: logger(*verbose),
		Submitted: func(rep protocol.SubmitReply) {
			fmt.Fprintf(os.Stderr, "msjfarm run: campaign %s (%s): %d tasks in %d points, %d already done; %d workers; storage %s; start-up %s\n",
				rep.Campaign, rep.Name, rep.Tasks, camp.Points, rep.AlreadyDone, *n, st.URL(), time.Since(start).Round(time.Millisecond))
			p = newProgress(os.Stderr, rep.AlreadyDone)
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
	p.finish(s)
	data, err := st.Get(ctx, storage.SummaryKey(id))
	if err != nil {
		return fail("run: %v", err)
	}
	fmt.Println()
	if err := printSummaryTable(os.Stdout, data); err != nil {
		return fail("run: %v", err)
	}
	fmt.Printf("\nsummary: %s/%s\n", st.URL(), storage.SummaryKey(id))
	if prec, err := st.Get(ctx, archive.PrecisionKey(id)); err == nil {
		fmt.Printf("precision: %s — %s/%s\n", precisionLine(prec), st.URL(), archive.PrecisionKey(id))
	}
	if _, err := st.Stat(ctx, storage.ReportPrefix(id)+"index.html"); err == nil {
		fmt.Printf("report: %s\n", reportLocation(st, id))
	} else {
		fmt.Printf("report: not rendered (%v); msjfarm report %s regenerates it\n", err, id)
	}
	if s.Failed > 0 {
		fmt.Fprintf(os.Stderr, "msjfarm run: %d of %d tasks failed (see above; -retry-failed runs them again)\n", s.Failed, s.Total)
		return 1
	}
	return 0
}
