package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// Runner runs one replication. The worker calls it from several goroutines
// at once. progress, if not nil, receives (arrivals simulated, planned).
// A Runner must return soon after ctx ends (deadline or shutdown) with an
// error wrapping ctx.Err().
type Runner interface {
	Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*Outcome, error)
}

// Outcome is a finished replication and where it came from.
type Outcome struct {
	Result     *sim.Result
	Provenance Provenance
	// CounterInfo is the policy's description of its counters (stored in
	// the record beside the result; nil if it describes none).
	CounterInfo sim.CounterInfos
	// Bytes is the result's size as the runner received it (its JSON from
	// a plugin; 0 in process), checked against resultcheck.Limit.
	Bytes int
	// EnginePolicy: the policy ran in the engine (not a reference
	// model), as its entry or its plugin's Info says
	// (resultcheck.Expect.EnginePolicy).
	EnginePolicy bool
}

// Provenance says which code produced a result; it goes into every result
// record (and, merged over results, into the campaign manifest).
type Provenance struct {
	Runner        string // "in-process" or "plugin"
	Plugin        string // plugin (or built-in family) name
	PluginVersion string
	PluginSHA256  string // sha256 of the executable that ran the policy, when known
	Engine        string // sim.Version the policy linked
	// Builtin: a built-in family served by msjfarm itself through the
	// plugin boundary (record.Provenance.Builtin).
	Builtin bool
	// CPU is the CPU time of the replication (0 if unknown): the thread
	// CPU time of an in-process run, excluding the farm's own work.
	CPU time.Duration
}

// InProcess runs tasks with the built-in policy catalogue inside the worker
// process. Its provenance names the msjfarm executable's sha256, which pins
// the policy code exactly.
type InProcess struct{}

var (
	selfOnce sync.Once
	selfSum  string
)

// SelfSHA256 is the hex sha256 of the running executable ("" if unreadable).
func SelfSHA256() string {
	selfOnce.Do(func() {
		p, err := os.Executable()
		if err != nil {
			return
		}
		f, err := os.Open(p)
		if err != nil {
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			selfSum = hex.EncodeToString(h.Sum(nil))
		}
	})
	return selfSum
}

// Run simulates the task in this process. The context cancels the
// replication through sim.Config.Context (polled every 1,024 events).
func (InProcess) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*Outcome, error) {
	spec, err := builtin.Lookup(t.Policy)
	if err != nil {
		return nil, &NotServedError{err}
	}
	w, err := taskWorkload(ctx, t)
	if err != nil {
		return nil, &PermanentError{fmt.Errorf("workload: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := t.Config()
	cfg.Context = ctx
	cfg.Progress = progress
	// Pin the goroutine to its thread so the thread's CPU time is the
	// replication's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, okCPU := threadCPU()
	res, err := spec.Run(w, t.Params, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// The replication is deterministic: a policy that refuses the
		// workload or fails part-way does so on every attempt (the plugin
		// runner's host calls such errors permanent too).
		return nil, &PermanentError{err}
	}
	var cpu time.Duration
	if cpu1, ok := threadCPU(); ok && okCPU {
		cpu = cpu1 - cpu0
	}
	return &Outcome{Result: res, CounterInfo: spec.CounterInfo(), EnginePolicy: spec.Reference == nil, Provenance: Provenance{
		Runner: "in-process", Plugin: "builtin", PluginVersion: sim.Version,
		PluginSHA256: SelfSHA256(), Engine: res.Engine, CPU: cpu,
	}}, nil
}

// recordProvenance is the record.Provenance of an outcome.
func recordProvenance(p Provenance, host, worker string, attempt int, started time.Time, wall time.Duration) record.Provenance {
	return record.Provenance{
		Runner: p.Runner, Plugin: p.Plugin, PluginVersion: p.PluginVersion, PluginSHA256: p.PluginSHA256, Builtin: p.Builtin,
		Engine: p.Engine, MsjfarmVersion: sim.Version, Host: host, Worker: worker, Attempt: attempt,
		Started: started.UTC(), WallSeconds: record.Seconds(wall), CPUSeconds: record.Seconds(max(p.CPU, 0)),
	}
}

// Impl is the code p names (record.ImplOf): false for a runner that
// names no engine.
func (p Provenance) Impl() (record.Impl, bool) {
	return record.ImplOf(recordProvenance(p, "", "", 0, time.Time{}, 0))
}

// isCtxErr reports whether err came from a context ending.
func isCtxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
