package pluginhost

import (
	"context"
	"sync/atomic"
	"time"
)

// DefaultStall is Config.Stall's default. The engine beats every 1,024
// events; the costliest policies of the catalogue take milliseconds an
// event at thousands of jobs in system (an unstable backfilling queue
// took 2 s per 1,024 events), so ten minutes without a beat is policy
// code that does not return, or events costing over half a second each,
// which --plugin-stall can allow for.
const DefaultStall = 10 * time.Minute

// stallWatch ends a Run call whose engine loop stops beating for the
// host's Stall, or, for a plugin that does not beat, whose count of
// arrivals stops moving before the last arrival. The zero of its pointer
// (nil) watches nothing: a reference model, or Stall < 0.
type stallWatch struct {
	t     *time.Timer
	limit time.Duration
	// byDone: the plugin does not beat (its Info does not say Heartbeat:
	// written without the SDK), so the watch reads its progress reports'
	// count of arrivals simulated. Such a plugin was not watched at all,
	// and a loop that hung in its policy code held a worker's slot until
	// run.deadline, or for ever without one. The count stops at the last
	// arrival while the drain and MSER's pass run, which a plugin that does
	// not beat gives no sign of: the watch stops there (run.deadline still
	// bounds them).
	byDone bool
	last   int64
	hit    atomic.Bool
}

// watchStall starts the watch of one call of policy on p, which cancel
// ends when it fires.
func (h *Host) watchStall(p *proc, policy string, cancel context.CancelFunc) *stallWatch {
	if h.cfg.Stall <= 0 {
		return nil
	}
	if pol, ok := p.info.Policy(policy); !ok || pol.Reference {
		return nil
	}
	w := &stallWatch{limit: h.cfg.Stall, byDone: !p.info.Heartbeat}
	w.t = time.AfterFunc(w.limit, func() {
		w.hit.Store(true)
		cancel()
	})
	return w
}

// heard restarts the watch when an update moved what it watches: the
// count of beats, or, for a plugin that does not beat, the arrivals done
// of total (stopping it at the last arrival, and starting it again at the
// result, after which the call must end: a plugin that sent its result
// and hung was otherwise not watched).
func (w *stallWatch) heard(done, total, beats int64, result bool) {
	if w == nil {
		return
	}
	if w.byDone && result {
		w.t.Reset(w.limit)
		return
	}
	moved := beats
	if w.byDone {
		if total > 0 && done >= total {
			w.t.Stop()
			return
		}
		moved = done
	}
	if moved == w.last {
		return
	}
	w.last = moved
	w.t.Reset(w.limit)
}

// interval is the progress interval to ask for: at most a quarter of the
// limit (and at least 10 ms), so that beats are heard well within it.
func (w *stallWatch) interval(asked time.Duration) time.Duration {
	if w == nil {
		return asked
	}
	return min(asked, max(w.limit/4, 10*time.Millisecond))
}

// fired reports whether the watch ended the call.
func (w *stallWatch) fired() bool { return w != nil && w.hit.Load() }

func (w *stallWatch) stop() {
	if w != nil {
		w.t.Stop()
	}
}

// stallError retires p, whose policy code does not return (a goroutine
// cannot be stopped: its process goes once its other replications end),
// and says so.
//
// sent says the plugin had sent its result: the replication was over, and
// the plugin then did not end the call. That was reported as a policy that
// does not return, which sent its author looking in the wrong place.
func (h *Host) stallError(p *proc, policy string, sent bool) error {
	h.logger.Error("plugin's replication made no progress for the stall limit; killing its process", "binary", p.key.path, "policy", policy, "stall", h.cfg.Stall, "pid", p.info.PID, "result_sent", sent)
	h.retireHung(p)
	format := "the engine loop made no progress for %v (it signals every 1,024 events): the policy's code does not return, or 1,024 events take that long (--plugin-stall); %s"
	if !p.info.Heartbeat {
		format = "the plugin's count of arrivals simulated made no progress for %v (it does not send the engine loop's signal; its Info does not say heartbeat): its policy code does not return, or an arrival takes that long (--plugin-stall); %s"
	}
	if sent {
		format = "the plugin sent its result, then did not end the call for %v (--plugin-stall): a server that sends a result must return from Run; its result is not used, and %s"
	}
	e := h.errorf(ErrStalled, p.key, policy, format, h.cfg.Stall, p.killNote())
	e.Stderr = p.stderr.String()
	return e
}
