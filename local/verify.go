package local

import (
	"context"

	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// startVerifier starts, for a sweep with spot verification (verify > 0),
// two more workers in this process, each with its own name and one slot,
// so that every sampled task can be run again by a worker other than the
// one whose result was accepted, and a mismatch a third time by a worker
// other than those two: with one verifier, a mismatch waited the whole
// verification wait (10 minutes) for a third worker that never came. They
// share the runner (and so the plugin processes it keeps) with the main
// worker: a local run catches code whose results differ from one run to
// the next (a non-deterministic plugin), not a faulty machine, which
// takes a farm of several hosts (docs/security.md). The returned function
// stops them.
func startVerifier(ctx context.Context, o Options, wo worker.Options, main string) (stop func(), err error) {
	if o.Spec == nil || o.Spec.Verify <= 0 {
		return func() {}, nil
	}
	if wo.Runner != nil {
		// The main worker closes the runner when it stops; these must
		// not close it a second time.
		wo.Runner = sharedRunner{wo.Runner}
	}
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	for _, name := range []string{main + "-verify", main + "-verify2"} {
		wo.Name, wo.Concurrency = name, 1
		v, err := worker.New(ctx, wo)
		if err != nil {
			stopAll()
			return nil, err
		}
		vctx, vstop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- v.Run(vctx) }()
		stops = append(stops, func() { vstop(); <-done })
	}
	return stopAll, nil
}

// sharedRunner hides the Close of a runner another worker owns.
type sharedRunner struct{ r worker.Runner }

func (s sharedRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	return s.r.Run(ctx, t, progress)
}
