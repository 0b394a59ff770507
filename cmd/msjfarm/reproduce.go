package main

import (
	"github.com/spf13/pflag"

	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// runReproduce re-runs archived tasks of a campaign and compares each new
// sim.Result with the stored one, byte for byte (both as compact JSON).
// The task run is the stored task itself (its JSON pins the workload,
// parameters, run length and seed); its content must match its id. A
// result recorded from a policy plugin is re-run through the plugin host
// with the binary the campaign pinned (fetched from storage by sha256),
// unless --runner inprocess; the others run in this process. Exit status 1
// if any task differs or cannot be re-run.
func defReproduce(fs *pflag.FlagSet) func([]string) int {
	ff := newFarmFlags(fs, false, "./msjfarm-data")
	tasks := ff.fs.String("tasks", "", "comma-separated task ids to re-run")
	sample := ff.fs.Int("sample", 0, "re-run N tasks drawn at random (with --sample-seed) from those with a result (default 5 when no selection is given)")
	all := ff.fs.Bool("all", false, "re-run every task that has a result")
	sampleSeed := ff.fs.Uint64("sample-seed", 1, "seed of the --sample draw")
	n := ff.fs.Int("workers", runtime.NumCPU(), "tasks re-run at once")
	rf := addRunnerFlags(ff.fs)
	// A campaign run with a larger --max-trace-size than the default was
	// refused by every re-run: the limit was the default's.
	maxTrace := traceSizeFlag(ff.fs)
	key := ff.fs.String("key", "", "with an archive file: refuse it unless its signature verifies with this ed25519 public key (PEM, PKIX)")
	ff.fs.Lookup("runner").Usage = "auto: re-run results recorded from a plugin with the binary the campaign pinned (fetched from storage by sha256), " +
		"the others in-process; inprocess: everything in-process with the built-in catalogue"
	return func(args []string) int {
		if err := ff.parse(); err != nil {
			return 2
		}
		if ff.fs.NArg() != 1 {
			return fail("reproduce: want one campaign: id, name or id prefix, or an archive file (msjfarm reproduce <campaign>|<file.msjar> [--tasks id,...|--sample N|--all])")
		}
		if ff.fs.Changed("sample") && *sample < 1 {
			// 0 and -1 re-ran the default 5 and said so.
			return usagef("reproduce: --sample %d: must be at least 1", *sample)
		}
		sel := 0
		for _, b := range []bool{*tasks != "", *sample > 0, *all} {
			if b {
				sel++
			}
		}
		if sel > 1 {
			return fail("reproduce: give one of --tasks, --sample, --all")
		}
		if sel == 0 {
			*sample = 5
		}
		if *n < 1 {
			return usagef("reproduce: --workers must be >= 1, got %d", *n)
		}
		traceLimit, err := parseSize("max-trace-size", *maxTrace)
		if err != nil {
			return usagef("reproduce: %v", err)
		}
		id := ff.fs.Arg(0)
		// An interrupt exits within 10 s, the archive's extraction
		// removed (cleanOnInterrupt): reading an archive from a stalled
		// pipe held the command, deaf to Ctrl-C and SIGTERM.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		temporary, interruptible := cleanOnInterrupt("reproduce", cancel)
		defer interruptible()
		// An archive file (msjfarm archive export) is verified and
		// extracted into a temporary store: no farm, no original store.
		st, id, x, err := campaignSource(ctx, ff, id, *key, temporary)
		if err != nil {
			return fail("reproduce: %v", err)
		}
		hint := reproduce.DefaultHint
		if x != nil {
			defer x.Close()
			hint = archiveHint(x)
			fmt.Fprintf(stderr, "msjfarm reproduce: archive %s verified (%d members, merkle-root %s)\n", ff.fs.Arg(0), len(x.Index.Members), x.Index.Root)
		}
		cat, err := registry.ForCampaign(ctx, st, id)
		if err != nil {
			return fail("reproduce: %v", err)
		}
		// The campaign is read a point at a time: what is held is the
		// chosen tasks' records, never all of them (reproduce.Select),
		// read at the collector's default pace (garbage, not a
		// simulation's live heap); the replications then run at the
		// simulation pace again.
		paceReader()
		r, err := archive.Open(ctx, st, id, cat)
		if err != nil {
			return fail("reproduce: %v", err)
		}
		defer r.Close()
		a, chosen, total, err := reproduce.Select(ctx, r, *tasks, *sample, *all, *sampleSeed)
		warnReader("reproduce", r.Warnings)
		if err != nil {
			return fail("reproduce: %v", err)
		}
		if len(chosen) == 0 {
			return fail("reproduce: campaign %s has no result to reproduce", id)
		}
		paceSimulation()
		inProc := *rf.mode == "inprocess" || *rf.mode == "in-process"
		var plugins worker.Runner
		if !inProc && reproduce.UsesPlugins(a, chosen) {
			rf.store, rf.configFile = *ff.storage, ff.configFile()
			if code := rf.applySandbox("reproduce", false); code != 0 {
				return code
			}
			// An archive's plugin keeps the engine it linked for years,
			// and reproduce compares its result with the stored one bit
			// for bit, not against the seed's jobs (--plugin-any-engine
			// is for run and worker).
			cfg := rf.config(*n, nil)
			cfg.AnyEngine = true
			pr := cfg.PluginRunner(st)
			defer pr.Close()
			plugins = pr
		}
		for _, w := range reproduce.ProvenanceWarnings(a, chosen, plugins == nil) {
			fmt.Fprintf(stderr, "msjfarm reproduce: warning: %s\n", w)
		}
		others := ""
		if *all && total > len(chosen) {
			// Said, not hidden in the count: a failed task has no result
			// to re-run, and a reader checking a paper's numbers should
			// know how many of the campaign's tasks gave none.
			others = fmt.Sprintf(" (the other %d have no result to re-run: they failed or never ran; msjfarm results lists them)", total-len(chosen))
		}
		fmt.Fprintf(stderr, "msjfarm reproduce: campaign %s: re-running %d of %d tasks%s, %d at once\n", id, len(chosen), total, others, *n)
		start := time.Now()
		// A replayed trace comes from storage, verified, like a worker's.
		rctx := worker.WithTraceSource(worker.WithCampaign(ctx, id), worker.NewTraceSource(st, "", traceLimit))
		res := reproduce.RunWith(rctx, a, chosen, *n, plugins, hint)
		code := printReproductions(os.Stdout, res, time.Since(start))
		if x == nil {
			confirmImported(ctx, st, id, res)
		}
		return code
	}
}

// printReproductions prints one line per task and a total; it returns the
// exit status (1 if any task is not bit-identical).
func printReproductions(w io.Writer, res []reproduce.Reproduction, took time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tPOLICY\tPOINT\tREP\tSEED\tVERDICT")
	count := map[string]int{}
	for _, r := range res {
		count[r.Verdict]++
		v := r.Verdict
		if r.Detail != "" {
			v += " (" + r.Detail + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.Task.ID, r.Task.Policy, axesLabel(r.Task.Axes), r.Task.Replication, r.Task.Seed, v)
	}
	tw.Flush()
	notHere := ""
	if c := count[reproduce.NotHere]; c > 0 {
		notHere = fmt.Sprintf(", %d not reproducible here", c)
	}
	fmt.Fprintf(w, "\n%d tasks: %d bit-identical, %d different, %d errors%s (%s)\n", len(res),
		count[reproduce.Same], count[reproduce.Different], count[reproduce.Error], notHere, took.Round(time.Millisecond))
	if count[reproduce.Same] != len(res) {
		return 1
	}
	return 0
}

func axesLabel(ax map[string]any) string {
	keys := make([]string, 0, len(ax))
	for k := range ax {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, ax[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// confirmImported makes the imported results that reproduced bit-identical
// here reusable by other campaigns (record.ConfirmImported), and says how
// many. Only results computed here under the code the campaign refers to
// count: one a built-in policy reproduced for a plugin's record does not.
func confirmImported(ctx context.Context, st storage.Store, id string, res []reproduce.Reproduction) {
	n := 0
	for _, r := range res {
		if r.Verdict != reproduce.Same || r.Key == "" {
			continue
		}
		ok, err := record.ConfirmImported(ctx, st, id, r.Task.ID, r.Key)
		if err != nil {
			fmt.Fprintf(stderr, "msjfarm reproduce: warning: task %s: %v\n", r.Task.ID, err)
		}
		if ok {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(stderr, "msjfarm reproduce: %d imported results confirmed: other campaigns may now reuse them\n", n)
	}
}
