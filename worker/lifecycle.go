package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/resultcheck"
)

// A task message's life in this worker, one delivery at a time. Each step
// below is a method of Worker in this file (run, which decides nothing,
// in run.go) that either decides the verdict or leaves it to the next
// step; settle alone acts on the verdict (ack, nak or term, the task's
// reported state, the counters, the run log, metrics and logs):
//
//	received ─┬─ refused ........ receive        Term          rejected (content ≠ id) / reportMalformed (malformed)
//	          ├─ elsewhere ...... admit          Nak/Term      (another store: settleStore)
//	          ├─ cancelled ...... admit          Term
//	          ├─ already stored . admit          Ack           done
//	          ├─ reused ......... admit          Ack           done
//	          └─ run ............ run
//	               ├─ cancelled . conclude       Term
//	               ├─ released .. conclude       Nak           released (worker stopping)
//	               ├─ refused ... check          ↓ failed      (an impossible result: permanent)
//	               ├─ stored .... store          DoubleAck     done
//	               ├─ retried ... retryOrFail    NakWithDelay  retrying
//	               └─ failed .... recordFailure  Term          failed (a failed record is written)
//
// A storage wait at the hard stop (admit, store, recordFailure) ends in
// released too; a failed record that cannot be written leaves the task
// retrying for the max-deliveries advisory (unrecorded).

// verdict is what becomes of one delivery of a task message.
type verdict int

const (
	undecided     verdict = iota // go on to the next step
	malformed                    // undecodable: Term, no state (no task to name)
	refused                      // content not what its id says: Term, state rejected
	cancelled                    // the campaign was cancelled: Term
	elsewhere                    // another store than the worker's: settleStore (stop, or Term)
	alreadyStored                // this campaign's result exists (a lost ack): Ack, done
	reused                       // another campaign's stored result answers it: Ack, done
	stored                       // run and stored: DoubleAck, done
	released                     // the worker is stopping: Nak at once, released
	retried                      // the attempt failed, deliveries remain: NakWithDelay, retrying
	passed                       // this worker cannot run it (NotServedError): held, republished for another, retrying
	failed                       // failed for good, failed record written: Term, failed
	unrecorded                   // failed for good, failed record not written: NakWithDelay, retrying
)

// delivery is one delivery of a task message and what its steps learnt.
type delivery struct {
	hard       context.Context // the worker's hard stop (passed: the hold ends there)
	msg        jetstream.Msg
	attempt    int
	c          string
	t          *sweep.Task
	resultKey  string     // TaskMsg.ResultKey: a stored result that may answer the task
	store      string     // TaskMsg.Store: the coordinator's store identity
	storeCheck storeCheck // elsewhere: what checkStore found

	reason string // refused: why
	err    error  // malformed, released, retried, failed: why
	held   bool   // released while waiting for unavailable storage

	// run's findings.
	ran         bool
	runFailed   bool // the replication itself ended in an error (reported as OutcomeError)
	cancelled   bool // the campaign was cancelled while it ran
	out         *Outcome
	started     time.Time
	wall        time.Duration
	runCause    error // why the run's own context ended, if it did
	deadlineHit bool  // the replication's run.deadline fired (deadlineVerdict)
	// prev is the task's state as a redelivered attempt found it: the
	// previous attempt's error and crash (crashVerdict, runAlone).
	prev protocol.TaskState

	// runningSet closes once run's "running" state is written: settle
	// waits for it, so that no later state is overwritten by it, but the
	// result is stored meanwhile (a KV write stuck while NATS is down must
	// not hold back a result whose message is then redelivered and run
	// again elsewhere).
	runningSet <-chan struct{}

	rkey      string // store: the content key the result went to
	duplicate bool   // store: a concurrent run had stored it first
	errText   string // failed, unrecorded: the failed record's error
}

// handle processes one message. release frees the message's slot: it is
// called as soon as the replication has finished, so that the next one
// starts while this one's result is written and acked.
func (w *Worker) handle(ctx, hard context.Context, msg jetstream.Msg, release func()) {
	if protocol.IsVerifySubject(msg.Subject()) {
		w.handleVerify(hard, msg, release)
		return
	}
	d, v := w.receive(msg)
	d.hard = hard
	if v == undecided {
		v = w.admit(hard, d)
	}
	if v == undecided {
		w.run(hard, d, release)
		v = w.conclude(hard, d)
		<-d.runningSet
	}
	w.settle(d, v)
}

// receive decodes the message: received → refused (malformed, or content
// that is not what its id says), or on to admit.
func (w *Worker) receive(msg jetstream.Msg) (*delivery, verdict) {
	d := &delivery{msg: msg, attempt: 1, t: &sweep.Task{}}
	meta, merr := msg.Metadata()
	if merr == nil {
		d.attempt = int(meta.NumDelivered)
	}
	tm, err := protocol.DecodeTaskMsg(msg.Subject(), msg.Data())
	if tm != nil {
		d.c, d.t, d.resultKey, d.store = tm.Campaign, &tm.Task, tm.ResultKey, tm.Store
	}
	if ierr := (*protocol.TaskIntegrityError)(nil); errors.As(err, &ierr) {
		// Refused, never run. The state names the message for the
		// coordinator; the campaign's own message for the task is
		// published again.
		where := msg.Subject()
		if merr == nil {
			where = fmt.Sprintf("message %d on %s (published %s)", meta.Sequence.Stream, msg.Subject(), meta.Timestamp.UTC().Format(time.RFC3339))
		}
		d.reason = fmt.Sprintf("%s: %s", where, ierr.Reason)
		return d, refused
	}
	if err != nil {
		d.err = err
		return d, malformed
	}
	return d, undecided
}

// admit decides whether the task needs running: cancelled, already
// stored, reused, or on to run. Unavailable storage is waited for
// (withStorage): the task is neither run (its result may exist) nor
// failed; at the hard stop it is released.
func (w *Worker) admit(hard context.Context, d *delivery) verdict {
	switch check, err := w.checkStore(hard, d.msg, d.store); check {
	case storeStopping:
		return d.heldBack(err)
	case storeWrong, storeStale:
		d.err, d.storeCheck = err, check
		return elsewhere
	}
	ctx, cancel := ioCtx()
	defer cancel()
	if w.campaignCancelled(ctx, d.c) {
		return cancelled
	}
	key := storage.ResultKey(d.c, d.t.ID)
	err := w.withStorage(hard, d.msg, false, func(ctx context.Context) error {
		_, err := w.o.Store.Stat(ctx, key)
		return err
	})
	if errors.Is(err, errStopping) {
		return d.heldBack(err)
	}
	if err == nil {
		return alreadyStored
	}
	// Another campaign (or another msjfarm run sharing this storage) may
	// have stored the result since the coordinator looked.
	if d.resultKey == "" {
		return undecided
	}
	ok, err := w.reuse(hard, d.msg, d.c, d.t, d.resultKey)
	switch {
	case err != nil:
		return d.heldBack(err)
	case ok:
		return reused
	}
	return undecided
}

// heldBack records that the worker reached its hard stop while d waited
// for unavailable storage.
func (d *delivery) heldBack(err error) verdict {
	d.err, d.held = err, true
	return released
}

// conclude judges a finished run: cancelled, released, or the result goes
// through check and store; a failed attempt goes to retryOrFail.
func (w *Worker) conclude(hard context.Context, d *delivery) verdict {
	switch {
	case d.err == nil:
		if v := w.check(hard, d); v != undecided {
			return v
		}
		return w.store(hard, d)
	case d.cancelled:
		return cancelled
	case hard.Err() != nil && isCtxErr(d.err):
		// Shutting down: give the task back at once.
		return released
	}
	d.runFailed = true
	if d.runCause != nil && isCtxErr(d.err) {
		d.err = d.runCause
	}
	d.err = deadlineVerdict(d.deadlineHit, d.attempt, d.err)
	if c, ok := pluginhost.CrashOf(d.err); ok {
		d.err = crashVerdict(d.attempt, d.err, c, d.prev)
	}
	return w.retryOrFail(hard, d)
}

// check refuses a result that no honest run of the task could have
// produced (package resultcheck): a permanent failure naming the field and
// the plugin's sha256; the result is never stored.
func (w *Worker) check(hard context.Context, d *delivery) verdict {
	p := d.out.Provenance
	err := resultcheck.Check(d.out.Result, resultcheck.Expect{Task: d.t, Engine: p.Engine, SHA256: p.PluginSHA256, Bytes: d.out.Bytes, Plugin: p.Runner == RunnerPlugin && !p.Builtin, EnginePolicy: d.out.EnginePolicy})
	if err == nil {
		return undecided
	}
	d.runFailed = true
	d.err = &PermanentError{err}
	return w.recordFailure(hard, d)
}

// retryOrFail decides between retried (deliveries remain and another
// attempt may succeed) and failed.
func (w *Worker) retryOrFail(hard context.Context, d *delivery) verdict {
	if ns := (*NotServedError)(nil); errors.As(d.err, &ns) {
		// Another worker may run it: passed on as a new message, which
		// spends none of the task's deliveries. Given back instead
		// (Nak), an idle worker that cannot run a policy was first in
		// line for every redelivery, and a farm with one such worker of
		// three failed a task of 30 after its five deliveries. Failed
		// once no worker that can has taken it for NotServedMaxHeld.
		if heldFor(d.msg, TaskHeldHeader) < NotServedMaxHeld {
			return passed
		}
		d.err = fmt.Errorf("no worker that can run it took it within %v: %w", NotServedMaxHeld, d.err)
		return w.recordFailure(hard, d)
	}
	var perm *PermanentError
	if errors.As(d.err, &perm) || (w.maxDeliver > 0 && d.attempt >= w.maxDeliver) {
		return w.recordFailure(hard, d)
	}
	return retried
}

// NotServedMaxHeld is how long a task that workers cannot run is passed
// on (NotServedError, TaskHeldHeader) before the worker holding it
// records its failure: a farm that has no worker for a policy, or whose
// workers that have it stay busy that long.
var NotServedMaxHeld = time.Hour

// TaskHeldHeader is how long, in milliseconds, a task message has been
// held in all by workers that could not run it and passed it on.
const TaskHeldHeader = "Msjfarm-Task-Held"

// store writes the result: stored, or released at the hard stop while
// storage is unavailable, or (the write failed) retried or failed.
//
// The record is stored once under its content key and referenced by the
// campaign (record.Store); a concurrent run of the same task that stored
// first wins and this result is discarded, noticed and counted. A runner
// that does not name its engine (a test double) cannot be keyed: its
// record stays with the campaign and is never reused. While storage is
// unavailable the record is held here and the write retried
// (withStorage): the replication is never thrown away for an outage.
func (w *Worker) store(hard context.Context, d *delivery) verdict {
	rec := record.Record{Task: *d.t, Result: d.out.Result, CounterInfo: d.out.CounterInfo,
		Provenance: recordProvenance(d.out.Provenance, w.host, w.o.Name, d.attempt, d.started, d.wall)}
	created, tries := false, 0
	err := w.withStorage(hard, d.msg, true, func(ictx context.Context) error {
		tries++
		if _, ok := record.ImplOf(rec.Provenance); ok {
			rkey, c1, err := record.Store(ictx, w.o.Store, d.c, &rec)
			d.rkey = rkey
			// A retry finds what an earlier try of this call stored (or
			// stored before its answer was lost): that is ours, not a
			// concurrent run's.
			created = created || c1 || (err == nil && tries > 1 && w.storedIsOurs(ictx, rkey, &rec))
			return err
		}
		data, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		created = true
		_, err = w.o.Store.PutIfAbsent(ictx, storage.ResultKey(d.c, d.t.ID), data)
		return err
	})
	if errors.Is(err, errStopping) {
		return d.heldBack(err)
	}
	var imported *record.ImportedMismatchError
	switch {
	case errors.As(err, &imported):
		// Another attempt computes the same: fail the task now.
		d.err = &PermanentError{err}
		return w.retryOrFail(hard, d)
	case err != nil:
		d.err = fmt.Errorf("writing result: %w", err)
		return w.retryOrFail(hard, d)
	}
	d.duplicate = !created
	return stored
}

// recordFailure writes the failed record: failed, or unrecorded when it
// cannot be written (the task is then left to redelivery and the
// max-deliveries advisory, with the error in its state). While storage is
// unavailable the record is held and its write retried, like a result.
func (w *Worker) recordFailure(hard context.Context, d *delivery) verdict {
	d.errText = fmt.Sprintf("attempt %d of %d on %s: %v", d.attempt, w.maxDeliver, w.o.Name, d.err)
	rec := record.Record{Task: *d.t, Error: d.errText, Provenance: record.Provenance{
		Host: w.host, Worker: w.o.Name, Attempt: d.attempt}}
	data, _ := json.Marshal(&rec)
	err := w.withStorage(hard, d.msg, true, func(ictx context.Context) error {
		_, err := w.o.Store.PutIfAbsent(ictx, storage.ResultKey(d.c, d.t.ID), data)
		return err
	})
	if err != nil {
		w.o.Logf("worker %s: writing failed record of %s: %v", w.o.Name, d.t.ID, err)
		return unrecorded
	}
	return failed
}

// settle is the one place a verdict is acted on: the message is acked,
// nak'ed or terminated, the task's state written, and the counters, run
// log, metrics and logs told, each verdict in its own order.
func (w *Worker) settle(d *delivery, v verdict) {
	c, t := d.c, d.t
	if d.runFailed {
		w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeError, Wall: d.wall, Err: d.err})
	}
	switch v {
	case malformed:
		w.o.Logf("worker %s: %s", w.o.Name, termtext.Clip(termtext.OneLine(d.err.Error()), 2*protocol.MaxMalformedText))
		w.reportMalformed(d.msg, d.err)
		_ = d.msg.TermWithReason("malformed task message")
		w.Stats.Terminated.Add(1)
	case refused:
		w.o.Logf("worker %s: refused task %s: %s", w.o.Name, t.ID, d.reason)
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRejected, Attempt: d.attempt, Error: d.reason})
		_ = d.msg.TermWithReason("task content does not match its id")
		w.Stats.Terminated.Add(1)
	case elsewhere:
		w.settleStore(d.msg, d.storeCheck, d.err)
	case cancelled:
		_ = d.msg.TermWithReason("campaign cancelled")
		if d.ran {
			w.logRun("cancelled", c, t.ID, d.attempt)
			w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeCancelled, Wall: d.wall, Err: d.err})
		}
		w.Stats.Terminated.Add(1)
	case alreadyStored, reused:
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateDone, Attempt: d.attempt})
		_ = d.msg.Ack()
		if v == reused {
			w.Stats.Reused.Add(1)
		} else {
			w.Stats.Skipped.Add(1)
		}
	case stored:
		w.settleStored(d)
	case released:
		w.settleReleased(d)
	case retried:
		w.settleRetried(d)
	case passed:
		w.settlePassed(d)
	case failed, unrecorded:
		w.settleFailed(d, v)
	}
}

// reportMalformed records malformed message d for the coordinator's
// status in its key of the task-state bucket (protocol.MalformedKey): its
// subject, stream sequence, size and publication time and the decode
// error, the texts clipped, never its content. Before, it was named in
// this worker's log only, and the operator never learnt that someone
// publishes garbage onto the farm. The key counts the messages recorded
// in it (MalformedMsg.N): a concurrent write (another worker, another
// message of the same slot) makes the update fail, and it is tried again
// on what that wrote; a redelivery of the message the key holds is not
// counted again. Written before the message is terminated, so that a
// worker killed in between leaves it to a redelivery.
func (w *Worker) reportMalformed(msg jetstream.Msg, cause error) {
	meta, err := msg.Metadata()
	if err != nil {
		return // not a JetStream message: nothing to name it by
	}
	subj := msg.Subject()
	why := cause.Error()
	if _, rest, ok := strings.Cut(why, " on "+subj+": "); ok {
		why = rest // "malformed task message on SUBJECT: …": the subject is shown apart
	}
	rec := protocol.MalformedMsg{Subject: termtext.Clip(subj, protocol.MaxMalformedText), Seq: meta.Sequence.Stream,
		Size: len(msg.Data()), Published: meta.Timestamp.UTC(), Error: termtext.Clip(why, protocol.MaxMalformedText),
		Worker: w.o.Name, Seen: time.Now().UTC()}
	key := protocol.MalformedKey(rec.Seq)
	ctx, cancel := ioCtx()
	defer cancel()
	for range 10 {
		var prev protocol.MalformedMsg
		var rev uint64
		e, err := w.h.TaskStates.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &prev) == nil && prev.Seq == rec.Seq {
				return
			}
		case !errors.Is(err, jetstream.ErrKeyNotFound):
			w.o.Logf("worker %s: recording malformed message %d: %v", w.o.Name, rec.Seq, err)
			return
		}
		rec.N = min(max(prev.N, 0), protocol.MaxMalformedCount) + 1
		data, _ := json.Marshal(&rec)
		if rev == 0 {
			_, err = w.h.TaskStates.Create(ctx, key, data)
		} else {
			_, err = w.h.TaskStates.Update(ctx, key, data, rev)
		}
		if err == nil || ctx.Err() != nil {
			return
		}
	}
	w.o.Logf("worker %s: recording malformed message %d: its key %s kept changing", w.o.Name, rec.Seq, key)
}

// settleStored: the result is stored (ack last, so that a crash at any
// point leads to a redelivery, never to a lost result).
func (w *Worker) settleStored(d *delivery) {
	c, t := d.c, d.t
	if d.duplicate {
		w.o.Logf("worker %s: task %s: result %s was stored by a concurrent run meanwhile; kept that one", w.o.Name, t.ID, d.rkey)
		w.logRun("duplicate", c, t.ID, d.attempt)
		w.Stats.Duplicates.Add(1)
	}
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateDone, Attempt: d.attempt})
	w.logRun("done", c, t.ID, d.attempt)
	actx, cancel := ioCtx()
	if aerr := d.msg.DoubleAck(actx); aerr != nil {
		w.o.Logf("worker %s: ack %s: %v (the result is stored; a redelivery will just ack)", w.o.Name, t.ID, aerr)
	}
	cancel()
	w.Stats.Done.Add(1)
	var events uint64
	if d.out != nil && d.out.Result != nil {
		events = d.out.Result.Events
	}
	w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeDone, Wall: d.wall, Events: events})
	w.taskLog(slog.LevelDebug, "task done", c, t, "attempt", d.attempt, "wall", d.wall.Round(time.Millisecond))
}

// settleReleased gives the task back without delay: the worker is
// stopping. A result held for unavailable storage is lost with the
// process; the next worker runs the task again.
func (w *Worker) settleReleased(d *delivery) {
	c, t := d.c, d.t
	st, ev := protocol.TaskState{State: protocol.StateReleased, Attempt: d.attempt},
		TaskEvent{Campaign: c, Task: t, Outcome: OutcomeReleased, Err: d.err}
	if d.held {
		w.o.Logf("worker %s: task %s: %v; releasing it", w.o.Name, t.ID, d.err)
		st.Error = d.err.Error()
	} else {
		ev.Wall = d.wall
	}
	_ = d.msg.Nak()
	w.setState(c, t.ID, st)
	w.logRun("release", c, t.ID, d.attempt)
	w.Stats.Released.Add(1)
	w.observe(ev)
	if !d.held {
		w.taskLog(slog.LevelInfo, "task released", c, t, "attempt", d.attempt)
	}
}

// settleRetried Naks the message with a delay growing with the attempt.
func (w *Worker) settleRetried(d *delivery) {
	c, t := d.c, d.t
	if w.o.Log != nil {
		w.taskLog(slog.LevelWarn, "task attempt failed, will retry", c, t, "attempt", d.attempt, "error", d.err.Error())
	} else {
		w.o.Logf("worker %s: task %s attempt %d: %v (will retry)", w.o.Name, t.ID, d.attempt, d.err)
	}
	crash, _ := pluginhost.CrashOf(d.err)
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRetrying, Attempt: d.attempt, Error: d.err.Error(), Crash: crash.How, CrashShared: crash.Shared})
	w.logRun("retry", c, t.ID, d.attempt)
	_ = d.msg.NakWithDelay(w.o.RetryDelay * time.Duration(d.attempt))
	w.Stats.Retried.Add(1)
}

// settlePassed passes the task on for a worker that can run it (passOn's
// hold and republication, as for verification requests a worker may not
// run), its state retrying with the reason.
func (w *Worker) settlePassed(d *delivery) {
	c, t := d.c, d.t
	w.taskLog(slog.LevelWarn, "task passed on: this worker cannot run it", c, t, "attempt", d.attempt, "error", d.err.Error())
	if w.o.Log == nil {
		w.o.Logf("worker %s: task %s: %v (passed on)", w.o.Name, t.ID, d.err)
	}
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRetrying, Attempt: d.attempt, Error: d.err.Error()})
	w.logRun("pass", c, t.ID, d.attempt)
	w.Stats.Retried.Add(1)
	w.held.Add(1)
	go func() {
		defer w.held.Done()
		w.holdAndRepublish(d.hard, d.msg, TaskHeldHeader)
	}()
}

// settleFailed terminates a task that failed for good (failed), or, when
// its failed record could not be written (unrecorded), leaves it to
// redelivery and the advisory with the error in its state.
func (w *Worker) settleFailed(d *delivery, v verdict) {
	c, t := d.c, d.t
	if w.o.Log != nil {
		w.taskLog(slog.LevelError, "task failed", c, t, "attempt", d.attempt, "error", d.err.Error())
	} else {
		w.o.Logf("worker %s: task %s failed on attempt %d: %v", w.o.Name, t.ID, d.attempt, d.err)
	}
	if v == unrecorded {
		w.setState(c, t.ID, protocol.TaskState{State: protocol.StateRetrying, Attempt: d.attempt, Error: d.errText})
		_ = d.msg.NakWithDelay(w.o.RetryDelay)
		return
	}
	w.setState(c, t.ID, protocol.TaskState{State: protocol.StateFailed, Attempt: d.attempt, Error: d.errText})
	w.observe(TaskEvent{Campaign: c, Task: t, Outcome: OutcomeFailed, Err: d.err})
	w.logRun("fail", c, t.ID, d.attempt)
	_ = d.msg.TermWithReason("failed: " + d.err.Error())
	w.Stats.Failed.Add(1)
}

// reuse references the stored result rkey from campaign c's task t if it
// exists and rkey is the key of t's result under the code the campaign
// expects (reuseKey). Unavailable storage is waited for; err is set only
// when the worker stops meanwhile (errStopping).
func (w *Worker) reuse(hard context.Context, msg jetstream.Msg, c string, t *sweep.Task, rkey string) (ok bool, err error) {
	tid := t.ID
	var reusable bool
	err = w.withStorage(hard, msg, false, func(ctx context.Context) error {
		want, err := reuseKey(ctx, w.o.Store, c, t)
		if err != nil || want != rkey {
			if err == nil {
				// Said at warning level: a forged key is a sign of a
				// party publishing task messages.
				if w.o.Log != nil {
					w.taskLog(slog.LevelWarn, "the message's result_key is not the key this worker computes for the task (another engine version, or forged): ignored, the task runs", c, t,
						"result_key", rkey, "computed", want)
				} else {
					w.o.Logf("worker %s: task %s: the message's result_key %s is not the key this worker computes for the task (%s: another engine version, or forged): ignored, the task runs", w.o.Name, tid, rkey, want)
				}
			}
			reusable = false
			return err
		}
		reusable, err = record.Reusable(ctx, w.o.Store, rkey)
		return err
	})
	if errors.Is(err, errStopping) {
		return false, err
	}
	if err != nil || !reusable {
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

// reuseKey is the content key of task t's result under the code campaign
// c expects (record.ExpectedKey, as the coordinator computes it). A
// message's result_key is a hint from whoever published it: taken as it
// was, a party that may publish on NATS pointed a task at another
// campaign's stored result, of another task, which the worker referenced
// as this task's and the coordinator then moved out of the other
// campaign.
func reuseKey(ctx context.Context, st storage.Store, c string, t *sweep.Task) (string, error) {
	impls, err := record.ExpectedImpls(ctx, st, c)
	if err != nil {
		return "", err
	}
	return record.ExpectedKey(impls, *t), nil
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
