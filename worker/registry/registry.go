// Package registry is the one place where a policy name becomes an
// implementation: the built-in catalogue, every plugin binary on the search
// path and, for a submitted campaign, every plugin the campaign pins —
// each described by its Info (policies, version, parameter schema,
// capabilities). msjfarm run, simulate, submit, coordinator and worker all
// resolve names through a Registry, so a sweep is validated against the
// schema of the very code that will run it, before anything is written or
// queued, and a third-party policy is as valid in a sweep as a built-in one.
//
// It is its own package, rather than part of worker/pluginhost or worker,
// because its users are wider than either: the coordinator validates with
// it (and must not import the worker), the host stays a process supervisor
// that knows nothing of the built-in catalogue, and the worker's runner
// dispatches through it.
//
// Resolution rules (Lookup), for one policy name (case-insensitive):
//
//  1. A campaign's pin wins: the campaign runs exactly what it pinned.
//  2. One binary on the search path serving the name is used. If it is
//     the built-in family's own distribution binary (its plugin name is
//     the family's), it replaces the self-served built-in; any other
//     binary serving a built-in name is a conflict.
//  3. Two binaries serving the name are a conflict: the error names both
//     and says how to choose (remove one from the search path). Two files
//     with the same name (msjfarm-policy-x) in two directories are not a
//     conflict: like PATH, the first directory wins (pluginhost.Discover).
//  4. A built-in policy without a binary runs in msjfarm itself re-executed
//     as a plugin (Self), or in-process when there is no Self.
//  5. Anything else is unknown: the error lists the built-in names, the
//     directories searched and the binaries that could not be used.
package registry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// ServeSubcommand is the hidden msjfarm subcommand that serves one built-in
// family as a plugin: msjfarm __serve-family <family> (builtin.ServeFamily).
const ServeSubcommand = "__serve-family"

// Self is how this program serves its own built-in families as plugins.
type Self struct {
	// Path is the program's executable (os.Executable).
	Path string
}

// Binary is the self-served plugin of a built-in family.
func (s *Self) Binary(family string) pluginhost.Binary {
	return pluginhost.Binary{Path: s.Path, Args: []string{ServeSubcommand, family}}
}

// SelfFromExecutable is Self for the running program, nil if its
// executable cannot be found.
func SelfFromExecutable() *Self {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &Self{Path: exe}
}

// Source says where an Entry comes from.
type Source string

// Sources.
const (
	BuiltIn Source = "built-in"
	Plugin  Source = "plugin" // a binary on the search path
	Pinned  Source = "pinned" // a campaign's pin (binary in storage)
)

// Entry is one policy as the registry resolved it.
type Entry struct {
	Policy string
	Source Source
	// Plugin is the serving plugin's name (for a built-in, its family),
	// Version and Engine its versions.
	Plugin, Version, Engine string
	Params                  []sim.Param
	Reference               bool
	// Path and SHA256 identify the binary (Path is empty for a built-in
	// served by Self and for a pinned binary not on this machine); Args
	// are its arguments (Self's subcommand).
	Path   string
	SHA256 string
	Args   []string
	// Pin is the campaign's pin (Source Pinned).
	Pin *protocol.PluginPin
}

// Binary is the plugin binary that runs the entry; false for a built-in
// with no binary and no Self (it runs in-process) and for a pinned binary
// (the worker fetches it by its pin).
func (e Entry) Binary() (pluginhost.Binary, bool) {
	if e.Path == "" {
		return pluginhost.Binary{}, false
	}
	return pluginhost.Binary{Path: e.Path, Args: e.Args}, true
}

// Describe is "policy=plugin@sha256-prefix" (or "policy=built-in family
// fcfs in msjfarm"), as run and submit print it.
func (e Entry) Describe() string {
	switch {
	case e.Source == BuiltIn && len(e.Args) > 0:
		return fmt.Sprintf("%s=msjfarm(%s)", e.Policy, e.Plugin)
	case e.Source == BuiltIn:
		return fmt.Sprintf("%s=in-process", e.Policy)
	}
	return fmt.Sprintf("%s=%s@%.12s", e.Policy, e.Plugin, e.SHA256)
}

// Broken is a binary on the search path that cannot be used, and why.
type Broken struct {
	Path string
	Err  error
}

// String is the binary and the first line of its error (go-plugin adds a
// paragraph of generic hints after the cause).
func (b Broken) String() string {
	var he *pluginhost.Error
	if errors.As(b.Err, &he) {
		msg, _, _ := strings.Cut(he.Msg, "\n")
		out := fmt.Sprintf("plugin %s: %s: %s", b.Path, he.Kind, strings.TrimSpace(msg))
		if st := strings.TrimSpace(he.Stderr); st != "" {
			out += " (stderr: " + strings.ReplaceAll(st, "\n", " | ") + ")"
		}
		return out
	}
	msg, _, _ := strings.Cut(b.Err.Error(), "\n")
	if strings.Contains(msg, b.Path) {
		return msg
	}
	return fmt.Sprintf("plugin %s: %s", b.Path, msg)
}

// Options configure New.
type Options struct {
	// Dirs is the plugin search path (pluginhost.SearchPath).
	Dirs []string
	// Host starts binaries whose Info is not yet cached (its Digests); a
	// started process stays in the host for the runs that follow. Nil:
	// the search path is not indexed.
	Host *pluginhost.Host
	// Self serves the built-in families (nil: built-ins run in-process).
	Self *Self
	// Pins are a campaign's pins (nil: none).
	Pins *protocol.Pins
	// NoTrial: CheckSpec does not try plugin policies in their binaries
	// (their schema is still checked). Trials need Host.
	NoTrial bool
	// TrialBudget bounds the time all of CheckSpec's trials take together
	// (0: DefaultTrialBudget); past it the rest are checked by schema only
	// (TrialNote says how many).
	TrialBudget time.Duration
}

// DefaultTrialBudget is Options.TrialBudget's default: a trial takes under
// a millisecond for an honest policy (2500 systems took 1.5 s), so it
// matters only for a policy whose Init is slow, on a sweep of many
// systems, whose planning it keeps to about a minute.
const DefaultTrialBudget = time.Minute

// Registry resolves policy names. It is read-only after New and safe for
// concurrent use.
type Registry struct {
	// Dirs is the search path indexed.
	Dirs []string
	// Binaries are the usable binaries found, in search-path order.
	Binaries []*pluginhost.Info
	// Broken are the binaries found that cannot be used.
	Broken []Broken
	// Self serves the built-in families (may be nil).
	Self *Self

	pins   *protocol.Pins
	byName map[string][]Entry // lower-case policy -> candidates
	trial  *trials            // CheckSpec's trials (nil: none)
}

// trials is CheckSpec's state: the host that runs the trials, and the time
// they took against the budget.
type trials struct {
	host   *pluginhost.Host
	ctx    context.Context // New's: a trial ends with it (Ctrl-C of run or submit)
	budget time.Duration

	mu           sync.Mutex
	spent        time.Duration
	ran, skipped int
}

// begin reports whether a trial may run (the budget is not spent) and
// how much of the budget is left, and counts it either way.
func (t *trials) begin() (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spent >= t.budget {
		t.skipped++
		return false, 0
	}
	t.ran++
	return true, t.budget - t.spent
}

// cutShort counts a trial the budget ended as one left to the schema.
func (t *trials) cutShort() {
	t.mu.Lock()
	t.ran--
	t.skipped++
	t.mu.Unlock()
}

func (t *trials) end(d time.Duration) {
	t.mu.Lock()
	t.spent += d
	t.mu.Unlock()
}

// TrialNote is a warning when CheckSpec's budget stopped its trials ("" if
// it did not): how many ran, and how many systems were left to the schema.
func (r *Registry) TrialNote() string {
	t := r.trial
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.skipped == 0 {
		return ""
	}
	return fmt.Sprintf("the plugin policies' trials took their budget (%s for %d, one per policy variant and system): %d more were left to the schema check, and a refusal among them will fail its tasks on the workers",
		t.spent.Round(time.Millisecond), t.ran, t.skipped)
}

// Builtin is the registry of the built-in catalogue alone: what validates
// sweeps where no plugin can exist (and the coordinator's default).
func Builtin() *Registry { return New(context.Background(), Options{}) }

// ForCampaign is the catalogue a stored campaign's spec expands against:
// the built-ins plus the plugins the campaign pins, with the schemas
// stored beside the pins (so results, report, reproduce and the archive
// readers read a third-party campaign without its binary). A campaign
// without pins gets the built-ins alone.
func ForCampaign(ctx context.Context, st storage.Store, id string) (*Registry, error) {
	pins, err := protocol.ReadPins(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return New(ctx, Options{Pins: pins}), nil
}

// New indexes the built-in catalogue, the binaries on o.Dirs (through
// o.Host; each binary's Info comes from the digest cache when the binary
// is unchanged, so nothing is started for it) and o.Pins.
func New(ctx context.Context, o Options) *Registry {
	r := &Registry{Dirs: o.Dirs, Self: o.Self, pins: o.Pins, byName: map[string][]Entry{}}
	if !o.NoTrial && o.Host != nil {
		r.trial = &trials{host: o.Host, ctx: ctx, budget: cmp.Or(o.TrialBudget, DefaultTrialBudget)}
	}
	for _, f := range builtin.Families() {
		add := func(name string, params []sim.Param, ref bool) {
			e := Entry{Policy: name, Source: BuiltIn, Plugin: f.Name, Version: builtin.Version,
				Engine: sim.Version, Params: params, Reference: ref}
			if o.Self != nil {
				b := o.Self.Binary(f.Name)
				e.Path, e.Args = b.Path, b.Args
			}
			r.add(e)
		}
		for _, s := range f.Policies {
			add(s.Name, sim.Describe(s.New()).Params, false)
		}
		for _, ref := range f.References {
			add(ref.Name, nil, true)
		}
	}
	if o.Host != nil {
		r.index(ctx, o.Host)
	}
	if o.Pins != nil {
		for pol, pin := range o.Pins.Policies {
			pin := pin
			r.add(Entry{Policy: pol, Source: Pinned, Plugin: pin.Plugin, Version: pin.Version, Engine: pin.Engine,
				SHA256: pin.SHA256, Params: pin.Params, Reference: pin.Reference, Pin: &pin})
		}
	}
	return r
}

func (r *Registry) add(e Entry) {
	k := strings.ToLower(e.Policy)
	r.byName[k] = append(r.byName[k], e)
}

// index asks every binary on the search path for its Info, concurrently.
func (r *Registry) index(ctx context.Context, h *pluginhost.Host) {
	found := pluginhost.Discover(r.Dirs)
	infos := make([]*pluginhost.Info, len(found))
	errs := make([]error, len(found))
	var wg sync.WaitGroup
	for i, f := range found {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i], errs[i] = binaryInfo(ctx, h, f.Path)
		}()
	}
	wg.Wait()
	for i, in := range infos {
		if errs[i] == nil {
			errs[i] = checkInfo(in)
		}
		if errs[i] != nil {
			r.Broken = append(r.Broken, Broken{Path: found[i].Path, Err: errs[i]})
			continue
		}
		r.Binaries = append(r.Binaries, in)
		for _, p := range in.Policies {
			r.add(Entry{Policy: p.Name, Source: Plugin, Plugin: in.Name, Version: in.Version, Engine: in.Engine,
				Params: p.Params, Reference: p.Reference, Path: in.Path, SHA256: in.SHA256})
		}
	}
}

// binaryInfo is a binary's Info: cached by its sha256 (Digests), or asked
// of the running binary.
func binaryInfo(ctx context.Context, h *pluginhost.Host, path string) (*pluginhost.Info, error) {
	sum, err := h.Digests().Sum(path)
	if err != nil {
		return nil, err
	}
	if c := h.Digests().Info(sum, path); c != nil {
		in := *c
		in.Path, in.SHA256 = path, sum
		return &in, nil
	}
	return h.Info(ctx, pluginhost.Binary{Path: path})
}

// checkInfo refuses an Info no sweep could use: no policies, a policy
// without a name, a name served twice, or a schema that rejects its own
// defaults (every run without that parameter would fail).
func checkInfo(in *pluginhost.Info) error {
	if len(in.Policies) == 0 {
		return errors.New("the plugin serves no policies")
	}
	seen := map[string]bool{}
	for _, p := range in.Policies {
		if p.Name == "" {
			return errors.New("the plugin lists a policy without a name")
		}
		k := strings.ToLower(p.Name)
		if seen[k] {
			return fmt.Errorf("the plugin lists policy %s twice", p.Name)
		}
		seen[k] = true
		if _, err := sim.Resolve(p.Params, nil); err != nil {
			return fmt.Errorf("policy %s: its parameter schema rejects its own defaults: %v", p.Name, err)
		}
	}
	return nil
}

// Lookup resolves a policy name by the package's rules.
func (r *Registry) Lookup(policy string) (Entry, error) {
	cands := r.byName[strings.ToLower(policy)]
	var bin []Entry
	var built *Entry
	for i, e := range cands {
		switch e.Source {
		case Pinned:
			if e.Params == nil && !e.Reference {
				// A pin written before pins carried schemas: the schema
				// is the built-in one or, failing that, the local binary's.
				for _, o := range cands {
					if o.Source != Pinned && o.SHA256 == e.SHA256 || o.Source == BuiltIn {
						e.Params, e.Reference = o.Params, o.Reference
					}
				}
			}
			return e, nil
		case Plugin:
			bin = append(bin, e)
		case BuiltIn:
			built = &cands[i]
		}
	}
	switch {
	case len(bin) > 1:
		paths := make([]string, len(bin))
		for i, b := range bin {
			paths[i] = fmt.Sprintf("%s (plugin %s %s)", b.Path, b.Plugin, b.Version)
		}
		return Entry{}, fmt.Errorf("policy %q is served by %d plugin binaries: %s; remove all but one from the plugin search path (-plugin-path, $%s)",
			policy, len(bin), strings.Join(paths, " and "), pluginhost.EnvPath)
	case len(bin) == 1 && built != nil && bin[0].Plugin != built.Plugin:
		return Entry{}, fmt.Errorf("policy %q is built in (family %s) and also served by the plugin binary %s (plugin %s): rename the plugin's policy or remove the binary from the plugin search path",
			policy, built.Plugin, bin[0].Path, bin[0].Plugin)
	case len(bin) == 1:
		return bin[0], nil
	case built != nil:
		return *built, nil
	}
	return Entry{}, r.unknown(policy)
}

func (r *Registry) unknown(policy string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown policy %q (built-in: %s; plugin directories searched: ", policy, strings.Join(builtin.Names(), ", "))
	if len(r.Dirs) == 0 {
		b.WriteString("none")
	} else {
		b.WriteString(strings.Join(r.Dirs, string(os.PathListSeparator)))
	}
	var plug []string
	for _, in := range r.Binaries {
		for _, p := range in.Policies {
			plug = append(plug, p.Name)
		}
	}
	if len(plug) > 0 {
		sort.Strings(plug)
		fmt.Fprintf(&b, "; plugin policies found: %s", termtext.JoinMax(plug, 50))
	}
	for _, x := range r.Broken {
		fmt.Fprintf(&b, "; unusable binary %s", x)
	}
	b.WriteString(")")
	return errors.New(b.String())
}

// ownFamily reports whether e is a built-in policy served by a plugin
// binary of its built-in family that reports this build's family and
// engine versions: msjfarm's own build of that family (a binary from
// another engine version is other code, and is checked by its schema
// only).
func ownFamily(e Entry) bool {
	f, ok := builtin.FamilyOf(e.Policy)
	return ok && f == e.Plugin && e.Version == builtin.Version && e.Engine == sim.Version
}

// Schema is the policy's parameter schema (sweep.Catalog): the resolved
// entry's, so that a sweep is checked against the plugin's own schema.
func (r *Registry) Schema(policy string) ([]sim.Param, error) {
	e, err := r.Lookup(policy)
	if err != nil {
		return nil, err
	}
	return e.Params, nil
}

// CheckWorkload (sweep.WorkloadChecker) tries a built-in policy variant on
// a point's workload (builtin.Catalog.CheckWorkload), so that ranges that
// depend on the system (MSFQ's threshold in [0, k−1]) fail before anything
// is queued. So it does for a policy served by msjfarm's own binary of
// its family at this build's versions (make build's bin/plugins, which
// the search path finds beside the msjfarm binary): the same code. Another
// plugin's policy is not started here (CheckSpec tries it in its binary,
// for a generated workload). A replayed trace (w.Trace) is the exception: the plugin runner does not
// replay traces, a worker runs them in-process with the built-in policy
// (worker.PluginRunner's fallback), so that is what is tried, and a policy
// only a plugin serves is refused for it.
func (r *Registry) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	e, err := r.Lookup(policy)
	if err != nil {
		return err
	}
	switch _, lerr := builtin.Lookup(policy); {
	case e.Source == BuiltIn || ownFamily(e):
	case len(w.Trace) == 0:
		return nil
	case lerr != nil:
		return fmt.Errorf("policy %s is served only by a plugin binary (%s), and a trace is replayed in-process, by the built-in policies: the plugin runner does not replay traces", policy, e.Describe())
	}
	return builtin.Catalog{}.CheckWorkload(policy, params, w)
}

// WithoutTrials is r with CheckSpec's trials off (Options.NoTrial).
func (r *Registry) WithoutTrials() *Registry {
	c := *r
	c.trial = nil
	return &c
}

// WithTrialBudget is r with CheckSpec's trials given budget in all
// (Options.TrialBudget; 0: DefaultTrialBudget), and none spent yet.
func (r *Registry) WithTrialBudget(budget time.Duration) *Registry {
	if r.trial == nil {
		return r
	}
	c := *r
	c.trial = &trials{host: r.trial.host, ctx: r.trial.ctx, budget: cmp.Or(budget, DefaultTrialBudget)}
	return &c
}

// trialDeadline bounds a trial's replication (an honest policy answers in
// milliseconds; the host kills one that does not stop at the deadline).
const trialDeadline = 30 * time.Second

// trialArrivals is a trial's run length: enough arrivals at the sweep's
// rate for a queue to form on a small system, so that a policy's
// decisions among waiting jobs run, not only its Init and its first start
// (a trial of one arrival passed a policy that failed once three jobs were
// in the system). It costs tens of microseconds beside the call's ~0.6 ms.
const trialArrivals = 200

// CheckSpec (sweep.SpecChecker) is CheckWorkload for a generated workload
// that also tries a policy whose code is not msjfarm's own (a third
// party's plugin, or a built-in name served by another build): one
// replication of trialArrivals arrivals in its binary, through the registry's host,
// with the request a worker would send but for the run length. A policy
// that refuses the system (an Init error, a panic, a crash, no answer by
// trialDeadline) is refused here, before anything is written or queued,
// rather than by each of its tasks on the workers. The trial runs in the
// process that indexing the search path started for the binary's Info,
// under the same sandbox and scrubbed environment as a worker's plugins:
// the binary's code has already run on this machine by then. Without a
// host (the coordinator) or with Options.NoTrial, such a policy is checked
// by its schema only, and so it is once the trials have taken their
// budget (Options.TrialBudget: a policy with a slow Init on a sweep of
// thousands of systems would otherwise hold the planning for hours). A
// policy that behaves for trialArrivals arrivals and fails later, or only
// at another rate of the same system, is not caught: that is what the
// workers' sandbox is for.
func (r *Registry) CheckSpec(policy string, params map[string]any, spec workload.Spec, rate float64, ia *dist.Spec, w *sim.Workload) error {
	e, err := r.Lookup(policy)
	if err != nil {
		return err
	}
	b, ok := e.Binary()
	if e.Source == BuiltIn || ownFamily(e) || !ok || r.trial == nil {
		return r.CheckWorkload(policy, params, w)
	}
	ok, left := r.trial.begin()
	if !ok {
		return r.CheckWorkload(policy, params, w) // the budget is spent: the schema only (TrialNote)
	}
	// A trial ends with the budget: a policy blocking in Init held the
	// planning for trialDeadline whatever --plugin-trial-budget said.
	deadline := min(trialDeadline, left)
	req := &wire.RunRequest{Policy: e.Policy, Params: params, Workload: spec, ArrivalRate: rate, Interarrival: ia,
		Run: wire.Run{Seed: 1, RunConfig: wire.RunConfig{Arrivals: trialArrivals, DrainLimit: trialArrivals}}}
	start := time.Now()
	_, err = r.trial.host.Run(r.trial.ctx, b, req, pluginhost.RunOptions{Deadline: deadline})
	r.trial.end(time.Since(start))
	if errors.Is(err, pluginhost.ErrDeadline) && deadline < trialDeadline {
		r.trial.cutShort() // the budget's end, not the policy's fault as far as is known
		return r.CheckWorkload(policy, params, w)
	}
	if err != nil {
		return fmt.Errorf("tried for %d arrivals on this system: %w", trialArrivals, firstLine{err}) // err names the binary, its sha256 and the policy
	}
	return nil
}

// firstLine is an error said in its first line: a sweep's error is one
// line, and a policy's panic carries its goroutine's stack (which a task's
// error keeps, for the policy's author).
type firstLine struct{ error }

func (e firstLine) Error() string {
	msg := e.error.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return fmt.Sprintf("%s [%d more lines, a stack: run the sweep with --plugin-trial=false to have them in its tasks' errors]", strings.TrimRight(msg[:i], " :"), strings.Count(msg[i+1:], "\n")+1)
	}
	return msg
}

func (e firstLine) Unwrap() error { return e.error }

// CheckParams resolves params against the policy's schema; the error names
// the policy and the parameter with its allowed range.
func (r *Registry) CheckParams(policy string, params map[string]any) (sim.Values, error) {
	e, err := r.Lookup(policy)
	if err != nil {
		return nil, err
	}
	if e.Reference {
		if len(params) > 0 {
			return nil, fmt.Errorf("policy %s: a reference model takes no parameters", e.Policy)
		}
		return sim.Values{}, nil
	}
	v, err := sim.Resolve(e.Params, params)
	if err != nil {
		return nil, fmt.Errorf("policy %s (%s): %w", e.Policy, e.Describe(), err)
	}
	return v, nil
}

// Warnings describe the unusable binaries.
func (r *Registry) Warnings() []string {
	var w []string
	for _, b := range r.Broken {
		w = append(w, b.String())
	}
	return w
}

// Policies lists every policy name the registry knows, sorted.
func (r *Registry) Policies() []string {
	out := make([]string, 0, len(r.byName))
	for _, es := range r.byName {
		out = append(out, es[0].Policy)
	}
	sort.Strings(out)
	return out
}
