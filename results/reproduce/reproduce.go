// Package reproduce re-runs tasks of an archived campaign
// (results/archive) and checks that each gives the stored result bit for
// bit: the library behind msjfarm reproduce. It is apart from the archive
// because it runs replications (package worker), which the coordinator,
// a reader of the archive types, must not depend on.
package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// Verdicts.
const (
	Same      = "bit-identical"
	Different = "different"
	Error     = "error"
	// NotHere: the result was computed by built-in policies of another
	// engine version than this binary's, so running it here would
	// compare other code; the detail says which engine and how to get it.
	NotHere = "not reproducible here"
)

// Reproduction is the outcome of re-running one archived task.
type Reproduction struct {
	Task sweep.Task
	// Verdict is Same, Different or Error; Detail says
	// which fields differ, what failed, or which binary ran.
	Verdict string
	Detail  string
	// Key is the content key (record.Key) of the result as this run
	// computed it, under the code that ran here; empty when the run
	// failed or names no code. A Same result's key, when it is the one
	// the campaign refers to, confirms an imported result
	// (record.ConfirmImported).
	Key string
}

// ChooseTasks returns the task ids to re-run, in campaign order: those
// of list (comma-separated; each must be a task of the campaign), else
// every task with a result (all, or sample at least their number), else
// sample of them drawn with seed.
func ChooseTasks(a *archive.Archive, list string, sample int, all bool, seed uint64) ([]string, error) {
	c := chooser{known: map[string]bool{}}
	for _, t := range a.Tasks {
		c.add(t.ID, a.Records[t.ID], a.Modified[t.ID] != "")
	}
	return c.choose(a.ID, list, sample, all, seed)
}

// chooser collects what ChooseTasks chooses from, a task at a time. The
// ids of the tasks with a result are held end to end in one byte slice
// (28 bytes a task: a string and a map entry each took over 100, 116
// MB at 10^6 tasks); the set of every task is kept only to check a list
// (known non-nil).
type chooser struct {
	ok    []byte   // ids of the tasks with a successful record, in campaign order
	okEnd []uint32 // where each id of ok ends
	known map[string]bool
}

// add notes task tid with its record (nil: none) and whether its result
// was modified after the campaign finalised (chosen too: Run reports it
// as different).
func (c *chooser) add(tid string, r *record.Record, modified bool) {
	if c.known != nil {
		c.known[tid] = true
	}
	if r != nil && !r.Failed() || modified {
		c.ok = append(c.ok, tid...)
		c.okEnd = append(c.okEnd, uint32(len(c.ok)))
	}
}

// okID is the i-th task with a result.
func (c *chooser) okID(i int) string {
	start := uint32(0)
	if i > 0 {
		start = c.okEnd[i-1]
	}
	return string(c.ok[start:c.okEnd[i]])
}

func (c *chooser) choose(id, list string, sample int, all bool, seed uint64) ([]string, error) {
	n := len(c.okEnd)
	var idx []int
	switch {
	case list != "":
		var out []string
		seen := map[string]bool{}
		for _, tid := range strings.Split(list, ",") {
			tid = strings.TrimSpace(tid)
			if tid == "" || seen[tid] {
				continue // a task named twice is re-run once
			}
			seen[tid] = true
			if !c.known[tid] {
				return nil, fmt.Errorf("task %s is not a task of campaign %s", tid, id)
			}
			out = append(out, tid)
		}
		return out, nil
	case all || sample >= n:
		idx = make([]int, n)
		for i := range idx {
			idx[i] = i
		}
	default:
		r := rand.New(rand.NewPCG(seed, 0))
		idx = r.Perm(n)[:sample]
		sort.Ints(idx)
	}
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = c.okID(j)
	}
	return out, nil
}

// Select chooses the tasks to re-run as ChooseTasks does, reading the
// campaign a point at a time, and returns an archive that holds only the
// chosen tasks and their records (what Run needs), the chosen ids and the
// campaign's number of tasks. The campaign is read twice: every record
// once to choose (each point's records dropped once seen; r.Warnings are
// the full pass's), then the chosen ones, so that what is held at once is
// a point's records plus the chosen ones.
func Select(ctx context.Context, r *archive.Reader, list string, sample int, all bool, seed uint64) (*archive.Archive, []string, int, error) {
	var c chooser
	total := 0
	err := r.EachPoint(ctx, nil, func(p archive.PointRecords) error {
		total += len(p.Tasks)
		for _, t := range p.Tasks {
			// With a list, only membership matters: no need to keep the
			// ids of the tasks with a result.
			if list != "" {
				if c.known == nil {
					c.known = map[string]bool{}
				}
				if strings.Contains(list, t.ID) {
					c.known[t.ID] = true
				}
				continue
			}
			c.add(t.ID, p.Records[t.ID], r.Modified[t.ID] != "")
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, err
	}
	chosen, err := c.choose(r.ID, list, sample, all, seed)
	if err != nil {
		return nil, nil, total, err
	}
	want := make(map[string]bool, len(chosen))
	for _, tid := range chosen {
		want[tid] = true
	}
	a := &archive.Archive{ID: r.ID, Spec: r.Spec, Campaign: r.Campaign, ManifestJSON: r.ManifestJSON, Manifest: r.Manifest,
		Records: map[string]*record.Record{}, Raw: map[string][]byte{}, Modified: r.Modified, Warnings: r.Warnings}
	err = r.EachPoint(ctx, func(tid string) bool { return want[tid] }, func(p archive.PointRecords) error {
		for _, t := range p.Tasks {
			if want[t.ID] {
				a.Tasks = append(a.Tasks, t)
				if rec := p.Records[t.ID]; rec != nil {
					a.Records[t.ID], a.Raw[t.ID] = rec, p.Raw[t.ID]
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, total, err
	}
	return a, chosen, total, nil
}

// ProvenanceWarnings compares the recorded provenance of the chosen
// results with this binary: engine version and the sha256 of the code that
// ran the policy (the msjfarm executable for in-process runs, the plugin
// binary otherwise).
func ProvenanceWarnings(a *archive.Archive, chosen []string, inProcess bool) []string {
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

// UsesPlugins reports whether any chosen result came from a plugin.
func UsesPlugins(a *archive.Archive, chosen []string) bool {
	for _, tid := range chosen {
		if r := a.Records[tid]; r != nil && r.Provenance.Runner == worker.RunnerPlugin {
			return true
		}
	}
	return false
}

// Run re-runs the chosen tasks, n at once, and compares each new
// sim.Result with the stored one byte for byte (both as compact JSON).
// The task run is the stored task itself (its JSON pins the workload,
// parameters, run length and seed); its content must match its id. Those
// whose result object was modified after the campaign finalised
// (archive.Archive.Modified) are not run: they are reported Different,
// naming the object. Those whose result came from a plugin run through plugins (if not nil; with
// the campaign's pins, so ctx should carry the campaign:
// worker.WithCampaign), the others in-process.
func Run(ctx context.Context, a *archive.Archive, chosen []string, n int, plugins worker.Runner) []Reproduction {
	return RunWith(ctx, a, chosen, n, plugins, nil)
}

// RunWith is Run where hint(engine) says how to get a msjfarm with that
// engine version, for the tasks reported NotHere (nil: DefaultHint). A
// task is NotHere when it would run with this binary's built-in
// policies (in-process, or msjfarm serving its own families as plugins)
// and its result records another engine: the comparison would be of
// other code. A third-party plugin's result is re-run with its archived
// binary, which links its own engine, so it is always compared.
func RunWith(ctx context.Context, a *archive.Archive, chosen []string, n int, plugins worker.Runner, hint func(engine string) string) []Reproduction {
	if hint == nil {
		hint = DefaultHint
	}
	byID := map[string]sweep.Task{}
	for _, t := range a.Tasks {
		byID[t.ID] = t
	}
	n = max(n, 1)
	out := make([]Reproduction, len(chosen))
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
			if msg := a.Modified[tid]; msg != "" {
				out[i] = Reproduction{Task: byID[tid], Verdict: Different, Detail: msg}
				return
			}
			if r := a.Records[tid]; r != nil && !r.Failed() && r.Result.Engine != sim.Version &&
				(r.Provenance.Runner != worker.RunnerPlugin || r.Provenance.Builtin || run != plugins) {
				out[i] = Reproduction{Task: byID[tid], Verdict: NotHere, Detail: fmt.Sprintf(
					"engine %s recorded, this msjfarm has engine %s; %s", r.Result.Engine, sim.Version, hint(r.Result.Engine))}
				return
			}
			out[i] = reproduceOne(ctx, run, byID[tid], a.Records[tid], a.Raw[tid])
		}()
	}
	wg.Wait()
	return out
}

// DefaultHint says how to find a msjfarm revision with engine version
// engine in a clone of the repository.
func DefaultHint(engine string) string {
	return fmt.Sprintf("build a msjfarm revision with engine %s (in a clone, git log -S 'Version = \"%s\"' -- sim/engine.go names it)", engine, engine)
}

func reproduceOne(ctx context.Context, run worker.Runner, want sweep.Task, rec *record.Record, raw []byte) Reproduction {
	r := Reproduction{Task: want}
	switch {
	case rec == nil:
		r.Verdict, r.Detail = Error, "no stored result"
		return r
	case rec.Failed():
		r.Verdict, r.Detail = Error, "stored record is a failure: "+rec.Error
		return r
	}
	t := rec.Task
	if t.ID != want.ID || sweep.TaskID(t) != want.ID {
		r.Verdict, r.Detail = Different, "stored task content does not match its id"
		return r
	}
	var stored struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		r.Verdict, r.Detail = Error, "stored record: "+err.Error()
		return r
	}
	o, err := run.Run(ctx, &t, nil)
	if err != nil {
		r.Verdict, r.Detail = Error, err.Error()
		return r
	}
	if im, ok := o.Provenance.Impl(); ok {
		r.Key = record.Key(t.ID, im)
	}
	var note string
	if was, now := rec.Provenance.PluginSHA256, o.Provenance.PluginSHA256; was != "" && now != "" && was != now {
		note = fmt.Sprintf("; ran %s sha256 %s, recorded %s", o.Provenance.Runner, short(now), short(was))
	}
	got, err := json.Marshal(o.Result)
	if err != nil {
		r.Verdict, r.Detail = Error, "encoding the result: "+err.Error()
		return r
	}
	var a, b bytes.Buffer
	if err := json.Compact(&a, stored.Result); err != nil {
		r.Verdict, r.Detail = Error, "stored result: "+err.Error()
		return r
	}
	_ = json.Compact(&b, got)
	if bytes.Equal(a.Bytes(), b.Bytes()) {
		r.Verdict, r.Detail = Same, strings.TrimPrefix(note, "; ")
		return r
	}
	r.Verdict, r.Detail = Different, "fields "+strings.Join(diffFields(a.Bytes(), b.Bytes()), ", ")+note
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
