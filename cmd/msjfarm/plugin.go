package main

import (
	"errors"

	"github.com/spf13/pflag"

	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/sdk/check"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// pluginFlags are the flags every plugin subcommand takes.
type pluginFlags struct {
	fs       *pflag.FlagSet
	path     *string
	sha      *string
	json     *bool
	start    *time.Duration
	readable *[]string
}

func newPluginFlags(fs *pflag.FlagSet, pinned bool) *pluginFlags {
	pf := &pluginFlags{fs: fs}
	pf.path = pf.fs.String("plugin-path", "", "colon-separated plugin directories, searched before $"+pluginhost.EnvPath+", the msjfarm executable's directory and its plugins/ subdirectory")
	pf.json = pf.fs.Bool("json", false, "print JSON")
	pf.start = pf.fs.Duration("start-timeout", 20*time.Second, "time a plugin has to start and answer")
	pf.readable = fs.StringArray("plugin-readable", nil, readableHelp)
	if pinned {
		pf.sha = pf.fs.String("sha256", "", "refuse the binary unless its sha256 is this (hex)")
	}
	return pf
}

// readableHelp is --plugin-readable's help, the plugin subcommands' and
// the runners'.
const readableHelp = "a directory every confined plugin process may also read, not write: where a dynamically linked plugin's own libraries lie outside /lib, /lib64, /usr/lib and /usr/lib64 (repeat the flag for more; never the store, the plugin cache, your home directory or what holds them)"

// host is the plugin host of a plugin subcommand, confined as a worker's
// plugins are by default, with its --plugin-readable directories; 0, or
// the exit status of a bad flag.
func (pf *pluginFlags) host(cmd string) (*pluginhost.Host, int) {
	sb, code := readingSandbox(cmd, *pf.readable, storeDirs("", ""), secretPlaces(""))
	if code != 0 {
		return nil, code
	}
	return pluginhost.New(pluginhost.Config{StartTimeout: *pf.start, MaxConcurrent: 0, Sandbox: sb}), 0
}

// readingSandbox is the sandbox of a command that starts plugins outside
// a worker's flags (plugin, submit, simulate, limit): the default one,
// with the --plugin-readable directories readable (checkReadable). It
// returns 0, or the exit status of a bad flag, said.
func readingSandbox(cmd string, readable []string, stores, secrets map[string]string) (*sandbox.Sandbox, int) {
	if len(readable) == 0 {
		return sandbox.Default(), 0
	}
	if err := checkReadable(readable, stores, secrets); err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	sb, err := sandbox.New(sandbox.Options{Readable: readable})
	if _, usage := errors.AsType[*sandbox.UsageError](err); !usage && err != nil {
		// Root without a usable "nobody", as sandbox.Default.
		sb, err = sandbox.New(sandbox.Options{Readable: readable, User: "self"})
	}
	if err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	return sb, 0
}

// binary resolves the one positional argument of the plugin subcommand
// name.
func (pf *pluginFlags) binary(name string) (pluginhost.Binary, int) {
	rest := pf.fs.Args()
	if len(rest) > 1 {
		return pluginhost.Binary{}, usagef("%s: unexpected argument %q", name, rest[1])
	}
	if len(rest) == 0 {
		return pluginhost.Binary{}, usagef("%s: name a plugin binary (a path, msjfarm-policy-<family>, or <family>)", name)
	}
	path, err := pluginhost.Lookup(pluginhost.SearchPath(*pf.path, nil), rest[0])
	if err != nil {
		return pluginhost.Binary{}, fail("%s: %v", name, err)
	}
	b := pluginhost.Binary{Path: path}
	if pf.sha != nil {
		b.SHA256 = *pf.sha
	}
	return b, 0
}

func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func defPluginList(fs *pflag.FlagSet) func([]string) int {
	pf := newPluginFlags(fs, false)
	return func(args []string) int {
		if pf.fs.NArg() > 0 {
			return fail("plugin list: unexpected argument %q", pf.fs.Arg(0))
		}
		dirs := pluginhost.SearchPath(*pf.path, nil)
		found := pluginhost.Discover(dirs)
		h, code := pf.host("plugin list")
		if code != 0 {
			return code
		}
		defer h.Close()
		ctx, cancel := interruptible()
		defer cancel()
		type row struct {
			Family   string           `json:"family"`
			Path     string           `json:"path"`
			Shadowed []string         `json:"shadowed,omitempty"`
			Info     *pluginhost.Info `json:"info,omitempty"`
			Error    string           `json:"error,omitempty"`
		}
		// The registry indexes the binaries as run and submit do, so a binary
		// they would refuse (cannot start, wrong protocol, a schema rejecting
		// its own defaults) is listed with the reason.
		reg := registry.New(ctx, registry.Options{Dirs: dirs, Host: h})
		var rows []row
		for _, f := range found {
			r := row{Family: f.Family, Path: f.Path, Shadowed: f.Shadowed}
			for _, in := range reg.Binaries {
				if in.Path == f.Path {
					r.Info = in
				}
			}
			for _, b := range reg.Broken {
				if b.Path == f.Path {
					r.Error = b.String()
				}
			}
			if r.Info == nil && r.Error == "" {
				r.Error = "not indexed"
			}
			rows = append(rows, r)
		}
		// Policies that cannot be resolved (served twice, or a built-in name
		// served by another plugin).
		var conflicts []string
		for _, p := range reg.Policies() {
			if _, err := reg.Lookup(p); err != nil {
				conflicts = append(conflicts, err.Error())
			}
		}
		if *pf.json {
			warn("plugin list", conflicts)
			return printJSON(rows)
		}
		defer func() {
			for _, c := range conflicts {
				fmt.Printf("conflict: %s\n", c)
			}
		}()
		if len(rows) == 0 {
			fmt.Printf("no plugin binaries (%s*) in %s\n", pluginhost.BinaryPrefix, strings.Join(dirs, ":"))
			return 0
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FAMILY\tVERSION\tENGINE\tPOLICIES\tSHA256\tPATH")
		for _, r := range rows {
			if r.Info == nil {
				fmt.Fprintf(tw, "%s\t-\t-\t%s\t-\t%s\n", r.Family, "error: "+firstLine(r.Error), r.Path)
				continue
			}
			var names []string
			for _, p := range r.Info.Policies {
				names = append(names, p.Name)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.12s\t%s\n", r.Family, r.Info.Version, r.Info.Engine, strings.Join(names, ","), r.Info.SHA256, r.Path)
			for _, s := range r.Shadowed {
				fmt.Fprintf(tw, "\t\t\t(shadows %s)\t\t\n", s)
			}
		}
		tw.Flush()
		return 0
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func printJSON(v any) int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fail("%v", err)
	}
	return 0
}

func defPluginInfo(fs *pflag.FlagSet) func([]string) int {
	pf := newPluginFlags(fs, true)
	return func(args []string) int {
		b, code := pf.binary("plugin info")
		if code != 0 {
			return code
		}
		h, code := pf.host("plugin info")
		if code != 0 {
			return code
		}
		defer h.Close()
		ctx, cancel := interruptible()
		defer cancel()
		in, err := h.Info(ctx, b)
		if err != nil {
			return fail("plugin info: %v", err)
		}
		if *pf.json {
			return printJSON(in)
		}
		fmt.Printf("plugin    %s %s\nengine    %s (protocol %d, %s)%s\nbinary    %s\nsha256    %s\nstarted   pid %d in %v, up to %d replications at once\n\n",
			in.Name, in.Version, in.Engine, in.Protocol, in.GoVersion, uncheckedEngine(in.Engine), in.Path, in.SHA256, in.PID, in.StartTime.Round(time.Millisecond), in.MaxConcurrent)
		for _, p := range in.Policies {
			var caps []string
			caps = append(caps, "preemption "+p.Preemption)
			for _, c := range []struct {
				on   bool
				name string
			}{{p.SizeAware, "size-aware"}, {p.Reference, "reference model"}, {p.Timers, "timers"}, {p.Counters, "counters"}} {
				if c.on {
					caps = append(caps, c.name)
				}
			}
			fmt.Printf("%s  [%s]\n    %s\n", p.Name, strings.Join(caps, ", "), p.Doc)
			for _, q := range p.Params {
				bounds := ""
				if q.Min != nil || q.Max != nil || len(q.Enum) > 0 {
					bounds = " " + paramBounds(q.Min, q.Max, q.Enum)
				}
				fmt.Printf("    %-20s %-6s default %v%s  %s\n", q.Name, q.Type, q.Default, bounds, q.Doc)
			}
			for _, c := range p.CounterInfo {
				kind := string(c.Kind)
				if kind == "" {
					kind = "-"
				}
				fmt.Printf("    counter %-24s %-8s %s", c.Name, kind, c.AxisLabel())
				if c.Doc != "" {
					fmt.Printf(" — %s", c.Doc)
				}
				fmt.Println()
			}
		}
		return 0
	}
}

func paramBounds(lo, hi *float64, enum []string) string {
	if len(enum) > 0 {
		return "{" + strings.Join(enum, ", ") + "}"
	}
	l, u := "-inf", "inf"
	if lo != nil {
		l = fmt.Sprint(*lo)
	}
	if hi != nil {
		u = fmt.Sprint(*hi)
	}
	return "[" + l + ", " + u + "]"
}

func defPluginCheck(fs *pflag.FlagSet) func([]string) int {
	pf := newPluginFlags(fs, true)
	arrivals := count(20000)
	pf.fs.Var(&arrivals, "arrivals", "measured arrivals per conformance run")
	load := pf.fs.Float64("load", 0.3, "offered load of the conformance workloads")
	seed := pf.fs.Uint64("seed", 1, "seed of the conformance runs")
	policies := pf.fs.String("policies", "", "comma-separated policies to check (default: all)")
	verbose := pf.fs.BoolP("v", "v", false, "list passed checks too")
	return func(args []string) int {
		// Checked here: 0 and below became the defaults without a word,
		// and NaN or a load of 1 and above failed a correct plugin
		// ("request does not encode as JSON", "flagged unstable").
		// Over 2^53 arrivals, every run was refused by the plugin and
		// each refusal reported as the plugin's FAIL.
		runErr := wire.RunConfig{Arrivals: int64(arrivals)}.Validate()
		switch {
		case arrivals < 1:
			return usagef("plugin check: --arrivals must be >= 1, got %d", arrivals)
		case runErr != nil:
			return usagef("plugin check: %s", runKeyAsFlag(runErr, pf.fs))
		case !(*load > 0 && *load < 1):
			return usagef("plugin check: --load must be in (0, 1): the checks run a stable system, got %v", *load)
		}
		b, code := pf.binary("plugin check")
		if code != 0 {
			return code
		}
		h, code := pf.host("plugin check")
		if code != 0 {
			return code
		}
		defer h.Close()
		ctx, cancel := interruptible()
		defer cancel()
		opt := check.Options{Arrivals: int64(arrivals), Load: *load, Seed: *seed}
		if *policies != "" {
			opt.Policies = strings.Split(*policies, ",")
		}
		r, err := check.Run(ctx, h, b, opt)
		if err != nil {
			return fail("plugin check: %v", err)
		}
		if *pf.json {
			printJSON(r)
		} else {
			printReport(r, *verbose)
		}
		if r.Failed() > 0 {
			return 1
		}
		return 0
	}
}

// uncheckedEngine says, after a plugin's engine, that its job sequence is
// not this msjfarm's (sim.SameSequence): run and worker refuse its tasks
// unless --plugin-any-engine.
func uncheckedEngine(engine string) string {
	if sim.SameSequence(engine) {
		return ""
	}
	return fmt.Sprintf("\n          not a job sequence this msjfarm (engine %s) can draw again: run and worker refuse its tasks unless --plugin-any-engine, and then do not check its results against the seed's jobs", sim.Version)
}

func printReport(r *check.Report, verbose bool) {
	in := r.Info
	fmt.Printf("conformance of %s %s (engine %s, sha256 %.12s), %s%s\n\n", in.Name, in.Version, in.Engine, in.SHA256, r.Binary, uncheckedEngine(in.Engine))
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	counts := map[check.Status]int{}
	shown := 0
	for _, it := range r.Items {
		counts[it.Status]++
		if it.Status == check.Pass && !verbose {
			continue
		}
		if shown == 0 {
			fmt.Fprintln(tw, "STATUS\tPOLICY\tWORKLOAD\tCHECK\tDETAIL")
		}
		shown++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Status, dash(it.Policy), dash(it.Workload), it.Check, it.Detail)
	}
	tw.Flush()
	if shown == 0 {
		fmt.Println("every check passed (-v lists them)")
	}
	fmt.Printf("\nchecks: %d pass, %d FAIL, %d warn, %d skip (%s)\n",
		counts[check.Pass], counts[check.Fail], counts[check.Warn], counts[check.Skip], r.Elapsed)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runnerFlags choose how `msjfarm run` and `msjfarm worker` run
// replications (--runner auto|plugin|inprocess).
type runnerFlags struct {
	mode, path, cache *string
	sandbox, user     *string
	memory, tmpQuota  *string
	env, writable     *[]string
	readable          *[]string
	sb                *sandbox.Sandbox
	pluginEnv         []string
	stall             *time.Duration
	anyEngine         *bool
	// store is the command's --storage, whose local directory no
	// --plugin-writable may reach (protectedDirs), and configFile its --config
	// file, which no --plugin-readable directory may hold.
	store, configFile string
}

func addRunnerFlags(fs *pflag.FlagSet) *runnerFlags {
	return &runnerFlags{
		mode: fs.String("runner", "auto", "how replications run: plugin (policy plugin processes through the plugin host: binaries on the plugin path, and msjfarm itself serving the built-in families), "+
			"inprocess (the built-in catalogue in this process, for debugging), or auto (plugins, unless the campaign replays a trace)"),
		path:  fs.String("plugin-path", "", "colon-separated plugin directories, searched before $"+pluginhost.EnvPath+", the msjfarm executable's directory and its plugins/ subdirectory"),
		cache: fs.String("plugin-cache", "", "directory for plugin binaries fetched from storage (default <user cache dir>/msjfarm/plugins)"),
		sandbox: fs.String("plugin-sandbox", "auto", "confinement of plugin processes (docs/security.md): require (refuse to start a plugin unless Landlock and seccomp apply), "+
			"best-effort (apply what the kernel offers and say what is missing), off, or auto (require where the kernel supports it, else best-effort)"),
		user:     fs.String("plugin-user", "", "user plugins run as: a name, uid or uid:gid, or \"self\" for the worker's own (default: nobody when the worker runs as root, else the worker's user)"),
		memory:   fs.String("plugin-memory", "", "address space one plugin process may map, e.g. 8GiB (default: 2 GiB + 2.5 GiB per replication it runs at once)"),
		tmpQuota: fs.String("plugin-tmp-quota", "256MiB", "what one plugin process may write into its private TMPDIR; past it the process is killed and its replication fails"),
		env:      fs.StringSlice("plugin-env", nil, "names of variables of this process's environment also given to plugins (comma-separated; credentials and MSJFARM_*, AWS_*, MINIO_* are refused)"),
		stall:    fs.Duration("plugin-stall", pluginhost.DefaultStall, "how long a replication's engine loop may go without a sign of life (it gives one every 1,024 events) before its policy is deemed hung in its own code: the plugin process is killed and the task fails (retried once), whatever run.deadline says; 0: never"),
		anyEngine: fs.Bool("plugin-any-engine", false, "run plugins that link an engine whose job sequence this msjfarm cannot draw again (one before "+sim.SequenceSince+
			", or newer than this msjfarm's "+sim.Version+"), whose results are then not checked against the seed's own jobs (docs/security.md); by default such a plugin's tasks fail before anything runs (reproduce runs them: it compares with the stored results)"),
		readable: fs.StringArray("plugin-readable", nil, readableHelp),
		writable: fs.StringArray("plugin-writable", nil, "a directory every confined plugin process may also write (repeat the flag for more: a path may hold a comma; shared by all plugin processes: never the store or the plugin cache)"),
	}
}

// applySandbox resolves the sandbox flags, makes the result the default of
// every plugin host this process starts, and (unless quiet) states it on
// stderr as cmd's: run states it only once its sweep file is valid, so
// that a mistake in the file is the one line a newcomer reads
// (stateSandbox).
// It returns a non-zero exit status on failure (2: a bad flag, or a
// --plugin-user that names no user or root; 1: the kernel cannot do what
// --plugin-sandbox require asks, or switching to the plugin user needs
// privileges this process lacks), having said why.
func (rf *runnerFlags) applySandbox(cmd string, quiet bool) int {
	if err := worker.CheckRunnerMode(*rf.mode); err != nil {
		return usagef("%s: %v", cmd, err)
	}
	mode, err := sandbox.ParseMode(*rf.sandbox)
	if err != nil {
		return usagef("%s: %v", cmd, err)
	}
	var mem int64
	if *rf.memory != "" {
		if mem, err = parseSize("plugin-memory", *rf.memory); err != nil {
			return usagef("%s: %v", cmd, err)
		}
		if mem < minPluginMemory {
			// Measured: at 64, 256 and 512 MiB every plugin died at
			// start ("failed to reserve page summary memory", or a
			// segfault reported as "Unrecognized remote plugin message"),
			// every task failing after its retries; at 1 GiB they ran.
			return usagef("%s: --plugin-memory %s: below 1 GiB a plugin (a Go program) cannot reserve its runtime's address space and dies at start", cmd, *rf.memory)
		}
	}
	if code := rf.checkStall(cmd); code != 0 {
		return code
	}
	quota, err := parseSize("plugin-tmp-quota", *rf.tmpQuota)
	if err == nil && quota <= 0 {
		err = fmt.Errorf("--plugin-tmp-quota %s: must be positive", *rf.tmpQuota)
	}
	if err != nil {
		return usagef("%s: %v", cmd, err)
	}
	rf.pluginEnv = nil
	for _, name := range *rf.env {
		if err := sandbox.CheckEnvName(name); err != nil {
			return usagef("%s: %v", cmd, err)
		}
		if v, ok := os.LookupEnv(name); ok {
			rf.pluginEnv = append(rf.pluginEnv, name+"="+v)
		}
	}
	protected := rf.protectedDirs()
	if err := checkWritable(*rf.writable, protected); err != nil {
		return usagef("%s: %v", cmd, err)
	}
	if err := checkReadable(*rf.readable, rf.storeDirs(), secretPlaces(rf.configFile)); err != nil {
		return usagef("%s: %v", cmd, err)
	}
	sb, err := sandbox.New(sandbox.Options{Mode: mode, User: *rf.user, MemoryLimit: mem, Writable: *rf.writable, Readable: *rf.readable, TmpQuota: quota})
	if _, usage := errors.AsType[*sandbox.UsageError](err); usage {
		return usagef("%s: %v", cmd, err)
	}
	if err != nil {
		return fail("%s: %v", cmd, err)
	}
	rf.sb = sb
	sandbox.SetDefault(sb)
	// Now, not when the first plugin starts: a worker killed mid-campaign
	// is restarted, and its plugins' directories should go at once. Said
	// unless quiet: run keeps a mistake in its sweep file the one line a
	// newcomer reads.
	if n := sandbox.RemoveStale(); n > 0 && !quiet {
		fmt.Fprintf(stderr, "msjfarm %s: removed %d private TMPDIRs of plugin processes whose host was killed\n", cmd, n)
	}
	if !quiet {
		rf.stateSandbox(cmd)
	}
	return 0
}

// minPluginMemory is the least --plugin-memory a plugin starts with.
const minPluginMemory = 1 << 30

// protectedDirs are the directories whose content a plugin could turn
// against the farm if it could write them, by what they are: the local
// store (results other campaigns reuse), the plugin cache and the plugin
// path (binaries other campaigns run), and msjfarm's own directory (it
// serves the built-in families).
func (rf *runnerFlags) protectedDirs() map[string]string {
	dirs := rf.storeDirs()
	for _, d := range filepath.SplitList(*rf.path + string(filepath.ListSeparator) + os.Getenv(pluginhost.EnvPath)) {
		if d != "" {
			dirs[d] = "a plugin directory (--plugin-path, $" + pluginhost.EnvPath + ")"
		}
	}
	if exe, err := os.Executable(); err == nil {
		dirs[filepath.Dir(exe)] = "msjfarm's own directory"
	}
	return dirs
}

// storeDirs are the directories whose content is other campaigns': the
// local store (their results and traces) and the plugin cache (the
// binaries they run, other authors' work). No plugin may write them
// (protectedDirs) or read them (checkReadable).
func (rf *runnerFlags) storeDirs() map[string]string { return storeDirs(rf.store, *rf.cache) }

// storeDirs are the local directory of store (a storage URL; "" or a
// remote one: none) and the plugin cache (cache, "" for the default), as
// runnerFlags.storeDirs.
func storeDirs(store, cache string) map[string]string {
	dirs := map[string]string{}
	if dir := localStoreDir(store); dir != "" {
		dirs[dir] = "the result store"
	}
	if cache == "" {
		cache, _ = worker.DefaultPluginCache()
	}
	if cache != "" {
		dirs[cache] = "the plugin cache"
	}
	return dirs
}

// localStoreDir is the directory of a local store URL, "" for any other.
func localStoreDir(raw string) string {
	if raw == "" || storage.CheckURL(raw) != nil {
		return ""
	}
	if dir, ok := strings.CutPrefix(raw, "file://"); ok {
		return dir
	}
	if strings.Contains(raw, "://") {
		return ""
	}
	return raw
}

// checkWritable refuses a --plugin-writable directory that is, holds or
// lies inside a protected one (its help said "never the store or the
// plugin cache", and the store, its results/ directory, the cache and /
// were each taken: a plugin of one campaign could then rewrite another's
// results or the binaries it runs). Paths are compared resolved
// (absolute, symbolic links followed as far as they exist).
func checkWritable(writable []string, protected map[string]string) error {
	for _, w := range writable {
		if err := overlap("--plugin-writable", w, protected, "a plugin could rewrite what other campaigns read or run"); err != nil {
			return err
		}
	}
	return nil
}

// overlap refuses dir, given to flag, if it is, holds or lies inside one
// of protected (a path and what it is), saying why: because.
func overlap(flag, dir string, protected map[string]string, because string) error {
	rd := resolvedPath(dir)
	for _, p := range slices.Sorted(maps.Keys(protected)) {
		rp := resolvedPath(p)
		switch {
		case rd == rp:
			return fmt.Errorf("%s %q is %s: %s", flag, dir, protected[p], because)
		case within(rp, rd):
			return fmt.Errorf("%s %q holds %s (%s): %s", flag, dir, protected[p], p, because)
		case within(rd, rp):
			return fmt.Errorf("%s %q is inside %s (%s): %s", flag, dir, protected[p], p, because)
		}
	}
	return nil
}

// checkReadable refuses a --plugin-readable directory that is, holds or
// lies inside one of stores (the result store and the plugin cache: other
// campaigns' results and traces, other authors' binaries), or that is or
// holds one of secrets (secretPlaces: the home directory, the --config
// file). A directory inside the home (a conda environment's lib) is the
// operator's to give.
func checkReadable(readable []string, stores, secrets map[string]string) error {
	for _, d := range readable {
		if err := overlap("--plugin-readable", d, stores, "a plugin could read what other campaigns wrote or run"); err != nil {
			return err
		}
		rd := resolvedPath(d)
		for _, p := range slices.Sorted(maps.Keys(secrets)) {
			switch rp := resolvedPath(p); {
			case rd == rp:
				return fmt.Errorf("--plugin-readable %q is %s: a plugin could read keys and credentials (give the directory of the libraries alone)", d, secrets[p])
			case within(rp, rd):
				return fmt.Errorf("--plugin-readable %q holds %s (%s): a plugin could read keys and credentials (give the directory of the libraries alone)", d, secrets[p], p)
			}
		}
	}
	return nil
}

// secretPlaces are what no --plugin-readable directory may be or hold:
// the user's home directory (~/.ssh, ~/.aws; none if it is "/", which
// every directory holds) and config, the command's --config file ("":
// none), which may hold the store's secret.
func secretPlaces(config string) map[string]string {
	places := map[string]string{}
	if h, err := os.UserHomeDir(); err == nil && resolvedPath(h) != "/" {
		places[h] = "your home directory"
	}
	if config != "" {
		places[config] = "the --config file"
	}
	return places
}

// resolvedPath is p absolute and cleaned, with the symbolic links of its
// longest existing prefix resolved.
func resolvedPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether path lies strictly inside dir.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// stateSandbox prints what applySandbox applied, as cmd's.
func (rf *runnerFlags) stateSandbox(cmd string) {
	if rf.sb != nil {
		fmt.Fprintf(stderr, "msjfarm %s: %s\n", cmd, rf.sb.Describe())
	}
}

// config is the worker.RunnerConfig the flags give, for concurrency
// replications at once.
func (rf *runnerFlags) config(concurrency int, logf func(string, ...any)) worker.RunnerConfig {
	return worker.RunnerConfig{Mode: *rf.mode, PluginPath: *rf.path, CacheDir: *rf.cache, Concurrency: concurrency, Logf: logf,
		Self: registry.SelfFromExecutable(), Sandbox: rf.sb, PluginEnv: rf.pluginEnv, Stall: rf.hostStall(), AnyEngine: *rf.anyEngine}
}

// checkStall refuses a --plugin-stall below a second, which catches honest
// runs between two beats (1ns killed every plugin trial), or negative.
func (rf *runnerFlags) checkStall(cmd string) int {
	if *rf.stall < 0 || *rf.stall > 0 && *rf.stall < time.Second {
		return usagef("%s: --plugin-stall %v: must be at least 1s (0 turns the check off)", cmd, *rf.stall)
	}
	return 0
}

// hostStall is --plugin-stall as pluginhost.Config.Stall, whose 0 is the
// default and "never" negative.
func (rf *runnerFlags) hostStall() time.Duration {
	if *rf.stall == 0 {
		return -1
	}
	return *rf.stall
}

// warn prints warnings as cmd's.
func warn(cmd string, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "msjfarm %s: warning: %s\n", cmd, w)
	}
}
