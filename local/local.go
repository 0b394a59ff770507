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
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/scratch"
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
	// Reconcile is the coordinator's periodic reconcile (0: its default,
	// 30 s). Nothing a run needs may wait for it; a test sets it long to
	// show so.
	Reconcile time.Duration
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
	// ReportError is why the finished campaign's report was not
	// published (nil: it was, or none was needed).
	ReportError error
}

// Run runs o.Spec to the end (or until ctx ends): it starts the embedded
// server, the coordinator and o.Workers local workers, submits the
// campaign, waits for it to finish (its summary, manifest and report are
// then in o.Store) and stops everything it started. An ended ctx is not an
// error: the Outcome says Interrupted.
//
// Each piece is started by its own step below, which registers how to stop
// it on the farm; the farm stops them in the reverse order when Run
// returns, so the workers give their tasks back before the coordinator,
// the connection and the server go.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	o.defaults()
	f := &farm{}
	defer f.stop()
	if err := f.startServer(o.StoreDir); err != nil {
		return nil, err
	}
	if err := f.startCoordinator(ctx, &o); err != nil {
		return nil, err
	}
	if err := f.startWorkers(ctx, &o); err != nil {
		return nil, err
	}
	rep, err := f.submit(ctx, &o)
	if err != nil {
		return nil, err
	}
	return f.follow(ctx, &o, rep)
}

// check refuses Options that Run cannot start from.
func (o *Options) check() error {
	switch {
	case o.Spec == nil:
		return errors.New("local: Options.Spec is nil")
	case o.Store == nil:
		return errors.New("local: Options.Store is nil")
	case o.Runner == nil:
		return errors.New("local: Options.Runner is nil")
	case o.Workers < 1:
		return fmt.Errorf("local: Options.Workers must be >= 1, got %d", o.Workers)
	}
	return nil
}

// defaults fills the zero values Options documents: the protocol's
// redelivery settings, and a metric set when a page serves them.
func (o *Options) defaults() {
	if o.AckWait == 0 {
		o.AckWait = protocol.DefaultAckWait
	}
	if o.MaxDeliver == 0 {
		o.MaxDeliver = protocol.DefaultMaxDeliver
	}
	if o.Metrics == nil && o.HTTP != nil {
		o.Metrics = monitor.NewMetrics()
	}
}

// farm is what Run started, and how to stop it: stops run last in, first
// out.
type farm struct {
	stops []func()
	url   string
	token string // the embedded server's (LiveRun.TokenFile)
	nc    *nats.Conn
	co    *coordinator.Coordinator
	// stopWorkers stops the workers once (they give their tasks back);
	// Run calls it early on an interruption and before lingering.
	stopWorkers func()
}

// onStop registers fn to run when the farm stops.
func (f *farm) onStop(fn func()) { f.stops = append(f.stops, fn) }

// stop stops what was started, newest first.
func (f *farm) stop() {
	for i := len(f.stops) - 1; i >= 0; i-- {
		f.stops[i]()
	}
}

// startServer starts the embedded JetStream server on dir (a temporary
// directory, removed at stop, when dir is "") and connects to it in
// process.
func (f *farm) startServer(dir string) error {
	if dir == "" {
		var err error
		if dir, err = scratch.MkdirTemp("msjfarm-nats-"); err != nil {
			return err
		}
		f.onStop(func() { os.RemoveAll(dir) })
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return err
	}
	f.token = hex.EncodeToString(tok[:])
	srv, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: dir, Token: f.token})
	if err != nil {
		return err
	}
	f.onStop(func() { protocol.StopEmbedded(srv) })
	nc, err := protocol.Connect(protocol.ConnOptions{URL: url, Name: "msjfarm-run", InProcess: srv, Token: f.token})
	if err != nil {
		return err
	}
	f.onStop(nc.Close)
	f.url, f.nc = url, nc
	return nil
}

// startCoordinator starts the coordinator and waits until it is ready.
// It outlives ctx so that an interrupted run can still report its status;
// it stops when Run returns.
func (f *farm) startCoordinator(ctx context.Context, o *Options) error {
	co, err := coordinator.New(ctx, coordinator.Options{Conn: f.nc, Store: o.Store, Logf: o.Logf, Reconcile: o.Reconcile,
		Layout: protocol.Layout{AckWait: o.AckWait, MaxDeliver: o.MaxDeliver}})
	if err != nil {
		return err
	}
	coCtx, coStop := context.WithCancel(context.Background())
	coDone := make(chan error, 1)
	go func() { coDone <- co.Run(coCtx) }()
	f.onStop(func() { coStop(); <-coDone })
	select {
	case <-co.Ready():
	case err := <-coDone:
		coDone <- err
		return fmt.Errorf("coordinator: %w", err)
	}
	f.co = co
	return nil
}

// startWorkers serves the live page when o.HTTP is set, then starts the
// local workers (o.Workers slots) on ctx.
func (f *farm) startWorkers(ctx context.Context, o *Options) error {
	if o.HTTP != nil {
		f.onStop(func() { o.HTTP.Close() })
		srv, err := monitor.New(monitor.Options{Coordinator: f.co, Conn: f.nc, Store: o.Store, Metrics: o.Metrics})
		if err != nil {
			return err
		}
		served := make(chan struct{})
		go func() { defer close(served); _ = srv.Serve(o.HTTP) }()
		f.onStop(func() { _ = srv.Close(); <-served })
	}
	wo := worker.Options{Conn: f.nc, Store: o.Store, Concurrency: o.Workers, Logf: o.Logf,
		TraceCache: o.TraceCache, MaxTraceSize: o.MaxTraceSize,
		FetchWait: 250 * time.Millisecond, Runner: o.Runner, Log: o.Log, RunLog: o.RunLog}
	if o.Metrics != nil {
		wo.Observe = o.Metrics.ObserveTask
	}
	w, err := worker.New(ctx, wo)
	if err != nil {
		return err
	}
	wCtx, wStop := context.WithCancel(ctx)
	wDone := make(chan error, 1)
	go func() { wDone <- w.Run(wCtx) }()
	stopVerifier, err := startVerifier(ctx, *o, wo, w.Name())
	if err != nil {
		wStop()
		<-wDone
		return err
	}
	f.stopWorkers = func() {
		if wStop != nil {
			stopVerifier()
			wStop()
			<-wDone
			wStop = nil
		}
	}
	f.onStop(f.stopWorkers)
	return nil
}

// submit uploads the sweep's trace, submits the campaign and advertises
// the embedded server in storage (removed at stop), where another
// terminal's `msjfarm status` finds it.
func (f *farm) submit(ctx context.Context, o *Options) (*protocol.SubmitReply, error) {
	if _, err := UploadTrace(ctx, o.Store, o.Spec, o.Trace); err != nil {
		return nil, err
	}
	req := protocol.SubmitRequest{Spec: o.Spec, RetryFailed: o.RetryFailed, Verify: o.Spec.Verify}
	if o.Pins != nil {
		req.Pins = o.Pins.Policies
	}
	rep, err := f.co.Submit(ctx, req)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tokenFile, err := f.writeToken()
	if err != nil {
		return nil, err
	}
	if live, err := json.Marshal(protocol.LiveRun{Campaign: rep.Campaign, NATSURL: f.url, PID: os.Getpid(),
		Host: host, Started: time.Now().UTC(), TokenFile: tokenFile}); err == nil {
		if err := o.Store.Put(ctx, protocol.LiveRunKey(rep.Campaign), live); err != nil {
			return nil, err
		}
		f.onStop(func() { o.Store.Delete(context.Background(), protocol.LiveRunKey(rep.Campaign)) })
	}
	if o.Submitted != nil {
		o.Submitted(*rep)
	}
	return rep, nil
}

// writeToken writes the embedded server's token to a file only this user
// reads, in the process's scratch directory (removed at stop), for
// `msjfarm status` and `cancel` in another terminal (protocol.LiveRun).
func (f *farm) writeToken() (string, error) {
	t, err := scratch.CreateTemp("run-token-") // 0600, in a 0700 directory
	if err != nil {
		return "", err
	}
	f.onStop(func() { os.Remove(t.Name()) })
	_, err = t.WriteString(f.token)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return t.Name(), err
}

// follow polls the campaign's status every ProgressInterval (or as soon
// as it is closed) until it is no longer running, then finishes; an ended
// ctx interrupts it.
func (f *farm) follow(ctx context.Context, o *Options, rep *protocol.SubmitReply) (*Outcome, error) {
	out := &Outcome{Submit: *rep}
	finished := make(chan struct{})
	go func() {
		_, _ = f.co.Wait(ctx, rep.Campaign)
		close(finished)
	}()
	tk := time.NewTicker(ProgressInterval)
	defer tk.Stop()
	for {
		s, err := f.co.Status(ctx, rep.Campaign)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			out.Status = s
			if s.State != protocol.CampaignRunning {
				f.finish(ctx, o, out, finished)
				return out, nil
			}
			if o.Progress != nil {
				o.Progress(s)
			}
			if err := givenUp(f.co.FinalisationError(rep.Campaign)); err != nil {
				f.interrupt(out)
				return nil, fmt.Errorf("campaign %s: every task is finished and stored, but the campaign could not be finalised (summary, manifest, report): %w; "+
					"once that is fixed, run the same command again: nothing is re-run", rep.Campaign, err)
			}
			if err := givenUp(f.co.ReconcileError(rep.Campaign)); err != nil {
				// The run's own NATS server and store: what fails three
				// times in a row (its JetStream store full) does not
				// mend while the run waits, "0 running, ETA ?".
				f.interrupt(out)
				return nil, fmt.Errorf("campaign %s: its missing tasks could not be queued: %w; "+
					"once that is fixed, run the same command again: the results stored so far are kept", rep.Campaign, err)
			}
		}
		select {
		case <-ctx.Done():
			f.interrupt(out)
			return out, nil
		case <-tk.C:
		case <-finished:
		}
	}
}

// givenUp is the finalisation (or reconcile) error a run stops at: one
// the store will keep giving (no space, a read-only or quota-bound file
// system, no permission) at once, any other after finalGiveUp failures in
// a row. A coordinator of its own tries again at every reconcile, as
// storage may come back; a run alone on its store was held "4/4 done, ETA
// 0s" for ever by a full disk.
func givenUp(fails int, err error) error {
	if err == nil {
		return nil
	}
	if storage.Lasting(err) || fails >= finalGiveUp {
		return err
	}
	return nil
}

// finalGiveUp is how many finalisations in a row may fail before a run
// stops (givenUp).
const finalGiveUp = 3

// finish waits for a campaign that is no longer running to be closed,
// then lingers if asked. The state says done as soon as the summary is
// stored; the report is published after it. Wait (briefly: a cancelled
// campaign may never close) for the campaign to be closed, so that what
// the caller prints next — the report's path — is there.
func (f *farm) finish(ctx context.Context, o *Options, out *Outcome, finished <-chan struct{}) {
	s := out.Status
	select {
	case <-finished:
		if fs, err := f.co.Status(ctx, out.Submit.Campaign); err == nil {
			s, out.Status = fs, fs
		}
	case <-ctx.Done():
	case <-time.After(finalizeWait):
	}
	out.ReportError = f.co.ReportError(out.Submit.Campaign)
	if o.HTTP == nil || o.Linger <= 0 {
		return
	}
	f.stopWorkers()
	// The caller prints its summary here, before the wait: a Ctrl-C during
	// the linger then ends a run that has said everything (msjfarm run
	// exits 0).
	if o.Lingering != nil {
		o.Lingering(s)
	}
	select {
	case <-ctx.Done():
	case <-time.After(o.Linger):
	}
}

// interrupt records where an interrupted campaign stands: the workers
// stop first (they give their tasks back), then the status is read.
func (f *farm) interrupt(out *Outcome) {
	f.stopWorkers()
	if s, err := f.co.Status(context.Background(), out.Submit.Campaign); err == nil {
		out.Status = s
	}
	out.Interrupted = true
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
