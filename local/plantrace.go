package local

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// calibrationTraces gives a dry run's calibrations of a trace campaign the
// trace they replay, as a worker would have it: parsed from the canonical
// bytes read on this machine (sweep.Campaign.LocalTrace: trace.file, or a
// trace named by sha256 alone that the command read from its storage,
// sweep.AttachStoredTrace), once per servers value.
type calibrationTraces struct {
	camp *sweep.Campaign

	mu     sync.Mutex
	parsed map[int]*worker.SharedTrace // its calibrations convert it once
}

func newCalibrationTraces(camp *sweep.Campaign) *calibrationTraces {
	return &calibrationTraces{camp: camp, parsed: map[int]*worker.SharedTrace{}}
}

// attach is ctx with t's trace attached for worker.InProcess (ctx itself
// for a task that replays none).
func (ct *calibrationTraces) attach(ctx context.Context, t *sweep.Task) (context.Context, error) {
	if t.Trace == nil {
		return ctx, nil
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if tr, ok := ct.parsed[t.Workload.Servers]; ok {
		return worker.WithSharedTrace(ctx, tr), nil
	}
	tr, err := ct.camp.LocalTrace(t.Workload.Servers)
	switch {
	case errors.Is(err, sweep.ErrNoLocalTrace):
		return nil, fmt.Errorf("trace %s is named by sha256 alone and no storage is given: give the storage that holds it (--storage), or trace.file", t.Trace.SHA256)
	case err != nil:
		return nil, fmt.Errorf("trace %s: %w", t.Trace.SHA256, err)
	}
	st := worker.ShareTrace(tr)
	ct.parsed[t.Workload.Servers] = st
	return worker.WithSharedTrace(ctx, st), nil
}
