package local

import (
	"context"

	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// startVerifier starts, for a sweep with spot verification (verify > 0),
// a second worker in this process with its own name and one slot, so that
// every sampled task can be run again by a worker other than the one
// whose result was accepted. It shares the runner (and so the plugin
// processes it keeps) with the main worker: a local run catches code
// whose results differ from one run to the next (a non-deterministic
// plugin), not a faulty machine, which takes a farm of several hosts
// (docs/security.md). The returned function stops it.
func startVerifier(ctx context.Context, o Options, wo worker.Options, main string) (stop func(), err error) {
	if o.Spec == nil || o.Spec.Verify <= 0 {
		return func() {}, nil
	}
	wo.Name, wo.Concurrency = main+"-verify", 1
	if wo.Runner != nil {
		// The main worker closes the runner when it stops; this one must
		// not close it a second time.
		wo.Runner = sharedRunner{wo.Runner}
	}
	v, err := worker.New(ctx, wo)
	if err != nil {
		return nil, err
	}
	vctx, vstop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- v.Run(vctx) }()
	return func() { vstop(); <-done }, nil
}

// sharedRunner hides the Close of a runner another worker owns.
type sharedRunner struct{ r worker.Runner }

func (s sharedRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*worker.Outcome, error) {
	return s.r.Run(ctx, t, progress)
}
