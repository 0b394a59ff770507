package coordinator

import (
	"context"
	"sync"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// impls resolves the code each policy of campaign id is expected to run
// with (record.ExpectedImpls).
func (co *Coordinator) impls(ctx context.Context, id string) (map[string]record.Impl, error) {
	return record.ExpectedImpls(ctx, co.o.Store, id)
}

// expectedKey is the content key of task t of campaign id under the code
// the campaign expects.
func (co *Coordinator) expectedKey(id string, t sweep.Task) string {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.expectedKeyLocked(co.camps[id], t)
}

func (co *Coordinator) expectedKeyLocked(c *campaign, t sweep.Task) string {
	var impls map[string]record.Impl
	if c != nil {
		impls = c.impl
	}
	return record.ExpectedKey(impls, t)
}

// reuse looks up the tasks' results in the content-addressed store (8 at
// a time) and references each one found from campaign c; it returns the
// tasks now done. A result found here was computed by another campaign
// (or an earlier run of this one) with exactly the code c expects.
func (co *Coordinator) reuse(ctx context.Context, c *campaign, tasks []sweep.Task) (map[string]bool, error) {
	keys := make([]string, len(tasks))
	co.mu.Lock()
	for i, t := range tasks {
		keys[i] = co.expectedKeyLocked(c, t)
	}
	co.mu.Unlock()
	found := map[string]bool{}
	var mu sync.Mutex
	var firstErr error
	inParallel(len(tasks), func(i int) {
		t := tasks[i]
		ok, err := record.Reusable(ctx, co.o.Store, keys[i])
		if err == nil && !ok {
			return
		}
		if err == nil {
			_, err = co.o.Store.PutIfAbsent(ctx, storage.ResultKey(c.id, t.ID), record.RefJSON(keys[i]))
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		found[t.ID] = true
	})
	co.mu.Lock()
	c.reused += len(found)
	co.mu.Unlock()
	if len(found) > 0 {
		co.o.Logf("coordinator: campaign %s: %d results reused from the store", c.id, len(found))
	}
	return found, firstErr
}
