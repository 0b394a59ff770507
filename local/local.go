// Package local runs a whole campaign on one machine: an embedded NATS
// JetStream server, a coordinator and local workers in this process, with
// results in local or S3 storage. It is the distributed pipeline with
// every piece local (the same subjects, records and summaries), so a
// campaign started here can be resumed by running it again (results are
// kept in storage; tasks with a result are not run again) and can be
// served later by a real farm. msjfarm run is a thin command over [Run].
//
// While a campaign runs, its embedded server's URL is in storage at
// protocol.LiveRunKey(campaign), so that `msjfarm status` in another
// terminal can ask it for live progress.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/monitor"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// ProgressInterval is how often Options.Progress is called.
const ProgressInterval = 500 * time.Millisecond

// Options configure Run.
type Options struct {
	// Spec is the sweep to run (submitted as is; the coordinator expands
	// it).
	Spec *sweep.File
	// Store holds the results, summaries and reports.
	Store storage.Store
	// Trace is the content of the trace Spec replays, as read by
	// sweep.ReadTraceFile (nil: no trace, or one already in Store); Run
	// uploads it (UploadTrace) before submitting.
	Trace []byte
	// TraceCache and MaxTraceSize are the workers' (worker.Options).
	TraceCache   string
	MaxTraceSize int64
	// Runner runs the replications (worker.ForCampaign picks one). Run
	// does not close it; the worker closes a runner that is an io.Closer
	// when it stops.
	Runner worker.Runner
	// Pins are the campaign's plugin pins (worker.Choice.Pins), sent with
	// the submission so that the coordinator validates the policies of
	// third-party plugins against their pinned schemas.
	Pins *protocol.Pins
	// Workers is the number of replications run at once (>= 1).
	Workers int
	// StoreDir is the JetStream store directory; "" uses a temporary
	// directory removed when Run returns.
	StoreDir string
	// AckWait and MaxDeliver are the task consumer's redelivery timeout
	// and attempts per task (0: protocol's defaults).
	AckWait    time.Duration
	MaxDeliver int
	// RetryFailed runs the failed tasks of an earlier run again.
	RetryFailed bool
	// Logf logs coordinator and worker events (nil: discard).
	Logf func(format string, args ...any)
	// RunLog, if set, receives the workers' run lines (worker.Options.RunLog).
	RunLog io.Writer
	// Submitted, if set, is called once the campaign is submitted, before
	// any progress.
	Submitted func(protocol.SubmitReply)
	// Progress, if set, is called every ProgressInterval while the
	// campaign runs.
	Progress func(*protocol.Status)
	// HTTP, if set, serves the live campaign page, /metrics, /healthz and
	// /readyz (package monitor) while Run runs; Run closes it. Open it
	// with monitor.Listen before Run so that a bad address fails at once.
	HTTP net.Listener
	// Linger keeps the page served this long after the campaign finished
	// (its final report linked), or until ctx ends; Lingering, if set, is
	// called with the final status when that wait starts, with ctx still
	// live: the caller prints its summary there. A ctx that ends during
	// the linger is not an interruption (Outcome.Interrupted stays false).
	Linger    time.Duration
	Lingering func(*protocol.Status)
	// Metrics receives the workers' and the coordinator's metrics (nil:
	// a new set, served on HTTP).
	Metrics *monitor.Metrics
	// Log, if set, receives the workers' structured task lines.
	Log *slog.Logger
}

// finalizeWait bounds how long Run waits, once the campaign's state is
// no longer running, for the coordinator to close it (publish its report).
const finalizeWait = time.Minute

// Outcome is how a Run ended.
type Outcome struct {
	// Submit is the coordinator's reply to the submission (campaign id,
	// tasks, already done).
	Submit protocol.SubmitReply
	// Status is the campaign's last status: final when the campaign
	// finished, the state at the interruption otherwise.
	Status *protocol.Status
	// Interrupted is set when ctx ended before the campaign finished; the
	// results so far are stored and running the same sweep again resumes.
	Interrupted bool
}

// Run runs o.Spec to the end (or until ctx ends): it starts the embedded
// server, the coordinator and o.Workers local workers, submits the
// campaign, waits for it to finish (its summary, manifest and report are
// then in o.Store) and stops everything it started. An ended ctx is not an
// error: the Outcome says Interrupted.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	switch {
	case o.Spec == nil:
		return nil, errors.New("local: Options.Spec is nil")
	case o.Store == nil:
		return nil, errors.New("local: Options.Store is nil")
	case o.Runner == nil:
		return nil, errors.New("local: Options.Runner is nil")
	case o.Workers < 1:
		return nil, fmt.Errorf("local: Options.Workers must be >= 1, got %d", o.Workers)
	}
	if o.AckWait == 0 {
		o.AckWait = protocol.DefaultAckWait
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = protocol.DefaultMaxDeliver
	}
	dir := o.StoreDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "msjfarm-nats-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	srv, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: dir})
	if err != nil {
		return nil, err
	}
	defer protocol.StopEmbedded(srv)
	nc, err := protocol.Connect(protocol.ConnOptions{URL: url, Name: "msjfarm-run", InProcess: srv})
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	co, err := coordinator.New(ctx, coordinator.Options{Conn: nc, Store: o.Store, Logf: o.Logf,
		Layout: protocol.Layout{AckWait: o.AckWait, MaxDeliver: o.MaxDeliver}})
	if err != nil {
		return nil, err
	}
	// The coordinator outlives ctx so that an interrupted run can still
	// report its status; it stops when Run returns.
	coCtx, coStop := context.WithCancel(context.Background())
	coDone := make(chan error, 1)
	go func() { coDone <- co.Run(coCtx) }()
	defer func() { coStop(); <-coDone }()
	select {
	case <-co.Ready():
	case err := <-coDone:
		coDone <- err
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	if o.HTTP != nil {
		defer o.HTTP.Close()
	}
	if o.Metrics == nil && o.HTTP != nil {
		o.Metrics = monitor.NewMetrics()
	}
	wo := worker.Options{Conn: nc, Store: o.Store, Concurrency: o.Workers, Logf: o.Logf,
		TraceCache: o.TraceCache, MaxTraceSize: o.MaxTraceSize,
		FetchWait: 250 * time.Millisecond, Runner: o.Runner, Log: o.Log, RunLog: o.RunLog}
	if o.Metrics != nil {
		wo.Observe = o.Metrics.ObserveTask
	}
	if o.HTTP != nil {
		srv, err := monitor.New(monitor.Options{Coordinator: co, Conn: nc, Store: o.Store, Metrics: o.Metrics})
		if err != nil {
			return nil, err
		}
		served := make(chan struct{})
		go func() { defer close(served); _ = srv.Serve(o.HTTP) }()
		defer func() { _ = srv.Close(); <-served }()
	}
	w, err := worker.New(ctx, wo)
	if err != nil {
		return nil, err
	}
	wCtx, wStop := context.WithCancel(ctx)
	wDone := make(chan error, 1)
	go func() { wDone <- w.Run(wCtx) }()
	stopVerifier, err := startVerifier(ctx, o, wo, w.Name())
	if err != nil {
		wStop()
		<-wDone
		return nil, err
	}
	stopWorkers := func() {
		if wStop != nil {
			stopVerifier()
			wStop()
			<-wDone
			wStop = nil
		}
	}
	defer stopWorkers()

	if _, err := UploadTrace(ctx, o.Store, o.Spec, o.Trace); err != nil {
		return nil, err
	}
	req := protocol.SubmitRequest{Spec: o.Spec, RetryFailed: o.RetryFailed, Verify: o.Spec.Verify}
	if o.Pins != nil {
		req.Pins = o.Pins.Policies
	}
	rep, err := co.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	// Another terminal's `msjfarm status` finds this run's server here.
	host, _ := os.Hostname()
	if live, err := json.Marshal(protocol.LiveRun{Campaign: rep.Campaign, NATSURL: url, PID: os.Getpid(),
		Host: host, Started: time.Now().UTC()}); err == nil {
		if err := o.Store.Put(ctx, protocol.LiveRunKey(rep.Campaign), live); err != nil {
			return nil, err
		}
		defer o.Store.Delete(context.Background(), protocol.LiveRunKey(rep.Campaign))
	}
	if o.Submitted != nil {
		o.Submitted(*rep)
	}
	out := &Outcome{Submit: *rep}
	finished := make(chan struct{})
	go func() {
		_, _ = co.Wait(ctx, rep.Campaign)
		close(finished)
	}()
	tk := time.NewTicker(ProgressInterval)
	defer tk.Stop()
	for {
		s, err := co.Status(ctx, rep.Campaign)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			out.Status = s
			if s.State != protocol.CampaignRunning {
				// The state says done as soon as the summary is stored;
				// the report is published after it. Wait (briefly: a
				// cancelled campaign may never close) for the campaign
				// to be closed, so that what the caller prints next —
				// the report's path — is there.
				select {
				case <-finished:
					if fs, err := co.Status(ctx, rep.Campaign); err == nil {
						s, out.Status = fs, fs
					}
				case <-ctx.Done():
				case <-time.After(finalizeWait):
				}
				if o.HTTP != nil && o.Linger > 0 {
					stopWorkers()
					// The caller prints its summary here, before the
					// wait: a Ctrl-C during the linger then ends a run
					// that has said everything (msjfarm run exits 0).
					if o.Lingering != nil {
						o.Lingering(s)
					}
					select {
					case <-ctx.Done():
					case <-time.After(o.Linger):
					}
				}
				return out, nil
			}
			if o.Progress != nil {
				o.Progress(s)
			}
		}
		select {
		case <-ctx.Done():
			// Stop the workers first (they give their tasks back), then
			// read where the campaign stands.
			stopWorkers()
			if s, err := co.Status(context.Background(), rep.Campaign); err == nil {
				out.Status = s
			}
			out.Interrupted = true
			return out, nil
		case <-tk.C:
		case <-finished:
		}
	}
}

// UploadTrace stores the trace f replays in st under its sha256
// (storage.PutTrace: put-if-absent, nothing written when it is there) and
// describes what it did; with no trace it does nothing. data is the
// content sweep.ReadTraceFile read (it set f.Trace.SHA256 and Size); nil
// means a trace given by sha256 alone, which must already be in st. The
// client that submits a sweep calls it, so that the farm never reads a
// path: msjfarm submit, and Run for msjfarm run.
func UploadTrace(ctx context.Context, st storage.Store, f *sweep.File, data []byte) (string, error) {
	if f.Trace == nil {
		return "", nil
	}
	if data == nil {
		if err := storage.CheckTrace(ctx, st, f.Trace.SHA256, f.Trace.Size, 0); err != nil {
			return "", fmt.Errorf("trace.sha256: %w", err)
		}
		return fmt.Sprintf("trace %s (%d bytes) already in %s", f.Trace.SHA256, f.Trace.Size, st.URL()), nil
	}
	sum, written, err := storage.PutTrace(ctx, st, data)
	if err != nil {
		return "", fmt.Errorf("trace.file: %w", err)
	}
	if sum != f.Trace.SHA256 || int64(len(data)) != f.Trace.Size {
		return "", fmt.Errorf("trace.file: the content to upload (sha256 %s, %d bytes) is not the one the sweep pins (%s, %d bytes)",
			sum, len(data), f.Trace.SHA256, f.Trace.Size)
	}
	if written {
		return fmt.Sprintf("trace %s (%d bytes) uploaded to %s", sum, len(data), st.URL()), nil
	}
	return fmt.Sprintf("trace %s (%d bytes) already in %s", sum, len(data), st.URL()), nil
}
