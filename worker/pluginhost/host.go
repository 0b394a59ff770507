// Package host is the worker side of the policy plugin boundary
// (docs/design.md): it finds plugin binaries (msjfarm-policy-<family>),
// verifies them by sha256, starts them as hashicorp/go-plugin processes,
// keeps them alive across replications, and runs each replication with ONE
// streaming gRPC call (progress, then the result as JSON bytes of
// sim.Result).
//
// Failure is contained: a plugin that crashes, hangs past its deadline,
// has the wrong checksum or protocol version, or is asked for parameters
// outside its schema yields an *Error of the matching Kind, with the tail of
// the plugin's stderr where it helps. A plugin can neither crash the host
// (it is another process) nor hang it (every call has a deadline, and a
// process that does not honour a run's deadline is killed).
//
// Concurrency: one process per (binary path, sha256) serves up to
// Config.MaxConcurrent replications at once; the host passes the limit to
// the process at start-up ($MSJFARM_PLUGIN_MAX_CONCURRENT, enforced there
// too) and never sends more. A crash therefore fails every replication in
// flight on that process (each gets ErrCrash, which is retryable); the next
// call starts a fresh process. A reused process found dead before it
// answered anything about a call (it died while idle) is replaced and the
// call retried once, transparently.
//
// Hangs: the plugin abandons a replication at its deadline (the engine polls
// its context every 1,024 events). The deadline the plugin is given is the
// sooner of the run's and the caller's, so whoever's deadline fires first,
// the plugin sees the same moment and answers by itself; one that has not
// answered a grace period later (Config.Grace, 2 s) is hung in policy code,
// and since a goroutine cannot be killed, its process is retired (no new
// work; the next call starts a fresh process) and SIGKILLed, with its process
// group, as soon as the other replications on it end — at once when the hung
// call was its only one. A caller's plain cancellation (not a deadline) is
// passed on to the plugin, but the protocol gives no answer to it, so the
// host cannot tell a replication that stopped from one that spins on: the
// process is retired the same way. A process that does not exit when told
// gets SIGKILL. Idle processes are health-checked before reuse.
package pluginhost

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/internal/wire"
	pb "github.com/msjfarm/msjfarm/internal/wire/proto"
	"github.com/msjfarm/msjfarm/sim"
)

// Config configures a Host. The zero value is usable.
type Config struct {
	// MaxConcurrent is the number of replications one plugin process runs
	// at once (0: the number of CPUs).
	MaxConcurrent int
	// StartTimeout bounds process start, handshake and the Info call
	// (0: 20 s).
	StartTimeout time.Duration
	// DefaultDeadline is a replication's deadline when RunOptions gives
	// none (0: 1 h).
	DefaultDeadline time.Duration
	// HealthAfter: a process idle this long is health-checked (an Info
	// call answered within HealthTimeout) before it is reused (0: 5 s);
	// one that fails is killed and replaced (HealthTimeout 0: 2 s).
	HealthAfter, HealthTimeout time.Duration
	// KillTimeout is how long a process being stopped has to exit after
	// the host closes its connection before it gets SIGKILL (0: 3 s).
	KillTimeout time.Duration
	// Grace is how long after its deadline a replication has to answer
	// before the plugin is deemed hung and its process killed (0: 2 s; the
	// engine polls for the deadline every 1,024 events, so an honest
	// plugin answers within milliseconds even on a loaded machine).
	Grace time.Duration
	// Stall is how long a replication's engine loop may go without a beat
	// (it beats every 1,024 events: sim.Config.Beat) before the replication
	// is deemed hung in policy code, whatever its deadline: its process is
	// killed as for an unhonoured deadline and the call fails with
	// ErrStalled (0: DefaultStall; negative: never). Only engine policies
	// are watched (a reference model runs no engine loop). A plugin whose
	// Info does not say Heartbeat (one written without the SDK) is watched
	// on its count of arrivals simulated instead, up to the last arrival
	// (its drain and MSER's pass move no count). Without it a policy that
	// spins held its worker's slot until run.deadline, a month when the
	// sweep set none.
	Stall time.Duration
	// StderrTail is how many bytes of each process's stderr are kept for
	// error reports (0: 16 KiB).
	StderrTail int
	// Logger receives the host's and (re-logged) the plugins' logs
	// (nil: hclog at Warn on stderr).
	Logger hclog.Logger
	// Env is added to the plugin processes' environment, which otherwise
	// holds only what a plugin needs (see env): never put a secret here.
	Env []string
	// Sandbox confines the plugin processes (nil: sandbox.Default(), the
	// kernel's best with the default plugin user).
	Sandbox *sandbox.Sandbox
	// TmpQuota bounds what a plugin process may write into its private
	// TMPDIR, the one place a confined plugin may write (0: the
	// sandbox's, --plugin-tmp-quota; < 0: no bound): past it the process
	// is killed (watch) and its replication fails.
	TmpQuota int64
	// CPUMargin is the cores a plugin process may use beyond its
	// GOMAXPROCS over a window of cpuWindow (0: 0.5; a test sets it
	// below 0, so that a spinner on a loaded machine, which gets fewer
	// cores than it asks for, still crosses it): past it the process is
	// killed (cpuWatch).
	CPUMargin float64
	// MaxThreads bounds the threads of a plugin process (0:
	// DefaultMaxThreads, or 4 × GOMAXPROCS if more; < 0: no bound):
	// past it the process is killed (watch) and its replication fails.
	MaxThreads int
	// DigestDir holds the persistent digest cache (see Digests): an
	// unchanged binary is hashed once per machine, not once per process
	// ("": <user cache dir>/msjfarm/digests; "off": memory only).
	DigestDir string
}

// Binary names a plugin binary and, optionally, the sha256 a campaign
// pins for it.
type Binary struct {
	Path string
	// Args are the binary's arguments: none for a plugin binary; the
	// hidden subcommand and family for msjfarm serving one of its own
	// built-in families (worker/registry).
	Args []string
	// SHA256 (hex) pins the binary: a different file is refused with
	// ErrChecksum, and is verified again as the process starts. Empty: the
	// checksum is looked up or computed (Digests, by file identity) and
	// recorded, not enforced.
	SHA256 string
}

// Info describes a running plugin (proto InfoResponse, decoded).
type Info struct {
	Name          string       `json:"name"`
	Version       string       `json:"version"`
	Engine        string       `json:"engine"`
	Protocol      int          `json:"protocol"`
	MaxConcurrent int          `json:"max_concurrent"`
	GoVersion     string       `json:"go_version"`
	Policies      []PolicyInfo `json:"policies"`
	// Heartbeat: the plugin's progress reports carry the engine loop's
	// beats (Config.Stall applies to its engine policies).
	Heartbeat bool `json:"heartbeat"`
	// Path and SHA256 identify the binary; PID the process serving.
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	PID    int    `json:"pid"`
	// StartTime is process start + handshake + the first Info call.
	StartTime time.Duration `json:"start_time_ns"`
}

// PolicyInfo is one policy a plugin serves, with its declared capabilities.
type PolicyInfo struct {
	Name       string      `json:"name"`
	Doc        string      `json:"doc"`
	Params     []sim.Param `json:"params"`
	Preemption string      `json:"preemption"`
	SizeAware  bool        `json:"size_aware"`
	Reference  bool        `json:"reference"`
	Timers     bool        `json:"timers"`
	Counters   bool        `json:"counters"`
	// CounterInfo is the policy's description of its counters (label,
	// unit, kind), checked by wire.CheckCounterInfo; nil when the plugin
	// describes none.
	CounterInfo sim.CounterInfos `json:"counter_info,omitempty"`
}

// Policy returns the named policy (case-insensitive).
func (in *Info) Policy(name string) (*PolicyInfo, bool) {
	for i := range in.Policies {
		if strings.EqualFold(in.Policies[i].Name, name) {
			return &in.Policies[i], true
		}
	}
	return nil, false
}

// counterInfo is the named policy's description of its counters (nil for
// none).
func (in *Info) counterInfo(policy string) sim.CounterInfos {
	if p, ok := in.Policy(policy); ok {
		return p.CounterInfo
	}
	return nil
}

// Record is what a result stores about the plugin that produced it.
type Record struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Engine  string `json:"engine"`
	SHA256  string `json:"sha256"`
}

// RunOptions are per-call options; none changes the result.
type RunOptions struct {
	// Deadline for the replication (0: Config.DefaultDeadline); the
	// caller's context deadline, if sooner, replaces it. The plugin
	// abandons the run at the deadline; if it has not answered Grace later
	// (a hung policy), its process is killed as soon as no other
	// replication is running on it, and is never given new work.
	Deadline time.Duration
	// Grace (0: Config.Grace).
	Grace time.Duration
	// Progress, if set, receives (arrivals simulated, planned total) as the
	// plugin reports them, at most every ProgressInterval (0: 250 ms), and
	// once at the end.
	Progress         func(done, total int64)
	ProgressInterval time.Duration
	// Trace asks for the decision trace (sim.TraceRecord list), for the
	// conformance check; MaxTraceEvents bounds it (0: 1<<22).
	Trace          bool
	MaxTraceEvents int64
	// SameSequence refuses, before anything runs (ErrEngine), a plugin
	// whose Info declares an engine that does not draw this engine's job
	// sequence (sim.SameSequence: before sim.SequenceSince, or newer than
	// sim.Version, whose sequence this host cannot know). The worker
	// checks a plugin's result against the seed's own jobs only for such
	// engines, and the engine is the plugin's own claim: without this, a
	// plugin that lies about its results would declare another engine to
	// escape the check (docs/security.md).
	SameSequence bool
	// SkipValidation sends the request without host-side validation, so
	// that the conformance check can verify the plugin's own validation.
	SkipValidation bool
	// MaxResultBytes, if positive, bounds every message the plugin sends
	// on the call, the result included: a larger one is refused by gRPC
	// before it is read into memory (not after, as a check of the decoded
	// result would be), and the call fails as a policy error. The worker
	// sets it from the task (resultcheck.Limit); 0 leaves the wire's own
	// bound, wire.MaxMessageBytes.
	MaxResultBytes int
	// Alone runs the replication in a process of its own, started for the
	// call and stopped after it. The worker asks for it on the attempt
	// after a crash of a process that ran other replications too, which
	// of them crashed it not known: alone, a crash is this replication's
	// (Error.Shared false).
	Alone bool

	after float64 // afterShare of the request (set by Run)
}

// Outcome is a successful replication.
type Outcome struct {
	Result *sim.Result
	// ResultJSON is the plugin's JSON of Result, byte for byte.
	ResultJSON []byte
	Plugin     Record
	// CounterInfo is the policy's description of its counters, from the
	// plugin's Info (sent once per process, not with every result).
	CounterInfo sim.CounterInfos
	// Trace is the decision trace (RunOptions.Trace only).
	Trace []sim.TraceRecord
	// Progress messages received, and the last one.
	ProgressUpdates  int
	LastDone, LastOf int64
	// LastBeats is the last count of engine beats reported (Heartbeat).
	LastBeats int64
	// EnginePolicy: the plugin's Info describes the policy as an engine
	// policy, not a reference model (whose results the engine's rules,
	// such as a job's response at least its size, need not obey).
	EnginePolicy bool
	// PluginElapsed is the run's wall time inside the plugin, PluginCPU
	// the CPU time of its simulating thread (0 where unmeasurable); Elapsed
	// the whole call as the host saw it (including any wait for a slot).
	PluginElapsed, PluginCPU, Elapsed time.Duration
}

// Host starts, reuses and supervises plugin processes. It is safe for
// concurrent use. Close it to stop the processes.
type Host struct {
	cfg    Config
	logger hclog.Logger
	starts atomic.Int64
	solos  atomic.Uint64 // the last procKey.solo given

	mu     sync.Mutex
	closed bool
	procs  map[procKey]*entry // the process serving each binary
	live   map[*proc]bool     // every process not yet stopped, retired ones too
	digest *Digests
	pinned map[procKey]bool // started with go-plugin's checksum verification
	kills  sync.WaitGroup
}

// procKey identifies the process serving a binary with its arguments;
// solo, when not 0, one started for a single call (RunOptions.Alone),
// which no other call shares.
type procKey struct {
	path, args, sha string
	solo            uint64
}

// entry is a process being started (ready open) or started.
type entry struct {
	ready chan struct{}
	p     *proc
	err   error
}

// New returns a Host; processes start on first use.
// removeStale: the first host of a process removes what killed hosts
// left in the temporary directory (sandbox.RemoveStale).
var removeStale sync.Once

func New(cfg Config) *Host {
	if cfg.MaxConcurrent < 1 {
		cfg.MaxConcurrent = runtime.NumCPU()
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 20 * time.Second
	}
	if cfg.DefaultDeadline <= 0 {
		cfg.DefaultDeadline = time.Hour
	}
	if cfg.HealthAfter <= 0 {
		cfg.HealthAfter = 5 * time.Second
	}
	if cfg.HealthTimeout <= 0 {
		cfg.HealthTimeout = 2 * time.Second
	}
	if cfg.KillTimeout <= 0 {
		cfg.KillTimeout = 3 * time.Second
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.StderrTail <= 0 {
		cfg.StderrTail = 16 << 10
	}
	if cfg.Stall == 0 {
		cfg.Stall = DefaultStall
	}

	if cfg.Sandbox == nil {
		cfg.Sandbox = sandbox.Default()
	}

	if cfg.TmpQuota == 0 {
		cfg.TmpQuota = cfg.Sandbox.TmpQuota()
	}
	if cfg.MaxThreads == 0 {
		// A plugin has the host's GOMAXPROCS (env), a thread each.
		cfg.MaxThreads = max(DefaultMaxThreads, 4*runtime.GOMAXPROCS(0))
	}
	lg := cfg.Logger
	if lg == nil {
		lg = hclog.New(&hclog.LoggerOptions{Name: "plugin-host", Level: hclog.Warn, Output: os.Stderr})
	}
	removeStale.Do(func() {
		if n := sandbox.RemoveStale(); n > 0 {
			lg.Info("removed the private TMPDIRs of plugin processes whose host is gone", "count", n)
		}
	})
	h := &Host{cfg: cfg, logger: lg, procs: map[procKey]*entry{}, live: map[*proc]bool{}, digest: NewDigests(cfg.DigestDir)}
	h.digest.scope = h.infoScope()
	return h
}

// infoScope is what this host runs its plugins with, as far as a plugin
// can read it: the environment it passes them (sorted: the order is not
// the plugin's input) and its confinement. The digest cache keys Infos by
// it, since a binary may answer differently under another.
func (h *Host) infoScope() string {
	env := slices.Sorted(slices.Values(h.env()))
	sum := sha256.Sum256([]byte(strings.Join(env, "\x00") + "\x00\x00" + h.cfg.Sandbox.Describe()))
	return hex.EncodeToString(sum[:])
}

// Starts is the number of plugin processes started so far (reuse keeps it
// low; a crash or a hang adds one).
func (h *Host) Starts() int64 { return h.starts.Load() }

// Close kills every plugin process and waits for them to exit. Calls in
// flight fail with ErrCrash or ErrCanceled.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	starting := h.procs
	h.procs = map[procKey]*entry{}
	h.mu.Unlock()
	for _, e := range starting {
		<-e.ready // a start in progress registers its process in live
	}
	h.mu.Lock()
	live := make([]*proc, 0, len(h.live))
	for p := range h.live {
		live = append(live, p)
	}
	h.mu.Unlock()
	for _, p := range live {
		// A process with calls in flight is not asked to shut down in
		// order (that waits for its calls, a hung one for ever).
		p.mu.Lock()
		p.hung = p.hung || p.inflight > 0
		p.mu.Unlock()
		h.kill(p)
	}
	h.kills.Wait()
	return nil
}

// Checksum returns the hex sha256 of the file at path.
func Checksum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	hs := sha256.New()
	if _, err := io.Copy(hs, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(hs.Sum(nil)), nil
}

// Digests is the host's digest cache (shared with worker/registry, so a
// binary indexed is not hashed again to run).
func (h *Host) Digests() *Digests { return h.digest }

// proc is one running plugin process.
type proc struct {
	key    procKey
	client *plugin.Client
	rpc    pb.PolicyPluginClient
	info   *Info
	stderr *tail
	slots  chan struct{}
	sb     *sandbox.Process // its private TMPDIR, removed once it exited
	budget *logBudget       // its log's

	calls atomic.Int64 // Run calls made on this process

	mu       sync.Mutex
	inflight int // reservations: calls between acquire and release
	retired  bool
	// hung: a replication on it ignored its deadline or a cancellation, so
	// the process is SIGKILLed rather than asked to shut down (an orderly
	// shutdown waits for the hung call).
	hung     bool
	killed   bool
	lastUsed time.Time
	w        *watcher // what watch found (overQuota, overThreads)
	// killedRunning is the replications the process ran (its
	// reservations) when watch killed it.
	killedRunning atomic.Int64
}

// sharedNote is what a bound's error adds when the process ran other
// replications too (killedRunning): the one that crossed it is not known.
// killNote says what becomes of p, retired as hung by the call that
// reports it (still counted in flight): killed now, or once its other
// replications end (a goroutine cannot be stopped, and killing the process
// would fail them too). The message said "killed" while a process lived
// on for the 15 s its other replication took.
func (p *proc) killNote() string {
	p.mu.Lock()
	others := p.inflight - 1
	p.mu.Unlock()
	if others > 0 {
		return fmt.Sprintf("the plugin process takes no more work and is killed as soon as its %d other replication(s) end", others)
	}
	return "the plugin process was killed"
}

// crashNote is what a crash's error adds when the process ran other
// replications too: any of them may have crashed it.
func (p *proc) crashNote() string {
	if n := p.killedRunning.Load(); n > 1 {
		return fmt.Sprintf(" while it ran %d replications; which of them crashed it is not known", n)
	}
	return ""
}

func (p *proc) sharedNote() string {
	if n := p.killedRunning.Load(); n > 1 {
		return fmt.Sprintf(" while it ran %d replications; which crossed the bound is not known, so each is retried", n)
	}
	return ""
}

func (h *Host) errorf(kind Kind, key procKey, policy, format string, a ...any) *Error {
	return &Error{Kind: kind, Binary: key.path, SHA256: key.sha, Policy: policy, Msg: fmt.Sprintf(format, a...)}
}

// acquire returns a healthy process for b with a reservation (release it).
func (h *Host) acquire(ctx context.Context, b Binary, solo uint64) (*proc, error) {
	path, err := filepath.Abs(b.Path)
	if err != nil {
		return nil, &Error{Kind: ErrStart, Binary: b.Path, Msg: err.Error()}
	}
	want := strings.ToLower(b.SHA256)
	if want != "" {
		if _, err := hex.DecodeString(want); err != nil || len(want) != 64 {
			return nil, &Error{Kind: ErrChecksum, Binary: path, Msg: fmt.Sprintf("pinned sha256 %q is not 64 hex digits", b.SHA256)}
		}
	}
	sum := want
	if sum == "" {
		if sum, err = h.digest.Sum(path); err != nil {
			return nil, &Error{Kind: ErrStart, Binary: path, Msg: err.Error()}
		}
	}
	key := procKey{path: path, args: strings.Join(b.Args, "\x00"), sha: sum, solo: solo}
	h.mu.Lock()
	if h.pinned == nil {
		h.pinned = map[procKey]bool{}
	}
	if want != "" {
		h.pinned[key] = true
	}
	h.mu.Unlock()
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, h.errorf(ErrClosed, key, "", "the plugin host is closed")
		}
		e := h.procs[key]
		if e == nil {
			e = &entry{ready: make(chan struct{})}
			h.procs[key] = e
			h.mu.Unlock()
			e.p, e.err = h.start(key)
			close(e.ready)
			if e.err != nil {
				h.mu.Lock()
				if h.procs[key] == e {
					delete(h.procs, key)
				}
				h.mu.Unlock()
				return nil, e.err
			}
		} else {
			h.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, h.errorf(ErrCanceled, key, "", "%v", ctx.Err())
			}
			if e.err != nil {
				return nil, e.err
			}
		}
		p := e.p
		if h.reserve(ctx, p) {
			return p, nil
		}
		h.retire(p)
	}
}

// reserve takes a reservation on p if it is alive and, when idle for a
// while, answers a health check.
func (h *Host) reserve(ctx context.Context, p *proc) bool {
	p.mu.Lock()
	if p.retired || p.client.Exited() {
		p.mu.Unlock()
		return false
	}
	p.inflight++
	idle := p.inflight == 1 && time.Since(p.lastUsed) > h.cfg.HealthAfter
	p.mu.Unlock()
	if !idle {
		return true
	}
	cctx, cancel := context.WithTimeout(ctx, h.cfg.HealthTimeout)
	defer cancel()
	if _, err := p.rpc.Info(cctx, &pb.InfoRequest{}); err != nil && ctx.Err() == nil {
		h.logger.Warn("plugin failed its health check; restarting it", "binary", p.key.path, "error", err)
		h.release(p)
		return false
	}
	return true
}

func (h *Host) release(p *proc) {
	p.mu.Lock()
	p.inflight--
	p.lastUsed = time.Now()
	kill := p.retired && p.inflight == 0
	p.mu.Unlock()
	if kill {
		h.kill(p)
	}
}

// retire stops giving p work and kills it once nothing runs on it.
func (h *Host) retire(p *proc) {
	h.mu.Lock()
	if e := h.procs[p.key]; e != nil && e.p == p {
		delete(h.procs, p.key)
	}
	h.mu.Unlock()
	p.mu.Lock()
	already := p.retired
	p.retired = true
	kill := !already && p.inflight == 0
	p.mu.Unlock()
	if kill {
		h.kill(p)
	}
}

// retireHung retires p and marks it for SIGKILL (no orderly shutdown,
// which would wait for the hung call).
func (h *Host) retireHung(p *proc) {
	p.mu.Lock()
	p.hung = true
	p.mu.Unlock()
	h.retire(p)
}

// kill stops p's process in the background: go-plugin's orderly shutdown
// first, SIGKILL if the process has not exited KillTimeout later (a wedged
// or stopped process would otherwise block the shutdown for ever).
// Close waits for every kill.
func (h *Host) kill(p *proc) {
	p.budget.exitExpected.Store(true)
	p.mu.Lock()
	already := p.killed
	p.killed = true
	hard := p.hung
	p.mu.Unlock()
	if already {
		return
	}
	if hard {
		// SIGKILL now, from this goroutine, so that the hung replication's
		// CPU and memory are gone by the time the caller hears of it.
		killGroup(p.info.PID)
	}
	h.kills.Add(1)
	go func() {
		defer h.kills.Done()
		h.stop(p.client, p.info.PID, p.key.path)
		p.sb.Cleanup()
		h.mu.Lock()
		delete(h.live, p)
		h.mu.Unlock()
	}()
}

// stop ends a plugin process: go-plugin's orderly shutdown, then SIGKILL
// after KillTimeout; it gives up waiting (and logs) after another
// KillTimeout, so that it never blocks for ever.
func (h *Host) stop(c *plugin.Client, pid int, path string) {
	done := make(chan struct{})
	go func() {
		c.Kill()
		close(done)
	}()
	select {
	case <-done:
		// Whatever the plugin started dies with it (the sandbox refuses
		// forks; without it, they are in its process group).
		killGroup(pid)
		return
	case <-time.After(h.cfg.KillTimeout):
	}
	// Not yet reaped (go-plugin reaps before Kill returns), so the pid is
	// still this process's.
	if pid > 0 && !c.Exited() {
		h.logger.Warn("plugin process did not exit; sending SIGKILL", "binary", path, "pid", pid)
		killGroup(pid)
	}
	select {
	case <-done:
	case <-time.After(h.cfg.KillTimeout):
		h.logger.Error("plugin process still not stopped after SIGKILL; abandoning it", "binary", path, "pid", pid)
	}
}

// killGroup SIGKILLs the process group a plugin leads (start puts each
// plugin in its own), so that whatever the plugin started dies with it,
// and the process itself in case it left its group.
func killGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// env is the plugin's environment, an allow-list: the concurrency limit,
// GOGC (the host's own GOGC if it has one) and GOMAXPROCS (the host's:
// confined, the plugin cannot read the cgroup files the Go runtime sizes
// it from, and would use every CPU of the machine in a container limited
// to a few), then Config.Env;
// go-plugin adds its handshake variables and the sandbox a private
// TMPDIR. Nothing else of the host's environment reaches a plugin: a
// worker configured by environment holds its storage keys and NATS
// password there (issue #28).
func (h *Host) env() []string {
	env := []string{wire.EnvMaxConcurrent + "=" + strconv.Itoa(h.cfg.MaxConcurrent)}
	if g := os.Getenv("GOGC"); g != "" && !hasVar(h.cfg.Env, "GOGC") {
		env = append(env, "GOGC="+g)
	} else if !hasVar(h.cfg.Env, "GOGC") {
		env = append(env, "GOGC="+pluginGOGC)
	}
	if !hasVar(h.cfg.Env, "GOMAXPROCS") {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	}
	return append(env, h.cfg.Env...)
}

// pluginProcs is the GOMAXPROCS a plugin process is given (env): the
// cores its Go code may use at once.
func (h *Host) pluginProcs() int {
	for _, kv := range slices.Backward(h.env()) {
		if v, ok := strings.CutPrefix(kv, "GOMAXPROCS="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return runtime.GOMAXPROCS(0)
}

// cpuMargin is Config.CPUMargin with its default.
func (h *Host) cpuMargin() float64 {
	if h.cfg.CPUMargin == 0 {
		return defaultCPUMargin
	}
	return h.cfg.CPUMargin
}

// cpuMsg says why watch killed a process for its CPU time
// (watcher.overCPU), starting "the plugin used …".
func (h *Host) cpuMsg(w *watcher) string {
	cores := float64(w.overCPU.Load()) / 1000
	if w.idleCPU.Load() {
		return fmt.Sprintf("the plugin used %.2f cores for %v with no replication to run (at most %g): its process was killed", cores, cpuWindow, idleCores)
	}
	return fmt.Sprintf("the plugin used %.2f cores for %v, more than the %d its GOMAXPROCS gives (%+g): its process was killed", cores, cpuWindow, h.pluginProcs(), h.cpuMargin())
}

// pluginGOGC is the garbage collector's target of plugin processes unless
// the host's environment (or Config.Env) sets GOGC. A plugin's live heap
// is little more than one replication's state, so at the default of 100
// it collects every few MB allocated, far more often than the same
// allocations trigger in the host, whose heap is larger: `msjfarm run
// examples/q-fig3.yaml` took 4.6% more CPU through plugins than in-process
// at GOGC=100 and 0.5% more at 400 (6 alternating runs each, user+sys of
// the whole process tree).
const pluginGOGC = "400"

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// start starts the plugin process of key and returns it registered as
// live: the (sandboxed) command, go-plugin's handshake, then the Info
// call that says what the plugin serves. A failure at any step stops
// what was started and says which kind of failure it was (Kind).
func (h *Host) start(key procKey) (*proc, error) {
	s, err := h.launch(key)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	addr, err := s.client.Start()
	if err != nil {
		return nil, s.connectFailed(err)
	}
	// The handshake names the address the host connects to, and the
	// plugin writes it: a confined plugin, which may not connect anywhere,
	// named 127.0.0.1:<a port of its choice> and the host connected there
	// (any host and port it reaches: the cloud's metadata service, a
	// database). A plugin listens on a unix socket in its private TMPDIR
	// (go-plugin's server puts it there); the host connects nowhere else,
	// and checks before it connects at all.
	if addr.Network() != "unix" || filepath.Dir(addr.String()) != s.sp.TmpDir {
		return nil, s.abort(ErrStart, "the plugin's handshake names the %s address %q: a plugin listens on a unix socket in its private TMPDIR, and the host connects nowhere else",
			termtext.Printable(addr.Network()), termtext.Printable(addr.String()))
	}
	// The directory is the plugin's, and so is what is in it: a symbolic
	// link there named as the socket had the worker (as root) speak gRPC
	// to any unix socket of the machine. The host connects only to a
	// socket whose listener is the plugin process (peerDialer), and says
	// why it refuses.
	s.addr = addr.String()
	if fi, err := os.Lstat(s.addr); err != nil || fi.Mode().Type() != fs.ModeSocket {
		what := "missing"
		if err == nil {
			what = "a " + fi.Mode().Type().String() + " file, not a socket"
			if fi.Mode().Type() == fs.ModeSymlink {
				target, _ := os.Readlink(s.addr)
				what = fmt.Sprintf("a symbolic link to %q", termtext.Printable(target))
			}
		}
		return nil, s.abort(ErrStart, "the plugin's handshake names %q, which is %s: the host connects only to the plugin's own socket", termtext.Printable(s.addr), what)
	}
	rc, err := s.client.Client()
	if err != nil {
		return nil, s.connectFailed(err)
	}
	rpc, info, err := s.describe(rc)
	if err != nil {
		if msg, ok := s.peerRefused.Load().(string); ok {
			return nil, s.abort(ErrStart, "%s", msg)
		}
		return nil, err
	}
	info.Path, info.SHA256, info.StartTime = key.path, key.sha, time.Since(t0)
	if key.args == "" {
		h.digest.PutInfo(key.sha, key.path, info)
	}
	info.PID = s.w.pid
	h.logger.Debug("plugin started", "binary", key.path, "name", info.Name, "version", info.Version, "pid", info.PID, "start", info.StartTime)
	p := &proc{key: key, client: s.client, rpc: rpc, info: info, stderr: s.stderr, sb: s.sp, budget: s.budget, w: s.w,
		slots: make(chan struct{}, h.cfg.MaxConcurrent), lastUsed: time.Now()}
	// watch either finds p and retires it with its replications, or has
	// killed the process before and the start fails here (both store, then
	// load).
	s.w.proc.Store(p)
	if s.w.overThreads.Load() > 0 || s.w.overQuota.Load() > 0 || s.w.overCPU.Load() > 0 {
		return nil, s.fail(ErrStart, "the plugin crossed a bound as it started")
	}
	h.mu.Lock()
	h.live[p] = true
	h.mu.Unlock()
	return p, nil
}

// starting is a plugin process between its command and its first
// answer: what stops it, and how a failure is reported.
type starting struct {
	h      *Host
	key    procKey
	sp     *sandbox.Process
	client *plugin.Client
	stderr *tail
	budget *logBudget // its log's, which also knows whether an exit is expected
	w      *watcher   // its pid once started, and what watch found
	addr   string     // the socket its handshake named, which peerDialer dials
	// peerRefused is why peerDialer refused a connection (a string).
	peerRefused atomic.Value
	stopped     bool
}

// launch builds the process's command and its go-plugin client (not yet
// started).
//
// A pinned binary is hashed again as it starts, so that a file swapped
// after it was verified is refused: by the sandbox's launcher, through
// the very descriptor it executes, or (sandbox off) by go-plugin's
// SecureConfig. An unpinned one was just identified by the digest cache
// (device, inode, size, mtime): hashing ~20 MB again on every start is
// what made plugin start-up slow (issue #18), and its digest is only
// recorded, not enforced.
func (h *Host) launch(key procKey) (*starting, error) {
	stderr, budget := newTail(h.cfg.StderrTail), newLogBudget()
	var args []string
	if key.args != "" {
		args = strings.Split(key.args, "\x00")
	}
	h.mu.Lock()
	pinned := h.pinned[key]
	h.mu.Unlock()
	pin := ""
	if pinned {
		pin = key.sha
	}
	// The process runs in a session of its own, hence its own process
	// group (a hung plugin is killed with everything it started, and a
	// terminal's ^C reaches the host only, which stops its plugins in
	// order) and no terminal, confined by the sandbox; its standard input
	// is /dev/null (procRunner).
	sp, err := h.cfg.Sandbox.Command(key.path, args, h.env(), h.cfg.MaxConcurrent, pin, max(h.cfg.TmpQuota, 0))
	if err != nil {
		return nil, h.errorf(ErrStart, key, "", "plugin sandbox: %v", err)
	}
	var secure *plugin.SecureConfig
	if pinned && !sp.Verified {
		sum, _ := hex.DecodeString(key.sha)
		secure = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	w := &watcher{path: key.path, tmpDir: sp.TmpDir, budget: budget, exited: make(chan struct{})}
	started := func(pid int) {
		w.pid = pid
		if h.cfg.TmpQuota > 0 || h.cfg.MaxThreads > 0 {
			go h.watch(w)
		}
	}
	s := &starting{h: h, key: key, sp: sp, stderr: stderr, budget: budget, w: w}
	s.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		Plugins:          plugin.PluginSet{wire.PluginKey: &wire.GRPCPlugin{}},
		RunnerFunc:       runnerFunc(sp.Cmd, secure, started, w),
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           budgetLogger{Logger: h.logger.Named(filepath.Base(key.path)), b: budget},
		Stderr:           stderr,
		StartTimeout:     h.cfg.StartTimeout,
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(wire.MaxMessageBytes), grpc.MaxCallSendMsgSize(wire.MaxMessageBytes)),
			// After go-plugin's own dialer, so in its place.
			grpc.WithContextDialer(s.peerDialer)},
	})
	h.starts.Add(1)
	return s, nil
}

// stop stops the process (once) and removes its sandbox's files.
func (s *starting) stop() {
	if s.stopped {
		return
	}
	s.budget.exitExpected.Store(true)
	s.stopped = true
	s.h.stop(s.client, s.w.pid, s.key.path)
	s.sp.Cleanup()
}

// abort is fail for a process whose handshake named an address the host
// must not connect to: SIGKILL to its group, never go-plugin's Kill, which
// connects to the address to close the plugin gracefully.
func (s *starting) abort(kind Kind, format string, a ...any) error {
	s.stopped = true
	s.budget.exitExpected.Store(true)
	killGroup(s.w.pid)
	waitExited(s.client, s.h.cfg.KillTimeout)
	s.sp.Cleanup()
	e := s.h.errorf(kind, s.key, "", format, a...)
	e.Stderr = s.stderr.String()
	return e
}

// fail stops the process and returns the error of that kind; a start
// failure carries the tail of the plugin's stderr, which says why.
func (s *starting) fail(kind Kind, format string, a ...any) error {
	s.stop()
	// A process watch killed fails at whatever step it had reached (its
	// handshake, Info): the bound is the reason.
	if n := s.w.overThreads.Load(); n > 0 {
		kind, format, a = ErrThreads, "the plugin ran %d threads as it started, past the %d a plugin process may: its process was killed", []any{n, s.h.cfg.MaxThreads}
	} else if n := s.w.overQuota.Load(); n > 0 {
		kind, format, a = ErrQuota, "the plugin wrote %d MiB or more into its private TMPDIR as it started, past the %d MiB a plugin process may (--plugin-tmp-quota): its process was killed", []any{n >> 20, s.h.cfg.TmpQuota >> 20}
	} else if s.w.overCPU.Load() > 0 {
		kind, format, a = ErrCPU, "%s (as it started)", []any{s.h.cpuMsg(s.w)}
	}
	e := s.h.errorf(kind, s.key, "", format, a...)
	if kind == ErrStart || kind == ErrThreads || kind == ErrQuota || kind == ErrCPU {
		e.Stderr = s.stderr.String()
	}
	// Its loader's failure, where the handshake was due, read as it: what
	// it said before ("wrote no handshake line … a plugin serves with the
	// SDK's Serve") sent its author to the wrong place.
	if kind == ErrStart {
		if hint := s.h.cfg.Sandbox.LibraryHint(s.key.path, e.Stderr); hint != "" {
			e.Msg = hint
		}
	}
	return e
}

// connectFailed reports a failed handshake: a binary that is not the
// pinned one (go-plugin's checksum, or the sandbox launcher's marker on
// stderr), a plugin built against another protocol version, or another
// failure to start.
func (s *starting) connectFailed(err error) error {
	if s.sp.Verified {
		s.stop() // its stderr, which says why, is complete once it is stopped
	}
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch), s.sp.Verified && strings.Contains(s.stderr.String(), sandbox.ChecksumMarker):
		actual, cerr := Checksum(s.key.path)
		if cerr != nil {
			actual = "unreadable: " + cerr.Error()
		}
		return s.fail(ErrChecksum, "the binary's sha256 is %s, the campaign pins %s: refusing to run it", actual, s.key.sha)
	case strings.Contains(err.Error(), "incompatible API version"):
		theirs := "?"
		if _, after, ok := strings.Cut(err.Error(), "Plugin version: "); ok {
			theirs, _, _ = strings.Cut(after, ",")
		}
		return s.fail(ErrProtocol, "the plugin speaks protocol version %s, this host speaks version %d (rebuild the plugin against this msjfarm SDK)", theirs, wire.ProtocolVersion)
	}
	if line, ok := strings.CutPrefix(err.Error(), unrecognized); ok {
		return s.fail(ErrStart, "%s", badHandshake(line))
	}
	return s.fail(ErrStart, "%v", err)
}

// unrecognized begins go-plugin's error for a first line of stdout that
// is not a handshake; the line follows it.
const unrecognized = "Unrecognized remote plugin message: "

// badHandshake says what a plugin wrote on stdout where the handshake was
// due (go-plugin's error after unrecognized), clipped to a few dozen
// bytes: the line is the plugin's (up to maxStdoutLine), and go-plugin's
// own text with an empty line said nothing of what went wrong.
func badHandshake(rest string) string {
	line, _, _ := strings.Cut(rest, "\n") // go-plugin's notes follow the line
	if line == "" {
		return "the plugin wrote no handshake line on its stdout before it closed it or exited (a plugin serves with the SDK's Serve, which writes that line first)"
	}
	const show = 80
	clipped := line
	if len(line) > show {
		clipped = line[:show]
	}
	more := ""
	if len(line) >= maxStdoutLine {
		more = fmt.Sprintf(", and at least %d bytes without a newline", maxStdoutLine)
	} else if len(line) > show {
		more = fmt.Sprintf(", %d bytes in all", len(line))
	}
	return fmt.Sprintf("the plugin's first line on stdout is not a go-plugin handshake: %q%s (a plugin must write nothing to stdout before the SDK's Serve has written its handshake)", clipped, more)
}

// describe dispenses the policy service and asks the plugin what it
// serves (bounded by StartTimeout); a plugin of another protocol version
// is refused.
func (s *starting) describe(rc plugin.ClientProtocol) (pb.PolicyPluginClient, *Info, error) {
	raw, err := rc.Dispense(wire.PluginKey)
	if err != nil {
		return nil, nil, s.fail(ErrStart, "dispense: %v", err)
	}
	rpc, ok := raw.(pb.PolicyPluginClient)
	if !ok {
		return nil, nil, s.fail(ErrStart, "dispense returned %T", raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.h.cfg.StartTimeout)
	defer cancel()
	resp, err := rpc.Info(ctx, &pb.InfoRequest{}, grpc.MaxCallRecvMsgSize(maxInfoBytes))
	if st, ok := status.FromError(err); ok && st.Code() == codes.ResourceExhausted {
		return nil, nil, s.fail(ErrStart, "info: the plugin's answer (its policies' docs and schemas) is larger than the %d MiB an Info may be: %s", maxInfoBytes>>20, st.Message())
	}
	if err != nil {
		return nil, nil, s.fail(ErrStart, "info: %s", termtext.Clip(err.Error(), termtext.MaxMessage))
	}
	if resp.ProtocolVersion != wire.ProtocolVersion {
		return nil, nil, s.fail(ErrProtocol, "the plugin speaks protocol version %d, this host speaks version %d (rebuild the plugin against this msjfarm SDK)", resp.ProtocolVersion, wire.ProtocolVersion)
	}
	info, err := decodeInfo(resp)
	if err != nil {
		return nil, nil, s.fail(ErrStart, "info: %s", termtext.Clip(err.Error(), termtext.MaxMessage))
	}
	return rpc, info, nil
}

// maxInfoBytes bounds a plugin's Info answer. Every submit, run and
// worker asks each binary on its search path for it, and the digest cache
// keeps it on disk: a binary answering with a 200 MB doc (the call's own
// limit is wire.MaxMessageBytes, for results) cost each of them that
// much memory and disk. The largest of msjfarm's own families answers
// 7.5 KB (serverfilling, as plugin info --json prints it).
const maxInfoBytes = 4 << 20

// decodeInfo reads a plugin's Info, checked (Info.check).
func decodeInfo(r *pb.InfoResponse) (*Info, error) {
	in := &Info{Name: r.PluginName, Version: r.PluginVersion, Engine: r.EngineVersion,
		Protocol: int(r.ProtocolVersion), MaxConcurrent: int(r.MaxConcurrent), GoVersion: r.GoVersion, Heartbeat: r.Heartbeat}
	for _, p := range r.Policies {
		pi := PolicyInfo{Name: p.Name, Doc: p.Doc, Preemption: p.Preemption, SizeAware: p.SizeAware,
			Reference: p.Reference, Timers: p.Timers, Counters: p.Counters}
		if len(p.ParamsJson) > 0 {
			if err := json.Unmarshal(p.ParamsJson, &pi.Params); err != nil {
				return nil, fmt.Errorf("policy %s: unreadable parameter schema: %v", termtext.Printable(p.Name), err)
			}
		}
		if err := decodeCounterInfo(p.CountersJson, &pi); err != nil {
			return nil, fmt.Errorf("policy %s: %w", termtext.Printable(p.Name), err)
		}
		in.Policies = append(in.Policies, pi)
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	return in, nil
}

// check refuses names that are not names (checkName) and makes the free
// text Printable (versions, docs, enum values): it reaches terminals,
// reports and the schemas stored beside a campaign's pins.
func (in *Info) check() error {
	if err := checkName("plugin name", in.Name); err != nil {
		return err
	}
	// Values shown inside one line are one line: a version ending in
	// "\nmsjfarm: sandbox check: all plugins confined … OK" printed that
	// line in `plugin info` as if msjfarm had. Docs may have lines (they
	// are printed indented, under their policy).
	in.Version, in.Engine, in.GoVersion = termtext.OneLine(in.Version), termtext.OneLine(in.Engine), termtext.OneLine(in.GoVersion)
	for i := range in.Policies {
		p := &in.Policies[i]
		if err := checkName("policy name", p.Name); err != nil {
			return err
		}
		p.Doc, p.Preemption = termtext.Printable(p.Doc), termtext.OneLine(p.Preemption)
		for j := range p.Params {
			q := &p.Params[j]
			if err := checkName("policy "+p.Name+": parameter name", q.Name); err != nil {
				return err
			}
			q.Doc = termtext.Printable(q.Doc)
			for k, v := range q.Enum {
				q.Enum[k] = termtext.OneLine(v)
			}
		}
	}
	return nil
}

// decodeCounterInfo reads and checks a policy's counter descriptions
// (wire.CheckCounterInfo): a plugin whose descriptions would put markup,
// formulas or a blob into every report is refused at start-up, with the
// field and the reason (never the text).
func decodeCounterInfo(b []byte, pi *PolicyInfo) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) > maxCounterInfoBytes {
		return fmt.Errorf("counter descriptions: %d bytes, more than %d", len(b), maxCounterInfoBytes)
	}
	if err := json.Unmarshal(b, &pi.CounterInfo); err != nil {
		return fmt.Errorf("unreadable counter descriptions: %v", err)
	}
	return wire.CheckCounterInfo(pi.CounterInfo)
}

// maxCounterInfoBytes bounds a policy's counter descriptions as JSON:
// wire.MaxCounters entries of at most ~200 bytes each.
const maxCounterInfoBytes = wire.MaxCounters * 256

// Info starts (or reuses) the plugin and returns its description.
func (h *Host) Info(ctx context.Context, b Binary) (*Info, error) {
	p, err := h.acquire(ctx, b, 0)
	if err != nil {
		return nil, err
	}
	defer h.release(p)
	in := *p.info
	in.Policies = append([]PolicyInfo(nil), p.info.Policies...)
	return &in, nil
}

// Validate checks a request against the plugin's Info without running
// anything: the policy exists, the parameters resolve against its schema
// (sim.Resolve: unknown names, types, ranges), the workload builds and the
// run length is valid. Workers and the coordinator call it before dispatch;
// Run calls it too.
func (h *Host) Validate(ctx context.Context, b Binary, req *wire.RunRequest) error {
	p, err := h.acquire(ctx, b, 0)
	if err != nil {
		return err
	}
	defer h.release(p)
	return h.validate(p, req)
}

func (h *Host) validate(p *proc, req *wire.RunRequest) error {
	pol, ok := p.info.Policy(req.Policy)
	if !ok {
		names := make([]string, len(p.info.Policies))
		for i, q := range p.info.Policies {
			names[i] = q.Name
		}
		return h.errorf(ErrInvalid, p.key, req.Policy, "unknown policy %q (the plugin serves: %s)", req.Policy, termtext.JoinMax(names, 50))
	}
	if pol.Reference && len(req.Params) > 0 {
		return h.errorf(ErrInvalid, p.key, req.Policy, "a reference model takes no parameters")
	}
	if _, err := sim.Resolve(pol.Params, req.Params); err != nil {
		return h.errorf(ErrInvalid, p.key, req.Policy, "%v", err)
	}
	if err := req.Validate(); err != nil {
		return h.errorf(ErrInvalid, p.key, req.Policy, "%v", err)
	}
	return nil
}

// Run simulates one replication in the plugin: validation first (nothing
// runs if it fails), then one streaming call. It never panics or blocks
// beyond the deadline plus grace; every failure is an *Error.
func (h *Host) Run(ctx context.Context, b Binary, req *wire.RunRequest, opt RunOptions) (*Outcome, error) {
	t0 := time.Now()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Binary: b.Path, Policy: req.Policy, Msg: fmt.Sprintf("request does not encode as JSON: %v", err)}
	}
	opt.after = afterShare(req.Run.RunConfig)
	for attempt := 0; ; attempt++ {
		p, err := h.take(ctx, b, req, opt)
		if err != nil {
			return nil, err
		}
		reused := p.calls.Add(1) > 1
		out, heard, err := h.call(ctx, p, req.Policy, body, opt)
		<-p.slots
		if p.key.solo != 0 {
			h.retire(p) // its one call is over: stopped once released
			h.mu.Lock()
			delete(h.pinned, p.key)
			h.mu.Unlock()
		}
		h.release(p)
		if err != nil {
			// A process that served earlier calls and is found dead before
			// saying anything about this one most likely died while idle
			// (or with another call): one retry on a fresh process.
			if errors.Is(err, ErrCrash) && reused && !heard && attempt == 0 {
				h.logger.Info("plugin process found dead; retrying on a fresh one", "binary", p.key.path, "error", err)
				continue
			}
			return nil, err
		}
		out.Elapsed = time.Since(t0)
		return out, nil
	}
}

// take acquires a live process for the request, validates the request
// against its Info, and takes one of its slots (release both).
func (h *Host) take(ctx context.Context, b Binary, req *wire.RunRequest, opt RunOptions) (*proc, error) {
	for {
		var solo uint64
		if opt.Alone {
			solo = h.solos.Add(1)
		}
		p, err := h.acquire(ctx, b, solo)
		if err != nil {
			return nil, err
		}
		if !opt.SkipValidation {
			if err := h.validate(p, req); err != nil {
				h.release(p)
				return nil, err
			}
		}
		if opt.SameSequence && !sim.SameSequence(p.info.Engine) {
			h.release(p)
			return nil, h.errorf(ErrEngine, p.key, req.Policy, "the plugin %s", EngineRefusal(p.info.Engine))
		}
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			h.release(p)
			return nil, h.errorf(ErrCanceled, p.key, req.Policy, "waiting for a slot: %v", ctx.Err())
		}
		p.mu.Lock()
		retired := p.retired
		p.mu.Unlock()
		if !retired {
			return p, nil
		}
		<-p.slots // the process was retired while we waited: use a fresh one
		h.release(p)
	}
}

// call makes the Run call; heard reports whether the plugin sent anything.
//
// The call's gRPC context is not the caller's: the plugin is told the
// sooner of the run's and the caller's deadlines, and the call is given a
// grace period past it to answer, so that when the caller's deadline fires
// (say the worker's run.deadline) the host still hears whether the plugin
// stopped — an answer means it did, silence means it is hung and its
// process goes. Without this the caller's deadline cut the call at once and
// a hung replication kept its slot in the plugin for ever.
func (h *Host) call(ctx context.Context, p *proc, policy string, body []byte, opt RunOptions) (out *Outcome, heard bool, err error) {
	deadline := opt.Deadline
	if deadline <= 0 {
		deadline = h.cfg.DefaultDeadline
	}
	if d, ok := ctx.Deadline(); ok {
		deadline = max(min(deadline, time.Until(d)), time.Millisecond)
	}
	grace := opt.Grace
	if grace <= 0 {
		grace = h.cfg.Grace
	}
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadline+grace)
	defer cancel()
	// A plain cancellation (no deadline: shutdown, a cancelled campaign)
	// is passed on by ending the call, which the plugin sees as its
	// context ending.
	var cancelled atomic.Bool
	stopWatch := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancelled.Store(true)
			cancel()
		}
	})
	defer stopWatch()
	var callOpts []grpc.CallOption
	if opt.MaxResultBytes > 0 {
		callOpts = append(callOpts, grpc.MaxCallRecvMsgSize(opt.MaxResultBytes))
	}
	stall := h.watchStall(p, policy, opt.after, cancel)
	defer stall.stop()
	// The beats arrive with the progress reports: at least four of them
	// within the stall limit (--plugin-stall 150ms fired on honest runs
	// beating every 47 ms, heard every 250 ms).
	opt.ProgressInterval = stall.interval(cmp.Or(opt.ProgressInterval, wire.DefaultProgressInterval))
	stream, err := p.rpc.Run(callCtx, &pb.RunRequest{
		RequestJson:        body,
		DeadlineMs:         max(deadline.Milliseconds(), 1),
		ProgressIntervalMs: opt.ProgressInterval.Milliseconds(),
		Trace:              opt.Trace,
		MaxTraceEvents:     opt.MaxTraceEvents,
	}, callOpts...)
	if err != nil {
		return nil, false, h.callError(ctx, callCtx, p, policy, deadline, grace, cancelled.Load(), err)
	}
	out = &Outcome{Plugin: Record{Name: p.info.Name, Version: p.info.Version, Engine: p.info.Engine, SHA256: p.key.sha}}
	out.CounterInfo = p.info.counterInfo(policy)
	if pol, ok := p.info.Policy(policy); ok {
		out.EnginePolicy = !pol.Reference
	}
	t0 := time.Now()
	for {
		u, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			if tooLarge(err, opt.MaxResultBytes) {
				return nil, heard, h.errorf(ErrPolicy, p.key, policy, "result: larger than the %d bytes a result of this task may take (%s)", opt.MaxResultBytes, status.Convert(err).Message())
			}
			if stall.fired() {
				return nil, heard, h.stallError(p, policy, stall, out.ResultJSON != nil)
			}
			return nil, heard, h.callError(ctx, callCtx, p, policy, deadline, grace, cancelled.Load(), err)
		}
		heard = true
		if err := h.accept(p, policy, opt, out, u, time.Since(t0)); err != nil {
			return nil, heard, err
		}
		stall.heard(out.LastDone, out.LastOf, out.LastBeats, out.ResultJSON != nil)
	}
	if out.ResultJSON == nil {
		return nil, heard, h.errorf(ErrCrash, p.key, policy, "the plugin ended the call without a result")
	}
	out.Result = new(sim.Result)
	if err := json.Unmarshal(out.ResultJSON, out.Result); err != nil {
		return nil, heard, h.errorf(ErrPolicy, p.key, policy, "unreadable result: %v", err)
	}
	if err := h.asDeclared(p, policy, out, time.Since(t0)); err != nil {
		return nil, heard, err
	}
	return out, heard, nil
}

// asDeclared holds a result to what the plugin's Info declared of its
// policy and to what the host saw of the call. The SDK's engine writes a
// result's preemption and size-awareness from the same description Info
// sends; a result that claims otherwise (a size-blind policy "resume"
// and "size_aware") compares policies that are not what their results
// say. The times are the plugin's own measure of one replication, on
// one thread: never negative, its CPU time not above its wall time
// (allowing the clock's granularity), which is not above the call's as
// the host measured it (a plugin stored cpu_seconds 9.2e9, and -1 ns).
func (h *Host) asDeclared(p *proc, policy string, out *Outcome, call time.Duration) error {
	if pol, ok := p.info.Policy(policy); ok && !pol.Reference {
		if r := out.Result; r.Preemption != pol.Preemption || r.SizeAware != pol.SizeAware {
			return h.violation(p, policy, "the result says preemption %q and size-aware %v, the plugin's Info says %q and %v for policy %s",
				termtext.Printable(termtext.Clip(r.Preemption, 64)), r.SizeAware, pol.Preemption, pol.SizeAware, policy)
		}
	}
	const slack = 50 * time.Millisecond
	if e, c := out.PluginElapsed, out.PluginCPU; e < 0 || c < 0 || c > e+slack || e > call+slack {
		return h.violation(p, policy, "the result's times are %v elapsed and %v CPU, in a call of %v", e, c, call.Round(time.Millisecond))
	}
	return nil
}

// accept adds one update of a Run call's stream to out, holding the plugin
// to what the call asked for: a trace only when asked and no longer than
// its limit, nothing after the result, and progress about as often as
// asked. A plugin is someone else's code, and it writes this stream: the
// test plugin's unasked trace chunks grew a host's heap by 6.7 GiB in
// 10 s, and a million progress reports kept a core of the host busy.
func (h *Host) accept(p *proc, policy string, opt RunOptions, out *Outcome, u *pb.RunUpdate, elapsed time.Duration) error {
	if out.ResultJSON != nil {
		return h.violation(p, policy, "the plugin sent an update after the replication's result")
	}
	switch m := u.Update.(type) {
	case *pb.RunUpdate_Progress:
		out.ProgressUpdates++
		interval := cmp.Or(opt.ProgressInterval, wire.DefaultProgressInterval)
		if allowed := progressAllowance + 4*int(elapsed/interval); out.ProgressUpdates > allowed {
			return h.violation(p, policy, "the plugin sent %d progress reports in %v, asked for one every %v", out.ProgressUpdates, elapsed.Round(time.Millisecond), interval)
		}
		out.LastDone, out.LastOf, out.LastBeats = m.Progress.Done, m.Progress.Total, m.Progress.Beats
		if opt.Progress != nil {
			opt.Progress(m.Progress.Done, m.Progress.Total)
		}
	case *pb.RunUpdate_Trace:
		if !opt.Trace {
			return h.violation(p, policy, "the plugin sent a decision trace, which was not asked for")
		}
		limit := cmp.Or(opt.MaxTraceEvents, wire.DefaultMaxTraceEvents)
		if int64(len(out.Trace))+int64(len(m.Trace.Time)) > limit {
			h.retire(p)
			return h.errorf(ErrTraceLimit, p.key, policy, "the plugin sent more than the %d decision-trace events asked for", limit)
		}
		out.Trace = appendTrace(out.Trace, m.Trace)
	case *pb.RunUpdate_Result:
		out.ResultJSON = m.Result.ResultJson
		out.PluginElapsed = time.Duration(m.Result.ElapsedNs)
		out.PluginCPU = time.Duration(m.Result.CpuNs)
	default:
		return h.violation(p, policy, "the plugin sent an empty update")
	}
	return nil
}

// progressAllowance is how many progress reports a call may carry beyond
// four per interval asked for: the engine sends one per interval and a
// last one.
const progressAllowance = 64

// violation retires p (once the other calls on it end) and reports that
// its plugin broke the stream's rules.
func (h *Host) violation(p *proc, policy, format string, a ...any) error {
	h.logger.Error("plugin broke the Run protocol; retiring its process", "binary", p.key.path, "policy", policy, "what", fmt.Sprintf(format, a...))
	h.retire(p)
	return h.errorf(ErrWire, p.key, policy, format, a...)
}

func appendTrace(evs []sim.TraceRecord, c *pb.TraceChunk) []sim.TraceRecord {
	n := len(c.Time)
	if len(c.Kind) != n || len(c.Job) != n || len(c.Class) != n || len(c.Need) != n || len(c.Busy) != n {
		n = min(n, len(c.Kind), len(c.Job), len(c.Class), len(c.Need), len(c.Busy))
	}
	for i := 0; i < n; i++ {
		evs = append(evs, sim.TraceRecord{Time: c.Time[i], Kind: sim.TraceKind(c.Kind[i]), Job: c.Job[i],
			Class: int(c.Class[i]), Need: int(c.Need[i]), Busy: int(c.Busy[i])})
	}
	return evs
}

// tooLarge reports whether err is gRPC refusing a message over the call's
// MaxResultBytes (the client's own check: ResourceExhausted, "received
// message larger than max"), as opposed to a trace over its limit, which
// the plugin reports with the same code.
func tooLarge(err error, limit int) bool {
	if limit <= 0 {
		return false
	}
	st := status.Convert(err)
	return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}

// callError turns a failed Run call into an *Error, retiring the process
// when it crashed, hung, or was cancelled without a way to know whether it
// stopped.
func (h *Host) callError(ctx, callCtx context.Context, p *proc, policy string, deadline, grace time.Duration, cancelled bool, err error) error {
	if cancelled {
		// The plugin saw the cancellation, but nothing on the wire says
		// whether the replication stopped: a policy spinning in its own
		// code would hold its slot (and a core) for good. A fresh process
		// costs far less than that risk.
		h.logger.Info("replication cancelled by the caller; replacing its plugin process", "binary", p.key.path, "policy", policy)
		h.retireHung(p)
		return h.errorf(ErrCanceled, p.key, policy, "%v (the plugin process was replaced: a cancelled replication cannot be confirmed stopped)", context.Cause(ctx))
	}
	// gRPC carries the call's deadline to the plugin, whose server may
	// cancel the stream and answer DeadlineExceeded a moment before our own
	// context expires: an answer that late (in the last quarter of the
	// grace period) is our deadline too, not the plugin honouring its own,
	// which it does at the deadline itself.
	late := false
	if dl, ok := callCtx.Deadline(); ok && time.Until(dl) < grace/4 {
		late = true
	}
	if callCtx.Err() != nil || late {
		// The plugin did not stop at its deadline: the policy hangs (or the
		// process is wedged). A goroutine cannot be killed, so the process
		// goes, as soon as the other replications on it end.
		h.logger.Error("plugin did not honour a replication deadline; killing its process", "binary", p.key.path, "policy", policy, "deadline", deadline, "pid", p.info.PID)
		h.retireHung(p)
		e := h.errorf(ErrDeadline, p.key, policy, "the replication did not finish within its deadline of %v, nor stop within %v more: %s", deadline.Round(time.Millisecond), grace, p.killNote())
		e.Stderr = p.stderr.String()
		return e
	}
	if callerDone(ctx) {
		// The plugin answered the caller's deadline itself: it is healthy.
		return h.errorf(ErrCanceled, p.key, policy, "%v", context.Cause(ctx))
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.InvalidArgument:
		return h.errorf(ErrInvalid, p.key, policy, "rejected by the plugin: %s", termtext.Clip(st.Message(), termtext.MaxMessage))
	case codes.Aborted:
		return h.errorf(ErrPolicy, p.key, policy, "%s", termtext.Clip(st.Message(), termtext.MaxMessage))
	case codes.DeadlineExceeded:
		return h.errorf(ErrDeadline, p.key, policy, "the replication did not finish within its deadline of %v; the plugin abandoned it", deadline.Round(time.Millisecond))
	case codes.ResourceExhausted:
		return h.errorf(ErrTraceLimit, p.key, policy, "%s", termtext.Clip(st.Message(), termtext.MaxMessage))
	}
	// Anything else means the process or its connection is gone.
	exited := waitExited(p.client, 3*time.Second)
	used := p.w.overQuota.Load()
	if used == 0 && h.cfg.TmpQuota > 0 {
		// A file at the quota: the process died of RLIMIT_FSIZE writing it.
		if n := dirSize(p.sb.TmpDir, h.cfg.TmpQuota); n >= h.cfg.TmpQuota {
			used = n
			p.mu.Lock()
			p.killedRunning.CompareAndSwap(0, int64(p.inflight)) // the first call to fail sees them all
			p.mu.Unlock()
		}
	}
	h.retire(p)
	if n := p.w.overThreads.Load(); n > 0 {
		e := h.errorf(ErrThreads, p.key, policy, "the plugin ran %d threads, past the %d a plugin process may: its process was killed%s", n, h.cfg.MaxThreads, p.sharedNote())
		e.Stderr, e.Shared = p.stderr.String(), p.killedRunning.Load() > 1
		return e
	}
	if p.w.overCPU.Load() > 0 {
		e := h.errorf(ErrCPU, p.key, policy, "%s%s", h.cpuMsg(p.w), p.sharedNote())
		e.Stderr, e.Shared = p.stderr.String(), p.killedRunning.Load() > 1
		return e
	}
	if used > 0 {
		e := h.errorf(ErrQuota, p.key, policy, "the plugin wrote %d MiB or more into its private TMPDIR, past the %d MiB a plugin process may (--plugin-tmp-quota): its process was killed%s", used>>20, h.cfg.TmpQuota>>20, p.sharedNote())
		e.Stderr, e.Shared = p.stderr.String(), p.killedRunning.Load() > 1
		return e
	}
	msg := "lost the connection to the plugin (" + termtext.Clip(st.Message(), termtext.MaxMessage) + ")"
	exit := ""
	if exited {
		msg = "the plugin process exited during the replication"
		// How (a deterministic crash is retried, and each attempt said
		// only that it exited): the worker fails a task whose process
		// ends the same way twice (CrashOf, the worker's crashVerdict).
		if st := p.w.status.Load(); st != nil {
			exit = *st
			msg += " (" + exit + ")"
		}
	}
	p.mu.Lock()
	p.killedRunning.CompareAndSwap(0, int64(p.inflight)) // the first call to fail sees them all
	p.mu.Unlock()
	e := h.errorf(ErrCrash, p.key, policy, "%s%s", msg, p.crashNote())
	e.Stderr, e.Shared, e.Exit, e.CrashLine = p.stderr.String(), p.killedRunning.Load() > 1, exit, p.stderr.crashLine()
	return e
}

// callerDone reports whether the caller's context has ended — or is about
// to: its deadline travels to the plugin with the call, and the plugin's
// answer can arrive before the host's own timer fires.
func callerDone(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

func waitExited(c *plugin.Client, d time.Duration) bool {
	end := time.Now().Add(d)
	for !c.Exited() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// errNoPeerCred: this system cannot tell a socket's listener.
var errNoPeerCred = errors.New("no SO_PEERCRED here")

// peerDialer connects to the socket the plugin's handshake named and
// keeps the connection only if the process listening on it is the
// plugin (SO_PEERCRED): the name is a path in a directory the plugin
// writes, which it may swap for a link to another socket after start
// looked at it.
func (s *starting) peerDialer(ctx context.Context, _ string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", s.addr)
	if err != nil {
		return nil, err
	}
	pid, err := peerPID(c)
	if err == nil && pid == s.w.pid || errors.Is(err, errNoPeerCred) {
		return c, nil
	}
	c.Close()
	msg := fmt.Sprintf("the socket the plugin's handshake names (%q) is not the plugin's: its listener is process %d, the plugin is process %d; the host connects only to the plugin's own socket", termtext.Printable(s.addr), pid, s.w.pid)
	if err != nil {
		msg = fmt.Sprintf("the socket the plugin's handshake names (%q): its listener is unknown (%v); the host connects only to the plugin's own socket", termtext.Printable(s.addr), err)
	}
	s.peerRefused.Store(msg)
	return nil, errors.New(msg)
}
