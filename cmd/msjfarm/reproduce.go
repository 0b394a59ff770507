package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// Reproduction verdicts.
const (
	verdictSame  = "bit-identical"
	verdictDiff  = "different"
	verdictError = "error"
)

type reproduction struct {
	task    sweep.Task
	verdict string
	detail  string
}

// runReproduce re-runs archived tasks of a campaign and compares each new
// sim.Result with the stored one, byte for byte (both as compact JSON).
// The task run is the stored task itself (its JSON pins the workload,
// parameters, run length and seed); its content must match its id. A
// result recorded from a policy plugin is re-run through the plugin host
// with the binary the campaign pinned (fetched from storage by sha256),
// unless -runner inprocess; the others run in this process. Exit status 1
// if any task differs or cannot be re-run.
func runReproduce(args []string) int {
	ff := newFarmFlags("reproduce", false, "./msjfarm-data")
	tasks := ff.fs.String("tasks", "", "comma-separated task ids to re-run")
	sample := ff.fs.Int("sample", 0, "re-run N tasks drawn at random (with -sample-seed) from those with a result (default 5 when no selection is given)")
	all := ff.fs.Bool("all", false, "re-run every task that has a result")
	sampleSeed := ff.fs.Uint64("sample-seed", 1, "seed of the -sample draw")
	n := ff.fs.Int("workers", runtime.NumCPU(), "tasks re-run at once")
	rf := addRunnerFlags(ff.fs)
	ff.fs.Lookup("runner").Usage = "auto: re-run results recorded from a plugin with the binary the campaign pinned (fetched from storage by sha256), " +
		"the others in-process; inprocess: everything in-process with the built-in catalogue"
	if err := ff.parse(interspersed(ff.fs, args)); err != nil {
		return 2
	}
	if ff.fs.NArg() != 1 {
		return fail("reproduce: want one campaign id (msjfarm reproduce <campaign> [-tasks id,...|-sample N|-all])")
	}
	sel := 0
	for _, b := range []bool{*tasks != "", *sample > 0, *all} {
		if b {
			sel++
		}
	}
	if sel > 1 {
		return fail("reproduce: give one of -tasks, -sample, -all")
	}
	if sel == 0 {
		*sample = 5
	}
	if *n < 1 {
		return fail("reproduce: -workers must be >= 1")
	}
	id := ff.fs.Arg(0)
	ctx, stop := signalContext()
	defer stop()
	st, err := ff.store(ctx)
	if err != nil {
		return fail("reproduce: %v", err)
	}
	a, err := coordinator.LoadArchive(ctx, st, id, builtin.Catalog{})
	if err != nil {
		return fail("reproduce: %v", err)
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(os.Stderr, "msjfarm reproduce: warning: %s\n", w)
	}
	chosen, err := chooseTasks(a, *tasks, *sample, *all, *sampleSeed)
	if err != nil {
		return fail("reproduce: %v", err)
	}
	if len(chosen) == 0 {
		return fail("reproduce: campaign %s has no result to reproduce", id)
	}
	inProc := *rf.mode == "inprocess" || *rf.mode == "in-process"
	var plugins worker.Runner
	if !inProc && usesPlugins(a, chosen) {
		pr := rf.config(*n, nil).PluginRunner(st)
		defer pr.Close()
		plugins = pr
	}
	for _, w := range provenanceWarnings(a, chosen, plugins == nil) {
		fmt.Fprintf(os.Stderr, "msjfarm reproduce: warning: %s\n", w)
	}
	fmt.Fprintf(os.Stderr, "msjfarm reproduce: campaign %s: re-running %d of %d tasks, %d at once\n", id, len(chosen), len(a.Tasks), *n)
	start := time.Now()
	res := reproduce(worker.WithCampaign(ctx, id), a, chosen, *n, plugins)
	return printReproductions(os.Stdout, res, time.Since(start))
}

// chooseTasks returns the task ids to re-run, in campaign order.
func chooseTasks(a *coordinator.Archive, list string, sample int, all bool, seed uint64) ([]string, error) {
	var ok []string // tasks with a successful record, in campaign order
	known := map[string]bool{}
	for _, t := range a.Tasks {
		known[t.ID] = true
		if r := a.Records[t.ID]; r != nil && !r.Failed() {
			ok = append(ok, t.ID)
		}
	}
	switch {
	case list != "":
		var out []string
		for _, tid := range strings.Split(list, ",") {
			tid = strings.TrimSpace(tid)
			if tid == "" {
				continue
			}
			if !known[tid] {
				return nil, fmt.Errorf("task %s is not a task of campaign %s", tid, a.ID)
			}
			out = append(out, tid)
		}
		return out, nil
	case all || sample >= len(ok):
		return ok, nil
	}
	r := rand.New(rand.NewPCG(seed, 0))
	idx := r.Perm(len(ok))[:sample]
	sort.Ints(idx)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = ok[j]
	}
	return out, nil
}

// provenanceWarnings compares the recorded provenance of the chosen
// results with this binary: engine version and the sha256 of the code that
// ran the policy (the msjfarm executable for in-process runs, the plugin
// binary otherwise).
func provenanceWarnings(a *coordinator.Archive, chosen []string, inProcess bool) []string {
	self := worker.SelfSHA256()
	counts := map[string]int{}
	for _, tid := range chosen {
		r := a.Records[tid]
		if r == nil || r.Result == nil {
			continue
		}
		p := r.Provenance
		if r.Result.Engine != sim.Version {
			counts[fmt.Sprintf("results from engine %s, this binary is engine %s: results may differ", r.Result.Engine, sim.Version)]++
		}
		if p.Runner == worker.RunnerPlugin && !inProcess {
			continue // re-run with the pinned binary; its sha256 is checked per task
		}
		if p.Runner != "" && p.Runner != worker.RunnerInProcess {
			counts[fmt.Sprintf("results produced by %s runner (plugin %s %s, sha256 %s) are re-run in-process with the built-in policy",
				p.Runner, p.Plugin, p.PluginVersion, short(p.PluginSHA256))]++
		} else if sha := p.PluginSHA256; sha != "" && self != "" && sha != self {
			counts[fmt.Sprintf("results produced by msjfarm executable sha256 %s, this one is %s", short(sha), short(self))]++
		}
	}
	var out []string
	for w, c := range counts {
		out = append(out, fmt.Sprintf("%s (%d tasks)", w, c))
	}
	sort.Strings(out)
	return out
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// usesPlugins reports whether any chosen result came from a plugin.
func usesPlugins(a *coordinator.Archive, chosen []string) bool {
	for _, tid := range chosen {
		if r := a.Records[tid]; r != nil && r.Provenance.Runner == worker.RunnerPlugin {
			return true
		}
	}
	return false
}

// reproduce re-runs the chosen tasks, n at once: through plugins (if not
// nil) those whose result came from a plugin, the others in-process.
func reproduce(ctx context.Context, a *coordinator.Archive, chosen []string, n int, plugins worker.Runner) []reproduction {
	byID := map[string]sweep.Task{}
	for _, t := range a.Tasks {
		byID[t.ID] = t
	}
	out := make([]reproduction, len(chosen))
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for i, tid := range chosen {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var run worker.Runner = worker.InProcess{}
			if r := a.Records[tid]; plugins != nil && r != nil && r.Provenance.Runner == worker.RunnerPlugin {
				run = plugins
			}
			out[i] = reproduceOne(ctx, run, byID[tid], a.Records[tid], a.Raw[tid])
		}()
	}
	wg.Wait()
	return out
}

func reproduceOne(ctx context.Context, run worker.Runner, want sweep.Task, rec *record.Record, raw []byte) reproduction {
	r := reproduction{task: want}
	switch {
	case rec == nil:
		r.verdict, r.detail = verdictError, "no stored result"
		return r
	case rec.Failed():
		r.verdict, r.detail = verdictError, "stored record is a failure: "+rec.Error
		return r
	}
	t := rec.Task
	if t.ID != want.ID || sweep.TaskID(t) != want.ID {
		r.verdict, r.detail = verdictDiff, "stored task content does not match its id"
		return r
	}
	var stored struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		r.verdict, r.detail = verdictError, "stored record: "+err.Error()
		return r
	}
	o, err := run.Run(ctx, &t, nil)
	if err != nil {
		r.verdict, r.detail = verdictError, err.Error()
		return r
	}
	var note string
	if was, now := rec.Provenance.PluginSHA256, o.Provenance.PluginSHA256; was != "" && now != "" && was != now {
		note = fmt.Sprintf("; ran %s sha256 %s, recorded %s", o.Provenance.Runner, short(now), short(was))
	}
	got, err := json.Marshal(o.Result)
	if err != nil {
		r.verdict, r.detail = verdictError, "encoding the result: "+err.Error()
		return r
	}
	var a, b bytes.Buffer
	if err := json.Compact(&a, stored.Result); err != nil {
		r.verdict, r.detail = verdictError, "stored result: "+err.Error()
		return r
	}
	_ = json.Compact(&b, got)
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		r.verdict, r.detail = verdictSame, strings.TrimPrefix(note, "; ")
		return r
	}
	r.verdict, r.detail = verdictDiff, "fields "+strings.Join(diffFields(a.Bytes(), b.Bytes()), ", ")+note
	return r
}

// diffFields names the top-level fields of two JSON objects that differ.
func diffFields(x, y []byte) []string {
	var mx, my map[string]json.RawMessage
	if json.Unmarshal(x, &mx) != nil || json.Unmarshal(y, &my) != nil {
		return []string{"(not objects)"}
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]json.RawMessage{mx, my} {
		for k := range m {
			if !seen[k] && !bytes.Equal(mx[k], my[k]) {
				out = append(out, k)
			}
			seen[k] = true
		}
	}
	sort.Strings(out)
	return out
}

// printReproductions prints one line per task and a total; it returns the
// exit status (1 if any task is not bit-identical).
func printReproductions(w io.Writer, res []reproduction, took time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tPOLICY\tPOINT\tREP\tSEED\tVERDICT")
	count := map[string]int{}
	for _, r := range res {
		count[r.verdict]++
		v := r.verdict
		if r.detail != "" {
			v += " (" + r.detail + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", r.task.ID, r.task.Policy, axesLabel(r.task.Axes), r.task.Replication, r.task.Seed, v)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d tasks: %d bit-identical, %d different, %d errors (%s)\n", len(res),
		count[verdictSame], count[verdictDiff], count[verdictError], took.Round(time.Millisecond))
	if count[verdictSame] != len(res) {
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
