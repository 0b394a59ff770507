package local

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// calibrationTraces gives a dry run's calibrations of a trace campaign the
// trace they replay, as a worker would have it: converted from the
// canonical bytes read on this machine (sweep.Campaign.LocalTraceWorkload:
// trace.file, or a trace named by sha256 alone that the command read from
// its storage, sweep.AttachStoredTrace), once per servers value and time
// scale, as they come, never parsed whole: a parsed trace was kept per
// servers value beside its workload, 40 bytes a kept job more.
type calibrationTraces struct {
	camp *sweep.Campaign

	mu     sync.Mutex
	shared map[int]*worker.SharedTrace // its calibrations convert it once
}

func newCalibrationTraces(camp *sweep.Campaign) *calibrationTraces {
	return &calibrationTraces{camp: camp, shared: map[int]*worker.SharedTrace{}}
}

// attach is ctx with t's trace attached for worker.InProcess (ctx itself
// for a task that replays none).
func (ct *calibrationTraces) attach(ctx context.Context, t *sweep.Task) (context.Context, error) {
	if t.Trace == nil {
		return ctx, nil
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	servers := t.Workload.Servers
	if tr, ok := ct.shared[servers]; ok {
		return worker.WithSharedTrace(ctx, tr), nil
	}
	// Its refusals now, once, as the parse said them: no trace read here,
	// or none of its jobs on these servers.
	_, err := ct.camp.LocalTraceCounts(servers)
	switch {
	case errors.Is(err, sweep.ErrNoLocalTrace):
		return nil, fmt.Errorf("trace %s is named by sha256 alone and no storage is given: give the storage that holds it (--storage), or trace.file", t.Trace.SHA256)
	case err != nil:
		return nil, fmt.Errorf("trace %s: %w", t.Trace.SHA256, err)
	}
	st := worker.ShareConversion(func(name string, timeScale float64) (*sim.Workload, error) {
		return ct.camp.LocalTraceWorkload(name, servers, timeScale)
	})
	ct.shared[servers] = st
	return worker.WithSharedTrace(ctx, st), nil
}
