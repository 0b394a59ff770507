package pluginhost

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/msjfarm/msjfarm/internal/wire"
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
// arrivals stops moving. The zero of its pointer (nil) watches nothing:
// Stall < 0.
type stallWatch struct {
	t     *time.Timer
	limit time.Duration
	// byDone: the plugin does not beat (its Info does not say Heartbeat:
	// written without the SDK), or the policy is a reference model, whose
	// Run need not be the engine's loop but must report its progress
	// (sdk.Reference), so the watch reads the progress reports' count of
	// arrivals simulated. Such a plugin was not watched at all, and a loop
	// that hung in its policy code held a worker's slot until
	// run.deadline, or for ever without one (a month); a plugin that
	// declared its policy a reference model escaped the watch that way.
	byDone bool
	// after is what the run may take after its last arrival, per unit of
	// the time its arrivals took (afterShare): a plugin that does not beat
	// gives no sign of life while the drain and MSER's second pass run,
	// and a hang there, unwatched, held the slot as long. From the last
	// arrival the watch allows Stall plus four times after times the time
	// the arrivals took (tail): an unstable run's cost per arrival grows
	// with its queue, and where it grows linearly in time (an O(L) policy
	// on a queue that grows at a constant rate) a drain of as many
	// arrivals as the window's takes three times the window's time.
	after float64
	start time.Time
	tail  time.Duration // > 0: the count reached the last arrival, and this is the limit since
	last  int64
	hit   atomic.Bool
}

// watchStall starts the watch of one call of policy on p, which cancel
// ends when it fires; after is afterShare of the call's request.
func (h *Host) watchStall(p *proc, policy string, after float64, cancel context.CancelFunc) *stallWatch {
	if h.cfg.Stall <= 0 {
		return nil
	}
	pol, ok := p.info.Policy(policy)
	if !ok {
		return nil
	}
	w := &stallWatch{limit: h.cfg.Stall, byDone: !p.info.Heartbeat || pol.Reference, after: after, start: time.Now()}
	w.t = time.AfterFunc(w.limit, func() {
		w.hit.Store(true)
		cancel()
	})
	return w
}

// afterShare is how long, per unit of the time its arrivals take, a run
// of r may go on after its last arrival: the drain simulates at most
// DrainLimit more arrivals (0: Arrivals, at least 1,000) of the
// warmup + Arrivals counted, and MSER runs the same sample path a second
// time (which a plugin's count may or may not show).
func afterShare(r wire.RunConfig) float64 {
	drain := r.DrainLimit
	if drain == 0 {
		drain = max(r.Arrivals, 1000)
	}
	share := float64(drain) / float64(max(r.Warmup+r.Arrivals, 1))
	if r.MSER {
		share++
	}
	return share
}

// tailLimit is the watch's limit from the last arrival: limit plus four
// times after times the time the arrivals took, at most maxTail. A
// drain_limit of 10^15 beside 1,000 arrivals makes a product past the
// largest Duration, whose conversion gave a negative one on amd64 (-2.6
// million hours for 4·10^21 ns), and a timer reset to it fires at once:
// an honest run would have been stopped as stalled at its last arrival.
func tailLimit(limit time.Duration, after float64, took time.Duration) time.Duration {
	extra := 4 * after * float64(took)
	if !(extra < float64(maxTail-limit)) {
		return maxTail
	}
	return limit + time.Duration(extra)
}

// maxTail bounds tailLimit: a century, which no run waits out (its
// run.deadline, a month by default in the worker, comes first).
const maxTail = 100 * 365 * 24 * time.Hour

// heard restarts the watch when an update moved what it watches: the
// count of beats, or, for a plugin watched by its count of arrivals done
// of total, that count (and, at the last arrival, for as long as the run
// may take after it; starting it again at the result, after which the
// call must end: a plugin that sent its result and hung was otherwise not
// watched).
func (w *stallWatch) heard(done, total, beats int64, result bool) {
	if w == nil {
		return
	}
	if w.byDone && result {
		w.tail = 0
		w.t.Reset(w.limit)
		return
	}
	moved := beats
	if w.byDone {
		moved = done
	}
	if moved == w.last {
		return
	}
	w.last = moved
	if w.byDone && total > 0 && done >= total {
		w.tail = tailLimit(w.limit, w.after, time.Since(w.start))
		w.t.Reset(w.tail)
		return
	}
	w.tail = 0
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
func (h *Host) stallError(p *proc, policy string, w *stallWatch, sent bool) error {
	h.logger.Error("plugin's replication made no progress for the stall limit; killing its process", "binary", p.key.path, "policy", policy, "stall", h.cfg.Stall, "pid", p.info.PID, "result_sent", sent)
	h.retireHung(p)
	format := "the engine loop made no progress for %v (it signals every 1,024 events): the policy's code does not return, or 1,024 events take that long (--plugin-stall); %s"
	if w.byDone {
		format = "the plugin's count of arrivals simulated made no progress for %v (it does not send the engine loop's signal, its Info not saying heartbeat, or its policy is a reference model, whose run need not): its policy code does not return, or an arrival takes that long (--plugin-stall); %s"
	}
	limit := h.cfg.Stall
	if w.tail > 0 {
		limit = w.tail.Round(time.Millisecond)
		format = "the plugin's count of arrivals reached the last arrival, and the call then went on for %v without a result (the stall limit plus four times what the drain and MSER's second pass may add to the time the arrivals took; it does not send the engine loop's signal, or its policy is a reference model, which need not): the drain hangs in policy code, or takes far longer than the arrivals did (--plugin-stall); %s"
	}
	if sent {
		limit = h.cfg.Stall
		format = "the plugin sent its result, then did not end the call for %v (--plugin-stall): a server that sends a result must return from Run; its result is not used, and %s"
	}
	e := h.errorf(ErrStalled, p.key, policy, format, limit, p.killNote())
	e.Stderr = p.stderr.String()
	return e
}
