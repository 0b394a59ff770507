package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// bin is the msjfarm binary built by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "msjfarm-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "msjfarm")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/msjfarm/msjfarm/cmd/msjfarm")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building msjfarm:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// farm is a real nats-server, a real MinIO and msjfarm processes.
type farm struct {
	t        *testing.T
	nats     *natstest.Server
	storeURL string
	env      []string
	store    storage.Store
	nc       *nats.Conn
	dir      string
}

func newFarm(t *testing.T) *farm {
	t.Helper()
	ns := natstest.StartBinary(t)
	f := newStorageFarm(t)
	f.nats = ns
	f.env = append(f.env, "MSJFARM_NATS_URL="+ns.URL)
	var err error
	if f.nc, err = nats.Connect(ns.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.nc.Close)
	return f
}

// newStorageFarm is a farm's MinIO, without NATS: for a test whose NATS
// server is a coordinator's embedded one, which sets f.nc and adds
// MSJFARM_NATS_URL to f.env itself.
func newStorageFarm(t *testing.T) *farm {
	t.Helper()
	ep, ak, sk := miniotest.Start(t)
	f := &farm{t: t, dir: t.TempDir(),
		storeURL: "s3://msjfarm?secure=false&endpoint=" + ep}
	f.env = append(os.Environ(), "MSJFARM_STORAGE="+f.storeURL,
		"MSJFARM_S3_ACCESS_KEY="+ak, "MSJFARM_S3_SECRET_KEY="+sk)
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// MinIO may answer "Server not initialized yet" just after start.
	for {
		if f.store, err = storage.Open(ctx, f.storeURL, storage.WithCredentials(ak, sk)); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return f
}

// proc is a running msjfarm process.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *procutil.Buffer
	done chan struct{}
	err  error
}

func (f *farm) start(name string, args ...string) *proc {
	f.t.Helper()
	p := &proc{name: name, out: &procutil.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = f.env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	f.t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
		if f.t.Failed() {
			f.t.Logf("--- %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

func (p *proc) signal(s syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(s)
	}
}

// stop sends SIGTERM and waits.
func (p *proc) stop(t *testing.T, within time.Duration) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("%s did not stop within %v after SIGTERM", p.name, within)
	}
}

// run runs msjfarm to completion and returns its output.
func (f *farm) run(args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *farm) writeSweep(name string, reps int, arrivals string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name+".yaml")
	spec := fmt.Sprintf(`name: %s
seed: 3
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies:
  - fcfs
replications: %d
run: {arrivals: %s, warmup: 1e3, deadline: 5m}
`, name, reps, arrivals)
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

var campaignRE = regexp.MustCompile(`campaign ([0-9a-f]+) `)

// submit submits a sweep (its path last, after any submit flags) and
// returns the campaign id.
func (f *farm) submit(args ...string) string {
	f.t.Helper()
	out, err := f.run(append([]string{"submit"}, args...)...)
	if err != nil {
		f.t.Fatalf("submit: %v\n%s", err, out)
	}
	m := campaignRE.FindStringSubmatch(out)
	if m == nil {
		f.t.Fatalf("submit printed no campaign id:\n%s", out)
	}
	return m[1]
}

func (f *farm) status(id string) (*protocol.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var s protocol.Status
	err := protocol.Request(ctx, f.nc, protocol.APIStatus, protocol.StatusRequest{Campaign: id}, &s)
	return &s, err
}

// waitFor polls cond every 100 ms.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

func (f *farm) waitDone(id string, d time.Duration) *protocol.Status {
	f.t.Helper()
	var s *protocol.Status
	waitFor(f.t, "campaign "+id+" to finish", d, func() bool {
		var err error
		s, err = f.status(id)
		return err == nil && s.State == protocol.CampaignDone
	})
	return s
}

// runLog parses the workers' shared run log: kind → task → workers.
type runLog map[string]map[string][]string

func readRunLog(t *testing.T, path string) runLog {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rl := runLog{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			t.Fatalf("run log line %q", sc.Text())
		}
		if rl[fs[0]] == nil {
			rl[fs[0]] = map[string][]string{}
		}
		rl[fs[0]][fs[2]] = append(rl[fs[0]][fs[2]], fs[3])
	}
	return rl
}

// records reads every result of a campaign from storage.
func (f *farm) records(id string) map[string]*record.Record {
	f.t.Helper()
	ctx := context.Background()
	keys, err := f.store.List(ctx, storage.ResultsPrefix(id))
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]*record.Record{}
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(id, k)
		r, _, err := record.Read(ctx, f.store, id, tid)
		if err != nil {
			f.t.Fatal(err)
		}
		out[tid] = r
	}
	return out
}

// checkExactlyOnce: every task has one successful record and exactly one
// "done" line in the run log.
func checkExactlyOnce(t *testing.T, recs map[string]*record.Record, rl runLog, tasks int) {
	t.Helper()
	if len(recs) != tasks {
		t.Fatalf("%d results in storage, want %d", len(recs), tasks)
	}
	for tid, r := range recs {
		if r.Failed() {
			t.Fatalf("task %s failed: %s", tid, r.Error)
		}
		if n := len(rl["done"][tid]); n != 1 {
			t.Fatalf("task %s completed %d times (run log), want 1", tid, n)
		}
	}
	if len(rl["done"]) != tasks {
		t.Fatalf("run log has %d completed tasks, want %d", len(rl["done"]), tasks)
	}
}

func (f *farm) checkOutputs(id string) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.store.Get(ctx, storage.SummaryKey(id)); err != nil {
		f.t.Fatalf("summary.csv: %v", err)
	}
	if _, err := f.store.Get(ctx, storage.CampaignSpecKey(id)); err != nil {
		f.t.Fatalf("spec.yaml: %v", err)
	}
	data, err := f.store.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		f.t.Fatal(err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		f.t.Fatal(err)
	}
	if m.State != protocol.CampaignDone || len(m.Policies) == 0 || m.Policies[0].PluginSHA256 == "" || len(m.Hosts) == 0 {
		f.t.Fatalf("manifest: %s", data)
	}
}

// TestTwoWorkerProcesses runs a campaign across two worker processes with
// results in MinIO, through the CLI (submit, status, results).
func TestTwoWorkerProcesses(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	f := newFarm(t)
	start := time.Now()
	co := f.start("coordinator", "coordinator", "-ack-wait", "5s")
	logPath := filepath.Join(f.dir, "runs.log")
	f.start("worker1", "worker", "-workers", "2", "-worker-name", "w1", "-run-log", logPath)
	f.start("worker2", "worker", "-workers", "2", "-worker-name", "w2", "-run-log", logPath)
	id := f.submit(f.writeSweep("two-workers", 10, "2e5")) // 20 tasks of ~60 ms
	s := f.waitDone(id, 5*time.Minute)                     // a ceiling for a loaded machine, not an expectation
	t.Logf("20 tasks on 2 worker processes: %v (incl. start-up)", time.Since(start).Round(time.Millisecond))
	if s.Done != 20 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	recs := f.records(id)
	checkExactlyOnce(t, recs, readRunLog(t, logPath), 20)
	by := map[string]int{}
	for _, r := range recs {
		by[r.Provenance.Worker]++
	}
	if by["w1"] == 0 || by["w2"] == 0 || by["w1"]+by["w2"] != 20 {
		t.Fatalf("results by worker: %v", by)
	}
	f.checkOutputs(id)
	out, err := f.run("status", id)
	if err != nil || !strings.Contains(out, "done") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	out, err = f.run("results", id)
	if err != nil || !strings.Contains(out, "fcfs") {
		t.Fatalf("results: %v\n%s", err, out)
	}
	t.Logf("msjfarm results:\n%s", out)
	// The readers of a campaign's records read it from MinIO (archive.
	// Reader, over the S3 store's paged listing): the report, from every
	// record.
	repDir := filepath.Join(f.dir, "report")
	out, err = f.run("report", id, "--out", repDir)
	if _, serr := os.Stat(filepath.Join(repDir, "index.html")); err != nil || serr != nil {
		t.Fatalf("report: %v, %v\n%s", err, serr, out)
	}
	// A series compared with itself printed a table of 0% ± 0, "no
	// difference": refused.
	out, err = f.run("results", id, "--compare", "fcfs,fcfs")
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 || !strings.Contains(out, "a series compared with itself") {
		t.Fatalf("results --compare fcfs,fcfs: %v, want exit 2\n%s", err, out)
	}
	out, err = f.run("reproduce", id, "--sample", "2", "--runner", "inprocess")
	if err != nil || !strings.Contains(out, "2 tasks: 2 bit-identical, 0 different, 0 errors") {
		t.Fatalf("reproduce: %v\n%s", err, out)
	}
	co.stop(t, 10*time.Second)
}

// TestCoordinatorResume kills the coordinator (SIGKILL) mid-campaign and
// starts another: no result is lost and no completed task runs again.
func TestCoordinatorResume(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	f := newFarm(t)
	co := f.start("coordinator", "coordinator", "-ack-wait", "5s", "-reconcile", "1s")
	logPath := filepath.Join(f.dir, "runs.log")
	f.start("worker1", "worker", "-workers", "1", "-worker-name", "w1", "-run-log", logPath)
	f.start("worker2", "worker", "-workers", "1", "-worker-name", "w2", "-run-log", logPath)
	// 16 tasks of ~0.25 s on a quiet machine (5e6 arrivals); the kill must
	// land before the last result, which is checked, not assumed.
	id := f.submit(f.writeSweep("resume", 8, "5e6"))
	waitFor(t, "a quarter of the tasks", 30*time.Second, func() bool {
		s, err := f.status(id)
		return err == nil && s.Done >= 4
	})
	co.signal(syscall.SIGKILL)
	<-co.done
	if n := len(readRunLog(t, logPath)["done"]); n == 16 {
		t.Fatal("all 16 tasks had run when the coordinator was killed: the tasks are too short for this test, raise their arrivals")
	}
	// Workers go on without a coordinator; results keep arriving.
	time.Sleep(1500 * time.Millisecond)
	f.start("coordinator2", "coordinator", "-ack-wait", "5s", "-reconcile", "1s")
	s := f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	if s.Done != 16 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	rl := readRunLog(t, logPath)
	checkExactlyOnce(t, f.records(id), rl, 16)
	for tid, ws := range rl["start"] {
		if len(ws) != 1 {
			t.Fatalf("task %s started %d times: %v", tid, len(ws), ws)
		}
	}
	f.checkOutputs(id)
	// Re-submitting the finished campaign publishes nothing.
	out, err := f.run("submit", f.writeSweep("resume", 8, "5e6"))
	if err != nil || !strings.Contains(out, "0 published") || !strings.Contains(out, "16 already done") {
		t.Fatalf("resubmit: %v\n%s", err, out)
	}
}

// TestWorkerKilledMidTask SIGKILLs a worker while it runs a task: the task
// is redelivered after AckWait and completed exactly once; tasks longer
// than AckWait are not redelivered while a live worker heartbeats them.
func TestWorkerKilledMidTask(t *testing.T) {
	f := newFarm(t)
	const ackWait = 1500 * time.Millisecond
	f.start("coordinator", "coordinator", "-ack-wait", ackWait.String())
	logPath := filepath.Join(f.dir, "runs.log")
	victim := f.start("victim", "worker", "-workers", "1", "-worker-name", "victim", "-run-log", logPath)
	// 4 tasks of ~2–2.5 s on a quiet machine (5e7 arrivals at 0.045 µs
	// each), longer than AckWait so that heartbeats matter, and long enough
	// that the kill lands mid-task. Both are checked below, not assumed: the
	// engine got faster before (8e6 arrivals went from 2.5 s to 0.4 s, and
	// the victim sometimes finished its task before the kill).
	id := f.submit(f.writeSweep("sigkill", 2, "5e7"))
	var killed string
	waitFor(t, "the victim to start a task", 30*time.Second, func() bool {
		if _, err := os.Stat(logPath); err != nil {
			return false
		}
		for tid, ws := range readRunLog(t, logPath)["start"] {
			if ws[0] == "victim" {
				killed = tid
				return true
			}
		}
		return false
	})
	time.Sleep(300 * time.Millisecond)
	victim.signal(syscall.SIGKILL)
	<-victim.done
	killedAt := time.Now()
	if ws := readRunLog(t, logPath)["done"][killed]; len(ws) != 0 {
		t.Fatalf("the victim finished task %s before the kill (%v): the tasks are too short for this test, raise their arrivals", killed, ws)
	}
	f.start("rescuer", "worker", "-workers", "2", "-worker-name", "rescuer", "-run-log", logPath)
	s := f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	if s.Done != 4 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	rl := readRunLog(t, logPath)
	recs := f.records(id)
	checkExactlyOnce(t, recs, rl, 4)
	if got := rl["start"][killed]; len(got) != 2 || got[0] != "victim" || got[1] != "rescuer" {
		t.Fatalf("killed task %s starts: %v, want [victim rescuer]", killed, got)
	}
	r := recs[killed]
	if r.Provenance.Worker != "rescuer" || r.Provenance.Attempt != 2 {
		t.Fatalf("killed task's record provenance %v, want worker rescuer, attempt 2", r.Provenance)
	}
	started := r.Provenance.Started
	if wait := started.Sub(killedAt); wait < ackWait/2 {
		t.Fatalf("redelivered %v after the kill, before AckWait %v", wait, ackWait)
	}
	// Heartbeats: the rescuer's tasks ran longer than AckWait without being
	// redelivered. That says something only if they did run longer.
	longest := 0.0
	for _, r := range recs {
		longest = max(longest, r.Provenance.WallSeconds)
	}
	if longest <= ackWait.Seconds() {
		t.Fatalf("the longest task ran %.2f s, not longer than AckWait %v: heartbeats untested, raise the tasks' arrivals", longest, ackWait)
	}
	t.Logf("longest task %.2f s, AckWait %v", longest, ackWait)
	for tid, ws := range rl["start"] {
		n := 0
		for _, w := range ws {
			if w == "rescuer" {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("task %s started %d times by the live worker: heartbeats failed", tid, n)
		}
		if w := recs[tid].Provenance.WallSeconds; tid != killed && w == 0 {
			t.Fatalf("no wall time in %v", recs[tid].Provenance)
		}
	}
}
