package coordinator

import (
	"fmt"
	"math/bits"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sweep"
)

// LiveView is a copy of what the coordinator knows about one campaign at an
// instant, for the live campaign page and the metrics (package monitor).
// It is a copy so that a slow HTTP client never holds the coordinator's
// lock. It holds no task and no list of finished tasks: a page polled
// every few seconds on a 10^6-task campaign would copy them at every
// poll. It counts the finished tasks per point instead, and generates a
// point's tasks on demand (PointTasks), so that the page reads again only
// the points that moved.
type LiveView struct {
	Status protocol.Status
	// Points is the number of parameter points (0 for a finished
	// campaign that this coordinator has not loaded); Finished counts
	// each point's finished tasks (done or failed), in the campaign's
	// point order.
	Points   int
	Finished []int32
	// Failed are the failed tasks (task → error).
	Failed map[string]string
	// Running maps a running task to the worker that runs it.
	Running map[string]string
	// Redeliveries counts the deliveries beyond the first that workers
	// reported (a task seen running on attempt 3 counts 2).
	Redeliveries int

	co *Coordinator
	tl *taskList
}

// PointTasks are the tasks of the k-th point (0 ≤ k < Points), in
// replication order, generated again for a large campaign.
func (v *LiveView) PointTasks(k int) []sweep.Task {
	if v.tl == nil || k < 0 || k >= v.Points {
		return nil
	}
	return v.co.pointTasks(v.tl, k)
}

// Task is task tid of the campaign, if it is one.
func (v *LiveView) Task(tid string) (sweep.Task, bool) {
	if v.tl == nil {
		return sweep.Task{}, false
	}
	v.co.mu.Lock()
	defer v.co.mu.Unlock()
	return v.tl.Get(tid)
}

// Live returns the campaign's live view.
func (co *Coordinator) Live(id string) (*LiveView, error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	c := co.camps[id]
	if c == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownCampaign, id)
	}
	v := &LiveView{Status: co.statusLocked(c), co: co, tl: c.tl,
		Failed: make(map[string]string, len(c.failed)), Running: make(map[string]string, len(c.running))}
	if c.tl != nil {
		v.Finished = c.finishedByPoint()
		v.Points = len(v.Finished)
	}
	for t, e := range c.failed {
		v.Failed[t] = e
	}
	for t, w := range c.running {
		v.Running[t] = w
	}
	for _, a := range c.attempts {
		v.Redeliveries += a - 1
	}
	return v, nil
}

// finishedByPoint counts each point's finished tasks (done or failed);
// the caller holds co.mu. A task the list does not hold (a replication
// precision mode has not added yet) is not counted.
func (c *campaign) finishedByPoint() []int32 {
	tl := c.tl
	out := make([]int32, len(tl.Points()))
	count := func(tid string) {
		if i, ok := tl.Index(tid); ok {
			out[tl.pointAt(i)]++
		}
	}
	switch d := c.done; {
	case d == nil:
	case d.bits != nil:
		for w, word := range d.bits {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				word &^= 1 << b
				out[tl.pointAt(w*64+b)]++
			}
		}
	default:
		for tid := range d.m {
			count(tid)
		}
	}
	for tid := range c.failed {
		count(tid)
	}
	return out
}

// Redeliveries is the sum of LiveView.Redeliveries over every loaded
// campaign (the msjfarm_task_redeliveries_total metric).
func (co *Coordinator) Redeliveries() int {
	co.mu.Lock()
	defer co.mu.Unlock()
	n := 0
	for _, c := range co.camps {
		for _, a := range c.attempts {
			n += a - 1
		}
	}
	return n
}

// noteAttempt remembers the highest delivery attempt a worker reported for
// a task; the caller holds co.mu.
func (c *campaign) noteAttempt(task string, attempt int) {
	if attempt <= 1 {
		return
	}
	if c.attempts == nil {
		c.attempts = map[string]int{}
	}
	if attempt > c.attempts[task] {
		c.attempts[task] = attempt
	}
}
