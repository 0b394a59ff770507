package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// run is the lifecycle's run step (lifecycle.go): it marks the task
// running, runs the replication under a heartbeat that keeps the message
// and notices a cancelled campaign, waits for storage the runner could not
// read, and records in d what happened for conclude to judge. It decides
// nothing itself.
func (w *Worker) run(hard context.Context, d *delivery, release func()) {
	c, t := d.c, d.t
	d.ran = true
	if d.attempt > 1 {
		d.prev = w.previousState(c, t.ID)
	}
	ended := make(chan struct{})
	d.runningSet = w.markRunning(d, ended)
	w.logRun("start", c, t.ID, d.attempt)
	w.taskLog(slog.LevelDebug, "task started", c, t, "attempt", d.attempt)

	runCtx, cancelRun := context.WithCancelCause(runAlone(WithCampaign(hard, c), d.prev))
	defer cancelRun(nil)
	stopHB := w.runHeartbeat(d, cancelRun)
	// Hand the slot on when the replication reports 99% of its arrivals:
	// the next task's fetch and set-up (about 1 ms) then overlap this one's
	// last 1% instead of leaving a core idle between the two.
	progress := func(done, total int64) {
		if total > 0 && done*100 >= total*99 {
			release()
		}
	}
	for delay, waited := backoffMin, false; ; delay = min(2*delay, backoffMax) {
		w.runOnce(runCtx, d, progress)
		if d.err == nil || !storage.IsUnavailable(d.err) || runCtx.Err() != nil || d.deadlineHit {
			// A read that timed out because run.deadline fired is the
			// deadline, not the store: a deadline shorter than the pins'
			// read (run.deadline 1ns) was taken for an outage, and the task
			// waited for storage and ran again for ever.
			break
		}
		// The runner could not read what the task needs from storage
		// (the campaign's plugin pins, a pinned plugin binary): nothing
		// ran, and it is not the task's failure. Wait for the store (the
		// heartbeat keeps the message) and try again.
		w.health.Down(d.err, d.started)
		if !waited {
			waited = true
			w.Stats.StorageWaits.Add(1)
		}
		if !w.waitForStore(runCtx, delay) {
			d.err = fmt.Errorf("%w (while waiting for storage: %w)", runCtx.Err(), d.err)
			d.runCause = context.Cause(runCtx)
			break
		}
	}
	stopHB()
	close(ended)
	release()
	// Let the fetch loop take the freed slot before this goroutine stores
	// the result: the next task's pull request then overlaps the write
	// (and its fsync) instead of waiting behind it.
	runtime.Gosched()
	d.cancelled = errors.Is(context.Cause(runCtx), errCampaignCancelled)
}

// runOnce runs the replication once, bounded by the task's run.deadline
// (which bounds the replication, not a wait for storage). The task's
// trace (if any) is fetched by content here, so that a store that is down
// waits like any other storage read.
func (w *Worker) runOnce(runCtx context.Context, d *delivery, progress func(done, total int64)) {
	t := d.t
	rctx, cancelDL := runCtx, context.CancelFunc(func() {})
	if t.Run.Deadline > 0 {
		rctx, cancelDL = context.WithTimeoutCause(runCtx, t.Run.Deadline,
			fmt.Errorf("run.deadline %v exceeded", t.Run.Deadline))
	}
	defer cancelDL()
	d.started = time.Now()
	w.Stats.Running.Add(1)
	var tctx context.Context
	d.out = nil
	if tctx, d.err = w.withTaskTrace(rctx, t); d.err == nil {
		d.out, d.err = w.o.Runner.Run(tctx, t, progress)
	}
	d.wall = time.Since(d.started)
	w.noteRun(d.wall)
	w.Stats.Running.Add(-1)
	d.runCause = context.Cause(rctx)
	d.deadlineHit = errors.Is(rctx.Err(), context.DeadlineExceeded)
}

// waitForStore waits delay, or until the store is seen back; false if
// runCtx ended meanwhile.
func (w *Worker) waitForStore(runCtx context.Context, delay time.Duration) bool {
	tw := time.NewTimer(delay)
	defer tw.Stop()
	select {
	case <-runCtx.Done():
	case <-tw.C:
	case <-w.health.Up():
	}
	return runCtx.Err() == nil
}

// markRunning writes the "running" state, for status displays, while the
// replication starts rather than before it (a KV round trip between two
// tasks), and before any later state of the task (the returned channel
// closes when it is written, or when it is not to be). A first attempt's
// is written only once the replication has run for runningAfter: a task
// that ends sooner goes from queued to done in the displays, and the farm
// saves a KV write (and the coordinator's watch of it) on each short task.
// A redelivered task's running state is written at once and keeps the
// error its previous attempt reported, so that a worker dying on this
// attempt does not leave the coordinator's max-deliveries record with
// "last error: none reported". ended closes when the replication ends.
func (w *Worker) markRunning(d *delivery, ended <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if d.attempt <= 1 {
			t := time.NewTimer(runningAfter)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ended:
				return
			}
		}
		st := protocol.TaskState{State: protocol.StateRunning, Attempt: d.attempt}
		if d.attempt > 1 {
			st.Error, st.Crash, st.CrashShared = d.prev.Error, d.prev.Crash, d.prev.CrashShared
		}
		w.setState(d.c, d.t.ID, st)
	}()
	return done
}

// runningAfter is how long a first attempt runs before the worker reports
// it running. On tasks of a few milliseconds the write was half the task
// states the farm wrote: without it the coordinator receives 2 messages a
// task instead of 3 and spent 64-79 µs of CPU per task instead of 96-126,
// the nats-server 180-218 instead of 222-280 (BenchmarkThroughput, four
// pairs at load 23-25). A display refreshing every second or two would barely have
// shown such a task anyway (TestRunningStateAfterASecond).
const runningAfter = time.Second

// runHeartbeat keeps the message ours while the replication runs
// (keepAlive) and stops the run if the campaign is cancelled meanwhile.
// The returned function stops it. Each tick's read of the campaign's state
// is bounded by heartbeatRead: stopping waits for a tick in progress, and
// a read stuck while NATS is down would hold back the finished
// replication's result until the message is redelivered and run again
// elsewhere (a cancellation a tick misses, the next one sees).
func (w *Worker) runHeartbeat(d *delivery, cancelRun context.CancelCauseFunc) (stop func()) {
	return w.keepAlive(d.msg, func() {
		ctx, cancel := context.WithTimeout(context.Background(), heartbeatRead)
		defer cancel()
		if w.campaignCancelled(ctx, d.c) {
			cancelRun(errCampaignCancelled)
		}
	})
}

// heartbeatRead bounds a heartbeat's read of the campaign's state.
const heartbeatRead = time.Second

var errCampaignCancelled = errors.New("campaign cancelled")

// previousState is the task's state (its previous attempt's error and
// crash), or the zero state when it cannot be read within 5 s: a
// redelivered attempt reads it before it runs, and runs without it
// rather than wait longer.
func (w *Worker) previousState(c, tid string) protocol.TaskState {
	var st protocol.TaskState
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := w.h.TaskStates.Get(ctx, protocol.TaskKey(c, tid))
	if err != nil || json.Unmarshal(e.Value(), &st) != nil {
		return protocol.TaskState{}
	}
	return st
}
