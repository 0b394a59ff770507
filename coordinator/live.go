package coordinator

import (
	"fmt"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sweep"
)

// LiveView is a copy of what the coordinator knows about one campaign at an
// instant, for the live campaign page and the metrics (package monitor).
// It is a copy so that a slow HTTP client never holds the coordinator's
// lock; Tasks is shared and must not be modified.
type LiveView struct {
	Status protocol.Status
	// Tasks are the campaign's tasks (nil for a finished campaign that
	// this coordinator has not loaded).
	Tasks []sweep.Task
	// Done and Failed are the finished tasks (Failed: task → error).
	Done   []string
	Failed map[string]string
	// Running maps a running task to the worker that runs it.
	Running map[string]string
	// Redeliveries counts the deliveries beyond the first that workers
	// reported (a task seen running on attempt 3 counts 2).
	Redeliveries int
}

// Live returns the campaign's live view.
func (co *Coordinator) Live(id string) (*LiveView, error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	c := co.camps[id]
	if c == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownCampaign, id)
	}
	var tasks []sweep.Task
	if c.tl != nil {
		tasks = c.tl.Full()
	}
	v := &LiveView{Status: c.status(), Tasks: tasks,
		Failed: make(map[string]string, len(c.failed)), Running: make(map[string]string, len(c.running))}
	if c.done != nil {
		v.Done = make([]string, 0, c.done.len())
		c.done.each(func(t string) { v.Done = append(v.Done, t) })
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
