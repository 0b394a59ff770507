package worker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
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
}

// Choice is the runner a RunnerConfig resolved to and what a command tells
// its user about it.
type Choice struct {
	Runner Runner
	// Desc says which runner and why ("in-process (-runner inprocess)",
	// "plugin (auto: ...); pinned fcfs=fcfs@0123456789ab ...").
	Desc string
	// Warnings are the plugin index's and the pinning's warnings.
	Warnings []string
}

func inProcessMode(mode string) bool { return mode == "inprocess" || mode == "in-process" }

// PluginRunner is a plugin runner on c's search path, cache and
// concurrency, with pins read from st; its index is built on first use.
// The caller closes it.
func (c RunnerConfig) PluginRunner(st storage.Store) *PluginRunner {
	return &PluginRunner{Host: pluginhost.New(pluginhost.Config{MaxConcurrent: c.Concurrency}),
		Dirs: pluginhost.SearchPath(c.PluginPath, nil), Store: st, CacheDir: c.CacheDir, Logf: c.Logf}
}

// indexedPluginRunner is PluginRunner with its index built now, so that
// the index's warnings can be shown before any task runs.
func (c RunnerConfig) indexedPluginRunner(ctx context.Context, st storage.Store) *PluginRunner {
	r := c.PluginRunner(st)
	r.Index = IndexPlugins(ctx, r.Host, r.Dirs)
	return r
}

// ForCampaign picks the runner of a process that runs one known campaign
// (msjfarm run): in-process, or plugins when ChooseRunner says so, in
// which case the campaign's binaries are pinned in st first (PinCampaign)
// so that a resumed run uses the same code. A plugin runner must be
// closed by the caller (the worker that runs it closes it). On an error the
// Choice, if not nil, still carries the warnings that explain it.
func ForCampaign(ctx context.Context, c RunnerConfig, st storage.Store, camp *sweep.Campaign) (*Choice, error) {
	if inProcessMode(c.Mode) {
		return &Choice{Runner: InProcess{}, Desc: "in-process (-runner " + c.Mode + ")"}, nil
	}
	r := c.indexedPluginRunner(ctx, st)
	ch := &Choice{Warnings: append([]string(nil), r.Index.Warnings...)}
	usePlugins, why, err := ChooseRunner(c.Mode, camp.Tasks, r.Index)
	if err != nil || !usePlugins {
		r.Close()
		if err != nil {
			return ch, err
		}
		ch.Runner, ch.Desc = InProcess{}, "in-process ("+why+")"
		return ch, nil
	}
	desc, warnings, err := PinCampaign(ctx, st, camp, r.Index)
	ch.Warnings = append(ch.Warnings, warnings...)
	if err != nil {
		r.Close()
		return ch, err
	}
	ch.Runner, ch.Desc = r, "plugin ("+why+"); pinned "+desc
	return ch, nil
}

// ForWorker picks the runner of a worker that does not know the campaigns
// ahead (msjfarm worker): "plugin" runs every task in a plugin (pinned by
// its campaign, or found on the search path); "auto" does so for the
// policies that have a binary and runs the others in-process.
func ForWorker(ctx context.Context, c RunnerConfig, st storage.Store) (*Choice, error) {
	switch {
	case inProcessMode(c.Mode):
		return &Choice{Runner: InProcess{}, Desc: "in-process (-runner inprocess)"}, nil
	case c.Mode == "plugin", c.Mode == "auto", c.Mode == "":
	default:
		return nil, fmt.Errorf("-runner %q: want auto, plugin or inprocess", c.Mode)
	}
	r := c.indexedPluginRunner(ctx, st)
	ch := &Choice{Runner: r, Warnings: r.Index.Warnings}
	n := len(r.Index.Binaries)
	if c.Mode == "plugin" {
		ch.Desc = fmt.Sprintf("plugin (-runner plugin; %d binaries on the search path, pinned binaries fetched from storage)", n)
		return ch, nil
	}
	r.Fallback = InProcess{}
	ch.Desc = fmt.Sprintf("auto: plugin for pinned policies and the %d binaries on the search path (%s), in-process for the rest",
		n, strings.Join(r.Dirs, string(os.PathListSeparator)))
	return ch, nil
}

// PinForSubmit pins a campaign's binaries from the plugin search path
// pluginPath (msjfarm submit -pin-plugins), so that workers elsewhere fetch
// and run exactly these. Every policy must have a binary.
func PinForSubmit(ctx context.Context, st storage.Store, camp *sweep.Campaign, pluginPath string) (desc string, warnings []string, err error) {
	h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1})
	defer h.Close()
	ix := IndexPlugins(ctx, h, pluginhost.SearchPath(pluginPath, nil))
	warnings = append(warnings, ix.Warnings...)
	if _, _, err := ChooseRunner("plugin", camp.Tasks, ix); err != nil {
		return "", warnings, err
	}
	desc, w, err := PinCampaign(ctx, st, camp, ix)
	return desc, append(warnings, w...), err
}

// PinCampaign pins the binary of every policy of camp (PinPlugins:
// uploaded to storage, recorded in the campaign's plugins.json and so in
// its manifest) and describes the pins as policy=plugin@sha256-prefix in
// the campaign's policy order. Its warnings add, to PinPlugins', every
// pinned plugin that links another engine version than this process.
func PinCampaign(ctx context.Context, st storage.Store, camp *sweep.Campaign, ix *PluginIndex) (desc string, warnings []string, err error) {
	var policies []string
	seen := map[string]bool{}
	for _, t := range camp.Tasks {
		if !seen[t.Policy] {
			seen[t.Policy] = true
			policies = append(policies, t.Policy)
		}
	}
	pins, warnings, err := PinPlugins(ctx, st, camp.ID, policies, ix)
	if err != nil {
		return "", warnings, err
	}
	var ds []string
	for _, p := range policies {
		pin := pins.Policies[p]
		ds = append(ds, fmt.Sprintf("%s=%s@%.12s", p, pin.Plugin, pin.SHA256))
		if pin.Engine != sim.Version {
			warnings = append(warnings, fmt.Sprintf("plugin %s (policy %s) links engine %s, this msjfarm is %s: results may differ from in-process ones",
				pin.Plugin, p, pin.Engine, sim.Version))
		}
	}
	return strings.Join(ds, " "), warnings, nil
}
