// Package worker pulls tasks from the farm's JetStream work queue, runs them
// (N replications at once), writes each result record to storage and acks.
//
// Per task message:
//
//  1. decode it; a malformed message is terminated (Term), never retried;
//  2. if the campaign was cancelled, Term; if a result already exists in
//     storage (an earlier delivery finished but its ack was lost), or the
//     message's ResultKey names a stored result (another campaign computed
//     it), reference it and ack without running;
//  3. mark it running in the msjfarm_tasks bucket and run it, sending
//     +WPI (msg.InProgress) every AckWait/3 so a long replication is not
//     redelivered while it runs; the task's run.deadline bounds the run;
//  4. success: store the record.Record once under its content key and
//     reference it from campaigns/<c>/results/<task>.json (record.Store,
//     both PutIfAbsent: a concurrent duplicate run, of this campaign or of
//     another sharing the storage, cannot overwrite it and is counted in
//     Stats.Duplicates), mark it done, then ack (ack last, so a crash at
//     any point leads to a redelivery, never to a lost result);
//  5. failure: Nak with a growing delay while deliveries remain; on the last
//     delivery write a failed record (Error set), mark it failed and Term.
//     A worker that dies on the last delivery leaves the message unacked:
//     the server's max-deliveries advisory then makes the coordinator record
//     the failure.
//
// Storage that is unavailable (storage.IsUnavailable: unreachable, 5xx,
// a full or read-only disk...) is never a task failure: at any of the
// steps above the worker waits instead — it stops fetching, keeps its
// messages alive, holds finished records in memory and retries with
// back-off until the store is back (health.go; docs/design.md, "Storage
// outages"). A delivery is consumed only by a failure of the task itself.
//
// On shutdown (context cancelled, e.g. SIGTERM) the worker stops fetching,
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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
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
}

// Worker is a running worker.
type Worker struct {
	o          Options
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
	Stats      Stats
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
	if o.FetchWait <= 0 {
		o.FetchWait = 2 * time.Second
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
// package doc and returns.
func (w *Worker) Run(ctx context.Context) error {
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
	slots := make(chan struct{}, w.o.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		// Take no task while storage is unavailable: it could neither be
		// checked against stored results nor have its result stored.
		select {
		case <-w.health.Up():
		case <-ctx.Done():
			return nil
		}
		// Wait for at least one free slot, then ask for as many messages as
		// there are free slots.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		n := 1
	fill:
		for n < w.o.Concurrency {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break fill
			}
		}
		batch, err := w.h.Workers.Fetch(n, jetstream.FetchMaxWait(w.o.FetchWait))
		if err != nil {
			for range n {
				<-slots
			}
			w.o.Logf("worker %s: fetch: %v", w.o.Name, err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		got := 0
		msgs := batch.Messages()
	deliver:
		for {
			select {
			case msg, ok := <-msgs:
				if !ok {
					break deliver
				}
				got++
				if ctx.Err() != nil {
					_ = msg.Nak() // stopping: give it back
					continue
				}
				wg.Add(1)
				go func() {
					var once sync.Once
					release := func() { once.Do(func() { <-slots }) }
					defer func() { release(); wg.Done() }()
					w.handle(ctx, hard, msg, release)
				}()
			case <-ctx.Done():
				// Stop now rather than at the end of the fetch wait; what
				// the pull request still delivers is given back at once.
				go func() {
					for msg := range msgs {
						_ = msg.Nak()
					}
				}()
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			w.o.Logf("worker %s: fetch: %v", w.o.Name, err)
		}
		for range n - got {
			<-slots
		}
	}
	return nil
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

// campaignCancelled reads the campaign's state, cached for a second.
func (w *Worker) campaignCancelled(campaign string) bool {
	w.cacheMu.Lock()
	e, ok := w.cancelled[campaign]
	w.cacheMu.Unlock()
	// A cached "cancelled" is re-read: the campaign may have been
	// resubmitted, and terminating its new messages would lose them until
	// the coordinator's next reconcile.
	if ok && !e.cancelled && time.Since(e.at) < time.Second {
		return false
	}
	ctx, cancel := ioCtx()
	defer cancel()
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

var errCampaignCancelled = errors.New("campaign cancelled")

// handle processes one message. release frees the message's slot: it is
// called as soon as the replication has finished, so that the next one
// starts while this one's result is written and acked.
func (w *Worker) handle(ctx, hard context.Context, msg jetstream.Msg, release func()) {
	attempt := 1
	if meta, err := msg.Metadata(); err == nil {
		attempt = int(meta.NumDelivered)
	}
	tm, err := protocol.DecodeTaskMsg(msg.Subject(), msg.Data())
	if ierr := (*protocol.TaskIntegrityError)(nil); errors.As(err, &ierr) {
		// Refused, never run: a task whose content is not what its id
		// says. The state names the message for the coordinator; the
		// campaign's own message for the task is published again.
		where := msg.Subject()
		if meta, merr := msg.Metadata(); merr == nil {
			where = fmt.Sprintf("message %d on %s (published %s)", meta.Sequence.Stream, msg.Subject(), meta.Timestamp.UTC().Format(time.RFC3339))
		}
		reason := fmt.Sprintf("%s: %s", where, ierr.Reason)
		w.o.Logf("worker %s: refused task %s: %s", w.o.Name, tm.Task.ID, reason)
		w.setState(tm.Campaign, tm.Task.ID, protocol.TaskState{State: protocol.StateRejected, Attempt: attempt, Error: reason})
		_ = msg.TermWithReason("task content does not match its id")
		w.Stats.Terminated.Add(1)
		return
	}
	if err != nil {
		w.o.Logf("worker %s: %v", w.o.Name, err)
		_ = msg.TermWithReason("malformed task message")
		w.Stats.Terminated.Add(1)
		return
	}
	c, t := tm.Campaign, &tm.Task
	if w.campaignCancelled(c) {
		_ = msg.TermWithReason("campaign cancelled")
		w.Stats.Terminated.Add(1)
		return
	}
	key := storage.ResultKey(c, t.ID)
	// Unavailable storage is waited for (withStorage): the task is neither
	// run (its result may exist) nor failed.
	serr := w.withStorage(hard, msg, false, func(ctx context.Context) error {
		_, err := w.o.Store.Stat(ctx, key)
		return err
	})
	if errors.Is(serr, errStopping) {
		w.releaseHeld(msg, c, t, attempt, serr)
		return
	}
	if serr == nil {
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateDone, Attempt: attempt})
		_ = msg.Ack()
		w.Stats.Skipped.Add(1)
		return
	}
	// Another campaign (or another msjfarm run sharing this storage) may
	// have stored the result since the coordinator looked.
	if tm.ResultKey != "" {
		ok, rerr := w.reuse(hard, msg, c, t.ID, tm.ResultKey)
		if rerr != nil {
			w.releaseHeld(msg, c, t, attempt, rerr)
			return
		}
		if ok {
			w.setState(c, t.ID, protocol.TaskState{State: protocol.StateDone, Attempt: attempt})
			_ = msg.Ack()
			w.Stats.Reused.Add(1)
			return
		}
	}
	// "running" is for status displays: it is written while the replication
	// starts rather than before (a KV round trip between two tasks), and
	// before any later state of the task. A redelivered task's running
	// state keeps the error its previous attempt reported, so that a
	// worker dying on this attempt does not leave the coordinator's
	// max-deliveries record with "last error: none reported".
	runningSet := make(chan struct{})
	go func() {
		defer close(runningSet)
		st := protocol.TaskState{State: protocol.StateRunning, Attempt: attempt}
		if attempt > 1 {
			st.Error = w.previousError(c, t.ID)
		}
		w.setState(c, t.ID, st)
	}()
	w.logRun("start", c, t.ID, attempt)
	w.taskLog(slog.LevelDebug, "task started", c, t, "attempt", attempt)

	runCtx, cancelRun := context.WithCancelCause(WithCampaign(hard, c))
	defer cancelRun(nil)
	// Heartbeat: keep the message ours while the replication runs, and stop
	// it if the campaign is cancelled meanwhile.
	hbDone := make(chan struct{})
	go func() {
		// Heartbeat at AckWait/3, and at least every 2 s so that a
		// cancelled campaign stops promptly.
		every := min(max(w.ackWait/3, 20*time.Millisecond), 2*time.Second)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-tk.C:
				_ = msg.InProgress()
				if w.campaignCancelled(c) {
					cancelRun(errCampaignCancelled)
				}
			}
		}
	}()
	// Hand the slot on when the replication reports 99% of its arrivals:
	// the next task's fetch and set-up (about 1 ms) then overlap this one's
	// last 1% instead of leaving a core idle between the two.
	progress := func(done, total int64) {
		if total > 0 && done*100 >= total*99 {
			release()
		}
	}
	var (
		out      *Outcome
		started  time.Time
		wall     time.Duration
		runCause error // why the run's own context ended, if it did
		// deadlineHit: the replication's run.deadline fired (a second
		// time makes the task's failure permanent: deadlineVerdict).
		deadlineHit bool
	)
	for delay, waited := backoffMin, false; ; delay = min(2*delay, backoffMax) {
		// The deadline bounds the replication, not a wait for storage.
		rctx, cancelDL := runCtx, context.CancelFunc(func() {})
		if t.Run.Deadline > 0 {
			rctx, cancelDL = context.WithTimeoutCause(runCtx, t.Run.Deadline,
				fmt.Errorf("run.deadline %v exceeded", t.Run.Deadline))
		}
		started = time.Now()
		w.Stats.Running.Add(1)
		// The task's trace (if any) is fetched by content here, so that a
		// store that is down waits like any other storage read.
		var tctx context.Context
		if tctx, err = w.withTaskTrace(rctx, t); err == nil {
			out, err = w.o.Runner.Run(tctx, t, progress)
		}
		wall = time.Since(started)
		w.Stats.Running.Add(-1)
		runCause = context.Cause(rctx)
		deadlineHit = errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancelDL()
		if err == nil || !storage.IsUnavailable(err) || runCtx.Err() != nil {
			break
		}
		// The runner could not read what the task needs from storage
		// (the campaign's plugin pins, a pinned plugin binary): nothing
		// ran, and it is not the task's failure. Wait for the store (the
		// heartbeat above keeps the message) and try again.
		w.health.Down(err, started)
		if !waited {
			waited = true
			w.Stats.StorageWaits.Add(1)
		}
		tw := time.NewTimer(delay)
		select {
		case <-runCtx.Done():
		case <-tw.C:
		case <-w.health.Up():
		}
		tw.Stop()
		if runCtx.Err() != nil {
			err = fmt.Errorf("%w (while waiting for storage: %w)", runCtx.Err(), err)
			runCause = context.Cause(runCtx)
			break
		}
	}
	close(hbDone)
	release()
	<-runningSet
	// Let the fetch loop take the freed slot before this goroutine stores
	// the result: the next task's pull request then overlaps the write
	// (and its fsync) instead of waiting behind it.
	runtime.Gosched()

	switch {
	case err == nil:
		rec := record.Record{Task: *t, Result: out.Result,
			Provenance: recordProvenance(out.Provenance, w.host, w.o.Name, attempt, started, wall)}
		// Stored once under its content key, referenced by the campaign
		// (record.Store); a concurrent run of the same task that stored
		// first wins and this result is discarded, noticed and counted. A
		// runner that does not name its engine (a test double) cannot be
		// keyed: its record stays with the campaign and is never reused.
		// While storage is unavailable the record is held here and the
		// write retried (withStorage): the replication is never thrown
		// away for an outage.
		var rkey string
		var created bool
		tries := 0
		perr := w.withStorage(hard, msg, true, func(ictx context.Context) error {
			tries++
			if _, ok := record.ImplOf(rec.Provenance); ok {
				var c1 bool
				var err error
				rkey, c1, err = record.Store(ictx, w.o.Store, c, &rec)
				// A retry finds what an earlier try of this call stored
				// (or stored before its answer was lost): that is ours,
				// not a concurrent run's.
				created = created || c1 || (err == nil && tries > 1 && w.storedIsOurs(ictx, rkey, &rec))
				return err
			}
			data, err := json.Marshal(&rec)
			if err != nil {
				return err
			}
			created = true
			_, err = w.o.Store.PutIfAbsent(ictx, key, data)
			return err
		})
		if errors.Is(perr, errStopping) {
			w.releaseHeld(msg, c, t, attempt, perr)
			return
		}
		if perr != nil {
			w.retry(hard, msg, c, t, attempt, fmt.Errorf("writing result: %w", perr))
			return
		}
		if !created {
			w.o.Logf("worker %s: task %s: result %s was stored by a concurrent run meanwhile; kept that one", w.o.Name, t.ID, rkey)
			w.logRun("duplicate", c, t.ID, attempt)
			w.Stats.Duplicates.Add(1)
		}
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateDone, Attempt: attempt})
		w.logRun("done", c, t.ID, attempt)
		actx, cancel := ioCtx()
		if aerr := msg.DoubleAck(actx); aerr != nil {
			w.o.Logf("worker %s: ack %s: %v (the result is stored; a redelivery will just ack)", w.o.Name, t.ID, aerr)
		}
		cancel()
		w.Stats.Done.Add(1)
		var events uint64
		if out != nil && out.Result != nil {
			events = out.Result.Events
		}
		w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeDone, Wall: wall, Events: events})
		w.taskLog(slog.LevelDebug, "task done", c, t, "attempt", attempt, "wall", wall.Round(time.Millisecond))
	case errors.Is(context.Cause(runCtx), errCampaignCancelled):
		_ = msg.TermWithReason("campaign cancelled")
		w.logRun("cancelled", c, t.ID, attempt)
		w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeCancelled, Wall: wall, Err: err})
		w.Stats.Terminated.Add(1)
	case hard.Err() != nil && isCtxErr(err):
		// Shutting down: give the task back at once.
		_ = msg.Nak()
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateReleased, Attempt: attempt})
		w.logRun("release", c, t.ID, attempt)
		w.Stats.Released.Add(1)
		w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeReleased, Wall: wall, Err: err})
		w.taskLog(slog.LevelInfo, "task released", c, t, "attempt", attempt)
	default:
		if cause := runCause; cause != nil && isCtxErr(err) {
			err = cause
		}
		err = deadlineVerdict(deadlineHit, attempt, err)
		w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeError, Wall: wall, Err: err})
		var perm *PermanentError
		if errors.As(err, &perm) {
			w.fail(hard, msg, c, t, attempt, err)
			return
		}
		w.retry(hard, msg, c, t, attempt, err)
	}
}

// reuse references the stored result rkey from campaign c's task tid if
// it exists. Unavailable storage is waited for; err is set only when the
// worker stops meanwhile (errStopping).
func (w *Worker) reuse(hard context.Context, msg jetstream.Msg, c, tid, rkey string) (ok bool, err error) {
	err = w.withStorage(hard, msg, false, func(ctx context.Context) error {
		_, err := w.o.Store.Stat(ctx, storage.StoredResultKey(rkey))
		return err
	})
	if errors.Is(err, errStopping) {
		return false, err
	}
	if err != nil {
		return false, nil
	}
	err = w.withStorage(hard, msg, true, func(ctx context.Context) error {
		_, err := w.o.Store.PutIfAbsent(ctx, storage.ResultKey(c, tid), record.RefJSON(rkey))
		return err
	})
	if errors.Is(err, errStopping) {
		return false, err
	}
	if err != nil {
		w.o.Logf("worker %s: task %s: referencing stored result %s: %v", w.o.Name, tid, rkey, err)
		return false, nil
	}
	return true, nil
}

// storedIsOurs reports whether the result stored under rkey is
// byte-identical to rec: a retried write whose first try did store it
// (its answer lost in the outage). A concurrent run of the same task
// stores the same result with another provenance (worker, times), so it
// is never mistaken for ours.
func (w *Worker) storedIsOurs(ctx context.Context, rkey string, rec *record.Record) bool {
	mine, err := json.Marshal(rec)
	if err != nil {
		return false
	}
	got, err := w.o.Store.Get(ctx, storage.StoredResultKey(rkey))
	return err == nil && string(got) == string(mine)
}

// previousError is the error the task's state reports (its previous
// attempt's), or "".
func (w *Worker) previousError(c, tid string) string {
	ctx, cancel := ioCtx()
	defer cancel()
	e, err := w.h.TaskStates.Get(ctx, protocol.TaskKey(c, tid))
	if err != nil {
		return ""
	}
	var st protocol.TaskState
	if json.Unmarshal(e.Value(), &st) != nil {
		return ""
	}
	return st.Error
}

// releaseHeld gives a task back at the worker's hard stop while it was
// waiting for unavailable storage (a held result is lost with the
// process; the next worker runs the task again). The message is Nak'ed
// without delay like any released task.
func (w *Worker) releaseHeld(msg jetstream.Msg, c string, t *sweep.Task, attempt int, err error) {
	w.o.Logf("worker %s: task %s: %v; releasing it", w.o.Name, t.ID, err)
	_ = msg.Nak()
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateReleased, Attempt: attempt, Error: err.Error()})
	w.logRun("release", c, t.ID, attempt)
	w.Stats.Released.Add(1)
	w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeReleased, Err: err})
}

// PermanentError marks a task error that another attempt cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// retry Naks the message with a delay, or records the failure on the last
// delivery.
func (w *Worker) retry(hard context.Context, msg jetstream.Msg, c string, t *sweep.Task, attempt int, err error) {
	if w.maxDeliver > 0 && attempt >= w.maxDeliver {
		w.fail(hard, msg, c, t, attempt, err)
		return
	}
	if w.o.Log != nil {
		w.taskLog(slog.LevelWarn, "task attempt failed, will retry", c, t, "attempt", attempt, "error", err.Error())
	} else {
		w.o.Logf("worker %s: task %s attempt %d: %v (will retry)", w.o.Name, t.ID, attempt, err)
	}
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRetrying, Attempt: attempt, Error: err.Error()})
	w.logRun("retry", c, t.ID, attempt)
	_ = msg.NakWithDelay(w.o.RetryDelay * time.Duration(attempt))
	w.Stats.Retried.Add(1)
}

// fail writes the failed record and terminates the message. While storage
// is unavailable the record is held and its write retried, like a result.
func (w *Worker) fail(hard context.Context, msg jetstream.Msg, c string, t *sweep.Task, attempt int, err error) {
	if w.o.Log != nil {
		w.taskLog(slog.LevelError, "task failed", c, t, "attempt", attempt, "error", err.Error())
	} else {
		w.o.Logf("worker %s: task %s failed on attempt %d: %v", w.o.Name, t.ID, attempt, err)
	}
	errText := fmt.Sprintf("attempt %d of %d on %s: %v", attempt, w.maxDeliver, w.o.Name, err)
	rec := record.Record{Task: *t, Error: errText, Provenance: record.Provenance{
		Host: w.host, Worker: w.o.Name, Attempt: attempt}}
	data, _ := json.Marshal(&rec)
	perr := w.withStorage(hard, msg, true, func(ictx context.Context) error {
		_, err := w.o.Store.PutIfAbsent(ictx, storage.ResultKey(c, t.ID), data)
		return err
	})
	if perr != nil {
		// Cannot record it: leave it to redelivery / the advisory, with
		// the error in the task's state for the advisory's record.
		w.o.Logf("worker %s: writing failed record of %s: %v", w.o.Name, t.ID, perr)
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRetrying, Attempt: attempt, Error: errText})
		_ = msg.NakWithDelay(w.o.RetryDelay)
		return
	}
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateFailed, Attempt: attempt, Error: errText})
	w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeFailed, Err: err})
	w.logRun("fail", c, t.ID, attempt)
	_ = msg.TermWithReason("failed: " + err.Error())
	w.Stats.Failed.Add(1)
}
