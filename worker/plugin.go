package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
	"github.com/msjfarm/msjfarm/worker/resultcheck"
)

// Runner names, as recorded in every result's provenance ("runner").
const (
	RunnerInProcess = "in-process"
	RunnerPlugin    = "plugin"
)

type campaignKey struct{}

// WithCampaign tells a Runner which campaign a task belongs to (the worker
// sets it), so that a PluginRunner can use the binaries the campaign pins.
func WithCampaign(ctx context.Context, campaign string) context.Context {
	return context.WithValue(ctx, campaignKey{}, campaign)
}

// CampaignFrom returns the campaign set by WithCampaign ("" if none).
func CampaignFrom(ctx context.Context) string {
	c, _ := ctx.Value(campaignKey{}).(string)
	return c
}

type aloneKey struct{}

// runAlone asks a PluginRunner to run the task in a plugin process of its
// own (pluginhost.RunOptions.Alone) when its previous attempt (prev, the
// task's state) crashed a process that ran other replications too: which
// of them crashed it was not known, and a replication that crashes every
// process it runs in was retried max-deliver times beside others, each
// crash shared (a point's replications of a crashing policy run side by
// side). Alone, its crash is its own, and crashVerdict can judge it.
func runAlone(ctx context.Context, prev protocol.TaskState) context.Context {
	if prev.Crash == "" || !prev.CrashShared {
		return ctx
	}
	return context.WithValue(ctx, aloneKey{}, true)
}

func alone(ctx context.Context) bool {
	a, _ := ctx.Value(aloneKey{}).(bool)
	return a
}

// ChooseRunner applies the -runner rules to a campaign: "inprocess" always
// runs in-process; "plugin" requires every policy of the campaign to
// resolve (registry.Lookup) to a plugin binary — msjfarm's own self-served
// built-in families count — and no replayed trace, which the plugin runner
// does not ship; "auto" uses plugins when that requirement holds and
// in-process otherwise. A policy the registry cannot resolve (unknown, or
// served by two binaries) is an error in every mode but inprocess. It
// returns whether to use plugins and why.
func ChooseRunner(mode string, tasks []sweep.Task, reg *registry.Registry) (plugin bool, why string, err error) {
	if err := CheckRunnerMode(mode); err != nil {
		return false, "", err
	}
	if inProcessMode(mode) {
		return false, "-runner inprocess", nil
	}
	var noBinary []string
	seen := map[string]bool{}
	trace, self := false, 0
	for i := range tasks {
		trace = trace || tasks[i].Trace != nil
		p := tasks[i].Policy
		if seen[p] {
			continue
		}
		seen[p] = true
		e, err := reg.Lookup(p)
		if err != nil {
			return false, "", err
		}
		if _, ok := e.Binary(); !ok && e.Source != registry.Pinned {
			noBinary = append(noBinary, p)
		} else if e.Source == registry.BuiltIn {
			self++
		}
	}
	var reason string
	if len(noBinary) > 0 {
		sort.Strings(noBinary)
		reason = fmt.Sprintf("no plugin binary for %s on the search path (%s)", strings.Join(noBinary, ", "),
			strings.Join(reg.Dirs, string(os.PathListSeparator)))
	} else if trace {
		reason = "the campaign replays a trace, which the plugin runner does not support"
	}
	if reason != "" {
		if mode == "plugin" {
			return false, "", errors.New(reason)
		}
		return false, "auto: " + reason, nil
	}
	desc := fmt.Sprintf("%d policies: %d built-in served by msjfarm itself, %d by plugin binaries", len(seen), self, len(seen)-self)
	if mode == "plugin" {
		return true, "-runner plugin: " + desc, nil
	}
	return true, "auto: " + desc, nil
}

// PinPlugins pins, for a campaign about to be submitted, the binary of
// each policy: it uploads each binary to storage.PluginKey(name, sha256)
// unless already there and records the pins at protocol.PinsKey. A campaign
// pinned before keeps its pins (a resumed campaign runs the same code);
// policies it lacks are added. Warnings say where a local binary differs
// from the pinned one (workers then fetch the pinned one).
//
// Built-in policies served by msjfarm itself (registry.Self) are not
// pinned: every worker serves them from its own executable, whose engine
// version the results record.
func PinPlugins(ctx context.Context, st storage.Store, campaign string, policies []string, reg *registry.Registry) (*protocol.Pins, []string, error) {
	old, err := protocol.ReadPins(ctx, st, campaign)
	if err != nil {
		return nil, nil, err
	}
	pins := &protocol.Pins{Campaign: campaign, Policies: map[string]protocol.PluginPin{}}
	if old != nil {
		for k, v := range old.Policies {
			pins.Policies[k] = v
		}
	}
	var warnings []string
	changed := old == nil
	uploaded := map[string]bool{}
	for _, pol := range policies {
		e, lerr := reg.Lookup(pol)
		ok := lerr == nil && e.Source == registry.Plugin
		if lerr == nil && e.Source == registry.BuiltIn {
			continue
		}
		if p, pinned := pins.Policies[pol]; pinned {
			if ok && e.SHA256 != p.SHA256 {
				warnings = append(warnings, fmt.Sprintf("campaign %s pins %s sha256 %s for policy %s; the local binary %s has sha256 %s: the pinned one is used",
					campaign, p.Plugin, p.SHA256, pol, e.Path, e.SHA256))
			}
			continue
		}
		if lerr != nil {
			return nil, nil, fmt.Errorf("pinning policy %s: %w", pol, lerr)
		}
		if !ok {
			return nil, nil, fmt.Errorf("pinning policy %s: no plugin binary serves it", pol)
		}
		if _, err := builtin.Lookup(pol); err == nil {
			// A binary that calls its family by a built-in family's name
			// serves that family's policies in its place (a family rebuilt
			// to try a change), and its Info is all there is to go by: a
			// binary of LCFS that said "fcfs" became every comparison's
			// baseline, silently.
			warnings = append(warnings, fmt.Sprintf("policy %s is msjfarm's built-in, but the plugin binary %s (plugin %s %s, sha256 %s) on the search path serves it in its place: its results are that binary's, not msjfarm's own %s (remove the binary from the search path to use the built-in)",
				pol, e.Path, termtext.Printable(e.Plugin), termtext.Printable(e.Version), e.SHA256[:12], pol))
		}
		key := storage.PluginKey(e.Plugin, e.SHA256)
		if !uploaded[key] {
			if err := uploadPlugin(ctx, st, key, e); err != nil {
				return nil, nil, err
			}
			uploaded[key] = true
		}
		pins.Policies[pol] = protocol.PluginPin{Plugin: e.Plugin, Version: e.Version, Engine: e.Engine, SHA256: e.SHA256, Key: key,
			Params: e.Params, Reference: e.Reference}
		changed = true
	}
	if changed {
		if err := protocol.WritePins(ctx, st, pins); err != nil {
			return nil, nil, err
		}
	}
	return pins, warnings, nil
}

// uploadPlugin uploads e's binary to key unless it is there already. The
// file may have changed since it was indexed: what was uploaded is
// checked against the indexed sha256.
func uploadPlugin(ctx context.Context, st storage.Store, key string, e registry.Entry) error {
	_, err := st.Stat(ctx, key)
	if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err := st.PutFile(ctx, key, e.Path); err != nil {
		return fmt.Errorf("uploading %s: %w", e.Path, err)
	}
	if sum, err := pluginhost.Checksum(e.Path); err != nil || sum != e.SHA256 {
		_ = st.Delete(ctx, key)
		return fmt.Errorf("plugin %s changed while being pinned (sha256 %s, indexed as %s)", e.Path, sum, e.SHA256)
	}
	return nil
}

// PluginRunner runs replications in policy plugins through a worker/pluginhost
// Host: the task's policy resolves to the binary its campaign pins (see
// Pins; fetched from Store into CacheDir and verified when this machine
// lacks it) or, for a campaign without pins, to the binary serving it on
// the search path (Index). Plugin processes are reused across tasks; Close
// stops them (the worker closes its runner when it stops).
//
// Errors: the host's classification decides. A crash, a start failure or
// a deadline is retried (a deadline once: see deadlineVerdict); a checksum or protocol mismatch, an invalid
// request or a failed replication is permanent. A context ending (worker
// shutdown, run.deadline, cancelled campaign) returns an error wrapping
// the context's error, as InProcess does.
type PluginRunner struct {
	Host *pluginhost.Host
	// Registry resolves policies of unpinned campaigns; nil: built from
	// Dirs (and Self) on first use.
	Registry *registry.Registry
	Dirs     []string
	Self     *registry.Self
	// Store holds pins and pinned binaries (nil: pins are ignored).
	Store storage.Store
	// CacheDir receives binaries fetched from Store (default
	// <user cache dir>/msjfarm/plugins).
	CacheDir string
	// Fallback runs tasks whose policy has no plugin binary, pinned or
	// found (nil: such a task is passed on to another worker,
	// NotServedError).
	Fallback Runner
	// Logf logs fetches (default: discard).
	Logf func(format string, args ...any)
	// AnyEngine runs plugins whose Info declares an engine that does not
	// draw this engine's job sequence (sim.SameSequence). By default
	// their tasks fail permanently before anything runs
	// (pluginhost.ErrEngine): the result check draws the seed's own jobs
	// again only for such an engine, and a plugin that lies about its
	// results would otherwise declare another engine to escape it.
	AnyEngine bool

	ixMu    sync.Mutex
	pinMu   sync.Mutex
	pins    map[string]pinsEntry
	fetchMu sync.Mutex
}

type pinsEntry struct {
	pins *protocol.Pins
	at   time.Time
}

// Close stops the plugin processes.
func (r *PluginRunner) Close() error { return r.Host.Close() }

func (r *PluginRunner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

func (r *PluginRunner) registry(ctx context.Context) *registry.Registry {
	r.ixMu.Lock()
	defer r.ixMu.Unlock()
	if r.Registry == nil {
		r.Registry = registry.New(ctx, registry.Options{Dirs: r.Dirs, Host: r.Host, Self: r.Self})
		for _, w := range r.Registry.Warnings() {
			r.logf("plugin runner: %s", w)
		}
	}
	return r.Registry
}

// campaignPins reads (and caches) a campaign's pins. Found pins are cached
// for good; their absence for 30 s.
func (r *PluginRunner) campaignPins(ctx context.Context, campaign string) (*protocol.Pins, error) {
	if r.Store == nil || campaign == "" {
		return nil, nil
	}
	r.pinMu.Lock()
	e, ok := r.pins[campaign]
	r.pinMu.Unlock()
	if ok && (e.pins != nil || time.Since(e.at) < 30*time.Second) {
		return e.pins, nil
	}
	p, err := protocol.ReadPins(ctx, r.Store, campaign)
	if err != nil {
		return nil, err
	}
	r.pinMu.Lock()
	if r.pins == nil {
		r.pins = map[string]pinsEntry{}
	}
	r.pins[campaign] = pinsEntry{pins: p, at: time.Now()}
	r.pinMu.Unlock()
	return p, nil
}

func (r *PluginRunner) cacheDir() (string, error) {
	if r.CacheDir != "" {
		return r.CacheDir, nil
	}
	return DefaultPluginCache()
}

// DefaultPluginCache is the plugin cache of a runner given none: the user
// cache directory's msjfarm/plugins.
func DefaultPluginCache() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no plugin cache directory: %w", err)
	}
	return filepath.Join(d, "msjfarm", "plugins"), nil
}

// fetch returns the local copy of a pinned binary, downloading it from
// storage into the cache and verifying its sha256 if needed.
func (r *PluginRunner) fetch(ctx context.Context, policy string, pin protocol.PluginPin) (string, error) {
	dir, err := r.cacheDir()
	if err != nil {
		return "", err
	}
	final := filepath.Join(dir, pin.Plugin, pin.SHA256, pluginhost.BinaryPrefix+pin.Plugin)
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if _, err := os.Stat(final); err == nil {
		return final, nil // the host verifies it again at process start
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	key := pin.Key
	if key == "" {
		key = storage.PluginKey(pin.Plugin, pin.SHA256)
	}
	tmp := final + ".download"
	if err := r.Store.GetFile(ctx, key, tmp); err != nil {
		return "", fmt.Errorf("fetching plugin %s (sha256 %s) from %s: %w", pin.Plugin, pin.SHA256, r.Store.URL(), err)
	}
	sum, err := pluginhost.Checksum(tmp)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if sum != pin.SHA256 {
		os.Remove(tmp)
		return "", &pluginhost.Error{Kind: pluginhost.ErrChecksum, Binary: storage.Location(r.Store.URL(), key), SHA256: pin.SHA256, Policy: policy,
			Msg: fmt.Sprintf("the binary fetched from storage has sha256 %s, the campaign pins %s: refusing to run it", sum, pin.SHA256)}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return "", err
	}
	r.logf("plugin runner: fetched %s (sha256 %s) from %s into %s", pin.Plugin, pin.SHA256, r.Store.URL(), final)
	return final, nil
}

// inCache reports whether path is in the fetch cache.
func (r *PluginRunner) inCache(path string) bool {
	dir, err := r.cacheDir()
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// resolve finds the binary of t's policy; ok is false when there is none
// (and the campaign pins none).
func (r *PluginRunner) resolve(ctx context.Context, t *sweep.Task) (b pluginhost.Binary, ok bool, err error) {
	pins, err := r.campaignPins(ctx, CampaignFrom(ctx))
	if err != nil {
		return b, false, fmt.Errorf("reading plugin pins: %w", err)
	}
	reg := r.registry(ctx)
	local, lerr := reg.Lookup(t.Policy)
	found := lerr == nil
	if pins != nil {
		if pin, pinned := pins.Policies[t.Policy]; pinned {
			if found && local.Source == registry.Plugin && local.SHA256 == pin.SHA256 {
				return pluginhost.Binary{Path: local.Path, SHA256: pin.SHA256}, true, nil
			}
			if r.Store == nil {
				return b, false, &NotServedError{fmt.Errorf("policy %s: no local binary with the pinned sha256 %s and no storage to fetch it from", t.Policy, pin.SHA256)}
			}
			p, err := r.fetch(ctx, t.Policy, pin)
			if err != nil {
				return b, false, err
			}
			return pluginhost.Binary{Path: p, SHA256: pin.SHA256}, true, nil
		}
	}
	if !found {
		return b, false, &NotServedError{lerr}
	}
	b, ok = local.Binary()
	return b, ok, nil
}

// PluginRequest is the plugin request of a task.
func PluginRequest(t *sweep.Task) (*wire.RunRequest, error) {
	if t.Trace != nil {
		return nil, errors.New("the plugin runner does not replay traces (run it with -runner inprocess)")
	}
	return &wire.RunRequest{Policy: t.Policy, Params: t.Params, Workload: t.Workload,
		ArrivalRate: t.ArrivalRate, Interarrival: t.Interarrival,
		Run: wire.Run{Seed: t.Seed, RunConfig: t.Run.RunConfig}}, nil
}

// noDeadline stands for "no run.deadline" (the host needs one).
const noDeadline = 30 * 24 * time.Hour

// Run runs the task in its policy's plugin.
func (r *PluginRunner) Run(ctx context.Context, t *sweep.Task, progress func(done, total int64)) (*Outcome, error) {
	if t.Trace != nil && r.Fallback != nil {
		return r.Fallback.Run(ctx, t, progress)
	}
	b, ok, err := r.resolve(ctx, t)
	if err == nil && !ok {
		if r.Fallback != nil {
			return r.Fallback.Run(ctx, t, progress)
		}
		return nil, &NotServedError{fmt.Errorf("no plugin binary serves policy %s (search path %s)", t.Policy,
			strings.Join(r.registry(ctx).Dirs, string(os.PathListSeparator)))}
	}
	if err != nil {
		return nil, r.taskError(ctx, err)
	}
	req, err := PluginRequest(t)
	if err != nil {
		return nil, &NotServedError{err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dl := t.Run.Deadline
	if dl <= 0 {
		dl = noDeadline
		if d, ok := ctx.Deadline(); ok {
			dl = time.Until(d)
		}
	}
	out, err := r.Host.Run(ctx, b, req, pluginhost.RunOptions{Deadline: dl, Progress: progress, Alone: alone(ctx), SameSequence: !r.AnyEngine,
		// The result's bound, with room for the message's framing and
		// progress fields: a larger result is refused before it is read.
		MaxResultBytes: resultcheck.Limit(t) + 64<<10})
	if err != nil && errors.Is(err, pluginhost.ErrChecksum) && r.inCache(b.Path) {
		// A cached copy changed on disk since it was verified: drop it and
		// let the next attempt fetch it again.
		r.logf("plugin runner: removing %s from the cache: %v", b.Path, err)
		r.fetchMu.Lock()
		os.Remove(b.Path)
		r.fetchMu.Unlock()
		return nil, err
	}
	if err != nil {
		return nil, r.taskError(ctx, err)
	}
	return &Outcome{Result: out.Result, Bytes: len(out.ResultJSON), CounterInfo: out.CounterInfo, EnginePolicy: out.EnginePolicy, Provenance: Provenance{
		Runner: RunnerPlugin, Plugin: out.Plugin.Name, PluginVersion: out.Plugin.Version,
		PluginSHA256: out.Plugin.SHA256, Engine: out.Plugin.Engine, CPU: out.PluginCPU,
		Builtin: len(b.Args) > 0 && b.Args[0] == registry.ServeSubcommand,
	}}, nil
}

// taskError classifies a failure for the worker: a context that ended
// wins (so shutdown releases the task and run.deadline is reported as
// such); host errors are permanent unless the host calls them retryable;
// anything else (storage) is retried.
func (r *PluginRunner) taskError(ctx context.Context, err error) error {
	if d, ok := ctx.Deadline(); ok && (errors.Is(err, pluginhost.ErrDeadline) || errors.Is(err, pluginhost.ErrCanceled)) && time.Until(d) < time.Second {
		// The plugin's deadline and the context's are the same moment
		// measured by two clocks (and the host reports a context that is
		// about to end as ended): let the context catch up.
		t := time.NewTimer(time.Until(d) + 50*time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	var he *pluginhost.Error
	if errors.As(err, &he) {
		if he.Retryable() {
			return err
		}
		return &PermanentError{err}
	}
	return err
}

// crashVerdict makes a crash permanent when the plugin process ended the
// same way (cur.How: its exit and crash line) as on the task's previous
// attempt (prev, the task's state then), running this replication alone
// both times, or at least once with a Go crash line to compare: a
// replication is a function of its seed, so a panic in policy code, or
// the address-space limit reached, comes back on every attempt, and each
// of the max-deliver attempts ran up to the crash again (a crash at the
// end of a ten-minute replication cost fifty). Alone, the process's crash
// is this replication's; the same crash line on the attempt before, even
// beside others, is it again. A crash with no line ("signal: killed")
// beside other replications may be a neighbour's (the machine's OOM
// killer picks the largest process), and one that ends another way may
// be the machine's: both are retried. Addresses in the lines are not
// compared (sameCrash). The attempt after a shared crash
// runs alone (runAlone).
func crashVerdict(attempt int, err error, cur pluginhost.Crash, prev protocol.TaskState) error {
	if attempt < 2 || cur.How == "" || !sameCrash(cur.How, prev.Crash) || cur.Shared && prev.CrashShared {
		return err
	}
	where := "each time running this replication alone"
	if cur.Shared || prev.CrashShared {
		if !cur.Line {
			return err
		}
		where = "one of them running this replication alone"
	}
	return &PermanentError{fmt.Errorf("the plugin process crashed the same way (%s) on 2 attempts in a row, %s: the task's seed reproduces it: %w", cur.How, where, err)}
}

// sameCrash reports whether two crashes (pluginhost.Crash.How) ended the
// same way, read with every hexadecimal number (0x...) as one: Go prints
// a panic with a pointer value as its address ("panic: (*main.T)
// 0xc00001c030"), and the address of the same allocation differs from
// process to process when other replications, or the runtime's own
// goroutines, allocated first. The crash of one seed was therefore read
// as two crashes of different lines and retried up to max-deliver.
// Decimal numbers are compared: a replication is a function of its seed,
// so the index of an out-of-range access comes back the same.
func sameCrash(a, b string) bool {
	for {
		i, j := hexAt(a), hexAt(b)
		if i < 0 || j < 0 {
			return i < 0 && j < 0 && a == b
		}
		if a[:i] != b[:j] {
			return false
		}
		a, b = skipHex(a[i+2:]), skipHex(b[j+2:])
	}
}

// hexAt is the index of the first "0x" (or "0X") followed by a hex digit
// in s that does not continue a word or number, or -1.
func hexAt(s string) int {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && isHex(s[i+2]) && (i == 0 || !isWord(s[i-1])) {
			return i
		}
	}
	return -1
}

// skipHex is s after its leading hex digits.
func skipHex(s string) string {
	i := 0
	for i < len(s) && isHex(s[i]) {
		i++
	}
	return s[i:]
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isWord(c byte) bool {
	return isHex(c) || 'g' <= c && c <= 'z' || 'G' <= c && c <= 'Z' || c == '_'
}

// deadlineVerdict makes a deadline (or a stall: pluginhost.ErrStalled) on
// a task's second (or later) attempt permanent: a replication that overran its deadline twice hangs or is too
// long for it, and another max-deliver attempts of up to run.deadline each
// (hours, for a long deadline) would only repeat that. The first overrun
// is retried, since a loaded or failing machine can be the cause.
// deadlineHit says the replication's run.deadline fired; err is the
// runner's error.
func deadlineVerdict(deadlineHit bool, attempt int, err error) error {
	var perm *PermanentError
	if attempt < 2 || errors.As(err, &perm) {
		return err
	}
	if deadlineHit || errors.Is(err, pluginhost.ErrDeadline) {
		return &PermanentError{fmt.Errorf("exceeded run.deadline on %d attempts: %w", attempt, err)}
	}
	if errors.Is(err, pluginhost.ErrStalled) {
		return &PermanentError{fmt.Errorf("stalled on %d attempts: %w", attempt, err)}
	}
	return err
}
