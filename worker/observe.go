package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sweep"
)

// Task outcomes reported to Options.Observe.
const (
	OutcomeDone = "done"
	// OutcomeError is an attempt that ended in an error; the task is then
	// retried, or also reported as OutcomeFailed when no attempt remains.
	OutcomeError     = "error"
	OutcomeFailed    = "failed"
	OutcomeReleased  = "released"
	OutcomeCancelled = "cancelled"
)

// TaskEvent is one replication's end, reported to Options.Observe (the
// worker's Prometheus metrics, package monitor).
type TaskEvent struct {
	Campaign string
	Task     *sweep.Task
	Worker   string
	Outcome  string
	// Wall is the replication's wall time; Events the simulated events
	// (0 unless Outcome is done).
	Wall   time.Duration
	Events uint64
	// Err is the attempt's error (nil when done).
	Err error
}

func (w *Worker) observe(e TaskEvent) {
	if w.o.Observe != nil {
		e.Worker = w.o.Name
		w.o.Observe(e)
	}
}

// taskLog logs one line about a task on Options.Log (nothing without
// one), with the attributes every task line carries: campaign, task,
// policy and worker.
func (w *Worker) taskLog(level slog.Level, msg string, c string, t *sweep.Task, attrs ...any) {
	if w.o.Log == nil {
		return
	}
	args := append([]any{"campaign", c, "task", t.ID, "policy", t.Policy, "worker", w.o.Name}, attrs...)
	w.o.Log.Log(context.Background(), level, msg, args...)
}

// heartbeat publishes a protocol.Heartbeat every HeartbeatInterval until
// ctx ends, then a last one marked Stopping.
func (w *Worker) heartbeat(ctx context.Context) {
	started := time.Now().UTC()
	send := func(stopping bool) {
		hb := protocol.Heartbeat{Worker: w.o.Name, Host: w.host, Slots: w.o.Concurrency,
			Running: int(w.Stats.Running.Load()), Done: w.Stats.Done.Load(), Failed: w.Stats.Failed.Load(),
			Retried: w.Stats.Retried.Load(), Started: started, Sent: time.Now().UTC(), Stopping: stopping}
		hb.StorageDown, hb.StorageDownSince = w.health.State()
		data, _ := json.Marshal(hb)
		_ = w.o.Conn.Publish(protocol.HeartbeatSubject(w.o.Name), data)
	}
	send(false)
	tk := time.NewTicker(protocol.HeartbeatInterval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			send(true)
			return
		case <-tk.C:
			send(false)
		}
	}
}
