package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker/resultcheck"
)

// OutcomeVerify is a verification run (TaskEvent.Outcome): a sampled task
// run again for spot verification, its record stored beside the
// campaign's results, never as one.
const OutcomeVerify = "verify"

// VerifyNakDelay is how long a worker named in a verification request's
// Exclude list first holds the request before it passes it on (passOn).
var VerifyNakDelay = time.Second

// handleVerify runs one delivery of a spot-verification request
// (protocol.VerifyMsg; the coordinator's side is coordinator/verify.go).
// It shares a task's run step (runOnce, the heartbeat, the result check)
// and nothing of its settling: no task state is written, no task counter
// moves, and the record goes to protocol.VerifyKey with PutIfAbsent, so a
// verification run can neither replace the campaign's accepted result nor
// complete a task, however often it is delivered.
//
//	not running ... the campaign is cancelled or finished: Term
//	excluded ...... this worker produced a result under check: passed on (passOn)
//	already there . Ack (an earlier delivery's ack was lost)
//	run ─┬─ released (stopping) ........ Nak
//	     ├─ storage unavailable, or the run failed with deliveries left ... NakWithDelay
//	     └─ record (result, refused result or last failure) stored ... DoubleAck
func (w *Worker) handleVerify(hard context.Context, msg jetstream.Msg, release func()) {
	attempt := 1
	if meta, err := msg.Metadata(); err == nil {
		attempt = int(meta.NumDelivered)
	}
	vm, err := protocol.DecodeVerifyMsg(msg.Subject(), msg.Data())
	if err != nil {
		w.o.Logf("worker %s: refused verification request: %s", w.o.Name, termtext.Clip(termtext.OneLine(err.Error()), 2*protocol.MaxMalformedText))
		// Listed by the coordinator's status as a malformed task message
		// is: otherwise this worker's log was the only sign that someone
		// publishes forged verification requests onto the farm.
		w.reportMalformed(msg, err)
		_ = msg.TermWithReason("malformed or forged verification request")
		w.Stats.Terminated.Add(1)
		return
	}
	switch check, err := w.checkStore(hard, msg, vm.Store); check {
	case storeStopping:
		_ = msg.Nak()
		return
	case storeWrong, storeStale:
		w.settleStore(msg, check, err)
		return
	}
	last := w.maxDeliver > 0 && attempt >= w.maxDeliver
	switch {
	case !w.campaignRunning(vm.Campaign):
		// Cancelled, or finished: the coordinator gave up on this request
		// (it purged the others) or no longer needs it.
		_ = msg.TermWithReason("verification: the campaign is not running")
		return
	case vm.Excludes(w.o.Name):
		w.passOn(hard, msg, release)
		return
	}
	key := protocol.VerifyKey(vm.Campaign, vm.Task.ID, vm.Round)
	sctx, cancel := ioCtx()
	_, serr := w.o.Store.Stat(sctx, key)
	cancel()
	if serr == nil {
		_ = msg.Ack()
		return
	}
	d := &delivery{msg: msg, attempt: attempt, c: vm.Campaign, t: &vm.Task}
	w.runVerify(hard, d, release)
	if !w.settleVerifyRun(hard, d, last) {
		return
	}
	w.storeVerify(d, vm, key)
}

// passOn hands a request this worker may not run to another worker. It
// frees the request's slot at once (the worker goes on fetching), holds
// the message for a while, then publishes a copy at the end of the queue
// and acks the original. A Nak would do the same but spend one of the
// message's deliveries each time (in a test with two workers the excluded
// one got it back five times in a row and the request died), and holding
// the slot as well let three one-slot workers each hold the request only
// another could run, in lockstep, for twenty seconds.
//
// The hold is VerifyNakDelay (±25% jitter) for the request's first
// VerifyPassWindow of passing around, then doubles with each further
// window, up to 32 times it: a farm with no other worker costs about 125
// publications per request over the coordinator's default ten-minute
// wait, after which it purges the requests. The time held so far travels
// with the copy (header VerifyHeldHeader), so every worker, whatever its
// clock, agrees on it. It was once the number of passes: a request whose
// only eligible worker was busy for ten seconds was passed ten times
// between the excluded ones, and its holds had grown to half a minute
// when that worker became free, so it then took minutes to reach it.
func (w *Worker) passOn(hard context.Context, msg jetstream.Msg, release func()) {
	release()
	// The hold runs outside the handler, so that the handler's in-flight
	// permit (worker.go, Run) is free too: held, a one-slot worker's two
	// permits were both taken by requests only other workers may run, and
	// it stopped fetching, the lockstep above again.
	w.held.Add(1)
	go func() {
		defer w.held.Done()
		w.holdAndRepublish(hard, msg, VerifyHeldHeader)
	}()
}

// passHold is how long a request already held for held in all is held
// once more (before its jitter).
func passHold(held time.Duration) time.Duration {
	return VerifyNakDelay << min(max(held, 0)/VerifyPassWindow, 5)
}

// heldFor is how long msg has been held in all by the workers that passed
// it on, as its header says (0 without one; at most a day).
func heldFor(msg jetstream.Msg, header string) time.Duration {
	h := msg.Headers()
	if h == nil {
		return 0
	}
	ms, _ := strconv.ParseInt(h.Get(header), 10, 64)
	return time.Duration(min(max(ms, 0), int64(24*time.Hour/time.Millisecond))) * time.Millisecond
}

// holdAndRepublish is passOn's hold and republication; header carries
// the time held so far (VerifyHeldHeader, or TaskHeldHeader for a task
// this worker cannot run).
func (w *Worker) holdAndRepublish(hard context.Context, msg jetstream.Msg, header string) {
	held := heldFor(msg, header)
	hold := passHold(held)
	hold = hold*3/4 + rand.N(hold/2+1)
	t := time.NewTimer(hold)
	defer t.Stop()
	// A hold grows to 40 s, past the consumer's AckWait (30 s by
	// default): kept alive, so that the message is not redelivered while
	// its copy is being made.
	alive := time.NewTicker(max(w.ackWait/2, time.Second))
	defer alive.Stop()
	for waiting := true; waiting; {
		select {
		case <-t.C:
			waiting = false
		case <-alive.C:
			_ = msg.InProgress()
		case <-hard.Done():
			_ = msg.Nak()
			return
		}
	}
	id := fmt.Sprintf("%s.pass.%s.%d", msg.Subject(), w.o.Name, time.Now().UnixNano())
	if meta, err := msg.Metadata(); err == nil {
		id = fmt.Sprintf("%s.pass.%d", msg.Subject(), meta.Sequence.Stream)
	}
	cp := nats.NewMsg(msg.Subject())
	cp.Data = msg.Data()
	cp.Header.Set(header, strconv.FormatInt((held+hold).Milliseconds(), 10))
	ctx, cancel := ioCtx()
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, cp, jetstream.WithMsgID(id)); err != nil {
		w.o.Logf("worker %s: passing on %s: %v", w.o.Name, msg.Subject(), err)
		_ = msg.NakWithDelay(VerifyNakDelay)
		return
	}
	_ = msg.DoubleAck(ctx)
}

// VerifyHeldHeader is how long, in milliseconds, a verification request
// has been held in all by the workers that passed it on (passOn).
const VerifyHeldHeader = "Msjfarm-Verify-Held"

// VerifyPassWindow is how long a request is passed on with the shortest
// hold before the hold starts to double (passOn).
const VerifyPassWindow = time.Minute

// runVerify runs the replication as the run step does, without its task
// state: the heartbeat keeps the message and stops the run if the
// campaign is cancelled.
func (w *Worker) runVerify(hard context.Context, d *delivery, release func()) {
	runCtx, cancelRun := context.WithCancelCause(WithCampaign(hard, d.c))
	defer cancelRun(nil)
	stopHB := w.runHeartbeat(d, cancelRun)
	w.runOnce(runCtx, d, func(int64, int64) {})
	stopHB()
	release()
	d.cancelled = errors.Is(context.Cause(runCtx), errCampaignCancelled)
}

// settleVerifyRun gives back a request whose run is not worth a record
// (the worker stops, storage is down, or a failure that another delivery
// may not repeat) and reports whether the run's outcome is to be stored.
func (w *Worker) settleVerifyRun(hard context.Context, d *delivery, last bool) bool {
	switch {
	case d.err == nil:
		return true
	case d.cancelled:
		_ = d.msg.TermWithReason("campaign cancelled")
	case hard.Err() != nil && isCtxErr(d.err):
		_ = d.msg.Nak()
	case storage.IsUnavailable(d.err):
		_ = d.msg.NakWithDelay(w.o.RetryDelay)
	case !last:
		w.o.Logf("worker %s: verification run of %s attempt %d: %v (will retry)", w.o.Name, d.t.ID, d.attempt, d.err)
		_ = d.msg.NakWithDelay(w.o.RetryDelay * time.Duration(d.attempt))
	default:
		return true // the failure is this worker's answer
	}
	return false
}

// storeVerify writes the verification record (PutIfAbsent: the first
// delivery's record stands) and acks.
func (w *Worker) storeVerify(d *delivery, vm *protocol.VerifyMsg, key string) {
	rec := record.Record{Task: vm.Task, Provenance: record.Provenance{Host: w.host, Worker: w.o.Name, Attempt: d.attempt}}
	if d.err != nil {
		rec.Error = fmt.Sprintf("verification run on %s: %v", w.o.Name, d.err)
	} else {
		rec.Provenance = recordProvenance(d.out.Provenance, w.host, w.o.Name, d.attempt, d.started, d.wall)
		p := d.out.Provenance
		if err := resultcheck.Check(d.out.Result, resultcheck.Expect{Task: d.t, Engine: p.Engine, SHA256: p.PluginSHA256, Bytes: d.out.Bytes, Plugin: p.Runner == RunnerPlugin && !p.Builtin, EnginePolicy: d.out.EnginePolicy}); err != nil {
			rec.Error = fmt.Sprintf("verification run on %s: result refused: %v", w.o.Name, err)
		} else {
			rec.Result = d.out.Result
		}
	}
	data, err := json.Marshal(&rec)
	if err == nil {
		ctx, cancel := ioCtx()
		_, err = w.o.Store.PutIfAbsent(ctx, key, data)
		cancel()
	}
	if err != nil {
		w.o.Logf("worker %s: storing verification run of %s: %v (will retry)", w.o.Name, d.t.ID, err)
		_ = d.msg.NakWithDelay(w.o.RetryDelay)
		return
	}
	actx, cancel := ioCtx()
	if aerr := d.msg.DoubleAck(actx); aerr != nil {
		w.o.Logf("worker %s: ack of verification %s: %v (the record is stored; a redelivery will just ack)", w.o.Name, d.t.ID, aerr)
	}
	cancel()
	w.Stats.Verified.Add(1)
	w.logRun("verify", d.c, d.t.ID, d.attempt)
	w.observe(TaskEvent{Campaign: d.c, Task: d.t, Outcome: OutcomeVerify, Wall: d.wall, Err: d.err})
	w.taskLog(slog.LevelInfo, "verification run stored", d.c, d.t, "round", vm.Round, "attempt", d.attempt)
}

// campaignRunning reads whether campaign c is running (a campaign whose
// state cannot be read counts as running: the request is kept).
func (w *Worker) campaignRunning(c string) bool {
	ctx, cancel := ioCtx()
	defer cancel()
	e, err := w.h.Campaigns.Get(ctx, c)
	if err != nil {
		return true
	}
	var st protocol.CampaignState
	if json.Unmarshal(e.Value(), &st) != nil {
		return true
	}
	return st.State == protocol.CampaignRunning
}
