// Package worker pulls tasks from the farm's JetStream work queue, runs them
// (N replications at once), writes each result record to storage and acks.
//
// Per task message, the steps of lifecycle.go (diagram there and in
// docs/design.md, "A task message's life in a worker"): receive decodes it
// and refuses a malformed or forged one (Term, never retried); admit
// terminates it if the campaign was cancelled and acks it without running
// if its result is already stored (an earlier delivery finished but its
// ack was lost) or the message's ResultKey names a stored result (another
// campaign computed it); run marks it running and runs it, sending +WPI
// (msg.InProgress) every AckWait/3 so that a long replication is not
// redelivered, the task's run.deadline bounding the run; check refuses an
// impossible result (package worker/resultcheck); store writes the
// record.Record once under its content key and references it from
// campaigns/<c>/results/<task>.json (record.Store, both PutIfAbsent: a
// concurrent duplicate run cannot overwrite it and is counted in
// Stats.Duplicates); a failure is retried (Nak with a growing delay) while
// deliveries remain, else recorded as a failed record (Error set) and
// terminated. settle alone acts on the verdict: the state is written
// before the ack, and the ack comes last, so a crash at any point leads to
// a redelivery, never to a lost result. A worker that dies on the last
// delivery leaves the message unacked: the server's max-deliveries
// advisory then makes the coordinator record the failure.
//
// Storage that is unavailable (storage.IsUnavailable: unreachable, 5xx,
// a full or read-only disk...) is never a task failure: at any of the
// steps above the worker waits instead — it stops fetching, keeps its
// messages alive, holds finished records in memory and retries with
// back-off until the store is back (health.go; docs/design.md, "Storage
// outages"). A delivery is consumed only by a failure of the task itself.
//
// On shutdown (context cancelled, e.g. SIGTERM) the worker stops fetching,
// gives back the messages it fetched ahead but has not started (pull.go),
// lets running tasks finish for Options.Grace, then stops the rest and
// releases them (Nak without delay) so another worker takes them at once.
// A result held for unavailable storage is retried during the grace
// period too, and released (lost) at the hard stop.
//
// Cancellation of a running in-process replication goes through
// sim.Config.Context, which the engine polls every 1,024 events.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// Options configures a worker process.
type Options struct {
	Conn  *nats.Conn
	Store storage.Store
	// Runner runs replications (default InProcess{}).
	Runner Runner
	// Concurrency is the number of replications run at once (default
	// runtime.NumCPU()). A slot is handed on when its replication reports
	// 99% of its arrivals, so for that last 1% it may hold two.
	Concurrency int
	// Name identifies this worker in task states and provenance (default
	// <hostname>-<pid>).
	Name string
	// FetchWait bounds each pull request (default 2 s).
	FetchWait time.Duration
	// AheadBelow is the mean replication wall time under which the worker
	// fetches messages ahead of its free slots (pull.go; default 100 ms,
	// negative: never).
	AheadBelow time.Duration
	// Grace is how long running tasks may continue after shutdown starts
	// before they are stopped and released.
	Grace time.Duration
	// RetryDelay is the Nak delay after a failed attempt, multiplied by the
	// attempt number (default 2 s).
	RetryDelay time.Duration
	// RunLog, if set, receives one line per run start, finish, failure and
	// release ("start <campaign> <task> <worker> <attempt>"); the tests
	// count runs with it.
	RunLog io.Writer
	// Logf logs (default: discard).
	Logf func(format string, args ...any)
	// Log, if set, receives one structured line per task start, finish,
	// retry, failure and release, each with campaign, task, policy and
	// worker attributes (start and finish at Debug level).
	Log *slog.Logger
	// Observe, if set, is called after every replication (the worker's
	// metrics, package monitor).
	Observe func(TaskEvent)
	// TraceCache is where replayed traces fetched from Store are kept,
	// named by sha256 (default: the user cache directory's
	// msjfarm/traces); MaxTraceSize bounds a trace in bytes (default
	// storage.DefaultMaxTraceSize). See trace.go.
	TraceCache   string
	MaxTraceSize int64
}

// Stats counts what a worker did.
type Stats struct {
	Done, Failed, Retried, Released, Skipped, Terminated atomic.Int64
	// Reused counts tasks answered by a result already in the
	// content-addressed store (stored by another campaign after the
	// coordinator looked); Duplicates counts runs whose result had been
	// stored by a concurrent run of the same task meanwhile (the first
	// one is kept).
	Reused, Duplicates atomic.Int64
	// Running is the number of replications running now.
	Running atomic.Int64
	// StorageWaits counts the times a task waited for unavailable storage
	// (a held result, a start-up read, plugin pins), none of which costs
	// the task a delivery.
	StorageWaits atomic.Int64
	// Verified counts the spot-verification runs stored (verify.go);
	// they are not in Done.
	Verified atomic.Int64
	// GivenBack counts the messages fetched but not started when the
	// worker stopped, given back at once (Nak) for another worker.
	GivenBack atomic.Int64
	// Pulls counts the pull requests made (each asks for one or more
	// messages, pull.go).
	Pulls atomic.Int64
}

// Worker is a running worker.
type Worker struct {
	o Options
	// held are the verification requests passed on (verify.go, passOn)
	// still waiting to be republished: they hold no slot and no in-flight
	// permit, and Run waits for them before it returns.
	held       sync.WaitGroup
	js         jetstream.JetStream
	h          *protocol.Handles
	host       string
	ackWait    time.Duration
	maxDeliver int
	logMu      sync.Mutex
	cacheMu    sync.Mutex
	cancelled  map[string]cacheEntry
	traces     *traceCache
	health     *storageHealth
	// runMean is the mean wall time of the recent replications, in ns
	// (noteRun; 0 before the first): it decides fetching ahead (pull.go).
	runMean atomic.Int64
	// storeID is the worker's store identity, compared with the one each
	// message names (storeid.go); stop ends Run (set by Run before its
	// first fetch), and fatal is the error Run then returns.
	storeID idCache
	stop    context.CancelCauseFunc
	fatal   fatalErr
	// logged are the lines logOnce has logged (guarded by logMu).
	logged   map[string]bool
	fetchErr fetchErr
	Stats    Stats
}

type cacheEntry struct {
	cancelled bool
	at        time.Time
}

// New connects a worker to the layout, waiting for the coordinator to
// create it.
func New(ctx context.Context, o Options) (*Worker, error) {
	if o.Conn == nil || o.Store == nil {
		return nil, errors.New("worker: Conn and Store are required")
	}
	if o.Runner == nil {
		o.Runner = InProcess{}
	}
	if _, ok := o.Runner.(InProcess); ok {
		// Its results name this executable by sha256: hash it now (40 ms
		// for a 50 MB binary) rather than inside the first task.
		SelfSHA256()
	}
	if o.Concurrency <= 0 {
		o.Concurrency = runtime.NumCPU()
	}
	host, _ := os.Hostname()
	if o.Name == "" {
		o.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	if o.FetchWait <= 0 {
		o.FetchWait = 2 * time.Second
	}
	if o.AheadBelow == 0 {
		o.AheadBelow = defaultAheadBelow
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 2 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	js, err := jetstream.New(o.Conn)
	if err != nil {
		return nil, err
	}
	h, err := protocol.Open(ctx, js, 500*time.Millisecond)
	if err != nil {
		return nil, err
	}
	cfg := h.Workers.CachedInfo().Config
	w := &Worker{o: o, js: js, h: h, host: host, ackWait: cfg.AckWait, maxDeliver: cfg.MaxDeliver,
		cancelled: map[string]cacheEntry{}, traces: newTraceCache(o.Store, o.TraceCache, o.MaxTraceSize, o.Logf)}
	w.health = newStorageHealth(o.Store, o.Name, o.Log, o.Logf)
	if w.ackWait <= 0 {
		w.ackWait = protocol.DefaultAckWait
	}
	return w, nil
}

// Name is the worker's identity.
func (w *Worker) Name() string { return w.o.Name }

// Run pulls and runs tasks until ctx ends, then drains as described in the
// package doc and returns: nil, or ErrOtherStore (wrapped) when a message
// showed that the worker stores elsewhere than its coordinator reads.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.checkHolder(ctx); err != nil {
		return err
	}
	ctx, w.stop = context.WithCancelCause(ctx)
	w.serve(ctx)
	return w.fatal.err()
}

func (w *Worker) serve(ctx context.Context) {
	hard, hardCancel := context.WithCancel(context.Background())
	defer hardCancel()
	w.health.setStop(hard)
	go func() {
		<-ctx.Done()
		if w.o.Grace > 0 {
			t := time.NewTimer(w.o.Grace)
			defer t.Stop()
			select {
			case <-t.C:
			case <-hard.Done():
			}
		}
		hardCancel()
	}()
	// The runner's plugin processes (if any) stop with the worker, after
	// the last task (defers run in reverse order).
	if c, ok := w.o.Runner.(io.Closer); ok {
		defer c.Close()
	}
	hbCtx, hbStop := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); w.heartbeat(hbCtx) }()
	defer func() { hbStop(); <-hbDone }()
	p := newPuller(w)
	defer w.held.Wait()
	defer p.wg.Wait()
	for ctx.Err() == nil {
		// Take no task while storage is unavailable: it could neither be
		// checked against stored results nor have its result stored.
		select {
		case <-w.health.Up():
		case <-ctx.Done():
			return
		}
		n := p.want()
		if n == 0 {
			select {
			case <-p.freed:
			case <-ctx.Done():
				return
			}
			continue
		}
		p.assigned.Add(int64(n))
		if !w.fetch(ctx, hard, n, p) {
			return
		}
	}
}

// fetch asks for n messages (counted in p.assigned) and hands each to
// p.dispatch, giving back what did not come. It returns false when ctx
// ended while it waited (what the pull request still delivers is then
// given back at once).
func (w *Worker) fetch(ctx, hard context.Context, n int, p *puller) bool {
	// The wait is jittered (FetchWait ± 50%): pull requests of idle
	// workers that all expire after the same time keep their order in the
	// server's queue for ever, so one worker got every new message, and a
	// verification request it may not run came back to it each time it
	// passed it on (verify.go).
	w.Stats.Pulls.Add(1)
	batch, err := w.h.Workers.Fetch(n, jetstream.FetchMaxWait(w.o.FetchWait/2+rand.N(w.o.FetchWait)))
	if err != nil {
		p.giveBack(n)
		w.fetchFailed(ctx, err)
		return true
	}
	got := 0
	msgs := batch.Messages()
	for {
		select {
		case msg, ok := <-msgs:
			if !ok {
				p.giveBack(n - got)
				if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
					// Answered at once (no responders: the server lost its
					// JetStream state), so without the pause this loop
					// logged 7,400 lines a second.
					w.fetchFailed(ctx, err)
				}
				return true
			}
			got++
			if ctx.Err() != nil {
				_ = msg.Nak() // stopping: give it back
				w.Stats.GivenBack.Add(1)
				p.giveBack(1)
				continue
			}
			p.dispatch(ctx, hard, msg)
		case <-ctx.Done():
			// Stop now rather than at the end of the fetch wait.
			go func() {
				for msg := range msgs {
					_ = msg.Nak()
				}
			}()
			return false
		}
	}
}

// fetchFailed logs a failed fetch and waits a second (or until ctx ends)
// before the next. The same error again is logged once a minute, with how
// many times it came in between: a worker whose server had lost its
// streams wrote 48 MB of one line in a few minutes.
func (w *Worker) fetchFailed(ctx context.Context, err error) {
	msg := err.Error()
	w.logMu.Lock()
	f := &w.fetchErr
	now := time.Now()
	switch {
	case msg != f.msg || now.Sub(f.at) >= time.Minute:
		if f.repeats > 0 {
			w.o.Logf("worker %s: fetch: %s (%d more times since %s)", w.o.Name, f.msg, f.repeats, f.at.Format(time.TimeOnly))
		}
		w.o.Logf("worker %s: fetch: %s (trying again every second)", w.o.Name, msg)
		*f = fetchErr{msg: msg, at: now}
	default:
		f.repeats++
	}
	w.logMu.Unlock()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
}

// fetchErr is the last fetch error logged, when, and how often it came
// again since (guarded by logMu).
type fetchErr struct {
	msg     string
	at      time.Time
	repeats int
}

func (w *Worker) logRun(kind, campaign, task string, attempt int) {
	if w.o.RunLog == nil {
		return
	}
	w.logMu.Lock()
	defer w.logMu.Unlock()
	fmt.Fprintf(w.o.RunLog, "%s %s %s %s %d\n", kind, campaign, task, w.o.Name, attempt)
}

// io bounds storage and KV calls; they must survive a cancelled worker
// context so that a task finished during the grace period is recorded.
func ioCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (w *Worker) setState(campaign, task string, st protocol.TaskState) {
	st.Worker, st.Updated = w.o.Name, time.Now().UTC()
	data, _ := json.Marshal(st)
	ctx, cancel := ioCtx()
	defer cancel()
	if _, err := w.h.TaskStates.Put(ctx, protocol.TaskKey(campaign, task), data); err != nil {
		w.o.Logf("worker %s: task state %s: %v", w.o.Name, task, err)
	}
}

// campaignCancelled reads the campaign's state, cached for a second, within
// ctx (a read that fails or times out answers "not cancelled").
func (w *Worker) campaignCancelled(ctx context.Context, campaign string) bool {
	w.cacheMu.Lock()
	e, ok := w.cancelled[campaign]
	w.cacheMu.Unlock()
	// A cached "cancelled" is re-read: the campaign may have been
	// resubmitted, and terminating its new messages would lose them until
	// the coordinator's next reconcile.
	if ok && !e.cancelled && time.Since(e.at) < time.Second {
		return false
	}
	c := false
	if kve, err := w.h.Campaigns.Get(ctx, campaign); err == nil {
		var st protocol.CampaignState
		if json.Unmarshal(kve.Value(), &st) == nil {
			c = st.State == protocol.CampaignCancelled
		}
	}
	w.cacheMu.Lock()
	w.cancelled[campaign] = cacheEntry{cancelled: c, at: time.Now()}
	w.cacheMu.Unlock()
	return c
}

// MaxNameLen bounds a worker's name (CheckName).
const MaxNameLen = 128

// CheckName refuses a worker name that is not 1 to MaxNameLen letters,
// digits and "._-@:+": the name is part of NATS subjects and message ids,
// is stored in every record and shown in the operator's status. An escape
// sequence in it cleared the operator's screen and a newline forged a
// status line; a NATS wildcard or a space broke the heartbeat's subject;
// 5,000 characters passed the server's control line, which closed the
// connection for good while the worker said it was healthy.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("worker name: %d bytes; want 1 to %d", len(name), MaxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@:+", r)) {
			return fmt.Errorf("worker name %q: %q is not allowed (letters, digits and ._-@:+ only)", name, r)
		}
	}
	return nil
}

// PermanentError marks a task error that another attempt cannot fix.
type PermanentError struct{ Err error }

// NotServedError is an attempt this worker cannot make while another
// worker of the farm may: its runner lacks the policy (an in-process
// worker and a third-party plugin, a family missing from its search
// path, a pinned binary it neither has nor can fetch, a trace on the
// plugin runner without a fallback). The task is passed on for another
// worker (retryOrFail, passed), not failed: a farm with one
// misconfigured worker failed for good 12 tasks of 40 the others ran.
// After NotServedMaxHeld passed on, it fails with it.
type NotServedError struct{ Err error }

func (e *NotServedError) Error() string {
	return "this worker cannot run the task (another may): " + e.Err.Error()
}
func (e *NotServedError) Unwrap() error { return e.Err }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }
