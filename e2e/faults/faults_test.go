//go:build faults

package faults_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage/miniotest"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// Environment knobs (docs/faults.md).
const (
	envReduced     = "MSJFARM_FAULTS_REDUCED"      // "1": the CI form (shorter outages, 60 tasks)
	envMinIOOutage = "MSJFARM_FAULTS_MINIO_OUTAGE" // override the MinIO outage, e.g. 10m
	envOut         = "MSJFARM_FAULTS_OUT"          // directory for logs and the table
	envChild       = "MSJFARM_FAULTS_NETNS_CHILD"  // set in the re-executed partition run
	envOnly        = "MSJFARM_FAULTS_ONLY"         // regexp: run only the faults whose names match (the fault-free run always runs)
)

// selected reports whether the fault named name is to run.
func selected(name string) bool {
	re := os.Getenv(envOnly)
	if re == "" {
		return true
	}
	ok, err := regexp.MatchString(re, name)
	return err == nil && ok
}

// config is the suite's shape: the reduced form for CI or the full one.
type config struct {
	reduced                           bool
	bin, pluginDir, natsBin, minioBin string
	outDir                            string
	reps                              int // replications per (rate, policy): 6 points × reps tasks
	ackWait                           time.Duration
	natsDown, minioOutage             time.Duration
	cutWorker, coPartition            time.Duration
	coDown                            time.Duration
}

func loadConfig() (*config, error) {
	c := &config{reduced: os.Getenv(envReduced) == "1", ackWait: 10 * time.Second,
		natsDown: 10 * time.Second, coDown: 5 * time.Second, coPartition: 30 * time.Second}
	if c.reduced {
		c.reps, c.minioOutage, c.cutWorker = 10, 2*time.Minute, 20*time.Second
	} else {
		c.reps, c.minioOutage, c.cutWorker = 25, 10*time.Minute, 60*time.Second
	}
	if v := os.Getenv(envMinIOOutage); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive duration such as 10m", envMinIOOutage, v)
		}
		c.minioOutage = d
	}
	c.natsBin, c.minioBin = natstest.Binary(), miniotest.Binary()
	return c, nil
}

// sweep is the campaign of every fault: 3 rates × 2 policies × reps
// replications of 0.20–0.25 s of simulation each (4e6 arrivals; 5e5 gave
// that when the suite was written, 0.03 s after the engine got faster, and
// then the slow-link worker often completed nothing). The faults' premises
// check that the tasks are still long enough. flaky-fcfs is the suite's own plugin
// (testdata/msjfarm-policy-flaky), pinned to storage by submit and fetched
// by the workers, so that the plugin faults have a binary to break.
func (c *config) sweep() string {
	return fmt.Sprintf(`name: faults
seed: 11
workload: one-or-all
axes:
  arrival_rate: [1, 1.5, 2]
policies: [fcfs, flaky-fcfs]
replications: %d
run: {arrivals: 4e6, warmup: 5e4, deadline: 20s}
`, c.reps)
}

// row is one line of the fault table.
type row struct {
	Fault      string   `json:"fault"`
	Tasks      int      `json:"tasks"`
	Lost       int      `json:"lost"`
	Duplicated int      `json:"duplicated"`
	Reruns     int      `json:"reruns"`
	Recovery   string   `json:"recovery"`
	DoneAfter  string   `json:"done_after_fault_s"`
	Wall       float64  `json:"wall_s"`
	Summary    string   `json:"summary"`
	Verdict    string   `json:"verdict"`
	Notes      string   `json:"notes,omitempty"`
	Evidence   []string `json:"evidence,omitempty"`
}

// baseline is the fault-free campaign every fault is compared with.
type baseline struct {
	Summary []byte          `json:"summary"`
	Tasks   map[string]bool `json:"tasks"`
	Wall    float64         `json:"wall_s"`
}

var cfg *config

func TestMain(m *testing.M) {
	var err error
	if cfg, err = loadConfig(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(envChild) != "" {
		// The re-executed partition run shares the parent's build and
		// output directory.
		cfg.bin, cfg.pluginDir, cfg.outDir = os.Getenv("FAULTS_BIN"), os.Getenv("FAULTS_PLUGIN_DIR"), os.Getenv("FAULTS_OUT_DIR")
		os.Exit(m.Run())
	}
	if cfg.outDir = os.Getenv(envOut); cfg.outDir == "" {
		cfg.outDir = filepath.Join(os.TempDir(), "msjfarm-faults-"+time.Now().UTC().Format("20060102-150405"))
	}
	if cfg.outDir, err = filepath.Abs(cfg.outDir); err == nil {
		err = os.MkdirAll(cfg.outDir, 0o755)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// msjfarm and the flaky plugin in separate directories: the plugin must
	// not be found next to the executable, only through its pin.
	cfg.bin = filepath.Join(cfg.outDir, "bin", "msjfarm")
	cfg.pluginDir = filepath.Join(cfg.outDir, "plugins")
	root, err := hosttest.RepoRoot()
	if err == nil {
		cmd := exec.Command("go", "build", "-o", cfg.bin, "./cmd/msjfarm")
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		err = cmd.Run()
	}
	if err == nil {
		err = hosttest.Build(cfg.pluginDir, "./e2e/faults/testdata/msjfarm-policy-flaky")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building msjfarm and the flaky plugin:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func requireServers(t *testing.T) {
	if cfg.natsBin == "" || cfg.minioBin == "" {
		msg := fmt.Sprintf("nats-server (%q) or minio (%q) not found: run `make tools` and set MSJFARM_NATS_SERVER and MSJFARM_MINIO", cfg.natsBin, cfg.minioBin)
		if os.Getenv("MSJFARM_REQUIRE_SERVERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// fault is one injected failure. inject runs while the campaign is in
// progress and returns when the fault has ended (the process restarted,
// the link healed); it returns the fault's start and end.
type fault struct {
	name   string
	prep   func(f *farm)                                 // before the farm starts (plugin modes, relays)
	inject func(t *testing.T, f *farm, id string) window // nil: the fault-free run
	after  func(f *farm) string                          // after the campaign: a note for the table
	// premise says, after the campaign, why the fault did not test what
	// it claims ("" when it did): a row whose fault missed its target
	// fails rather than passes, so that a faster engine (shorter tasks)
	// cannot turn a fault into a no-op unnoticed.
	premise func(f *farm, r row) string
	notes   string
}

type window struct {
	start, end time.Time
	whole      bool            // the fault lasts the whole campaign: no recovery
	inFlight   map[string]bool // tasks running when it began
	worker     string          // the faulted worker, if one
}

// TestFaults runs the fault-free campaign, then every fault on a fresh
// farm, and writes the table.
func TestFaults(t *testing.T) {
	requireServers(t)
	var rows []row
	t.Cleanup(func() { writeTable(t, rows) })
	top := loopback()
	var base *baseline
	t.Run("fault-free", func(t *testing.T) {
		r, b := runCampaign(t, top, fault{name: "fault-free"}, nil)
		rows, base = append(rows, r), b
	})
	if base == nil {
		t.Fatal("no fault-free summary: nothing to compare with")
	}
	bj, _ := json.Marshal(base)
	if err := os.WriteFile(filepath.Join(cfg.outDir, "baseline.json"), bj, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fl := range loopbackFaults() {
		if !selected(fl.name) {
			continue
		}
		t.Run(fl.name, func(t *testing.T) {
			r, _ := runCampaign(t, top, fl, base)
			rows = append(rows, r)
		})
	}
	t.Run("partitions", func(t *testing.T) {
		if !selected("partitions") {
			t.Skip(envOnly + " excludes the partitions")
		}
		rows = append(rows, runPartitionsChild(t)...)
	})
}

// runCampaign starts a fresh farm, submits the sweep, injects the fault,
// waits for the campaign and measures it against base (nil: it is the
// baseline).
func runCampaign(t *testing.T, top *topology, fl fault, base *baseline) (row, *baseline) {
	r := row{Fault: fl.name, Notes: fl.notes, Recovery: "—", DoneAfter: "—", Verdict: "FAIL"}
	f := newFarm(t, cfg, top, fl.name)
	if fl.prep != nil {
		fl.prep(f)
	}
	f.up()
	sweep := filepath.Join(f.dir, "sweep.yaml")
	if err := os.WriteFile(sweep, []byte(cfg.sweep()), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	id := f.submit(sweep)
	t.Logf("%s: campaign %s, logs in %s", fl.name, id, f.dir)
	// The campaign is watched from the submit on, concurrently with the
	// fault, so that a campaign finishing during a long fault is seen then.
	limit := 5*time.Minute + 2*cfg.minioOutage
	type outcome struct {
		st *protocol.Status
		ok bool
		at time.Time
	}
	waited := make(chan outcome, 1)
	go func() {
		st, ok := f.waitDone(id, limit)
		waited <- outcome{st, ok, time.Now()}
	}()
	var w window
	if fl.inject != nil {
		w = fl.inject(t, f, id)
	}
	o := <-waited
	st, ok := o.st, o.ok
	var doneAt time.Time
	if ok {
		doneAt = o.at
		r.Wall = doneAt.Sub(t0).Seconds()
		if fl.inject != nil && !w.whole {
			if d := doneAt.Sub(w.end).Seconds(); d >= 0 {
				r.DoneAfter = fmt.Sprintf("%.1f", d)
			} else {
				r.DoneAfter = fmt.Sprintf("during (%.1f s before the end)", -d)
			}
		}
	} else {
		r.Wall = time.Since(t0).Seconds()
	}
	f.runLog.stop()
	events := f.runLog.snapshot()
	if fl.after != nil {
		r.Notes = strings.TrimSpace(r.Notes + "; " + fl.after(f))
	}
	recs, err := f.results(id)
	if err != nil {
		t.Errorf("%s: reading results: %v", fl.name, err)
	}
	tasks := map[string]bool{}
	if base != nil {
		tasks = base.Tasks
	} else {
		for tid := range recs {
			tasks[tid] = true
		}
	}
	r.Tasks = len(tasks)
	var failed []string
	for tid := range tasks {
		if rec, ok := recs[tid]; !ok || rec.Failed() {
			r.Lost++
			if ok {
				failed = append(failed, tid[:12]+": "+rec.Error)
			}
		}
	}
	// A task is duplicated when more than one attempt ran to completion
	// (a worker that finds the result already stored logs "duplicate" and
	// then "done" for the same attempt: that is one completion).
	starts, completions := map[string]int{}, map[string]map[string]bool{}
	for _, e := range events {
		if e.campaign != id {
			continue
		}
		switch e.kind {
		case "start":
			starts[e.task]++
		case "done", "duplicate":
			if completions[e.task] == nil {
				completions[e.task] = map[string]bool{}
			}
			completions[e.task][e.worker+"/"+e.attempt] = true
		}
	}
	nstarts := 0
	for tid, as := range completions {
		if n := len(as); n > 1 {
			r.Duplicated++
			failed = append(failed, fmt.Sprintf("%s completed %d times", tid[:12], n))
		}
	}
	for _, n := range starts {
		nstarts += n
	}
	r.Reruns = nstarts - len(tasks)
	sum, serr := f.summary(id)
	switch {
	case serr != nil:
		r.Summary = "missing"
	case base == nil || bytes.Equal(sum, base.Summary):
		r.Summary = "identical"
	default:
		r.Summary = "differs"
		_ = os.WriteFile(filepath.Join(f.dir, "summary.csv"), sum, 0o644)
	}
	if fl.inject != nil && !w.whole {
		r.Recovery = recovery(recs, doneAt, w)
	} else if w.whole {
		r.Recovery = fmt.Sprintf("n/a (whole run; fault-free %.0f s)", base.Wall)
	}
	// The workers stop (SIGTERM) as an operator would stop them; every
	// plugin process must go with them.
	f.stopMsjfarm()
	time.Sleep(2 * time.Second)
	if stray := strayPlugins(f.dir); len(stray) > 0 {
		r.Notes = strings.TrimSpace(r.Notes + fmt.Sprintf(" %d plugin process(es) left running after the campaign", len(stray)))
	}
	var why []string
	if !ok {
		s := "no status"
		if st != nil {
			s = fmt.Sprintf("state %s, done %d, failed %d of %d", st.State, st.Done, st.Failed, st.Total)
		}
		why = append(why, fmt.Sprintf("not done after %v (%s)", limit, s))
	}
	if r.Lost > 0 {
		why = append(why, fmt.Sprintf("%d lost", r.Lost))
	}
	if r.Duplicated > 0 {
		why = append(why, fmt.Sprintf("%d duplicated", r.Duplicated))
	}
	if r.Summary != "identical" {
		why = append(why, "summary "+r.Summary)
	}
	if base == nil && (r.Tasks != 6*cfg.reps || r.Lost > 0) {
		why = append(why, fmt.Sprintf("fault-free run has %d good results of %d", r.Tasks-r.Lost, 6*cfg.reps))
	}
	// Every fault injected mid-campaign must have found it running.
	if ok && fl.inject != nil && !w.whole && doneAt.Before(w.start) {
		why = append(why, "premise: the campaign was done before the fault began (raise the sweep's arrivals)")
	}
	if fl.premise != nil {
		if p := fl.premise(f, r); p != "" {
			why = append(why, "premise: "+p)
		}
	}
	if len(why) == 0 {
		r.Verdict = "PASS"
	} else {
		r.Verdict = "FAIL: " + strings.Join(why, ", ")
		sort.Strings(failed)
		if len(failed) > 5 {
			failed = failed[:5]
		}
		r.Evidence = append(failed, f.grepLogs(12, "ERROR", "error", "failed", "level=WARN", "panic")...)
		t.Errorf("%s: %s\n  %s", fl.name, r.Verdict, strings.Join(r.Evidence, "\n  "))
	}
	t.Logf("%s: %d tasks, %d lost, %d duplicated, %d re-runs, recovery %s, wall %.1f s, summary %s",
		fl.name, r.Tasks, r.Lost, r.Duplicated, r.Reruns, r.Recovery, r.Wall, r.Summary)
	if base == nil && len(why) == 0 {
		return r, &baseline{Summary: sum, Tasks: tasks, Wall: r.Wall}
	}
	return r, nil
}

// recovery is the time from the end of the fault until the farm has made
// progress again and has finished every task that was running when the
// fault began: the later of the first replication to finish after the end
// and the last in-flight one to finish; if no replication finished after
// the end (all had finished during the fault), the time until the
// coordinator reported the campaign done. A replication's finish is its
// stored record's start plus wall time (the run log is not enough: a
// worker killed between storing a result and logging it leaves no line).
func recovery(recs map[string]*record.Record, doneAt time.Time, w window) string {
	var first, last time.Time
	never := 0
	for t := range w.inFlight {
		r, ok := recs[t]
		if !ok || r.Failed() {
			never++
			continue
		}
		if fin := finish(r); fin.After(last) {
			last = fin
		}
	}
	if never > 0 {
		return fmt.Sprintf("never (%d in-flight task(s) without a result)", never)
	}
	for _, r := range recs {
		if r.Failed() {
			continue
		}
		if fin := finish(r); !fin.Before(w.end) && (first.IsZero() || fin.Before(first)) {
			first = fin
		}
	}
	if first.IsZero() {
		if doneAt.IsZero() {
			return "never (campaign not done)"
		}
		if doneAt.Before(w.end) {
			return "0 s (campaign done during the fault)"
		}
		first = doneAt
	}
	if first.After(last) {
		last = first
	}
	d := last.Sub(w.end)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func finish(r *record.Record) time.Time {
	return r.Provenance.Started.Add(time.Duration(r.Provenance.WallSeconds * float64(time.Second)))
}

// mid waits until the campaign is under way (a task running on worker, or
// anywhere if ""), then returns the window start and in-flight set.
// killFor is the inject step of a kill -9 fault: once a task is running
// (on worker midOf, or anywhere if ""), kill process name, keep it down for
// down, then restart it; the fault's window ends at the restart.
func killFor(name, midOf string, down time.Duration, restart func(*farm)) func(*testing.T, *farm, string) window {
	return func(t *testing.T, f *farm, id string) window {
		w := mid(t, f, id, midOf)
		f.proc(name).kill()
		time.Sleep(down)
		restart(f)
		w.end = time.Now()
		return w
	}
}

func mid(t *testing.T, f *farm, id, worker string) window {
	f.waitRunning(id, worker, 90*time.Second)
	time.Sleep(150 * time.Millisecond) // mid-task, not at its first instruction
	return window{start: time.Now(), inFlight: f.runLog.running(id), worker: worker}
}

func loopbackFaults() []fault {
	plugin := func(mode string) fault {
		return fault{
			name:  "plugin-" + mode,
			notes: "flaky-fcfs " + mode + "es once on w1, mid-replication",
			prep: func(f *farm) {
				f.workerEnv["w1"] = []string{"FLAKY_MODE=" + mode, "FLAKY_AFTER=200000"}
			},
			inject: func(t *testing.T, f *farm, id string) window {
				token := filepath.Join(f.dir, "flaky-w1", "token")
				var w window
				f.waitUntil("the flaky plugin to misbehave on w1", 3*time.Minute, func() bool {
					st, err := os.Stat(token)
					if err != nil {
						return false
					}
					w = window{start: st.ModTime(), end: st.ModTime(), inFlight: f.runLog.running(id), worker: "w1"}
					return true
				})
				return w
			},
		}
	}
	// What w1 said about the misbehaving attempt, so that the table shows
	// the fault really happened and how it was classified.
	said := func(words ...string) func(f *farm) string {
		return func(f *farm) string {
			lines := f.grepLogs(1, words...)
			if len(lines) == 0 {
				return fmt.Sprintf("no worker log line mentions %q", words)
			}
			l := lines[0]
			if i := strings.Index(l, "error="); i >= 0 {
				l = l[i:]
			}
			// The plugin's path says nothing the table needs.
			if i := strings.Index(l, "policy flaky-fcfs: "); i >= 0 {
				l = `error="…` + l[i+len("policy flaky-fcfs: "):]
			}
			if len(l) > 200 {
				l = l[:200] + "…"
			}
			return "worker: " + l
		}
	}
	hang := plugin("hang")
	hang.notes = "flaky-fcfs sleeps for a day once on w1, ignoring the 20 s run deadline"
	crash := plugin("crash")
	crash.notes = "flaky-fcfs panics once on w1, mid-replication"
	exit := plugin("exit")
	exit.notes = "flaky-fcfs calls os.Exit(3) once on w1, mid-replication"
	for _, p := range []*fault{&crash, &exit, &hang} {
		p.after = said("task attempt failed")
	}
	return []fault{
		{name: "kill-9 worker", notes: "w1 killed mid-task, restarted after 2 s",
			inject: killFor("w1", "w1", 2*time.Second, func(f *farm) { f.startWorker("w1-restarted", "w1") }),
			premise: func(f *farm, r row) string {
				if r.Reruns == 0 {
					return "no task ran again: the kill interrupted none (raise the sweep's arrivals)"
				}
				return ""
			}},
		{name: "kill-9 coordinator", notes: fmt.Sprintf("restarted after %v", cfg.coDown),
			inject: killFor("coordinator", "", cfg.coDown, func(f *farm) { f.startCoordinator("coordinator-restarted") })},
		{name: "kill-9 nats-server", notes: fmt.Sprintf("down %v, restarted on the same port and store", cfg.natsDown),
			inject: killFor("nats", "", cfg.natsDown, func(f *farm) { f.startNATS("nats-restarted") })},
		{name: "MinIO down " + cfg.minioOutage.String(), notes: "kill -9, restarted on the same port and data",
			inject: killFor("minio", "", cfg.minioOutage, func(f *farm) { f.startMinIO("minio-restarted") })},
		crash, exit, hang,
		{name: "plugin-tamper", notes: "w1's cached flaky plugin overwritten, its plugin processes killed",
			after: func(f *farm) string {
				if len(f.grepLogs(1, "checksum mismatch")) == 0 {
					return "the tampered binary was NOT reported (no \"checksum mismatch\" in the logs)"
				}
				fetches := 0
				for _, l := range f.grepLogs(20, "plugin runner: fetched flaky") {
					if strings.HasPrefix(l, "w1.log:") {
						fetches++
					}
				}
				if fetches < 2 {
					return "checksum mismatch reported, but the plugin was not fetched again"
				}
				return "checksum mismatch reported, binary removed from the cache and fetched again"
			},
			inject: func(t *testing.T, f *farm, id string) window {
				var cached string
				f.waitUntil("w1 to fetch the flaky plugin", 90*time.Second, func() bool {
					m, _ := filepath.Glob(filepath.Join(f.dir, "cache-w1", "flaky", "*", "msjfarm-policy-flaky"))
					if len(m) > 0 {
						cached = m[0]
					}
					return cached != ""
				})
				w := mid(t, f, id, "w1")
				// The running binary cannot be written (ETXTBSY): replace
				// it, as an intruder would, by renaming another file over it.
				tmp := cached + ".tamper"
				if err := os.WriteFile(tmp, []byte("#!/bin/sh\necho tampered >&2\nexit 7\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, cached); err != nil {
					t.Fatal(err)
				}
				for _, pid := range strayPlugins(filepath.Join(f.dir, "cache-w1")) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				w.end = time.Now()
				return w
			}},
	}
}

// writeTable prints the table and writes it (Markdown) and the rows
// (JSON) to the output directory.
func writeTable(t *testing.T, rows []row) {
	var b strings.Builder
	mode := "full"
	if cfg.reduced {
		mode = "reduced"
	}
	fmt.Fprintf(&b, "Fault-injection suite (%s form), %s\n\n", mode, time.Now().UTC().Format(time.RFC3339))
	b.WriteString("| fault | tasks | lost | duplicated | re-runs | recovery | done after fault (s) | wall (s) | summary | verdict | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %.1f | %s | %s | %s |\n",
			r.Fault, r.Tasks, r.Lost, r.Duplicated, r.Reruns, r.Recovery, r.DoneAfter, r.Wall, r.Summary, r.Verdict, r.Notes)
	}
	for _, r := range rows {
		if len(r.Evidence) > 0 {
			fmt.Fprintf(&b, "\n%s — evidence:\n", r.Fault)
			for _, e := range r.Evidence {
				fmt.Fprintf(&b, "    %s\n", e)
			}
		}
	}
	path := filepath.Join(cfg.outDir, "table.md")
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
	j, _ := json.MarshalIndent(rows, "", "  ")
	_ = os.WriteFile(filepath.Join(cfg.outDir, "table.json"), j, 0o644)
	fmt.Printf("\n%s\n(table written to %s; process logs under %s)\n", b.String(), path, cfg.outDir)
}
