package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/internal/gcpace"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/sim"
)

// Serve is the body of sdk.Serve (which documents it for authors): it
// serves entries as the plugin named name, version version, over go-plugin
// on stdout, and does not return. Run by hand (without the host's handshake
// cookie) the binary says it is a plugin and exits with status 1; a list of
// entries with duplicate or empty names is reported on stderr, status 1.
//
// The process exits by itself if the host dies without stopping it. It
// runs up to $MSJFARM_PLUGIN_MAX_CONCURRENT replications at
// once (the host sets it; default the number of CPUs); it logs through hclog
// to stderr at $MSJFARM_PLUGIN_LOG_LEVEL (default warn), as JSON, which the
// host re-logs.
func Serve(name, version string, entries []Entry) {
	gcpace.Apply()
	logger := hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      logLevel(os.Getenv(EnvLogLevel)),
		Output:     os.Stderr,
		JSONFormat: true,
	})
	limit, err := maxConcurrent(os.Getenv(EnvMaxConcurrent))
	if err != nil {
		fmt.Fprintf(os.Stderr, "msjfarm-policy-%s: %v\n", name, err)
		os.Exit(1)
	}
	srv, err := NewServer(name, version, entries, ServerOptions{MaxConcurrent: limit, Logger: logger})
	if err != nil {
		fmt.Fprintf(os.Stderr, "msjfarm-policy-%s: %v\n", name, err)
		os.Exit(1)
	}
	go exitWithParent(logger, os.Getppid(), time.Second)
	// A SIGTERM is for the host, which decides when its plugins stop
	// (and a plugin ends by itself when the host is gone: exitWithParent).
	// Batch systems signal every process of a job: Slurm's
	// --signal and `scancel --signal` reach the plugins too, and a plugin
	// that died of it threw away the replication the worker was letting
	// finish in its grace period (e2e TestSlurmAllocation). go-plugin
	// ignores SIGINT for the same reason.
	signal.Ignore(syscall.SIGTERM)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{PluginKey: &GRPCPlugin{Impl: srv}},
		GRPCServer:      GRPCServerFunc,
		Logger:          logger,
	})
}

// exitWithParent ends the plugin when the host that started it is gone
// (killed without closing its plugins: the plugin is re-parented, so its
// parent pid changes), so that no orphaned plugin lingers on a worker.
func exitWithParent(logger hclog.Logger, ppid int, every time.Duration) {
	if ppid <= 1 {
		return
	}
	for {
		time.Sleep(every)
		if os.Getppid() != ppid {
			logger.Warn("the host process is gone; exiting", "host_pid", ppid)
			os.Exit(3)
		}
	}
}

func logLevel(s string) hclog.Level {
	if s == "" {
		return hclog.Warn
	}
	if l := hclog.LevelFromString(s); l != hclog.NoLevel {
		return l
	}
	return hclog.Warn
}

func maxConcurrent(s string) (int, error) {
	if s == "" {
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s must be a whole number >= 1, got %q", EnvMaxConcurrent, s)
	}
	return n, nil
}

// ServerOptions configure NewServer.
type ServerOptions struct {
	// MaxConcurrent replications run at once; more Run calls wait for a
	// slot (or their deadline). 0: the number of CPUs.
	MaxConcurrent int
	// Logger (nil: hclog at Warn on stderr).
	Logger hclog.Logger
	// ProtocolVersion reported by Info (0: ProtocolVersion). Only tests of
	// version mismatches set it.
	ProtocolVersion uint32
}

// NewServer returns the gRPC implementation that Serve registers. It is
// exported for tests and for test plugins that need a custom go-plugin
// set-up (a mismatched protocol version).
func NewServer(name, version string, entries []Entry, opt ServerOptions) (pb.PolicyPluginServer, error) {
	if name == "" {
		return nil, fmt.Errorf("plugin name is empty")
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("plugin %s serves no policies", name)
	}
	if opt.MaxConcurrent < 1 {
		opt.MaxConcurrent = runtime.NumCPU()
	}
	if opt.Logger == nil {
		opt.Logger = hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Warn, Output: os.Stderr})
	}
	if opt.ProtocolVersion == 0 {
		opt.ProtocolVersion = ProtocolVersion
	}
	s := &server{
		specs:  map[string]Entry{},
		sem:    make(chan struct{}, opt.MaxConcurrent),
		logger: opt.Logger,
		info: &pb.InfoResponse{
			PluginName:      name,
			PluginVersion:   version,
			EngineVersion:   sim.Version,
			ProtocolVersion: opt.ProtocolVersion,
			MaxConcurrent:   uint32(opt.MaxConcurrent),
			GoVersion:       runtime.Version(),
			Heartbeat:       true,
		},
	}
	for _, sp := range entries {
		if err := sp.check(); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		key := strings.ToLower(sp.Name)
		if _, dup := s.specs[key]; dup {
			return nil, fmt.Errorf("plugin %s: policy %s listed twice", name, sp.Name)
		}
		s.specs[key] = sp
		pi, err := describe(sp)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", name, err)
		}
		s.info.Policies = append(s.info.Policies, pi)
	}
	return s, nil
}

// describe reads a spec's declared capabilities and schema. A panicking
// constructor is reported rather than crashing the plugin.
func describe(sp Entry) (pi *pb.PolicyInfo, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("policy %s: New panicked: %v", sp.Name, r)
		}
	}()
	pi = &pb.PolicyInfo{Name: sp.Name, Doc: sp.Doc, Preemption: sim.NoPreemption.String()}
	var params []sim.Param
	if sp.Reference != nil {
		pi.Reference = true
	} else {
		in := sim.Describe(sp.New())
		params = in.Params
		pi.Preemption = in.Preemption.String()
		pi.SizeAware, pi.Timers, pi.Counters = in.SizeAware, in.Timers, in.Counters
		if len(in.CounterInfo) > 0 {
			// Checked here as the host will check it, so that the author
			// of a bad description sees why at start-up.
			if err := CheckCounterInfo(in.CounterInfo); err != nil {
				return nil, fmt.Errorf("policy %s: %w", sp.Name, err)
			}
			if pi.CountersJson, err = json.Marshal(in.CounterInfo); err != nil {
				return nil, fmt.Errorf("policy %s: counter descriptions do not encode as JSON: %v", sp.Name, err)
			}
		}
	}
	if params == nil {
		params = []sim.Param{}
	}
	if pi.ParamsJson, err = json.Marshal(params); err != nil {
		return nil, fmt.Errorf("policy %s: schema does not encode as JSON: %v", sp.Name, err)
	}
	return pi, nil
}

type server struct {
	pb.UnimplementedPolicyPluginServer
	specs  map[string]Entry
	info   *pb.InfoResponse
	sem    chan struct{}
	logger hclog.Logger
}

func (s *server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	return s.info, nil
}

// Abort reasons raised (as panics) from inside the decision-trace observer
// (the engine recovers them and returns them as errors); cancellation itself
// goes through sim.Config.Context.
var (
	errAbandoned  = errors.New("run abandoned: deadline exceeded or cancelled")
	errTraceLimit = errors.New("decision trace exceeds max_trace_events")
)

// A Run request's defaults, which the host holds a plugin to as well: at
// most about one progress report per interval, at most the trace events
// asked for.
const (
	DefaultProgressInterval = 250 * time.Millisecond
	DefaultMaxTraceEvents   = 1 << 22
)

const traceChunk = 4096

// Run serves one replication: it decodes and checks the request, waits
// for a slot, runs the simulation on a locked thread while progress (and,
// if asked, the decision trace) streams to the host, and sends the result
// or the status that says why there is none.
func (s *server) Run(req *pb.RunRequest, stream pb.PolicyPlugin_RunServer) error {
	ctx := stream.Context()
	if req.DeadlineMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.DeadlineMs)*time.Millisecond)
		defer cancel()
	}
	rr, spec, w, err := s.decode(req)
	if err != nil {
		return err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctxStatus(ctx)
	}
	defer func() { <-s.sem }()

	var sendMu sync.Mutex // stream.Send is not safe for concurrent use
	send := func(u *pb.RunUpdate) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(u)
	}
	// The context (deadline, host cancellation) stops the run through
	// sim.Config.Context, both passes of an MSER run included.
	cfg := rr.Run.Config()
	cfg.Context = ctx
	prog := startProgress(&cfg, req.ProgressIntervalMs, send)
	var tr *traceSender
	if req.Trace {
		limit := req.MaxTraceEvents
		if limit <= 0 {
			limit = DefaultMaxTraceEvents
		}
		tr = &traceSender{limit: limit, send: send}
		cfg.Observer = tr.observe
	}
	m := measure(spec, w, rr.Params, cfg)
	prog.stop()
	if err := s.failure(ctx, tr, spec, rr.Run.Seed, m.err); err != nil {
		return err
	}
	if tr != nil {
		if err := tr.flush(); err != nil {
			return err
		}
	}
	if err := prog.final(); err != nil {
		return err
	}
	return s.sendResult(spec, rr.Run.Seed, m, tr, send)
}

// decode reads and checks the request before any slot is taken: the run
// request (strictly: a field this plugin does not know would be silently
// ignored), a policy this plugin serves with valid parameters, a valid
// run and a workload that builds. Every refusal is InvalidArgument.
func (s *server) decode(req *pb.RunRequest) (RunRequest, Entry, *sim.Workload, error) {
	var rr RunRequest
	dec := json.NewDecoder(bytes.NewReader(req.RequestJson))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rr); err != nil {
		return rr, Entry{}, nil, status.Errorf(codes.InvalidArgument, "request: %v", err)
	}
	spec, ok := s.specs[strings.ToLower(rr.Policy)]
	if !ok {
		return rr, Entry{}, nil, status.Errorf(codes.InvalidArgument, "unknown policy %q (this plugin serves: %s)", rr.Policy, s.names())
	}
	if err := spec.CheckParams(rr.Params); err != nil {
		return rr, Entry{}, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := rr.Run.Validate(); err != nil {
		return rr, Entry{}, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	w, err := rr.BuildWorkload()
	if err != nil {
		return rr, Entry{}, nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.Trace && rr.Run.MSER {
		return rr, Entry{}, nil, status.Error(codes.InvalidArgument, "a decision trace cannot be recorded with MSER (two passes)")
	}
	return rr, spec, w, nil
}

// progress streams a run's progress. The engine's callback only stores
// counters; a ticker sends them at most every interval, so progress
// costs the simulation nothing measurable.
type progress struct {
	done, total, beats atomic.Int64
	send               func(*pb.RunUpdate) error
	quit               chan struct{}
	wg                 sync.WaitGroup
}

// startProgress hooks the counters into cfg and starts the ticker
// (intervalMs <= 0: DefaultProgressInterval).
func startProgress(cfg *sim.Config, intervalMs int64, send func(*pb.RunUpdate) error) *progress {
	p := &progress{send: send, quit: make(chan struct{})}
	cfg.Progress = func(d, t int64) {
		p.done.Store(d)
		p.total.Store(t)
	}
	cfg.Beat = func() { p.beats.Add(1) }
	interval := DefaultProgressInterval
	if intervalMs > 0 {
		interval = time.Duration(intervalMs) * time.Millisecond
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		last, lastBeats := int64(-1), int64(0)
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				if d, b := p.done.Load(), p.beats.Load(); d != last || b != lastBeats {
					last, lastBeats = d, b
					_ = send(p.update(d))
				}
			}
		}
	}()
	return p
}

func (p *progress) update(done int64) *pb.RunUpdate {
	return &pb.RunUpdate{Update: &pb.RunUpdate_Progress{Progress: &pb.Progress{Done: done, Total: p.total.Load(), Beats: p.beats.Load()}}}
}

// stop stops the ticker and waits for it.
func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
}

// final sends the last counters of a run that reported any, so that the
// host sees the end.
func (p *progress) final() error {
	if p.total.Load() > 0 {
		return p.send(p.update(p.done.Load()))
	}
	return nil
}

// measured is a replication's outcome with its wall and thread CPU time.
type measured struct {
	res     *sim.Result
	err     error
	elapsed time.Duration
	cpu     time.Duration
}

// measure runs the simulation on one locked thread, so that its CPU time
// can be measured (recorded for accounting and overhead checks).
func measure(spec Entry, w *sim.Workload, params map[string]any, cfg sim.Config) measured {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, okCPU := cputime.Thread()
	start := time.Now()
	var m measured
	m.res, m.err = runSafely(spec, w, params, cfg)
	m.elapsed = time.Since(start)
	if cpu1, ok := cputime.Thread(); ok && okCPU {
		m.cpu = cpu1 - cpu0
	}
	return m
}

// failure is the status of a run that gives no result, in order of
// precedence: the context ended (deadline or cancellation), the trace
// overflowed its limit or broke the stream, or the replication failed;
// nil when none did.
func (s *server) failure(ctx context.Context, tr *traceSender, spec Entry, seed uint64, runErr error) error {
	switch {
	case ctx.Err() != nil:
		return ctxStatus(ctx)
	case tr != nil && tr.overflow:
		return status.Errorf(codes.ResourceExhausted, "decision trace exceeds max_trace_events = %d", tr.limit)
	case tr != nil && tr.err != nil:
		return tr.err // the stream broke while sending the trace
	case runErr != nil:
		s.logger.Info("replication failed", "policy", spec.Name, "seed", seed, "error", runErr)
		return status.Error(codes.Aborted, runErr.Error())
	}
	return nil
}

// sendResult encodes the result and sends it with its timings.
func (s *server) sendResult(spec Entry, seed uint64, m measured, tr *traceSender, send func(*pb.RunUpdate) error) error {
	if f := NonFinite(m.res); f != "" {
		// JSON has no NaN or infinity: say which number it is (a
		// permanent failure of the policy, as the host reads Aborted),
		// not a failure to encode that the host could only read as a
		// lost connection.
		s.logger.Info("replication returned a non-finite number", "policy", spec.Name, "seed", seed, "field", f)
		return status.Errorf(codes.Aborted, "the result holds a number that is not finite: %s", f)
	}
	b, err := json.Marshal(m.res)
	if err != nil {
		return status.Errorf(codes.Internal, "result does not encode as JSON: %v", err)
	}
	out := &pb.RunResult{ResultJson: b, ElapsedNs: m.elapsed.Nanoseconds(), CpuNs: m.cpu.Nanoseconds()}
	if tr != nil {
		out.TraceEvents = tr.n
	}
	return send(&pb.RunUpdate{Update: &pb.RunUpdate_Result{Result: out}})
}

// runSafely runs one replication; a panic outside the engine's own recovery
// (a reference model, a constructor) becomes an error, never a crash of a
// process that other replications share.
func runSafely(spec Entry, w *sim.Workload, params map[string]any, cfg sim.Config) (res *sim.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("policy %s panicked: %v\n%s", spec.Name, r, debug.Stack())
		}
	}()
	return spec.Run(w, params, cfg)
}

func ctxStatus(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "replication exceeded its deadline and was abandoned")
	}
	return status.Error(codes.Canceled, "replication cancelled")
}

func (s *server) names() string {
	n := make([]string, 0, len(s.info.Policies))
	for _, p := range s.info.Policies {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// traceSender collects the decision trace and streams it in chunks from the
// simulation goroutine (only when the host asked for it: the conformance
// check).
type traceSender struct {
	limit    int64
	n        int64
	buf      pb.TraceChunk
	send     func(*pb.RunUpdate) error
	overflow bool
	err      error
}

func (t *traceSender) observe(e sim.TraceRecord) {
	if t.n >= t.limit {
		t.overflow = true
		panic(errTraceLimit)
	}
	t.n++
	b := &t.buf
	b.Time = append(b.Time, e.Time)
	b.Kind = append(b.Kind, byte(e.Kind))
	b.Job = append(b.Job, e.Job)
	b.Class = append(b.Class, int32(e.Class))
	b.Need = append(b.Need, int32(e.Need))
	b.Busy = append(b.Busy, int32(e.Busy))
	if len(b.Time) >= traceChunk {
		if err := t.flush(); err != nil {
			t.err = err
			panic(errAbandoned)
		}
	}
}

func (t *traceSender) flush() error {
	if len(t.buf.Time) == 0 {
		return nil
	}
	c := &pb.TraceChunk{Time: t.buf.Time, Kind: t.buf.Kind, Job: t.buf.Job, Class: t.buf.Class, Need: t.buf.Need, Busy: t.buf.Busy}
	t.buf = pb.TraceChunk{}
	return t.send(&pb.RunUpdate{Update: &pb.RunUpdate_Trace{Trace: c}})
}
