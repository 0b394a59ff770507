package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// pluginDir holds the fcfs plugin binary built by TestMain; crashyDir
// worker/pluginhost's test plugin (policies that crash, hang or fail);
// absurdDir the plugin returning impossible results (testdata).
var pluginDir, crashyDir, absurdDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "msjfarm-worker-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		pluginDir = filepath.Join(dir, "bin")
		if err := hosttest.Build(pluginDir, "./plugins/fcfs/cmd/msjfarm-policy-fcfs"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		crashyDir = filepath.Join(dir, "crashy")
		if err := hosttest.Build(crashyDir, "./worker/pluginhost/testdata/msjfarm-policy-crashy"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		absurdDir = filepath.Join(dir, "absurd")
		if err := hosttest.Build(absurdDir, "./worker/testdata/msjfarm-policy-absurd"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

func fcfsBinary() string { return filepath.Join(pluginDir, "msjfarm-policy-fcfs") }

func newRunner(t *testing.T, dirs []string, st storage.Store) *worker.PluginRunner {
	t.Helper()
	r := &worker.PluginRunner{Host: pluginhost.New(pluginhost.Config{MaxConcurrent: 2, Logger: hclog.NewNullLogger()}), Dirs: dirs, Store: st,
		CacheDir: filepath.Join(t.TempDir(), "cache"), Logf: t.Logf}
	t.Cleanup(func() { r.Close() })
	return r
}

func resultJSON(t *testing.T, r *sim.Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPluginRunnerMatchesInProcess: the same task gives the same result
// bytes in the plugin as in-process, with the plugin's provenance.
func TestPluginRunnerMatchesInProcess(t *testing.T) {
	r := newRunner(t, []string{pluginDir}, nil)
	ts := tasks(t, 3000, 0)
	sum, err := pluginhost.Checksum(fcfsBinary())
	if err != nil {
		t.Fatal(err)
	}
	for i := range ts {
		progress := 0
		out, err := r.Run(context.Background(), &ts[i], func(done, total int64) { progress++ })
		if err != nil {
			t.Fatal(err)
		}
		in, err := worker.InProcess{}.Run(context.Background(), &ts[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := resultJSON(t, out.Result), resultJSON(t, in.Result); !bytes.Equal(a, b) {
			t.Fatalf("task %s: plugin result\n%s\nin-process result\n%s", ts[i].ID, a, b)
		}
		p := out.Provenance
		if p.Runner != worker.RunnerPlugin || p.Plugin != "fcfs" || p.PluginVersion == "" || p.PluginSHA256 != sum ||
			p.Engine != sim.Version || progress == 0 {
			t.Fatalf("provenance %+v, %d progress calls", p, progress)
		}
	}
	if n := r.Host.Starts(); n != 1 {
		t.Fatalf("%d plugin processes started, want 1 (reused)", n)
	}
	// A policy no binary on this worker's path serves is given back for
	// another worker...
	bad := ts[0]
	bad.Policy = "msf"
	var ns *worker.NotServedError
	if _, err := r.Run(context.Background(), &bad, nil); !errors.As(err, &ns) || !strings.Contains(err.Error(), "no plugin binary serves policy msf") {
		t.Fatalf("err %v", err)
	}
	// ...unless there is a fallback.
	r.Fallback = worker.InProcess{}
	if out, err := r.Run(context.Background(), &bad, nil); err != nil || out.Provenance.Runner != worker.RunnerInProcess {
		t.Fatalf("fallback: %v", err)
	}
	// A context ending stops the replication; the error wraps the
	// context's, as InProcess's does.
	long := tasks(t, 1e8, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Run(ctx, &long[0], nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

// pin pins fcfs for campaign "camp" in st, as a coordinator machine with
// the binary on its search path does.
func pin(t *testing.T, st storage.Store) protocol.PluginPin {
	t.Helper()
	h := pluginhost.New(pluginhost.Config{})
	defer h.Close()
	reg := registry.New(context.Background(), registry.Options{Dirs: []string{pluginDir}, Host: h})
	pins, warn, err := worker.PinPlugins(context.Background(), st, "camp", []string{"fcfs"}, reg)
	// fcfs is built in: a binary on the search path that serves it does
	// so in its place, which is said (a binary of LCFS that called its
	// family "fcfs" became every comparison's baseline, silently).
	if err != nil || len(warn) != 1 || !strings.Contains(warn[0], "policy fcfs is msjfarm's built-in, but the plugin binary "+fcfsBinary()) {
		t.Fatalf("pin: %v %v", err, warn)
	}
	p := pins.Policies["fcfs"]
	sum, _ := pluginhost.Checksum(fcfsBinary())
	if p.SHA256 != sum || p.Key != storage.PluginKey("fcfs", sum) {
		t.Fatalf("pin %+v, binary sha256 %s", p, sum)
	}
	if info, err := st.Stat(context.Background(), p.Key); err != nil || info.Size == 0 {
		t.Fatalf("binary not uploaded: %v", err)
	}
	return p
}

// TestPluginRunnerFetchesPinned: a worker without the binary, or with a
// different one, fetches the pinned binary from storage, verifies it and
// runs it.
func TestPluginRunnerFetchesPinned(t *testing.T) {
	ctx := worker.WithCampaign(context.Background(), "camp")
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := pin(t, st)
	ts := tasks(t, 2000, 0)
	want, err := worker.InProcess{}.Run(ctx, &ts[0], nil)
	if err != nil {
		t.Fatal(err)
	}

	// A different local fcfs binary (same code, extra bytes: another sha256).
	other := t.TempDir()
	b, err := os.ReadFile(fcfsBinary())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "msjfarm-policy-fcfs"), append(b, "rebuilt"...), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, dirs := range map[string][]string{"no binary": {t.TempDir()}, "different binary": {other}} {
		r := newRunner(t, dirs, st)
		out, err := r.Run(ctx, &ts[0], nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.Provenance.PluginSHA256 != p.SHA256 || !bytes.Equal(resultJSON(t, out.Result), resultJSON(t, want.Result)) {
			t.Fatalf("%s: provenance %+v", name, out.Provenance)
		}
		cached := filepath.Join(r.CacheDir, "fcfs", p.SHA256, "msjfarm-policy-fcfs")
		if sum, err := pluginhost.Checksum(cached); err != nil || sum != p.SHA256 {
			t.Fatalf("%s: cached binary %s: %v %s", name, cached, err, sum)
		}
		// The cached copy is used from then on.
		if _, err := r.Run(ctx, &ts[1], nil); err != nil {
			t.Fatalf("%s: second run: %v", name, err)
		}
	}
	// A cached copy damaged on disk is refused by the host, dropped (a
	// retryable error) and fetched again by the next attempt.
	r0 := newRunner(t, []string{t.TempDir()}, st)
	if _, err := r0.Run(ctx, &ts[0], nil); err != nil {
		t.Fatal(err)
	}
	r0.Close()
	cached := filepath.Join(r0.CacheDir, "fcfs", p.SHA256, "msjfarm-policy-fcfs")
	if err := os.WriteFile(cached, append(b, 'x'), 0o755); err != nil {
		t.Fatal(err)
	}
	r1 := newRunner(t, []string{t.TempDir()}, st)
	r1.CacheDir = r0.CacheDir
	var perm *worker.PermanentError
	if _, err := r1.Run(ctx, &ts[0], nil); !errors.Is(err, pluginhost.ErrChecksum) || errors.As(err, &perm) {
		t.Fatalf("damaged cache: %v", err)
	}
	if out, err := r1.Run(ctx, &ts[0], nil); err != nil || out.Provenance.PluginSHA256 != p.SHA256 {
		t.Fatalf("after a damaged cache: %v", err)
	}
	// A campaign without pins uses the local binary.
	r := newRunner(t, []string{other}, st)
	out, err := r.Run(worker.WithCampaign(context.Background(), "unpinned"), &ts[0], nil)
	if err != nil || out.Provenance.PluginSHA256 == p.SHA256 {
		t.Fatalf("unpinned: %v %+v", err, out)
	}
}

// TestPluginRunnerRejectsTampered: a binary in storage whose sha256 is not
// the pinned one is refused, permanently, naming both sums.
func TestPluginRunnerRejectsTampered(t *testing.T) {
	ctx := worker.WithCampaign(context.Background(), "camp")
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := pin(t, st)
	b, err := st.Get(ctx, p.Key)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := st.Put(ctx, p.Key, b); err != nil {
		t.Fatal(err)
	}
	bad, _ := pluginhost.Checksum(writeTemp(t, b))
	r := newRunner(t, []string{t.TempDir()}, st)
	ts := tasks(t, 2000, 0)
	_, err = r.Run(ctx, &ts[0], nil)
	var perm *worker.PermanentError
	if !errors.Is(err, pluginhost.ErrChecksum) || !errors.As(err, &perm) ||
		!strings.Contains(err.Error(), p.SHA256) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("err %v (want a permanent checksum error naming %s and %s)", err, bad, p.SHA256)
	}
	if ents, _ := filepath.Glob(filepath.Join(r.CacheDir, "fcfs", "*", "*")); len(ents) != 0 {
		t.Fatalf("tampered binary left in the cache: %v", ents)
	}
	if r.Host.Starts() != 0 {
		t.Fatal("a process was started")
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChooseRunner: the -runner rules.
func TestChooseRunner(t *testing.T) {
	h := pluginhost.New(pluginhost.Config{})
	defer h.Close()
	ix := registry.New(context.Background(), registry.Options{Dirs: []string{pluginDir}, Host: h})
	ts := tasks(t, 100, 0)
	for _, c := range []struct {
		mode   string
		tasks  bool // fcfs tasks (else msf)
		plugin bool
		err    bool
	}{
		{"auto", true, true, false},
		{"auto", false, false, false},
		{"plugin", true, true, false},
		{"plugin", false, false, true},
		{"inprocess", true, false, false},
		{"bogus", true, false, true},
	} {
		tk := ts
		if !c.tasks {
			tk = append(tk[:0:0], ts...)
			tk[0].Policy = "msf"
		}
		plugin, why, err := worker.ChooseRunner(c.mode, tk, ix)
		if plugin != c.plugin || (err != nil) != c.err {
			t.Errorf("%s fcfs-only=%v: plugin %v (%s), err %v", c.mode, c.tasks, plugin, why, err)
		}
	}
}

// TestWorkerFetchesPinnedPlugin: a worker on a machine without the
// binary runs a pinned campaign's tasks from the queue with the binary it
// fetches from storage; results name the plugin runner and the pinned
// sha256; stopping the worker stops the plugin processes.
func TestWorkerFetchesPinnedPlugin(t *testing.T) {
	ts := tasks(t, 2000, 10*time.Second)
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 2, AckWait: 5 * time.Second}, ts)
	ctx := context.Background()
	p := pin(t, st)
	r := newRunner(t, []string{t.TempDir()}, st)
	wctx, cancel := context.WithCancel(ctx)
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: 2, FetchWait: 100 * time.Millisecond,
		Runner: r, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for w.Stats.Done.Load()+w.Stats.Failed.Load() < int64(len(ts)) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, tk := range ts {
		rec, _, err := record.Read(ctx, st, "camp", tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		pv := rec.Provenance
		if rec.Failed() || pv.Runner != "plugin" || pv.Plugin != "fcfs" || pv.PluginSHA256 != p.SHA256 {
			t.Fatalf("record %s: error %q, provenance %v", tk.ID, rec.Error, pv)
		}
	}
	// The worker closed its runner: no process is left, and the host
	// refuses new work.
	if _, err := r.Run(worker.WithCampaign(ctx, "camp"), &ts[0], nil); !errors.Is(err, pluginhost.ErrClosed) {
		t.Fatalf("after the worker stopped: %v", err)
	}
}

// TestPluginRunnerErrors: plugin failures become task errors, permanent or
// retryable as the host classifies them.
func TestPluginRunnerErrors(t *testing.T) {
	r := newRunner(t, []string{crashyDir}, nil)
	base := tasks(t, 2000, 0)[0]
	for _, c := range []struct {
		policy    string
		params    map[string]any
		deadline  time.Duration
		kind      pluginhost.Kind
		permanent bool
	}{
		{"crash", nil, 0, pluginhost.ErrCrash, false},
		{"hang", nil, 300 * time.Millisecond, pluginhost.ErrDeadline, false},
		{"double-start", nil, 0, pluginhost.ErrPolicy, true},
		{"crash", map[string]any{"after": -1}, 0, pluginhost.ErrInvalid, true},
	} {
		tk := base
		tk.Policy, tk.Params, tk.Run.Deadline = c.policy, c.params, c.deadline
		_, err := r.Run(context.Background(), &tk, nil)
		var perm *worker.PermanentError
		if !errors.Is(err, c.kind) || errors.As(err, &perm) != c.permanent {
			t.Errorf("%s %v: err %v (want %s, permanent %v)", c.policy, c.params, err, c.kind, c.permanent)
		}
	}
}

// crashyProcs lists the live processes running a binary under crashyDir.
func crashyProcs() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte(crashyDir)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if _, rest, _ := strings.Cut(string(st), ") "); strings.HasPrefix(rest, "Z") {
				continue
			}
		}
		out = append(out, e.Name())
	}
	return out
}

// TestWorkerHangTwiceIsPermanent: a replication that spins past its
// run.deadline (the worker's deadline fires first; the host's grace then
// kills the plugin) is retried once and fails permanently on its second
// overrun, well before max-deliver; the healthy tasks of the same policy
// queued behind it on the worker's one slot all succeed; and no plugin
// process is left once the worker stops.
func TestWorkerHangTwiceIsPermanent(t *testing.T) {
	base := tasks(t, 5000, time.Second)[0]
	hang := base
	hang.Policy, hang.Params = "hang", map[string]any{"after": 10}
	hang.ID = sweep.TaskID(hang)
	ts := []sweep.Task{hang}
	for i := range 3 {
		ok := base
		ok.Policy, ok.Params, ok.Seed = "hang", map[string]any{"after": 1000000}, uint64(100+i)
		ok.Run.Arrivals = 2000
		ok.ID = sweep.TaskID(ok)
		ts = append(ts, ok)
	}
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, ts)
	ctx := context.Background()
	w := runPluginWorker(t, nc, st, crashyDir, 1, len(ts))
	if w.Stats.Done.Load() != 3 || w.Stats.Failed.Load() != 1 || w.Stats.Retried.Load() != 1 {
		t.Fatalf("done %d failed %d retried %d; want 3, 1, 1", w.Stats.Done.Load(), w.Stats.Failed.Load(), w.Stats.Retried.Load())
	}
	rec, _, err := record.Read(ctx, st, "camp", hang.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Failed() || !strings.Contains(rec.Error, "attempt 2 of 5") || !strings.Contains(rec.Error, "exceeded run.deadline on 2 attempts") {
		t.Fatalf("hung task's record: %q", rec.Error)
	}
	for _, tk := range ts[1:] {
		rec, _, err := record.Read(ctx, st, "camp", tk.ID)
		if err != nil || rec.Failed() {
			t.Fatalf("healthy task %s: %v %q", tk.ID, err, rec.Error)
		}
	}
	if ps := crashyProcs(); len(ps) > 0 {
		t.Fatalf("plugin processes left after the worker stopped: %v", ps)
	}
}

// A task whose plugin process crashes the same way (a panic: exit status
// 2) on two attempts in a row fails permanently on its second attempt
// rather than after max-deliver (5) attempts: the seed reproduces the
// crash. Two such tasks on a worker of two slots may crash one shared
// process (which of them crashed it is not known); each is then retried
// in a process of its own, crashes alone the same way, and fails. The healthy
// tasks of the same plugin beside them succeed, retried if a crash took
// their process.
func TestWorkerCrashTwiceIsPermanent(t *testing.T) {
	base := tasks(t, 5000, time.Second)[0]
	var ts []sweep.Task
	for i := range 4 {
		tk := base
		tk.Policy, tk.Params, tk.Seed = "crash", map[string]any{"after": 1000000}, uint64(100+i)
		if i < 2 {
			tk.Params = map[string]any{"after": 10}
		}
		tk.ID = sweep.TaskID(tk)
		ts = append(ts, tk)
	}
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, ts)
	w := runPluginWorker(t, nc, st, crashyDir, 2, len(ts))
	if w.Stats.Done.Load() != 2 || w.Stats.Failed.Load() != 2 {
		t.Fatalf("done %d failed %d; want 2, 2", w.Stats.Done.Load(), w.Stats.Failed.Load())
	}
	for i, tk := range ts[:2] {
		rec, _, err := record.Read(context.Background(), st, "camp", tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"attempt 2 of 5", "crashed the same way (exit status 2: panic: crashy: deliberate crash at arrival 10) on 2 attempts in a row"} {
			if !rec.Failed() || !strings.Contains(rec.Error, want) {
				t.Fatalf("crashing task %d's record does not say %q: %q", i, want, rec.Error)
			}
		}
	}
}

// A policy that panics with a pointer crashes at another address in
// each process (the runtime prints the pointer); the seed's crash is the
// same one all the same, and fails the task on its second attempt
// (sameCrash). With the lines compared as written it was retried to
// max-deliver.
func TestWorkerCrashAtAnotherAddressIsPermanent(t *testing.T) {
	tk := tasks(t, 5000, time.Second)[0]
	tk.Policy, tk.Params, tk.Seed = "crash-pointer", map[string]any{"after": 10}, 100
	tk.ID = sweep.TaskID(tk)
	nc, _, st := queued(t, protocol.Layout{MaxDeliver: 5, AckWait: 5 * time.Second}, []sweep.Task{tk})
	w := runPluginWorker(t, nc, st, crashyDir, 1, 1)
	if w.Stats.Failed.Load() != 1 {
		t.Fatalf("failed %d; want 1", w.Stats.Failed.Load())
	}
	rec, _, err := record.Read(context.Background(), st, "camp", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"attempt 2 of 5", "crashed the same way (exit status 2: panic: (*main.crashState) 0x"} {
		if !strings.Contains(rec.Error, want) {
			t.Fatalf("the record does not say %q: %q", want, rec.Error)
		}
	}
}

// runPluginWorker runs a worker with conc slots and a plugin runner over
// the binaries in dir until n tasks are done or failed (or 120 s pass),
// then stops it.
func runPluginWorker(t *testing.T, nc *nats.Conn, st storage.Store, dir string, conc, n int) *worker.Worker {
	t.Helper()
	return runPluginWorkerEnv(t, nc, st, dir, nil, conc, n)
}

// runPluginWorkerEnv is runPluginWorker with env added to the plugins'
// environment.
func runPluginWorkerEnv(t *testing.T, nc *nats.Conn, st storage.Store, dir string, env []string, conc, n int) *worker.Worker {
	t.Helper()
	r := &worker.PluginRunner{Host: pluginhost.New(pluginhost.Config{MaxConcurrent: conc, Grace: time.Second, Logger: hclog.NewNullLogger(), Env: env}),
		Dirs: []string{dir}, Store: st, CacheDir: filepath.Join(t.TempDir(), "cache"), Logf: t.Logf}
	return runWorkerWith(t, nc, st, r, conc, n)
}

// runWorkerWith runs a worker with runner r (closed at the test's end)
// until n tasks are done or failed.
func runWorkerWith(t *testing.T, nc *nats.Conn, st storage.Store, r *worker.PluginRunner, conc, n int) *worker.Worker {
	t.Helper()
	t.Cleanup(func() { r.Close() })
	wctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(wctx, worker.Options{Conn: nc, Store: st, Concurrency: conc, FetchWait: 100 * time.Millisecond,
		RetryDelay: 10 * time.Millisecond, Runner: r, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	deadline := time.Now().Add(120 * time.Second)
	for w.Stats.Done.Load()+w.Stats.Failed.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return w
}
