package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// sweepLimits are the sizes a sweep may reach before submit (and its dry
// run) refuses it: a sweep file grows by accident — a generated list of
// load values, one axis too many — and is better refused with its figure
// and the flag that raises the limit than found out as a NATS error, a
// farm busy for a month or an out-of-memory crash. The defaults are far
// above the papers' campaigns (at most a few thousand points); points and
// tasks are counted from the planned campaign, without generating its
// tasks, and the file's size is checked before it is read.
type sweepLimits struct {
	points   *int
	tasks    *int
	specSize *string
}

// Default limits (docs/sweep.md, "Limits").
const (
	defaultMaxPoints = 1_000_000
	defaultMaxTasks  = 100_000_000
	defaultSpecSize  = "64MiB"
)

func addSweepLimitFlags(fs *pflag.FlagSet) *sweepLimits {
	return &sweepLimits{
		points:   fs.Int("max-points", defaultMaxPoints, "refuse a sweep of more points (scenario × policy variant) than this (env MSJFARM_MAX_POINTS)"),
		tasks:    fs.Int("max-tasks", defaultMaxTasks, "refuse a sweep of more tasks (points × replications) than this (env MSJFARM_MAX_TASKS)"),
		specSize: fs.String("max-spec-size", defaultSpecSize, "refuse a sweep file larger than this, e.g. 64MiB or 1GiB (env MSJFARM_MAX_SPEC_SIZE)"),
	}
}

// checkFile refuses a sweep file larger than --max-spec-size, before
// reading it, and returns the size the reader may read: the flag's, which
// raises the reader's default (sweep.MaxFileSize) as well as lowering it.
func (l *sweepLimits) checkFile(path string) (int64, error) {
	if l.points != nil && l.tasks != nil && (*l.points < 1 || *l.tasks < 1) {
		return 0, fmt.Errorf("--max-points and --max-tasks must be >= 1")
	}
	if l.specSize == nil {
		return sweep.MaxFileSize, nil
	}
	limit, err := parseSize("max-spec-size", *l.specSize)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		// The loader says it in the file's words ("sweep file: x.yaml
		// does not exist"), not stat's.
		return limit, nil
	}
	if fi.Size() > limit {
		return 0, fmt.Errorf("%s: %d bytes, more than --max-spec-size %s: raise it with --max-spec-size (or MSJFARM_MAX_SPEC_SIZE) if the sweep is meant to be this large",
			path, fi.Size(), *l.specSize)
	}
	return limit, nil
}

// load reads the sweep file under its profile within --max-spec-size
// (checkFile).
func (l *sweepLimits) load(path, profile string) (*sweep.File, error) {
	fileLimit, err := l.checkFile(path)
	if err != nil {
		return nil, err
	}
	return sweep.LoadProfileLimit(path, profile, fileLimit)
}

// noteOverrides says, -q or not, which environment variables changed the
// sweep file cmd runs (sweep.File.EnvOverrides): an MSJFARM_REPLICATIONS
// left in the shell ran another campaign than the file without a word.
//
// Each override is printed escaped and clipped: it is printed before the
// value is validated, and a variable holding a terminal escape sequence
// (MSJFARM_DESCRIPTION=$'\e]0;…\a') reached the terminal raw.
func noteOverrides(cmd, path string, f *sweep.File) {
	if o := f.EnvOverrides(); len(o) > 0 {
		shown := make([]string, len(o))
		for i, kv := range o {
			shown[i] = termtext.Printable(termtext.Clip(kv, maxOverrideShown))
		}
		fmt.Fprintf(stderr, "msjfarm %s: the environment changes %s: %s; the campaign is the file with them (its stored spec.yaml is what ran)\n",
			cmd, termtext.Printable(path), strings.Join(shown, ", "))
	}
}

// maxOverrideShown is how much of one NAME=value override noteOverrides
// prints.
const maxOverrideShown = 200

// checkPlan refuses a planned campaign with more points or tasks than the
// limits.
func (l *sweepLimits) checkPlan(path string, c *sweep.Campaign) error {
	if l.points == nil || l.tasks == nil {
		return nil
	}
	reps := int64(c.File.Replications)
	if p := c.File.Precision; p != nil && int64(p.MaxReplications) > reps {
		// What the campaign may grow to: the initial replications alone
		// let max_replications: 100000000 on 16,000 points through
		// --max-tasks 40000, a campaign of up to 1.6·10^12 tasks whose
		// ids the coordinator holds.
		if err := l.tooLarge(path, int64(c.Points), int64(p.MaxReplications)); err != nil {
			return fmt.Errorf("%w (precision.max_replications %d: what the campaign may grow to)", err, p.MaxReplications)
		}
	}
	return l.tooLarge(path, int64(c.Points), reps)
}

// size is the limits as sweep.PlanWithin takes them, which refuses a
// larger sweep before planning any of its points (checkPlan, after them,
// let a 9·10^6-point sweep plan for minutes first).
func (l *sweepLimits) size() sweep.Size {
	if l.points == nil || l.tasks == nil {
		return sweep.Size{}
	}
	return sweep.Size{Points: int64(*l.points), Tasks: int64(*l.tasks)}
}

// tooLarge is the refusal of points × reps past the limits (nil within).
func (l *sweepLimits) tooLarge(path string, points, reps int64) error {
	if l.points == nil || l.tasks == nil {
		return nil
	}
	if points > int64(*l.points) {
		return fmt.Errorf("%s: %d points, more than --max-points %d: raise it with --max-points (or MSJFARM_MAX_POINTS) if the sweep is meant to be this large",
			path, points, *l.points)
	}
	if n := points * reps; reps > 0 && (n > int64(*l.tasks) || n/reps != points) {
		return fmt.Errorf("%s: %d tasks (%d points × %d replications), more than --max-tasks %d: raise it with --max-tasks (or MSJFARM_MAX_TASKS) if the sweep is meant to be this large",
			path, n, points, reps, *l.tasks)
	}
	return nil
}

// planSweep loads and plans a sweep within the limits (none when lim is
// nil): validateSweep without generating the tasks (Materialize does, for
// a caller that needs them all), so that a 10^7-task sweep is checked in
// memory proportional to its points. A trace named by sha256 alone is
// read with stored (storedTrace; nil: not read, and its checks fall to
// the workers).
//
// loaded, if not nil, is the file as read already (run and submit read it
// first to see whether it is a limit search): a 20 MB sweep was parsed
// twice, 18 s each time.
func planSweep(path string, loaded *sweep.File, cat sweep.Catalog, profile string, traceLimit int64, lim *sweepLimits, stored func(sum string, size int64) ([]byte, error)) (*sweep.File, *sweep.Campaign, []byte, error) {
	if lim == nil {
		lim = &sweepLimits{}
	}
	f := loaded
	if f == nil {
		var err error
		if f, err = lim.load(path, profile); err != nil {
			return nil, nil, nil, err
		}
	}
	if f.Trace != nil {
		// A trace is read, parsed and converted at the collector's default
		// pace, not the simulation pace `run` keeps (gcpace: five times
		// the live heap): the parses leave about 90 bytes a job of
		// garbage, and with the canonical form live (72 bytes a job) a
		// 5·10⁶-job trace's planning grew to 1.9 GB before a cycle ran.
		defer gcpace.Hold()()
	}
	trace, err := sweep.ReadTraceFile(f, traceLimit)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := sweep.AttachStoredTrace(f, stored); err != nil {
		return nil, nil, nil, err
	}
	c, err := sweep.PlanWithin(f, withPolicyNames(cat), lim.size())
	if tl, ok := errors.AsType[*sweep.TooLargeError](err); ok {
		return nil, nil, nil, lim.tooLarge(path, tl.Points, tl.Replications)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if err := lim.checkPlan(path, c); err != nil {
		return nil, nil, nil, err
	}
	printWarnings(c)
	if r, ok := cat.(*registry.Registry); ok {
		if note := r.TrialNote(); note != "" {
			errorf("warning: %s", note)
		}
	}
	return f, c, trace, nil
}

// storedTrace is planSweep's reader of a trace named by sha256 alone
// (sweep.AttachStoredTrace): the object in ff's storage, opened without
// creating anything (the object a worker fetches and verifies), within
// limit bytes. With no storage given, or none there yet, it reads nothing
// (nil, nil): the trace cannot be there, and the submission says so.
func storedTrace(ctx context.Context, ff *farmFlags, limit int64) func(sum string, size int64) ([]byte, error) {
	return func(sum string, size int64) ([]byte, error) {
		if *ff.storage == "" {
			return nil, nil
		}
		st, err := storage.Open(ctx, *ff.storage, append(ff.storageOptions(), storage.NoCreate())...)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if err := storage.CheckTrace(ctx, st, sum, size, limit); err != nil {
			return nil, err
		}
		return st.Get(ctx, storage.TraceKey(sum))
	}
}

// requestHeadroom is what a NATS message needs beside its payload
// (subject, reply inbox, headers).
const requestHeadroom = 4 << 10

// specByReference makes a submission whose request would not fit in one
// NATS message (the server's max_payload, 1 MB by default) carry the
// spec's storage key instead of the spec: the spec is stored under its
// content key in st, where the coordinator reads it. Without storage such
// a sweep is refused, saying how to submit it. A request that fits is
// left as it is. It returns the key, or "".
func specByReference(ctx context.Context, nc *nats.Conn, st storage.Store, path string, req *protocol.SubmitRequest) (string, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	max := nc.MaxPayload() - requestHeadroom
	if int64(len(data)) <= max {
		return "", nil
	}
	if st == nil {
		return "", usageError{fmt.Errorf("%s: the sweep is %d bytes as a request, more than one NATS message carries here (max_payload %d): give the farm's --storage (or MSJFARM_STORAGE), where submit stores the spec for the coordinator",
			path, len(data), nc.MaxPayload())}
	}
	key, err := protocol.PutSpec(ctx, st, req.Spec)
	if err != nil {
		return "", err
	}
	req.Spec, req.SpecKey = nil, key
	return key, nil
}

// waitDescribeTasks is the largest campaign whose tasks submit -wait
// generates again at the end, one at a time, to name its failed tasks by
// policy and parameters (progress.failedTasks); a larger one names them
// by id.
const waitDescribeTasks = 100_000
