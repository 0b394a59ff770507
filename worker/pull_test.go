package worker_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// gatedRunner runs the first free replications at once and blocks the
// others until gate is closed (or their context ends).
type gatedRunner struct {
	worker.InProcess
	free    int64
	gate    chan struct{}
	started atomic.Int64
}

func (r *gatedRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	if r.started.Add(1) > r.free {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.InProcess.Run(ctx, t, progress)
}

// starts counts the runs a run log records as started.
func starts(log *procutil.Buffer) int { return strings.Count(log.String(), "start ") }

// TestFetchAhead: on short tasks a worker fetches up to Concurrency
// messages ahead of its free slots, and they wait for a slot. With its 4
// slots blocked in 4 replications, it holds up to 4 more messages; when
// it stops, the held ones go back at once, never started, while the 4
// running finish within the grace period and are stored. A second worker
// then runs the rest: every task is started exactly once and stored once,
// and the second worker asks for at least two messages a pull (4 slots,
// a pull when half its ahead room is free) — about half as many pull
// requests as tasks, where fetching for free slots only asked for one or
// two each time.
func TestFetchAhead(t *testing.T) {
	const slots, free = 4, 10
	queue := shortTasks(t, 120)
	nc, h, st := queued(t, protocol.Layout{MaxDeliver: 3, AckWait: 30 * time.Second}, queue)
	runLog := &procutil.Buffer{}
	r := &gatedRunner{free: free, gate: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Short enough to fetch ahead however slowly this machine runs them.
	w1, err := worker.New(ctx, worker.Options{Conn: nc, Store: st, Runner: r, Concurrency: slots, Name: "w1",
		FetchWait: 200 * time.Millisecond, AheadBelow: time.Hour, Grace: time.Minute, RunLog: runLog, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done1 := make(chan struct{})
	go func() { defer close(done1); _ = w1.Run(ctx) }()
	pending := func() int {
		ci, err := h.Workers.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ci.NumAckPending
	}
	// free tasks done, 4 replications blocked, messages held.
	for deadline := time.Now().Add(2 * time.Minute); w1.Stats.Done.Load() < free || starts(runLog) < free+slots || pending() <= slots; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 min: %d done, %d runs started, %d messages unacked; want %d, %d and more than %d",
				w1.Stats.Done.Load(), starts(runLog), pending(), free, free+slots, slots)
		}
	}
	// Nothing more is fetched while every slot is blocked and the ahead
	// room is full (or less than half of it free), nor started.
	time.Sleep(500 * time.Millisecond)
	held := pending() - slots
	if s := starts(runLog); held < 1 || held > slots || s != free+slots {
		t.Fatalf("%d messages held and %d runs started, want 1 to %d and %d", held, s, slots, free+slots)
	}
	cancel()
	// The held messages go back at once; the running ones stay ours.
	for deadline := time.Now().Add(2 * time.Minute); w1.Stats.GivenBack.Load() < int64(held); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages given back 2 min after the stop, want the %d held", w1.Stats.GivenBack.Load(), held)
		}
	}
	close(r.gate)
	<-done1
	// (A pull request still on its way when held was read may have added
	// to them: never more than the ahead room.)
	if got, back := w1.Stats.Done.Load(), w1.Stats.GivenBack.Load(); got != free+slots || back < int64(held) || back > slots {
		t.Fatalf("first worker: %d done and %d given back, want %d and %d to %d", got, back, free+slots, held, slots)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w2, err := worker.New(ctx2, worker.Options{Conn: nc, Store: st, Concurrency: slots, Name: "w2",
		FetchWait: 200 * time.Millisecond, AheadBelow: time.Hour, RunLog: runLog, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done2 := make(chan struct{})
	go func() { defer close(done2); _ = w2.Run(ctx2) }()
	rest := int64(len(queue) - free - slots)
	for deadline := time.Now().Add(2 * time.Minute); w2.Stats.Done.Load() < rest; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("second worker: %d of %d done after 2 min", w2.Stats.Done.Load(), rest)
		}
	}
	cancel2()
	<-done2
	if s := starts(runLog); s != len(queue) {
		t.Errorf("%d runs started for %d tasks", s, len(queue))
	}
	for _, w := range []*worker.Worker{w1, w2} {
		if w.Stats.Duplicates.Load() != 0 || w.Stats.Failed.Load() != 0 || w.Stats.Skipped.Load() != 0 {
			t.Errorf("%s: duplicates %d failed %d skipped %d", w.Name(), w.Stats.Duplicates.Load(), w.Stats.Failed.Load(), w.Stats.Skipped.Load())
		}
	}
	for _, tk := range queue {
		if _, err := st.Stat(context.Background(), storage.ResultKey("camp", tk.ID)); err != nil {
			t.Errorf("task %s: %v", tk.ID, err)
		}
	}
	// Its first pulls ask for its free slots (no replication measured
	// yet), the last may find the queue empty; all others ask for 2 or more.
	if p := w2.Stats.Pulls.Load(); p > rest/2+6 {
		t.Errorf("second worker: %d pull requests for %d tasks, want at most %d", p, rest, rest/2+6)
	}
	t.Logf("second worker: %d pull requests for %d tasks", w2.Stats.Pulls.Load(), rest)
}
