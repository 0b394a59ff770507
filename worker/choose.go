package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// RunnerConfig is how a process runs replications: the -runner,
// -plugin-path and -plugin-cache choices of msjfarm run and msjfarm worker.
type RunnerConfig struct {
	// Mode is "auto" (or ""), "plugin" or "inprocess" ("in-process").
	Mode string
	// PluginPath is a colon-separated list of plugin directories searched
	// before $MSJFARM_PLUGIN_PATH and the executable's directory.
	PluginPath string
	// CacheDir receives binaries fetched from storage (PluginRunner.CacheDir).
	CacheDir string
	// Concurrency is the number of replications run at once (the plugin
	// host's process limit).
	Concurrency int
	// Logf logs plugin fetches (nil: discard).
	Logf func(format string, args ...any)
	// Sandbox confines the plugin processes (nil: sandbox.Default()).
	Sandbox *sandbox.Sandbox
	// PluginEnv is added to the plugins' environment (NAME=value; see
	// --plugin-env).
	PluginEnv []string
	// Stall is the plugin host's stall limit (pluginhost.Config.Stall,
	// --plugin-stall; 0: pluginhost.DefaultStall, negative: none).
	Stall time.Duration
	// AnyEngine runs plugins whose engine's job sequence this msjfarm
	// cannot draw again (PluginRunner.AnyEngine, --plugin-any-engine).
	AnyEngine bool
	// Self serves the built-in families from this program's own
	// executable (registry.SelfFromExecutable; nil: built-in policies
	// without a binary on the search path run in-process).
	Self *registry.Self
}

// Choice is the runner a RunnerConfig resolved to and what a command tells
// its user about it.
type Choice struct {
	Runner Runner
	// Desc says which runner and why ("in-process (-runner inprocess)",
	// "plugin (auto: ...); pinned fcfs=fcfs@0123456789ab ...").
	Desc string
	// Warnings are the plugin registry's and the pinning's warnings.
	Warnings []string
	// Pins are the campaign's plugin pins (nil when it pins none).
	Pins *protocol.Pins
}

func inProcessMode(mode string) bool { return mode == "inprocess" || mode == "in-process" }

// PluginRunner is a plugin runner on c's search path, cache and
// concurrency, with pins read from st; its index is built on first use.
// The caller closes it.
func (c RunnerConfig) PluginRunner(st storage.Store) *PluginRunner {
	return &PluginRunner{Host: pluginhost.New(pluginhost.Config{MaxConcurrent: c.Concurrency, Sandbox: c.Sandbox, Env: c.PluginEnv, Stall: c.Stall}),
		Dirs: pluginhost.SearchPath(c.PluginPath, nil), Self: c.Self, Store: st, CacheDir: c.CacheDir, Logf: c.Logf, AnyEngine: c.AnyEngine}
}

// indexedPluginRunner is PluginRunner with its registry built now, so that
// the registry's warnings can be shown before any task runs.
func (c RunnerConfig) indexedPluginRunner(ctx context.Context, st storage.Store) *PluginRunner {
	r := c.PluginRunner(st)
	r.Registry = registry.New(ctx, registry.Options{Dirs: r.Dirs, Host: r.Host, Self: r.Self})
	return r
}

// Prepare returns a plugin runner whose registry is built (the search path
// indexed): the registry validates a sweep before anything is written
// (msjfarm run), and ForCampaignWith then runs the sweep with the same
// runner, reusing the processes indexing started. The caller closes it if
// it does not pass it on.
func (c RunnerConfig) Prepare(ctx context.Context) *PluginRunner {
	return c.indexedPluginRunner(ctx, nil)
}

// ForCampaignWith picks the runner of a process that runs one known
// campaign (msjfarm run), given a runner from Prepare: in-process, or
// plugins when ChooseRunner says so, in which case the campaign's binaries
// are pinned in st first (PinCampaign) so that a resumed run uses the same
// code. It closes the prepared runner when it does not return it as the
// Choice's runner; a returned plugin runner must be closed by the caller
// (the worker that runs it closes it). On an error the Choice, if not nil,
// still carries the warnings that explain it.
func ForCampaignWith(ctx context.Context, c RunnerConfig, r *PluginRunner, st storage.Store, camp *sweep.Campaign) (*Choice, error) {
	r.Store = st
	ch := &Choice{Warnings: append([]string(nil), r.Registry.Warnings()...)}
	if inProcessMode(c.Mode) {
		r.Close()
		for _, p := range campaignPolicies(camp) {
			if _, builtIn := builtin.FamilyOf(p); builtIn {
				continue
			}
			if e, err := r.Registry.Lookup(p); err == nil {
				return ch, fmt.Errorf("-runner %s runs only built-in policies; %s is served by the plugin %s (%s)", c.Mode, p, e.Plugin, e.Path)
			}
		}
		ch.Runner, ch.Desc = InProcess{}, "in-process (-runner "+c.Mode+")"
		return ch, nil
	}
	usePlugins, why, err := ChooseRunner(c.Mode, camp.Tasks, r.Registry)
	if err != nil || !usePlugins {
		r.Close()
		if err != nil {
			return ch, err
		}
		ch.Runner, ch.Desc = InProcess{}, "in-process ("+why+")"
		return ch, nil
	}
	if err := c.CheckEngines(camp, r.Registry); err != nil {
		r.Close()
		return ch, err
	}
	pins, desc, warnings, err := PinCampaign(ctx, st, camp, r.Registry, false)
	ch.Warnings = append(ch.Warnings, warnings...)
	if err != nil {
		r.Close()
		return ch, err
	}
	ch.Runner, ch.Pins, ch.Desc = r, pins, "plugin ("+why+"); "+desc
	r.warm(ctx, campaignPolicies(camp))
	return ch, nil
}

// CheckEngines refuses a campaign with a policy whose plugin links an
// engine that does not draw this engine's job sequence (sim.SameSequence),
// unless c runs such plugins (AnyEngine) or runs in process: the plugin
// runner would fail each of its tasks before running it, so msjfarm run
// stops before anything is pinned (ForCampaignWith), and its dry run says
// so, naming the first such policy.
func (c RunnerConfig) CheckEngines(camp *sweep.Campaign, reg *registry.Registry) error {
	if c.AnyEngine || inProcessMode(c.Mode) {
		return nil
	}
	for _, p := range campaignPolicies(camp) {
		e, err := reg.Lookup(p)
		if err != nil || e.Source == registry.BuiltIn || sim.SameSequence(e.Engine) {
			continue
		}
		return fmt.Errorf("policy %s: its plugin %s %s", p, e.Describe(), pluginhost.EngineRefusal(e.Engine))
	}
	return nil
}

// CheckRunnerMode refuses a --runner value other than auto (or ""),
// plugin and inprocess (or in-process): the commands check it with their
// other flags, before anything is created.
func CheckRunnerMode(mode string) error {
	switch mode {
	case "auto", "", "plugin", "inprocess", "in-process":
		return nil
	}
	return fmt.Errorf("--runner %q: want auto, plugin or inprocess", mode)
}

// ForWorker picks the runner of a worker that does not know the campaigns
// ahead (msjfarm worker): "plugin" runs every task in a plugin (pinned by
// its campaign, found on the search path, or — for a built-in policy —
// msjfarm itself when c.Self is set); "auto" does the same and runs in
// this process what no plugin can (replayed traces, and built-ins without
// a binary when there is no Self).
func ForWorker(ctx context.Context, c RunnerConfig, st storage.Store) (*Choice, error) {
	if err := CheckRunnerMode(c.Mode); err != nil {
		return nil, err
	}
	if inProcessMode(c.Mode) {
		return &Choice{Runner: InProcess{}, Desc: "in-process (-runner inprocess)"}, nil
	}
	r := c.indexedPluginRunner(ctx, st)
	ch := &Choice{Runner: r, Warnings: r.Registry.Warnings()}
	n := len(r.Registry.Binaries)
	if c.Mode == "plugin" {
		ch.Desc = fmt.Sprintf("plugin (-runner plugin; %d binaries on the search path, pinned binaries fetched from storage)", n)
		return ch, nil
	}
	r.Fallback = InProcess{}
	rest := "in-process for the rest"
	if r.Self != nil {
		rest = "built-in policies in msjfarm itself as plugins, in-process for replayed traces"
	}
	ch.Desc = fmt.Sprintf("auto: plugin for pinned policies and the %d binaries on the search path (%s), %s",
		n, strings.Join(r.Dirs, string(os.PathListSeparator)), rest)
	return ch, nil
}

// PinForSubmit pins the binaries of a campaign about to be submitted
// (msjfarm submit) from its registry, so that workers elsewhere fetch and
// run exactly these: always every third-party plugin the campaign uses
// (no worker could run it otherwise), and with all (-pin-plugins) the
// built-in families' binaries found on the search path too. Built-in
// policies without a binary are not pinned: workers serve them themselves.
func PinForSubmit(ctx context.Context, st storage.Store, camp *sweep.Campaign, reg *registry.Registry, all bool) (pins *protocol.Pins, desc string, warnings []string, err error) {
	return PinCampaign(ctx, st, camp, reg, !all)
}

// PinCampaign pins the binary of every policy of camp (PinPlugins:
// uploaded to storage, recorded in the campaign's plugins.json and so in
// its manifest) and describes the pins as policy=plugin@sha256-prefix in
// the campaign's policy order. Its warnings add, to PinPlugins', every
// pinned plugin that links another engine version than this process.
//
// With thirdPartyOnly, the binaries of built-in families are not pinned
// (they run as the workers' own built-ins). When nothing is to be pinned,
// nothing is written and pins is nil.
func PinCampaign(ctx context.Context, st storage.Store, camp *sweep.Campaign, reg *registry.Registry, thirdPartyOnly bool) (pins *protocol.Pins, desc string, warnings []string, err error) {
	policies := campaignPolicies(camp)
	var pin []string
	for _, p := range policies {
		e, err := reg.Lookup(p)
		if err != nil {
			return nil, "", nil, err
		}
		if e.Source == registry.BuiltIn {
			continue
		}
		if _, builtIn := builtin.FamilyOf(p); thirdPartyOnly && builtIn {
			continue
		}
		pin = append(pin, p)
	}
	if len(pin) > 0 {
		if st == nil {
			return nil, "", nil, fmt.Errorf("pinning %s: no storage to upload the plugin binaries to", strings.Join(pin, ", "))
		}
		pins, warnings, err = PinPlugins(ctx, st, camp.ID, pin, reg)
		if err != nil {
			return nil, "", warnings, err
		}
	} else {
		pins = &protocol.Pins{Campaign: camp.ID}
	}
	var ds []string
	for _, p := range policies {
		pin, ok := pins.Policies[p]
		if !ok {
			if e, err := reg.Lookup(p); err == nil {
				ds = append(ds, e.Describe())
			}
			continue
		}
		ds = append(ds, fmt.Sprintf("%s=%s@%.12s (pinned)", p, pin.Plugin, pin.SHA256))
		if !sim.SameSequence(pin.Engine) {
			warnings = append(warnings, fmt.Sprintf("plugin %s (policy %s) links engine %s, whose job sequence this msjfarm (engine %s) cannot draw again: workers refuse its tasks unless run with --plugin-any-engine, and then do not check its results against the seed's own jobs",
				pin.Plugin, p, pin.Engine, sim.Version))
		} else if pin.Engine != sim.Version {
			warnings = append(warnings, fmt.Sprintf("plugin %s (policy %s) links engine %s, this msjfarm is %s: results may differ from in-process ones",
				pin.Plugin, p, pin.Engine, sim.Version))
		}
	}
	if len(pin) == 0 {
		pins = nil
	}
	return pins, strings.Join(ds, " "), warnings, nil
}

// campaignPolicies lists camp's policies once each, in task order. Every
// scenario has every policy variant, so the first scenario's tasks name
// them all: a planned campaign (no Tasks) is generated that far only.
func campaignPolicies(camp *sweep.Campaign) []string {
	var out []string
	seen := map[string]bool{}
	first := ""
	errStop := errors.New("first scenario read")
	_ = camp.Each(func(t sweep.Task) error {
		if first == "" {
			first = t.Scenario
		}
		if t.Scenario != first {
			return errStop
		}
		if !seen[t.Policy] {
			seen[t.Policy] = true
			out = append(out, t.Policy)
		}
		return nil
	})
	return out
}

// warm starts, in the background, the plugin processes of the given
// policies (only those: a campaign's families, not the whole search
// path), so that their start — exec, handshake, Info — overlaps the
// coordinator's start-up instead of delaying each family's first task. A
// start that fails is reported again by the task that needs it.
func (r *PluginRunner) warm(ctx context.Context, policies []string) {
	seen := map[string]bool{}
	for _, p := range policies {
		e, err := r.Registry.Lookup(p)
		if err != nil {
			continue
		}
		b, ok := e.Binary()
		if !ok || seen[b.Path+strings.Join(b.Args, " ")] {
			continue
		}
		seen[b.Path+strings.Join(b.Args, " ")] = true
		go func() { _, _ = r.Host.Info(ctx, b) }()
	}
}
