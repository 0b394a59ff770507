package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// runRun runs a whole sweep in this process: embedded NATS server,
// coordinator, local workers and (by default) local storage. It is the
// distributed pipeline with every piece local, so a campaign started here
// can be resumed by running the same command again (results are kept in
// -storage; tasks with a result are not run again).
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
	f, camp, err := validateSweep(ff.fs.Arg(0))
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
	runner, err := rf.forCampaign(ctx, st, camp, *n, logger(*verbose))
	if err != nil {
		return fail("run: runner: %v", err)
	}
	if c, ok := runner.(io.Closer); ok {
		defer c.Close() // the worker closes it too; again is harmless
	}
	dir := *storeDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "msjfarm-nats-"); err != nil {
			return fail("run: %v", err)
		}
		defer os.RemoveAll(dir)
	}
	srv, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		return fail("run: %v", err)
	}
	defer protocol.StopEmbedded(srv)
	nc, err := protocol.Connect(protocol.ConnOptions{URL: url, Name: "msjfarm-run", InProcess: srv})
	if err != nil {
		return fail("run: %v", err)
	}
	defer nc.Close()
	logf := logger(*verbose)
	co, err := coordinator.New(ctx, coordinator.Options{Conn: nc, Store: st, Logf: logf,
		Layout: protocol.Layout{AckWait: *ackWait, MaxDeliver: *maxDeliver}})
	if err != nil {
		return fail("run: %v", err)
	}
	coCtx, coStop := context.WithCancel(context.Background())
	coDone := make(chan error, 1)
	go func() { coDone <- co.Run(coCtx) }()
	defer func() { coStop(); <-coDone }()
	select {
	case <-co.Ready():
	case err := <-coDone:
		coDone <- err
		return fail("run: coordinator: %v", err)
	}
	w, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Concurrency: *n, Logf: logf,
		FetchWait: 250 * time.Millisecond, Runner: runner})
	if err != nil {
		return fail("run: %v", err)
	}
	wCtx, wStop := context.WithCancel(ctx)
	wDone := make(chan error, 1)
	go func() { wDone <- w.Run(wCtx) }()
	defer func() { wStop(); <-wDone }()

	rep, err := co.Submit(ctx, protocol.SubmitRequest{Spec: f, RetryFailed: *retry})
	if err != nil {
		return fail("run: %v", err)
	}
	fmt.Fprintf(os.Stderr, "msjfarm run: campaign %s (%s): %d tasks in %d points, %d already done; %d workers; storage %s; start-up %s\n",
		rep.Campaign, rep.Name, rep.Tasks, camp.Points, rep.AlreadyDone, *n, st.URL(), time.Since(start).Round(time.Millisecond))
	p := newProgress(os.Stderr, rep.AlreadyDone)
	finished := make(chan struct{})
	go func() {
		_, _ = co.Wait(ctx, rep.Campaign)
		close(finished)
	}()
	tk := time.NewTicker(500 * time.Millisecond)
	defer tk.Stop()
	var s *protocol.Status
	for {
		s, err = co.Status(ctx, rep.Campaign)
		if err != nil {
			return fail("run: %v", err)
		}
		if s.State != protocol.CampaignRunning {
			break
		}
		if !*quiet {
			p.update(s)
		}
		select {
		case <-ctx.Done():
			wStop()
			<-wDone
			wDone <- nil
			s, _ = co.Status(context.Background(), rep.Campaign)
			fmt.Fprintf(os.Stderr, "\nmsjfarm run: interrupted with %d/%d tasks finished; run the same command again to resume (results are in %s)\n",
				s.Done+s.Failed, s.Total, st.URL())
			return 130
		case <-tk.C:
		case <-finished:
		}
	}
	p.finish(s)
	data, err := st.Get(ctx, storage.SummaryKey(rep.Campaign))
	if err != nil {
		return fail("run: %v", err)
	}
	fmt.Println()
	if err := printSummaryTable(os.Stdout, data); err != nil {
		return fail("run: %v", err)
	}
	fmt.Printf("\nsummary: %s/%s\n", st.URL(), storage.SummaryKey(rep.Campaign))
	if prec, err := st.Get(ctx, coordinator.PrecisionKey(rep.Campaign)); err == nil {
		fmt.Printf("precision: %s — %s/%s\n", precisionLine(prec), st.URL(), coordinator.PrecisionKey(rep.Campaign))
	}
	if _, err := st.Stat(ctx, storage.ReportPrefix(rep.Campaign)+"index.html"); err == nil {
		fmt.Printf("report: %s\n", reportLocation(st, rep.Campaign))
	} else {
		fmt.Printf("report: not rendered (%v); msjfarm report %s regenerates it\n", err, rep.Campaign)
	}
	if s.Failed > 0 {
		fmt.Fprintf(os.Stderr, "msjfarm run: %d of %d tasks failed (see above; -retry-failed runs them again)\n", s.Failed, s.Total)
		return 1
	}
	return 0
}
