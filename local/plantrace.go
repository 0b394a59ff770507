package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// calibrationTraces gives a dry run's calibrations of a trace campaign the
// trace they replay, as a worker would have it: parsed from the canonical
// bytes read on this machine (sweep.Campaign.LocalTrace), once per
// servers value; or, for a trace named by sha256 alone, fetched from st
// and verified through a worker.TraceSource whose cache is a temporary
// directory, removed by close, so that the dry run leaves nothing behind.
type calibrationTraces struct {
	camp *sweep.Campaign
	st   storage.Store

	mu     sync.Mutex
	parsed map[int]*swf.Trace
	dir    string
	src    *worker.TraceSource
}

func newCalibrationTraces(camp *sweep.Campaign, st storage.Store) *calibrationTraces {
	return &calibrationTraces{camp: camp, st: st, parsed: map[int]*swf.Trace{}}
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
		return worker.WithTrace(ctx, tr), nil
	}
	tr, err := ct.camp.LocalTrace(t.Workload.Servers)
	switch {
	case err == nil:
		ct.parsed[t.Workload.Servers] = tr
		return worker.WithTrace(ctx, tr), nil
	case !errors.Is(err, sweep.ErrNoLocalTrace):
		return nil, fmt.Errorf("trace %s: %w", t.Trace.SHA256, err)
	case ct.st == nil:
		return nil, fmt.Errorf("trace %s is named by sha256 alone and no storage is given: give the storage that holds it (--storage), or trace.file", t.Trace.SHA256)
	}
	if ct.src == nil {
		if ct.dir, err = os.MkdirTemp("", "msjfarm-dryrun-trace-"); err != nil {
			return nil, err
		}
		ct.src = worker.NewTraceSource(ct.st, ct.dir, 0)
	}
	return worker.WithTraceSource(ctx, ct.src), nil
}

// close removes the temporary trace cache, if one was made.
func (ct *calibrationTraces) close() {
	if ct.dir != "" {
		os.RemoveAll(ct.dir)
	}
}
