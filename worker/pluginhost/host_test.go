package pluginhost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// quiet is a host logger for tests that provoke failures on purpose.
var quiet = hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})

func newHost(t *testing.T, cfg pluginhost.Config) *pluginhost.Host {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	h := pluginhost.New(cfg)
	t.Cleanup(func() { h.Close() })
	return h
}

// request is a replication of the four-class workload (k = 15) at load 0.5.
func request(t testing.TB, policy string, arrivals int64, seed uint64) *wire.RunRequest {
	t.Helper()
	spec, err := workload.Named("four-class")
	if err != nil {
		t.Fatal(err)
	}
	unit, err := spec.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	return &wire.RunRequest{
		Policy: policy, Workload: spec, ArrivalRate: 0.5 / unit.Load(),
		Run: wire.Run{Seed: seed, RunConfig: wire.RunConfig{Warmup: arrivals / 10, Arrivals: arrivals}},
	}
}

func kindOf(err error) pluginhost.Kind {
	var e *pluginhost.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

func wantKind(t *testing.T, err error, k pluginhost.Kind, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a %q error, got none", k)
	}
	if !errors.Is(err, k) {
		t.Fatalf("want a %q error, got %q: %v", k, kindOf(err), err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("error does not mention %q:\n%v", c, err)
		}
	}
}

// The plugin's result is byte for byte the in-process result, the same
// request twice gives identical bytes, and one process serves every call.
func TestRunMatchesInProcess(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 2})
	b := pluginhost.Binary{Path: binary("fcfs")}
	req := request(t, "fcfs", 20000, 7)

	var progress []int64
	out, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{
		Progress:         func(done, total int64) { progress = append(progress, done) },
		ProgressInterval: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	w, err := req.BuildWorkload()
	if err != nil {
		t.Fatal(err)
	}
	local, err := fcfs.Policies[0].Run(w, nil, req.Run.Config())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(local)
	if !bytes.Equal(out.ResultJSON, want) {
		t.Fatalf("plugin result differs from the in-process one:\nplugin  %s\nprocess %s", out.ResultJSON, want)
	}
	again, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.ResultJSON, out.ResultJSON) {
		t.Fatal("the same request twice gave different result bytes")
	}
	if out.Result.Overall.Count != req.Run.Arrivals {
		t.Errorf("measured %d jobs, want %d", out.Result.Overall.Count, req.Run.Arrivals)
	}
	total := req.Run.Warmup + req.Run.Arrivals
	if len(progress) == 0 || progress[len(progress)-1] != total || out.LastOf != total {
		t.Errorf("progress %v (last of %d), want it to end at %d", progress, out.LastOf, total)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Fatalf("progress went backwards: %v", progress)
		}
	}
	sum, _ := pluginhost.Checksum(b.Path)
	if out.Plugin.SHA256 != sum || out.Plugin.Name != "fcfs" || out.Plugin.Engine != sim.Version {
		t.Errorf("record %+v, want sha256 %s, name fcfs, engine %s", out.Plugin, sum, sim.Version)
	}
	if h.Starts() != 1 {
		t.Errorf("%d processes started, want 1 (reuse)", h.Starts())
	}
}

// Many concurrent replications through one process with a slot limit give
// the same bytes as sequential ones, and the limit is enforced.
func TestConcurrentRuns(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 2})
	b := pluginhost.Binary{Path: binary("fcfs")}
	const n = 6
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := h.Run(context.Background(), b, request(t, "fcfs", 5000, uint64(i%3)), pluginhost.RunOptions{})
			if err == nil {
				got[i] = out.ResultJSON
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if !bytes.Equal(got[i], got[i%3]) {
			t.Errorf("run %d (seed %d) differs from run %d with the same seed", i, i%3, i%3)
		}
	}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if in.MaxConcurrent != 2 || h.Starts() != 1 {
		t.Errorf("plugin reports max_concurrent %d, %d starts; want 2 and 1", in.MaxConcurrent, h.Starts())
	}
}

// A requested decision trace satisfies the model's invariants.
func TestTrace(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	req := request(t, "fcfs", 2000, 3)
	out, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("fcfs")}, req, pluginhost.RunOptions{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := req.BuildWorkload()
	if len(out.Trace) < 3*int(req.Run.Warmup+req.Run.Arrivals) {
		t.Fatalf("trace has %d events, want at least arrive+start+complete per job", len(out.Trace))
	}
	simtest.CheckInvariants(t, w, &fcfs.FCFS{}, out.Trace, false)
	if _, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("fcfs")}, req, pluginhost.RunOptions{Trace: true, MaxTraceEvents: 100}); !errors.Is(err, pluginhost.ErrTraceLimit) {
		t.Errorf("trace over its limit: want ErrTraceLimit, got %v", err)
	}
}

// A plugin that crashes mid-run becomes a task error carrying its stderr;
// the host survives and the next call starts a fresh process.
func TestCrash(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("crashy")}
	req := request(t, "crash", 5000, 1)
	req.Params = map[string]any{"after": 1000}
	_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrCrash, "exited during the replication (exit status 2)", "crashy: deliberate crash at arrival 1000", "goroutine")
	if !err.(*pluginhost.Error).Retryable() {
		t.Error("a crash should be retryable")
	}
	const how = "exit status 2: panic: crashy: deliberate crash at arrival 1000"
	if c, ok := pluginhost.CrashOf(err); !ok || c.Shared || !c.Line || c.How != how {
		t.Errorf("CrashOf = %+v, %v; want %q with its line, not shared (the process ran this replication alone)", c, ok, how)
	}
	out, err := h.Run(context.Background(), b, request(t, "fcfs", 2000, 1), pluginhost.RunOptions{})
	if err != nil {
		t.Fatalf("after the crash: %v", err)
	}
	if out.Result.Overall.Count != 2000 || h.Starts() != 2 {
		t.Errorf("after the crash: %d jobs, %d starts; want 2000 and 2", out.Result.Overall.Count, h.Starts())
	}
}

// A crash while the process runs two replications is each one's crash,
// Shared: which of them crashed it is not known, so neither is taken for
// a crash its seed reproduces, and the message says so.
func TestCrashShared(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 2})
	b := pluginhost.Binary{Path: binary("crashy")}
	running := make(chan struct{})
	var once sync.Once
	slowErr := make(chan error, 1)
	go func() {
		// 1 ms an arrival: 20 s unless the crash ends it.
		_, err := h.Run(context.Background(), b, request(t, "slow", 20000, 1), pluginhost.RunOptions{
			ProgressInterval: time.Millisecond,
			Progress:         func(done, _ int64) { once.Do(func() { close(running) }) }})
		slowErr <- err
	}()
	<-running
	// The crash comes after the plugin has reported progress: a call on a
	// reused process that dies before it heard anything is retried once on
	// a fresh process, where it would crash alone.
	req := request(t, "crash", 2000000, 2)
	req.Params = map[string]any{"after": 1000000}
	_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{
		ProgressInterval: time.Millisecond, Progress: func(int64, int64) {}})
	for _, err := range []error{err, <-slowErr} {
		wantKind(t, err, pluginhost.ErrCrash, "(exit status 2) while it ran 2 replications; which of them crashed it is not known")
		if c, ok := pluginhost.CrashOf(err); !ok || !c.Shared {
			t.Errorf("a crash of a process running two replications: CrashOf %+v, %v; want it shared", c, ok)
		}
	}
}

// RunOptions.Alone runs a replication in a process of its own, started
// for the call and stopped after it: its crash is its own (not Shared),
// and the replication running meanwhile in the shared process is not
// touched by it.
func TestCrashAlone(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 2})
	b := pluginhost.Binary{Path: binary("crashy")}
	running := make(chan struct{})
	var once sync.Once
	type result struct {
		out *pluginhost.Outcome
		err error
	}
	slow := make(chan result, 1)
	go func() {
		// 1 ms an arrival: about 2 s.
		out, err := h.Run(context.Background(), b, request(t, "slow", 2000, 1), pluginhost.RunOptions{
			ProgressInterval: time.Millisecond,
			Progress:         func(done, _ int64) { once.Do(func() { close(running) }) }})
		slow <- result{out, err}
	}()
	<-running
	req := request(t, "crash", 2000000, 2)
	req.Params = map[string]any{"after": 1000000}
	_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{Alone: true,
		ProgressInterval: time.Millisecond, Progress: func(int64, int64) {}})
	wantKind(t, err, pluginhost.ErrCrash, "(exit status 2)")
	if c, ok := pluginhost.CrashOf(err); !ok || c.Shared || !strings.Contains(c.How, "deliberate crash at arrival 1000000") {
		t.Errorf("a crash alone: CrashOf %+v, %v; want its crash line, not shared", c, ok)
	}
	if r := <-slow; r.err != nil || r.out.Result.Overall.Count != 2000 {
		t.Fatalf("the replication in the shared process: %v", r.err)
	}
	if h.Starts() != 2 {
		t.Errorf("%d processes started, want 2 (the shared one and the crash's own)", h.Starts())
	}
	// The process of its own is gone once its call is over, and the next
	// call goes to the shared one.
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 3), pluginhost.RunOptions{}); err != nil || h.Starts() != 2 {
		t.Fatalf("after the crash alone: %v, %d starts (want 2)", err, h.Starts())
	}
}

// A plugin that writes to its fd 1 — a C library's printf, which
// go-plugin's redirection of os.Stdout does not catch — a line of 1 MiB
// and then 1 MiB more in the middle of a replication finishes it. The
// host's reader of that pipe (go-plugin's line scanner) stopped at the
// first line over 64 KiB, so the plugin blocked in its next write, and the
// run hung until the stall watch killed it (here 30 s, so that the old
// behaviour fails as ErrStalled; the default is minutes).
func TestStdoutLongLine(t *testing.T) {
	h := newHost(t, pluginhost.Config{Stall: 30 * time.Second})
	b := pluginhost.Binary{Path: binary("crashy")}
	req := request(t, "stdout", 5000, 1)
	req.Params = map[string]any{"after": 100}
	out, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	if err != nil {
		t.Fatalf("a plugin writing a long line to fd 1: %v", err)
	}
	if out.Result.Overall.Count != 5000 {
		t.Errorf("%d jobs measured, want 5000", out.Result.Overall.Count)
	}
	// The same process writes it all again in the next replication.
	if _, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{}); err != nil || h.Starts() != 1 {
		t.Fatalf("the second replication: %v, %d starts (want 1)", err, h.Starts())
	}
}

// A policy error caught by the engine is a failed replication, not a crash:
// the process lives on.
func TestPolicyError(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("crashy")}
	req := request(t, "double-start", 2000, 1)
	_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrPolicy, "started while already running")
	if err.(*pluginhost.Error).Retryable() {
		t.Error("a policy error should not be retryable")
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 1 {
		t.Fatalf("after a policy error: %v, %d starts (want the same process)", err, h.Starts())
	}
}

// A policy that hangs past the deadline (and so never reaches the engine's
// progress callback where the plugin would abandon it) gets its process
// killed; the host reports the deadline and carries on.
func TestHang(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("crashy")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	req := request(t, "hang", 5000, 1)
	req.Params = map[string]any{"after": 10}
	t0 := time.Now()
	// The deadline leaves room for a starved machine: the plugin must reach
	// the hanging arrival before it (else it abandons the run itself).
	_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{Deadline: 3 * time.Second, Grace: 200 * time.Millisecond})
	took := time.Since(t0)
	wantKind(t, err, pluginhost.ErrDeadline, "deadline of 3s", "killed")
	if took > 8*time.Second {
		t.Errorf("the hung call took %v to fail", took)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(in.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("hung plugin process %d still alive", in.PID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 2 {
		t.Fatalf("after the hang: %v, %d starts (want a fresh process)", err, h.Starts())
	}
}

// A slow but well-behaved policy is abandoned by the plugin itself at the
// deadline; its process is kept.
func TestDeadlineHonoured(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("crashy")}
	_, err := h.Run(context.Background(), b, request(t, "slow", 20000, 1), pluginhost.RunOptions{Deadline: 200 * time.Millisecond, Grace: 5 * time.Second})
	wantKind(t, err, pluginhost.ErrDeadline, "abandoned")
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 1 {
		t.Fatalf("after an honoured deadline: %v, %d starts (want the same process)", err, h.Starts())
	}
	// The caller's own deadline is reported as such; the plugin honoured
	// it too, so its process is kept.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err = h.Run(ctx, b, request(t, "slow", 20000, 1), pluginhost.RunOptions{Grace: 5 * time.Second})
	wantKind(t, err, pluginhost.ErrCanceled)
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 1 {
		t.Fatalf("after an honoured caller deadline: %v, %d starts (want the same process)", err, h.Starts())
	}
}

// A binary that is not the one pinned is refused before it runs; the error
// names both checksums.
func TestTamperedBinary(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	orig := binary("fcfs")
	pinned, err := pluginhost.Checksum(orig)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "msjfarm-policy-fcfs")
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tampered, append(data, "tampered"...), 0o755); err != nil {
		t.Fatal(err)
	}
	actual, _ := pluginhost.Checksum(tampered)
	_, err = h.Run(context.Background(), pluginhost.Binary{Path: tampered, SHA256: pinned}, request(t, "fcfs", 100, 1), pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrChecksum, pinned, actual)
	if h.Starts() != 1 || kindOf(err) == pluginhost.ErrStart {
		t.Errorf("starts %d", h.Starts())
	}
	// The genuine binary with the same pin runs.
	out, err := h.Run(context.Background(), pluginhost.Binary{Path: orig, SHA256: strings.ToUpper(pinned)}, request(t, "fcfs", 100, 1), pluginhost.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Plugin.SHA256 != pinned {
		t.Errorf("recorded sha256 %s, want %s", out.Plugin.SHA256, pinned)
	}
	_, err = h.Info(context.Background(), pluginhost.Binary{Path: orig, SHA256: "abc"})
	wantKind(t, err, pluginhost.ErrChecksum, "64 hex digits")
}

// A plugin of another protocol version is refused with both versions named,
// whether the mismatch shows in the handshake or in Info.
func TestProtocolMismatch(t *testing.T) {
	for _, mode := range []string{"handshake", "info"} {
		t.Run(mode, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Env: []string{"BADPROTO_MODE=" + mode}})
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("badproto")}, request(t, "fcfs", 100, 1), pluginhost.RunOptions{})
			wantKind(t, err, pluginhost.ErrProtocol, "protocol version 2", "host speaks version 1")
		})
	}
	// The same binary speaking the right version works.
	h := newHost(t, pluginhost.Config{})
	if _, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("badproto")}, request(t, "fcfs", 100, 1), pluginhost.RunOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Parameters outside the schema are rejected before anything runs: by the
// host from the plugin's Info, and by the plugin itself if the host is
// bypassed. The test plugin's Init leaves a mark in a file if it ever runs.
func TestParamsRejectedBeforeRunning(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	// Sandbox off: confined, the plugin could not write its marker, and
	// the test would pass without proving anything.
	h := newHost(t, pluginhost.Config{Env: []string{"CRASHY_MARKER=" + marker}, Sandbox: sandboxOff(t)})
	b := pluginhost.Binary{Path: binary("crashy")}
	cases := []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{"after": -5}, []string{`"after"`, ">= 1"}},
		{map[string]any{"after": 2.5}, []string{`"after"`, "integer"}},
		{map[string]any{"after": "ten"}, []string{`"after"`, "number"}},
		{map[string]any{"bogus": 1}, []string{`"bogus"`, "known: after"}},
	}
	for _, c := range cases {
		req := request(t, "crash", 1000, 1)
		req.Params = c.params
		_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
		wantKind(t, err, pluginhost.ErrInvalid, c.want...)
		if err := h.Validate(context.Background(), b, req); !errors.Is(err, pluginhost.ErrInvalid) {
			t.Errorf("Validate(%v): %v", c.params, err)
		}
		_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{SkipValidation: true})
		wantKind(t, err, pluginhost.ErrInvalid, append(c.want, "rejected by the plugin")...)
	}
	req := request(t, "no-such-policy", 1000, 1)
	_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrInvalid, "unknown policy", "crash, hang")
	req = request(t, "fcfs", 1000, 1)
	req.Run.Arrivals = 0
	_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrInvalid, "arrivals: must be >= 1")
	req = request(t, "fcfs", 1000, 1)
	req.Workload.Classes[0].Need = 99
	_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{SkipValidation: true})
	wantKind(t, err, pluginhost.ErrInvalid, "exceeds the 15 servers")
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		b, _ := os.ReadFile(marker)
		t.Fatalf("a policy ran despite rejected parameters: %q", b)
	}
	// A valid request does run (the marker works).
	req = request(t, "crash", 1000, 1)
	req.Params = map[string]any{"after": 1e6}
	if _, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(marker); string(got) != "init crash\n" {
		t.Errorf("marker %q, want one init", got)
	}
}

// Missing binaries and non-plugins fail to start with a clear error.
func TestStartFailures(t *testing.T) {
	h := newHost(t, pluginhost.Config{StartTimeout: 5 * time.Second})
	_, err := h.Info(context.Background(), pluginhost.Binary{Path: filepath.Join(t.TempDir(), "msjfarm-policy-nothing")})
	wantKind(t, err, pluginhost.ErrStart, "no such file")
	script := filepath.Join(t.TempDir(), "msjfarm-policy-script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'not a plugin at all' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = h.Info(context.Background(), pluginhost.Binary{Path: script})
	if sandbox.Default().Mode() == sandbox.Off {
		wantKind(t, err, pluginhost.ErrStart, "not a plugin at all")
	} else {
		wantKind(t, err, pluginhost.ErrStart, "is a script", "--plugin-sandbox off")
	}
	off := newHost(t, pluginhost.Config{StartTimeout: 5 * time.Second, Sandbox: sandboxOff(t)})
	_, err = off.Info(context.Background(), pluginhost.Binary{Path: script})
	wantKind(t, err, pluginhost.ErrStart, "not a plugin at all")

	// Output where the handshake is due: 100 kB without a newline (go-plugin
	// said "Unrecognized remote plugin message: " and nothing more), a
	// line that is not a handshake, or nothing at all. Each is said, the
	// plugin's bytes clipped.
	for _, c := range []struct{ sh, want string }{
		{`head -c 100000 /dev/zero | tr '\0' x; sleep 30`, `is not a go-plugin handshake: "xxxxxxxx`},
		{`echo 'hello from a plugin'; sleep 30`, `is not a go-plugin handshake: "hello from a plugin"`},
		{`exec >&-; sleep 30`, "wrote no handshake line"},
	} {
		junk := filepath.Join(t.TempDir(), "msjfarm-policy-junk")
		if err := os.WriteFile(junk, []byte("#!/bin/sh\n"+c.sh+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		_, err = off.Info(context.Background(), pluginhost.Binary{Path: junk})
		wantKind(t, err, pluginhost.ErrStart, c.want)
		if strings.Contains(err.Error(), strings.Repeat("x", 100)) {
			t.Errorf("the plugin's output is not clipped: %.300s", err)
		}
		t.Logf("%s: %v (%v)", c.sh, err, time.Since(t0).Round(time.Millisecond))
	}
}

// A policy written outside this repository, in its own module, runs end to
// end through the host.
func TestThirdPartyPlugin(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("randomfit")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "randomfit" || len(in.Policies) != 1 || in.Policies[0].Name != "random-fit" || in.Engine != sim.Version {
		t.Fatalf("info %+v", in)
	}
	if err := sim.ValidateSchema(in.Policies[0].Params); err != nil {
		t.Fatal(err)
	}
	req := request(t, "random-fit", 20000, 5)
	out, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := req.BuildWorkload()
	simtest.CheckInvariants(t, w, &fcfs.FCFS{}, out.Trace, false)
	if r := out.Result; r.Unstable || r.Overall.Count != req.Run.Arrivals {
		t.Fatalf("random-fit at load 0.5: %v", r)
	}
	// Its randomness is the policy stream: reproducible.
	again, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	if err != nil || !bytes.Equal(again.ResultJSON, out.ResultJSON) {
		t.Fatalf("random-fit not reproducible: %v", err)
	}
	req.Params = map[string]any{"greedy-oldest": 1.5}
	_, err = h.Run(context.Background(), b, req, pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrInvalid, "greedy-oldest", "<= 1")
}

func TestDiscover(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		dir, name string
		mode      os.FileMode
	}{
		{a, "msjfarm-policy-x", 0o755}, {b, "msjfarm-policy-x", 0o755}, {b, "msjfarm-policy-y", 0o755},
		{b, "msjfarm-policy-notexec", 0o644}, {b, "other-tool", 0o755}, {b, "msjfarm-policy-", 0o755},
	} {
		if err := os.WriteFile(filepath.Join(f.dir, f.name), nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(pluginhost.EnvPath, b+string(os.PathListSeparator)+a)
	dirs := pluginhost.SearchPath(a, nil)
	if len(dirs) < 2 || dirs[0] != a || dirs[1] != b {
		t.Fatalf("search path %v: want the flag's %s, then $%s's %s (deduplicated)", dirs, a, pluginhost.EnvPath, b)
	}
	found := pluginhost.Discover(dirs)
	if len(found) != 2 || found[0].Family != "x" || found[0].Path != filepath.Join(a, "msjfarm-policy-x") ||
		len(found[0].Shadowed) != 1 || found[1].Family != "y" {
		t.Fatalf("discovered %+v", found)
	}
	for _, arg := range []string{"y", "msjfarm-policy-y"} {
		if p, err := pluginhost.Lookup(dirs, arg); err != nil || p != filepath.Join(b, "msjfarm-policy-y") {
			t.Errorf("Lookup(%q) = %q, %v", arg, p, err)
		}
	}
	if _, err := pluginhost.Lookup(dirs, "z"); err == nil || !strings.Contains(err.Error(), pluginhost.EnvPath) {
		t.Errorf("Lookup of a missing family: %v", err)
	}
	if _, err := pluginhost.Lookup(dirs, filepath.Join(b, "msjfarm-policy-notexec")); err == nil {
		t.Error("Lookup accepted a non-executable file")
	}
}

// Close kills the processes; later calls fail cleanly.
func TestClose(t *testing.T) {
	h := pluginhost.New(pluginhost.Config{Logger: quiet})
	b := pluginhost.Binary{Path: binary("fcfs")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if alive(in.PID) {
		t.Errorf("process %d alive after Close", in.PID)
	}
	_, err = h.Run(context.Background(), b, request(t, "fcfs", 100, 1), pluginhost.RunOptions{})
	wantKind(t, err, pluginhost.ErrClosed)
}

// A process that died between tasks is replaced without the caller seeing
// an error.
func TestProcessDiesBetweenTasks(t *testing.T) {
	h := newHost(t, pluginhost.Config{})
	b := pluginhost.Binary{Path: binary("fcfs")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	// Killed while idle; the host may or may not have noticed the exit
	// when the next call comes (either way: no error).
	if err := syscall.Kill(in.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if h.Starts() != 2 {
		t.Errorf("%d starts, want 2", h.Starts())
	}
}

// A wedged process (stopped: alive but unresponsive) fails its health check
// and is replaced; it is killed with SIGKILL since it cannot shut down in
// order, and Close does not wait for it for ever.
func TestWedgedProcess(t *testing.T) {
	h := pluginhost.New(pluginhost.Config{Logger: quiet, HealthAfter: time.Millisecond, HealthTimeout: 200 * time.Millisecond, KillTimeout: 300 * time.Millisecond})
	b := pluginhost.Binary{Path: binary("fcfs")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(in.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if h.Starts() != 2 {
		t.Errorf("%d starts, want 2", h.Starts())
	}
	done := make(chan struct{})
	go func() { h.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on a wedged plugin process")
	}
	if alive(in.PID) {
		t.Errorf("wedged process %d still alive", in.PID)
	}
}

// orphanHelper is a host process for TestOrphanedPluginExits: it starts the
// plugin, prints its pid and waits to be killed.
func orphanHelper(path string) {
	h := pluginhost.New(pluginhost.Config{Logger: quiet})
	in, err := h.Info(context.Background(), pluginhost.Binary{Path: path})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(in.PID)
	select {}
}

// A plugin whose host is killed (no orderly shutdown) exits by itself.
func TestOrphanedPluginExits(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HOSTTEST_ORPHAN_PLUGIN="+binary("fcfs"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(stdout, &pid); err != nil || pid <= 0 {
		cmd.Process.Kill()
		t.Fatalf("helper: pid %d, %v", pid, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("orphaned plugin %d still running 5 s after its host died", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie that nobody reaps is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// groupAlive reports whether any live process is in process group pgid
// (a plugin leads its own group: what it started is in it too).
func groupAlive(pgid int) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		var pid, pg int
		fmt.Sscan(e.Name(), &pid)
		fmt.Sscan(f[2], &pg)
		if pg == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A policy that spins ignoring its deadline, when the CALLER's deadline
// fires first (the worker's run.deadline; the host's own is far away), is
// killed a grace period later: the call fails as a deadline, the process
// and its group are gone, its slot is free (a healthy call of the same
// policy that queued behind it runs, on a fresh process).
func TestHangUnderCallerDeadline(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 1, Grace: time.Second})
	b := pluginhost.Binary{Path: binary("crashy")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	req := request(t, "hang", 5000, 1)
	req.Params = map[string]any{"after": 10}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	healthy := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // behind the hung call, for the one slot
		good := request(t, "hang", 2000, 2)
		good.Params = map[string]any{"after": 1000000}
		_, err := h.Run(context.Background(), b, good, pluginhost.RunOptions{Deadline: time.Minute})
		healthy <- err
	}()
	_, err = h.Run(ctx, b, req, pluginhost.RunOptions{Deadline: time.Hour})
	dl, _ := ctx.Deadline()
	took := time.Since(dl)
	wantKind(t, err, pluginhost.ErrDeadline, "killed")
	t.Logf("hung call failed %v after the caller's deadline (grace 1s)", took.Round(time.Millisecond))
	if took > 4*time.Second {
		t.Errorf("the hung call took %v past its deadline to fail", took)
	}
	end := time.Now().Add(2 * time.Second)
	for alive(in.PID) || len(groupAlive(in.PID)) > 0 {
		if time.Now().After(end) {
			t.Fatalf("hung plugin process %d (group %v) alive 2 s after the call failed", in.PID, groupAlive(in.PID))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("process gone %v after the caller's deadline", time.Since(dl).Round(time.Millisecond))
	select {
	case err := <-healthy:
		if err != nil {
			t.Fatalf("the healthy call queued behind the hung one: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the healthy call queued behind the hung one never ran")
	}
	if h.Starts() != 2 {
		t.Errorf("%d starts, want 2", h.Starts())
	}
}

// A caller's plain cancellation of a spinning replication cannot be
// confirmed over the protocol: the process is replaced, at once.
func TestHangCancelled(t *testing.T) {
	h := newHost(t, pluginhost.Config{MaxConcurrent: 1})
	b := pluginhost.Binary{Path: binary("crashy")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	req := request(t, "hang", 5000, 1)
	req.Params = map[string]any{"after": 10}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err = h.Run(ctx, b, req, pluginhost.RunOptions{Deadline: time.Hour})
	wantKind(t, err, pluginhost.ErrCanceled, "replaced")
	end := time.Now().Add(2 * time.Second)
	for alive(in.PID) {
		if time.Now().After(end) {
			t.Fatalf("cancelled spinning plugin %d still alive", in.PID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 2 {
		t.Fatalf("after the cancellation: %v, %d starts (want a fresh process)", err, h.Starts())
	}
}

// A busy-looping replication in flight when the host closes: Close
// returns promptly, the call fails, and no process of the plugin's group
// is left (checked in /proc).
func TestCloseKillsBusyLoop(t *testing.T) {
	h := pluginhost.New(pluginhost.Config{Logger: quiet})
	b := pluginhost.Binary{Path: binary("crashy")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	req := request(t, "hang", 5000, 1)
	req.Params = map[string]any{"after": 10}
	errc := make(chan error, 1)
	go func() {
		_, err := h.Run(context.Background(), b, req, pluginhost.RunOptions{Deadline: time.Hour})
		errc <- err
	}()
	// Wait until the plugin spins: its CPU time grows.
	cpu := func() int64 {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", in.PID))
		_, rest, _ := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		var ut int64
		if len(f) > 12 {
			fmt.Sscan(f[11], &ut)
		}
		return ut
	}
	end := time.Now().Add(20 * time.Second)
	for c0 := cpu(); cpu() < c0+20; { // 20 ticks: 0.2 s of CPU
		if time.Now().After(end) {
			t.Fatal("the plugin never started spinning")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t0 := time.Now()
	h.Close()
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	if alive(in.PID) || len(groupAlive(in.PID)) > 0 {
		t.Fatalf("after Close: process %d alive %v, group %v", in.PID, alive(in.PID), groupAlive(in.PID))
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the spinning call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the spinning call did not return after Close")
	}
}

// A policy that spins in its own code is caught by the stall limit long
// before its deadline (an hour here; a month when the sweep sets none),
// its process killed; a policy slower than the limit overall, but whose
// engine loop keeps beating, runs to the end.
func TestStall(t *testing.T) {
	const stall = 2 * time.Second
	h := newHost(t, pluginhost.Config{Stall: stall})
	b := pluginhost.Binary{Path: binary("crashy")}
	in, err := h.Info(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Heartbeat {
		t.Fatal("a plugin built with this SDK does not say it beats")
	}
	// "slow" sleeps 1 ms at each of 3300 arrivals: over 3 s in all, a
	// beat (1,024 events, half of them arrivals) every ~0.5 s.
	t0 := time.Now()
	out, err := h.Run(context.Background(), b, request(t, "slow", 3000, 1), pluginhost.RunOptions{Deadline: time.Hour})
	if err != nil {
		t.Fatalf("a slow policy whose loop beats: %v", err)
	}
	if took := time.Since(t0); took < stall || out.LastBeats < 3 {
		t.Fatalf("the slow run took %v with %d beats: it must outlast the stall limit %v, beating", took, out.LastBeats, stall)
	}
	req := request(t, "hang", 5000, 1)
	req.Params = map[string]any{"after": 10}
	t0 = time.Now()
	// The caller gives up after two minutes, so that without the limit
	// this fails (ErrCanceled) rather than waiting out the hour.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = h.Run(ctx, b, req, pluginhost.RunOptions{Deadline: time.Hour})
	wantKind(t, err, pluginhost.ErrStalled, "no progress for 2s", "killed")
	if took := time.Since(t0); took > time.Minute {
		t.Errorf("the hung call took %v to fail", took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(in.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("hung plugin process %d still alive", in.PID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := h.Run(context.Background(), b, request(t, "fcfs", 1000, 1), pluginhost.RunOptions{}); err != nil || h.Starts() != 2 {
		t.Fatalf("after the stall: %v, %d starts (want a fresh process)", err, h.Starts())
	}
}
