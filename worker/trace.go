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
// more per running replication, 2 GB, and 1.7 GB of garbage besides. The
// trace is not even parsed whole any more: it is read twice, for its
// counts and then for its jobs, converted as they come (convert).

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
	// shapes are the shapes of traces read (by sha256, at most
	// maxParsedTraces, oldest first in shapeOrder): a trace converted
	// at another servers value or time scale is read once more, not
	// twice (convert).
	shapes     map[string]*swf.Shape
	shapeOrder []string
	seq        atomic.Int64

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
	return &traceCache{store: st, dir: dir, limit: limit, logf: logf, parsed: map[string]*parsedTrace{}, shapes: map[string]*swf.Shape{}}
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

// load converts the cached copy of the trace, fetching it first if
// there is none or if the cached copy is not what its name says, to its
// workload (workload.FromTrace's of the parsed trace, with ref's time
// scale). The trace is read twice and never held parsed (convert).
func (c *traceCache) load(ctx context.Context, ref *sweep.TraceRef, k int, name string) (*sim.Workload, error) {
	// Reading leaves garbage besides the workload (the scanner's and the
	// gzip reader's buffers, the class run times gathered): at the
	// simulation pace (GOGC=400, five times the live heap) a collection
	// waits for it long after it is dead.
	defer gcpace.Hold()()
	dir, err := c.cacheDir()
	if err != nil {
		return nil, err
	}
	final := filepath.Join(dir, ref.SHA256)
	if _, err := os.Stat(final); err == nil {
		w, err := c.convert(final, ref, k, name)
		var bad *badContent
		if !errors.As(err, &bad) {
			return w, err
		}
		c.logf("worker: cached trace %s: %v; fetching it again", final, err)
		os.Remove(final)
	}
	if err := c.fetch(ctx, dir, final, ref); err != nil {
		return nil, err
	}
	w, err := c.convert(final, ref, k, name)
	var bad *badContent
	if errors.As(err, &bad) {
		os.Remove(final)
		return nil, &PermanentError{fmt.Errorf("trace %s: the copy fetched from %s %v: refusing to replay it; submitting the sweep again replaces it", ref.SHA256, c.store.URL(), bad)}
	}
	return w, err
}

// badContent: a trace file whose bytes are not those its sha256 names.
type badContent struct{ msg string }

func (e *badContent) Error() string { return e.msg }

// convert reads the trace at path twice through one open file: once for
// its shape (swf.ShapeOf: what Read would report of it on any number of
// servers; kept, so another servers value or time scale of the same
// trace skips this pass), and once for the jobs kept on k servers
// (swf.EachKept), which workload.FromJobs converts as they come into the
// workload of 40 bytes a job, the same as workload.FromTrace of the
// parsed trace, bit for bit. The parsed trace (40 bytes a job, and as
// many more of lines kept until the header's servers were known) is
// never built: a worker converting a trace of 10⁷ jobs held 0.8 GB of it
// beside the 0.4 GB workload, and left it as garbage.
//
// Each pass hashes exactly the bytes it parses, and what it leaves
// unread: a trace is replayed only if both passes read bytes of the
// pinned size and sha256. A copy rewritten between the passes (by
// another process sharing the cache) is a *badContent, never a workload
// built from jobs the first pass did not count.
func (c *traceCache) convert(path string, ref *sweep.TraceRef, k int, name string) (*sim.Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c.mu.Lock()
	shape := c.shapes[ref.SHA256]
	c.mu.Unlock()
	w, shape, err := convertTrace(f, ref, k, name, shape)
	if shape != nil {
		c.keepShape(ref.SHA256, shape)
		if !errors.As(err, new(*badContent)) {
			c.Parses.Add(1) // the pinned bytes, read through
		}
	}
	return w, err
}

// keepShape keeps the shape of the pinned trace sum, and the last
// maxParsedTraces shapes only.
func (c *traceCache) keepShape(sum string, shape *swf.Shape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shapes[sum] != nil {
		return
	}
	c.shapes[sum] = shape
	c.shapeOrder = append(c.shapeOrder, sum)
	if len(c.shapeOrder) > maxParsedTraces {
		delete(c.shapes, c.shapeOrder[0])
		c.shapeOrder = append(c.shapeOrder[:0], c.shapeOrder[1:]...)
	}
}

// convertTrace is convert of the trace f holds (read from its start),
// with its shape if known (nil: read it first). It returns the shape of
// the pinned bytes when they were read whole (the one given, or the one
// read, even if the conversion failed).
func convertTrace(f io.ReadSeeker, ref *sweep.TraceRef, k int, name string, shape *swf.Shape) (*sim.Workload, *swf.Shape, error) {
	var bad *badContent
	if shape == nil {
		var perr error
		err := pinnedRead(f, ref, func(r io.Reader) error {
			shape, perr = swf.ShapeOf(r, swf.Limits{})
			return perr
		})
		switch {
		case errors.As(err, &bad) || err != nil && perr == nil: // not the pinned bytes, or not read
			return nil, nil, err
		case err != nil:
			return nil, nil, &PermanentError{fmt.Errorf("trace %s: %w", ref.SHA256, err)}
		}
	}
	counts, err := shape.At(k)
	if err != nil {
		return nil, shape, &PermanentError{fmt.Errorf("trace %s: %w", ref.SHA256, err)}
	}
	var w *sim.Workload
	err = pinnedRead(f, ref, func(r io.Reader) (err error) {
		w, err = workload.FromJobs(name, counts, func(yield func(swf.Job) error) error {
			return swf.EachKept(r, counts.K, swf.Limits{}, yield)
		}, ref.TimeScale)
		return err
	})
	if errors.As(err, &bad) {
		return nil, shape, &badContent{"changed while it was read: " + bad.msg}
	}
	if err != nil {
		// As the runner said it when it converted the trace itself.
		return nil, shape, &PermanentError{fmt.Errorf("workload: %w", err)}
	}
	return w, shape, nil
}

// pinnedRead calls read with f's bytes from its start, hashing exactly
// the bytes read consumes and then those it left unread (all of them
// after an error, to tell a corrupt copy from a malformed trace). Bytes
// that are not of ref's size and sha256 are a *badContent, whatever read
// returned; else read's error is returned.
func pinnedRead(f io.ReadSeeker, ref *sweep.TraceRef, read func(io.Reader) error) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	cr := &countReader{r: io.LimitReader(f, ref.Size+1)}
	rerr := read(io.TeeReader(cr, h))
	if _, err := io.Copy(h, cr); err != nil {
		return err
	}
	if cr.n != ref.Size {
		return &badContent{fmt.Sprintf("has %d bytes where the task pins %d", cr.n, ref.Size)}
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != ref.SHA256 {
		return &badContent{fmt.Sprintf("has sha256 %s, not the pinned %s (corrupt or tampered)", sum, ref.SHA256)}
	}
	return rerr
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

// SharedTrace is a trace converted once per time scale to the workload
// that replays it, for all the runs it is attached to (WithSharedTrace),
// which share that workload read-only. Each run converted it again
// (workload.FromTrace: 40 bytes a job kept, 8 more allocated), so
// a plan's calibrations of a trace of 10⁷ jobs, two runs each,
// allocated 1 GB apiece.
type SharedTrace struct {
	convert func(name string, timeScale float64) (*sim.Workload, error)
	mu      sync.Mutex
	ws      map[float64]*sim.Workload // by time scale
}

// ShareTrace is the parsed trace tr, for runs that share its conversions.
func ShareTrace(tr *swf.Trace) *SharedTrace {
	return ShareConversion(func(name string, timeScale float64) (*sim.Workload, error) {
		return workload.FromTrace(name, tr, timeScale)
	})
}

// ShareConversion is the trace that convert converts to its workload
// (named name, for its errors) at a time scale, for runs that share its
// conversions: a caller that streams the trace from its bytes
// (sweep.Campaign.LocalTraceWorkload) holds no parsed trace at all.
func ShareConversion(convert func(name string, timeScale float64) (*sim.Workload, error)) *SharedTrace {
	return &SharedTrace{convert: convert, ws: map[float64]*sim.Workload{}}
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
	w, err := s.convert(t.Workload.Name, t.Trace.TimeScale)
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
