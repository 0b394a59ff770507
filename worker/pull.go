package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// puller decides how many messages the fetch loop (Run) asks for, and
// gives each fetched message its slot and in-flight permit.
//
// A pull request costs the nats-server about the same whatever it asks
// for: on a work queue of 1.5 kB messages, 148-170 µs of its CPU per
// message for Fetch(1) and a double ack, 55-68 µs per message for
// Fetch(16). On short tasks a worker's slots free one at a time, so a
// worker that fetches only for free slots asks for one message at a time.
// So while the replications it runs are short (shortTasks, under
// Options.AheadBelow on average), the worker
// also fetches ahead: up to Concurrency messages more than it has slots,
// each waiting in its handler for a slot (held), and it asks again only
// once half of that room is free, not for each slot (want). A held
// message's AckWait runs while it waits: it waits about one replication
// (every slot is ahead of it at most once), far below AckWait on short
// tasks, and keepAlive sends +WPI if the wait grows (the tasks turned
// long: the next replication that ends turns fetching ahead off). On
// shutdown a held message is given back at once (Nak), like one that
// arrives while the worker stops. Long tasks are fetched for free slots
// only, as before: a message held behind a long replication would wait
// while another worker idles.
//
// The in-flight bound is unchanged: a handler takes its in-flight permit
// before its slot and keeps it until its result is stored, and the loop
// does not fetch while every permit is taken, so a store slower than the
// runs stops the fetching (TestStoreBackpressure) with at most
// inflightPerSlot × Concurrency runs started and Concurrency (plus the
// room fetched ahead) messages held alive.
type puller struct {
	w *Worker
	// slots: a replication running (released at 99% of its arrivals, run.go).
	slots chan struct{}
	// inflight: a handler past its start, until it returns (the result
	// stored and acked).
	inflight chan struct{}
	// assigned counts the messages fetched or asked for whose slot has
	// not been given back; waiting, those of them without a slot yet.
	assigned, waiting atomic.Int64
	// freed is signalled whenever assigned, waiting or the in-flight
	// permits go down, waking a loop that waits for room.
	freed chan struct{}
	wg    sync.WaitGroup
}

// inflightPerSlot bounds the handlers past their start per slot: one
// running, the others storing a finished result (Run).
const inflightPerSlot = 2

// defaultAheadBelow is the mean replication wall time under which a
// worker fetches ahead of its free slots (Options.AheadBelow,
// shortTasks): a held message then waits at most about that long, and the
// pull request it saves (about 100 µs of the nats-server's CPU) is at
// least a thousandth of the task.
const defaultAheadBelow = 100 * time.Millisecond

func newPuller(w *Worker) *puller {
	return &puller{w: w, slots: make(chan struct{}, w.o.Concurrency),
		inflight: make(chan struct{}, inflightPerSlot*w.o.Concurrency), freed: make(chan struct{}, 1)}
}

// want is how many messages to ask for now, 0 to wait for p.freed.
func (p *puller) want() int {
	if len(p.inflight) == cap(p.inflight) {
		return 0 // the store is behind: wait for it (the in-flight bound)
	}
	c := cap(p.slots)
	room, need := c-int(p.assigned.Load()), 1
	if p.w.shortTasks() {
		room += c
		if p.waiting.Load() > 0 {
			// Messages wait for slots here already: ask when half the room
			// is free rather than for each slot, which would make every
			// pull request a request for one message again.
			need = max(c/2, 1)
		}
	}
	if room < need {
		return 0
	}
	return room
}

// signal wakes the fetch loop if it waits for room.
func (p *puller) signal() {
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// giveBack returns the room of n messages asked for that did not come.
func (p *puller) giveBack(n int) {
	if n > 0 {
		p.assigned.Add(-int64(n))
		p.signal()
	}
}

// dispatch hands msg to Worker.handle in its own goroutine once it has an
// in-flight permit and a slot.
func (p *puller) dispatch(ctx, hard context.Context, msg jetstream.Msg) {
	p.waiting.Add(1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ok := p.acquire(ctx, msg)
		p.waiting.Add(-1)
		p.signal()
		if !ok {
			_ = msg.Nak() // stopping before it started: give it back
			p.w.Stats.GivenBack.Add(1)
			p.giveBack(1)
			return
		}
		var once sync.Once
		release := func() {
			once.Do(func() {
				<-p.slots
				p.giveBack(1)
			})
		}
		defer func() {
			release()
			<-p.inflight
			p.signal()
		}()
		p.w.handle(ctx, hard, msg, release)
	}()
}

// acquire takes an in-flight permit and then a slot for msg, keeping the
// message alive (keepAlive) if it has to wait; false if ctx ended first.
func (p *puller) acquire(ctx context.Context, msg jetstream.Msg) bool {
	if p.tryAcquire() {
		return true
	}
	stop := p.w.keepAlive(msg)
	defer stop()
	select {
	case p.inflight <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	select {
	case p.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		<-p.inflight
		p.signal()
		return false
	}
}

// tryAcquire takes an in-flight permit and a slot if both are free now.
func (p *puller) tryAcquire() bool {
	select {
	case p.inflight <- struct{}{}:
	default:
		return false
	}
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		<-p.inflight
		p.signal()
		return false
	}
}

// noteRun adds a replication's wall time to the worker's running mean
// (exponentially weighted, 1/8 for the newest: one long replication after
// many short ones turns fetching ahead off at once).
func (w *Worker) noteRun(d time.Duration) {
	old := w.runMean.Load()
	if old == 0 {
		w.runMean.Store(int64(d) + 1)
		return
	}
	w.runMean.Store(old + (int64(d)-old)/8)
}

// shortTasks reports whether the replications this worker ran lately were
// short enough to fetch ahead of its free slots (puller); false before
// the first.
func (w *Worker) shortTasks() bool {
	m := w.runMean.Load()
	return m > 0 && time.Duration(m) < w.o.AheadBelow
}
