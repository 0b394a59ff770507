package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// A replayed trace reaches a worker by content only: the task names the
// trace's sha256 and size (sweep.TraceRef), the worker fetches
// storage.TraceKey(sha256) into a local content-addressed cache, verifies
// the sha256 of exactly the bytes it parses, and parses and converts each
// (trace, servers, time scale) once into the engine's workload, which all
// the replications that replay it share, read-only. No path from a task
// is ever opened.
//
// Only the converted workload is kept (40 bytes a job: the 32 of its
// sim.TraceJob and the 8 of the run time in its class's service
// distribution), not the parsed trace it came from: each replication
// converted the cached parsed trace again, so a worker of four slots
// replaying a trace of 10⁷ jobs held the 400 MB parsed trace and 400 MB
// more per running replication, 2 GB, and 1.7 GB of garbage besides.

// maxParsedTraces bounds the converted traces kept in memory; a campaign
// replays one trace, so a handful covers campaigns running side by side.
const maxParsedTraces = 4

// traceCache fetches, verifies and parses traces for the worker's tasks.
type traceCache struct {
	store storage.Store
	dir   string // "" : the user cache directory's msjfarm/traces
	limit int64  // bytes; <= 0: storage.DefaultMaxTraceSize
	logf  func(string, ...any)

	fetchMu sync.Mutex // one download at a time
	mu      sync.Mutex
	parsed  map[string]*parsedTrace
	order   []string // keys of parsed, oldest first
	seq     atomic.Int64

	// Fetches and Parses count downloads and parses (tests check that
	// replications share them).
	Fetches, Parses atomic.Int64
}

// parsedTrace is a trace converted to the workload its replications
// replay (once done is closed), shared by them: the engine and the
// policies only read a workload.
type parsedTrace struct {
	done chan struct{}
	w    *sim.Workload
	err  error
}

func newTraceCache(st storage.Store, dir string, limit int64, logf func(string, ...any)) *traceCache {
	if limit <= 0 {
		limit = storage.DefaultMaxTraceSize
	}
	return &traceCache{store: st, dir: dir, limit: limit, logf: logf, parsed: map[string]*parsedTrace{}}
}

func (c *traceCache) cacheDir() (string, error) {
	if c.dir != "" {
		return c.dir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no trace cache directory (set the worker's trace cache): %w", err)
	}
	return filepath.Join(d, "msjfarm", "traces"), nil
}

// get returns the workload that replays the trace ref pins on k servers
// (0: the trace header's) at ref's time scale, shared by every caller
// (name names it in the errors of the caller that converts it). A trace
// that is missing from storage, larger than the limit, not what its
// sha256 says, malformed, or without a usable job is a *PermanentError
// naming the hash or the workload; a storage error is not (another attempt
// may succeed). Only successes are kept, so a failure is tried again by
// the next task.
func (c *traceCache) get(ctx context.Context, ref *sweep.TraceRef, k int, name string) (*sim.Workload, error) {
	if !storage.ValidTraceSHA256(ref.SHA256) {
		return nil, &PermanentError{fmt.Errorf("trace: %q is not a sha256 (64 lowercase hex digits)", ref.SHA256)}
	}
	if ref.Size > c.limit {
		return nil, &PermanentError{fmt.Errorf("trace %s: %d bytes, more than this worker's limit of %d (--max-trace-size)", ref.SHA256, ref.Size, c.limit)}
	}
	key := ref.SHA256 + "/" + strconv.Itoa(k) + "/" + strconv.FormatFloat(ref.TimeScale, 'g', -1, 64)
	c.mu.Lock()
	if p := c.parsed[key]; p != nil {
		c.mu.Unlock()
		select {
		case <-p.done:
			if p.err == nil {
				return p.w, nil
			}
			// Failed for another task meanwhile: try again, below.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
		if c.parsed[key] == p {
			delete(c.parsed, key)
		}
	}
	p := &parsedTrace{done: make(chan struct{})}
	c.parsed[key] = p
	c.order = append(c.order, key)
	c.evictLocked()
	c.mu.Unlock()

	p.w, p.err = c.load(ctx, ref, k, name)
	close(p.done)
	if p.err != nil {
		c.mu.Lock()
		if c.parsed[key] == p {
			delete(c.parsed, key)
		}
		c.mu.Unlock()
	}
	return p.w, p.err
}

// evictLocked drops the oldest finished parsed traces beyond
// maxParsedTraces (a trace still loading is never dropped).
func (c *traceCache) evictLocked() {
	keep := c.order[:0]
	n := len(c.parsed)
	for _, k := range c.order {
		p, ok := c.parsed[k]
		if !ok {
			continue
		}
		finished := false
		select {
		case <-p.done:
			finished = true
		default:
		}
		if n > maxParsedTraces && finished {
			delete(c.parsed, k)
			n--
			continue
		}
		keep = append(keep, k)
	}
	c.order = keep
}

// load parses the cached copy of the trace, fetching it first if there
// is none or if the cached copy is not what its name says, and converts
// it to its workload (sweep.Task.TraceWorkload, with ref's time scale);
// the parsed trace is garbage once converted.
func (c *traceCache) load(ctx context.Context, ref *sweep.TraceRef, k int, name string) (*sim.Workload, error) {
	// Parsing and converting leave 88 bytes a job of garbage for the 40
	// kept: at the simulation pace (GOGC=400, five times the live heap)
	// `msjfarm run` of a trace of 10⁷ jobs, whose process holds its
	// planning's 1 GB besides, grew to 5.2 GB of heap before a cycle ran
	// (4.8 GB resident; 3.9 GB at the default pace, the rest its
	// planning's).
	defer gcpace.Hold()()
	tr, err := c.parseRef(ctx, ref, k)
	if err != nil {
		return nil, err
	}
	w, err := workload.FromTrace(name, tr, ref.TimeScale)
	if err != nil {
		// As the runner said it when it converted the trace itself.
		return nil, &PermanentError{fmt.Errorf("workload: %w", err)}
	}
	return w, nil
}

// parseRef parses the cached copy of the trace, fetching it first if
// there is none or if the cached copy is not what its name says.
func (c *traceCache) parseRef(ctx context.Context, ref *sweep.TraceRef, k int) (*swf.Trace, error) {
	dir, err := c.cacheDir()
	if err != nil {
		return nil, err
	}
	final := filepath.Join(dir, ref.SHA256)
	if _, err := os.Stat(final); err == nil {
		tr, err := c.parse(final, ref, k)
		var bad *badContent
		if !errors.As(err, &bad) {
			return tr, err
		}
		c.logf("worker: cached trace %s: %v; fetching it again", final, err)
		os.Remove(final)
	}
	if err := c.fetch(ctx, dir, final, ref); err != nil {
		return nil, err
	}
	tr, err := c.parse(final, ref, k)
	var bad *badContent
	if errors.As(err, &bad) {
		os.Remove(final)
		return nil, &PermanentError{fmt.Errorf("trace %s: the copy fetched from %s %v: refusing to replay it; submitting the sweep again replaces it", ref.SHA256, c.store.URL(), bad)}
	}
	return tr, err
}

// badContent: a trace file whose bytes are not those its sha256 names.
type badContent struct{ msg string }

func (e *badContent) Error() string { return e.msg }

// parse reads path once, hashing exactly the bytes the parser sees: a
// trace is replayed only if those bytes have the pinned size and sha256.
func (c *traceCache) parse(path string, ref *sweep.TraceRef, k int) (*swf.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	cr := &countReader{r: io.LimitReader(f, ref.Size+1)}
	tr, perr := swf.ReadLimits(io.TeeReader(cr, h), k, swf.Limits{})
	// Hash what the parser left unread too (all of it after an error), to
	// tell a corrupt copy from a malformed trace.
	if _, err := io.Copy(h, cr); err != nil {
		return nil, err
	}
	if cr.n != ref.Size {
		return nil, &badContent{fmt.Sprintf("has %d bytes where the task pins %d", cr.n, ref.Size)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != ref.SHA256 {
		return nil, &badContent{fmt.Sprintf("has sha256 %s, not the pinned %s (corrupt or tampered)", sum, ref.SHA256)}
	}
	c.Parses.Add(1)
	if perr != nil {
		return nil, &PermanentError{fmt.Errorf("trace %s: %w", ref.SHA256, perr)}
	}
	return tr, nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// fetch downloads the trace into final (through a temporary name, so
// final never holds a partial download). The object's size is checked
// before a byte is downloaded.
func (c *traceCache) fetch(ctx context.Context, dir, final string, ref *sweep.TraceRef) error {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	if _, err := os.Stat(final); err == nil {
		return nil // fetched by another task meanwhile; parse verifies it
	}
	key := storage.TraceKey(ref.SHA256)
	info, err := c.store.Stat(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return &PermanentError{fmt.Errorf("trace %s: %s has no object %s (deleted after submit? submitting the sweep again uploads it)", ref.SHA256, c.store.URL(), key)}
	}
	if err != nil {
		return fmt.Errorf("trace %s: %w", ref.SHA256, err)
	}
	if info.Size != ref.Size {
		return &PermanentError{fmt.Errorf("trace %s: the object %s in %s has %d bytes where the task pins %d (corrupt or tampered): refusing to replay it; submitting the sweep again replaces it",
			ref.SHA256, key, c.store.URL(), info.Size, ref.Size)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.fetch-%d-%d", final, os.Getpid(), c.seq.Add(1))
	if err := c.store.GetFile(ctx, key, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("trace %s: fetching %s: %w", ref.SHA256, key, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return err
	}
	c.Fetches.Add(1)
	c.logf("worker: fetched trace %s (%d bytes) from %s", ref.SHA256, ref.Size, c.store.URL())
	return nil
}

// traceKey is the context key of a task's parsed trace (a *SharedTrace).
type traceKey struct{}

// WithTrace attaches the parsed trace of a trace task to the context a
// Runner is called with, for a runner outside a worker (a test); each run
// converts it to its workload. Runs that replay one trace share one
// conversion through WithSharedTrace.
func WithTrace(ctx context.Context, tr *swf.Trace) context.Context {
	return WithSharedTrace(ctx, ShareTrace(tr))
}

// SharedTrace is a parsed trace converted once per time scale to the
// workload that replays it, for all the runs it is attached to
// (WithSharedTrace), which share that workload read-only. Each run
// converted it again (sweep.Task.TraceWorkload: 40 bytes a job kept, 8
// more allocated), so a plan's calibrations of a trace of 10⁷ jobs,
// two runs each, allocated 1 GB apiece.
type SharedTrace struct {
	tr *swf.Trace
	mu sync.Mutex
	ws map[float64]*sim.Workload // by time scale
}

// ShareTrace is tr, for runs that share its conversions.
func ShareTrace(tr *swf.Trace) *SharedTrace {
	return &SharedTrace{tr: tr, ws: map[float64]*sim.Workload{}}
}

// workload is the workload that replays s for trace task t, converted by
// the first run at t's time scale (a conversion that fails is not kept:
// the next run tries again, and fails the same way, naming its task).
func (s *SharedTrace) workload(t *sweep.Task) (*sim.Workload, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.ws[t.Trace.TimeScale]; w != nil {
		return named(w, t), nil
	}
	w, err := t.TraceWorkload(s.tr)
	if err != nil {
		return nil, err
	}
	s.ws[t.Trace.TimeScale] = w
	return named(w, t), nil
}

// WithSharedTrace attaches the trace s of a trace task to the context a
// Runner is called with (msjfarm run's calibrations of a trace campaign).
func WithSharedTrace(ctx context.Context, s *SharedTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, s)
}

// traceWorkloadKey is the context key of a trace task's shared workload.
type traceWorkloadKey struct{}

// taskWorkload builds t's engine workload: generated arrivals, or, for a
// trace task, the workload the worker converted the trace to (shared with
// the other replications that replay it), the verified trace attached to
// ctx (WithTrace) or, failing those, the workload fetched through the
// TraceSource attached to ctx (WithTraceSource). A trace task with none
// is a permanent error: a runner never reads a trace from a path.
func taskWorkload(ctx context.Context, t *sweep.Task) (*sim.Workload, error) {
	if t.Trace == nil {
		return t.SimWorkload()
	}
	if w, _ := ctx.Value(traceWorkloadKey{}).(*sim.Workload); w != nil {
		return named(w, t), nil
	}
	if s, _ := ctx.Value(traceKey{}).(*SharedTrace); s != nil {
		return s.workload(t)
	}
	src, _ := ctx.Value(traceSourceKey{}).(*TraceSource)
	if src == nil {
		return nil, fmt.Errorf("trace %s: no verified trace attached to the run (the worker fetches it from storage)", t.Trace.SHA256)
	}
	w, err := src.c.get(ctx, t.Trace, t.Workload.Servers, t.Workload.Name)
	if err != nil {
		return nil, err
	}
	return named(w, t), nil
}

// named is the shared workload w under t's workload name: a copy of the
// header only, its classes and trace jobs still w's (read-only).
func named(w *sim.Workload, t *sweep.Task) *sim.Workload {
	c := *w
	c.Name = t.Workload.Name
	return &c
}

// TraceSource fetches, verifies and parses traces from storage like a
// worker does, for a runner used outside one (msjfarm reproduce).
type TraceSource struct{ c *traceCache }

// NewTraceSource reads traces from st through the cache directory dir
// ("": the user cache directory's msjfarm/traces), each at most limit
// bytes (<= 0: storage.DefaultMaxTraceSize).
func NewTraceSource(st storage.Store, dir string, limit int64) *TraceSource {
	return &TraceSource{newTraceCache(st, dir, limit, func(string, ...any) {})}
}

type traceSourceKey struct{}

// WithTraceSource lets the runners called with the returned context
// fetch trace tasks' traces from src.
func WithTraceSource(ctx context.Context, src *TraceSource) context.Context {
	return context.WithValue(ctx, traceSourceKey{}, src)
}

// withTaskTrace fetches, verifies, parses and converts t's trace, if it
// has one, and attaches the workload that replays it (shared by all the
// replications of the trace) to ctx for the runner.
func (w *Worker) withTaskTrace(ctx context.Context, t *sweep.Task) (context.Context, error) {
	if t.Trace == nil {
		return ctx, nil
	}
	tw, err := w.traces.get(ctx, t.Trace, t.Workload.Servers, t.Workload.Name)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, traceWorkloadKey{}, tw), nil
}
