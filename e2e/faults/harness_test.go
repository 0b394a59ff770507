//go:build faults

package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// A host is where one process of the farm runs: 127.0.0.1 in the
// loopback topology, or its own network namespace with its own address in
// the partition topology (netns.go).
type host struct {
	name string // nats, minio, co, w1, w2, obs
	ip   string
	ns   string // network namespace, "" for the current one
}

// command runs name inside h's namespace. `ip netns exec` execs the
// command in place, so the returned process's pid is the program's own and
// kill -9 reaches it directly.
func (h host) command(name string, args ...string) *exec.Cmd {
	if h.ns == "" {
		return exec.Command(name, args...)
	}
	return exec.Command(ipCmd, append([]string{"netns", "exec", h.ns, name}, args...)...)
}

// topology maps the farm's roles to hosts.
type topology struct {
	hosts map[string]host
	// port returns the port a server role listens on: fixed ports on
	// distinct addresses in namespaces, free loopback ports otherwise.
	port func(role string) int
}

func loopback() *topology {
	t := &topology{hosts: map[string]host{}}
	for _, n := range []string{"nats", "minio", "co", "w1", "w2", "obs"} {
		t.hosts[n] = host{name: n, ip: "127.0.0.1"}
	}
	ports := map[string]int{}
	var mu sync.Mutex
	t.port = func(role string) int {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := ports[role]; ok {
			return p
		}
		p, err := procutil.FreePort()
		if err != nil {
			panic(err)
		}
		ports[role] = p
		return p
	}
	return t
}

// proc is one running process of the farm; its output goes to a log file
// that outlives the test, so that a report can quote it.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (p *proc) kill() {
	if p.alive() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// term sends SIGTERM and waits up to d, then SIGKILL.
func (p *proc) term(d time.Duration) {
	if p.alive() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(d):
		p.kill()
	}
}

// farm is one real deployment: nats-server with a file store, MinIO, one
// coordinator, two workers, all separate processes, fresh for each fault.
type farm struct {
	t         *testing.T
	cfg       *config
	top       *topology
	dir       string // this farm's directory (data, logs, run log)
	natsURL   string
	storeURL  string
	ak, sk    string
	mu        sync.Mutex
	procs     map[string]*proc
	nc        *nats.Conn
	store     storage.Store
	runLog    *runLogTail
	workerEnv map[string][]string // extra environment per worker role
	// workerNATS and workerStore override a worker role's NATS URL and
	// storage URL (the latency relay).
	workerNATS, workerStore map[string]string
}

func newFarm(t *testing.T, cfg *config, top *topology, name string) *farm {
	t.Helper()
	dir := filepath.Join(cfg.outDir, strings.NewReplacer(" ", "-", "%", "pct", "+", "", "/", "-").Replace(name))
	// A fresh directory: a previous run's run log (same campaign id, as
	// the campaign is named by its content) or plugin token would corrupt
	// this one's counts.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &farm{t: t, cfg: cfg, top: top, dir: dir, procs: map[string]*proc{}, ak: "faults-admin", sk: "faults-secret-" + name,
		workerEnv: map[string][]string{}, workerNATS: map[string]string{}, workerStore: map[string]string{}}
	f.natsURL = fmt.Sprintf("nats://%s:%d", top.hosts["nats"].ip, top.port("nats"))
	f.storeURL = fmt.Sprintf("s3://msjfarm-faults?secure=false&endpoint=%s:%d", top.hosts["minio"].ip, top.port("minio"))
	t.Cleanup(f.close)
	return f
}

// env is the environment of every msjfarm process: the farm's NATS and
// storage, and an empty plugin path so that third-party plugins come only
// from storage (pinned by submit).
func (f *farm) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MSJFARM_") || strings.HasPrefix(kv, "FLAKY_") {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "MSJFARM_NATS_URL="+f.natsURL, "MSJFARM_STORAGE="+f.storeURL,
		"MSJFARM_S3_ACCESS_KEY="+f.ak, "MSJFARM_S3_SECRET_KEY="+f.sk, "MSJFARM_PLUGIN_PATH="), extra...)
}

// start starts a process on host h and registers it under name (a
// restarted role gets a new name, e.g. coordinator-2, and its own log).
func (f *farm) start(name, role string, env []string, prog string, args ...string) *proc {
	f.t.Helper()
	logPath := filepath.Join(f.dir, name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := f.top.hosts[role].command(prog, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		f.t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(p.done) }()
	f.mu.Lock()
	f.procs[name] = p
	f.mu.Unlock()
	return p
}

func (f *farm) proc(name string) *proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[name]
}

func (f *farm) close() {
	if f.runLog != nil {
		f.runLog.stop()
	}
	if f.nc != nil {
		f.nc.Close()
	}
	f.mu.Lock()
	procs := f.procs
	f.mu.Unlock()
	// msjfarm processes first (SIGTERM, as an operator would), then the
	// servers they talk to.
	for _, servers := range []bool{false, true} {
		for n, p := range procs {
			if (strings.HasPrefix(n, "nats") || strings.HasPrefix(n, "minio")) == servers {
				p.term(5 * time.Second)
			}
		}
	}
	for _, p := range procs {
		p.kill()
	}
	killStrayPlugins(f.dir)
	// Keep the logs, drop the data.
	_ = os.RemoveAll(filepath.Join(f.dir, "nats-store"))
	_ = os.RemoveAll(filepath.Join(f.dir, "minio-data"))
}

// stopMsjfarm stops the coordinator and workers with SIGTERM (SIGKILL
// after 15 s), leaving the servers up.
func (f *farm) stopMsjfarm() {
	f.mu.Lock()
	procs := f.procs
	f.mu.Unlock()
	for n, p := range procs {
		if !strings.HasPrefix(n, "nats") && !strings.HasPrefix(n, "minio") {
			p.term(15 * time.Second)
		}
	}
}

// startNATS starts (or restarts, on the same port and store) nats-server.
func (f *farm) startNATS(name string) *proc {
	h := f.top.hosts["nats"]
	p := f.start(name, "nats", os.Environ(), f.cfg.natsBin, "-js", "-sd", filepath.Join(f.dir, "nats-store"),
		"-a", h.ip, "-p", strconv.Itoa(f.top.port("nats")), "-n", "faults")
	f.waitUntil(name+" to serve JetStream", 30*time.Second, func() bool {
		nc, err := nats.Connect(f.natsURL, nats.Timeout(time.Second))
		if err != nil {
			return false
		}
		defer nc.Close()
		js, _ := nc.JetStream()
		_, err = js.AccountInfo()
		return err == nil
	})
	return p
}

// startMinIO starts (or restarts, on the same port and data) MinIO.
func (f *farm) startMinIO(name string) *proc {
	h := f.top.hosts["minio"]
	addr := net.JoinHostPort(h.ip, strconv.Itoa(f.top.port("minio")))
	env := append(os.Environ(), "MINIO_ROOT_USER="+f.ak, "MINIO_ROOT_PASSWORD="+f.sk,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	p := f.start(name, "minio", env, f.cfg.minioBin, "server", "--quiet", "--address", addr,
		"--certs-dir", filepath.Join(f.dir, "minio-certs"), filepath.Join(f.dir, "minio-data"))
	c := &http.Client{Timeout: 2 * time.Second}
	f.waitUntil(name+" to be ready", 60*time.Second, func() bool {
		resp, err := c.Get("http://" + addr + "/minio/health/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

func (f *farm) startCoordinator(name string) *proc {
	return f.start(name, "co", f.env(), f.cfg.bin, "coordinator", "--nats-url", f.natsURL,
		"--ack-wait", f.cfg.ackWait.String(), "--reconcile", "2s")
}

// startWorker starts worker role w1 or w2 as process name: two replication
// slots, the shared run log, plugins only from storage (an empty
// --plugin-path, its own cache), always through plugin processes.
func (f *farm) startWorker(name, role string) *proc {
	empty := filepath.Join(f.dir, "no-plugins")
	_ = os.MkdirAll(empty, 0o755)
	flaky := filepath.Join(f.dir, "flaky-"+role)
	_ = os.MkdirAll(flaky, 0o755)
	natsURL := f.natsURL
	if u := f.workerNATS[role]; u != "" {
		natsURL = u
	}
	extra := append([]string{"FLAKY_DIR=" + flaky}, f.workerEnv[role]...)
	if u := f.workerStore[role]; u != "" {
		extra = append(extra, "MSJFARM_STORAGE="+u)
	}
	env := f.env(extra...)
	return f.start(name, role, env, f.cfg.bin, "worker", "--nats-url", natsURL, "--workers", "2",
		"--worker-name", role, "--run-log", filepath.Join(f.dir, "runs.log"), "--runner", "plugin",
		"--plugin-path", empty, "--plugin-cache", filepath.Join(f.dir, "cache-"+role), "-v",
		// Confined like any plugin: the flaky one gets its switches and a
		// directory for its once-per-worker token explicitly. As the
		// worker's own user: the farm's directory may be a private temp
		// dir that no other user can traverse.
		"--plugin-sandbox", "require", "--plugin-user", "self",
		"--plugin-env", "FLAKY_DIR,FLAKY_MODE,FLAKY_AFTER", "--plugin-writable", flaky)
}

// up starts the whole farm and connects the observer (the test process).
func (f *farm) up() {
	f.t.Helper()
	f.startNATS("nats")
	f.startMinIO("minio")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	for {
		if f.store, err = storage.Open(ctx, f.storeURL, storage.WithCredentials(f.ak, f.sk)); err == nil {
			break
		}
		if ctx.Err() != nil {
			f.t.Fatalf("opening %s: %v", f.storeURL, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f.nc, err = nats.Connect(f.natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond)); err != nil {
		f.t.Fatal(err)
	}
	f.startCoordinator("coordinator")
	f.startWorker("w1", "w1")
	f.startWorker("w2", "w2")
	f.runLog = tailRunLog(filepath.Join(f.dir, "runs.log"))
}

// submit submits the sweep from the observer's host, pinning the flaky
// plugin (a third-party plugin is always pinned), and returns the campaign.
func (f *farm) submit(sweepPath string) string {
	f.t.Helper()
	cmd := f.top.hosts["obs"].command(f.cfg.bin, "submit", "--nats-url", f.natsURL, "--plugin-path", f.cfg.pluginDir, sweepPath)
	cmd.Env = f.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("submit: %v\n%s", err, out)
	}
	_ = os.WriteFile(filepath.Join(f.dir, "submit.log"), out, 0o644)
	i := strings.Index(string(out), "campaign ")
	if i < 0 {
		f.t.Fatalf("submit printed no campaign id:\n%s", out)
	}
	id := strings.Fields(string(out)[i+len("campaign "):])[0]
	return id
}

func (f *farm) status(id string) (*protocol.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var s protocol.Status
	err := protocol.Request(ctx, f.nc, protocol.APIStatus, protocol.StatusRequest{Campaign: id}, &s)
	return &s, err
}

// waitDone waits until the coordinator reports the campaign done and its
// summary is in storage; false after d.
func (f *farm) waitDone(id string, d time.Duration) (*protocol.Status, bool) {
	deadline := time.Now().Add(d)
	var last *protocol.Status
	for time.Now().Before(deadline) {
		if s, err := f.status(id); err == nil {
			last = s
			if s.State == protocol.CampaignDone {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := f.store.Get(ctx, storage.SummaryKey(id))
				cancel()
				if err == nil {
					return s, true
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return last, false
}

func (f *farm) waitUntil(what string, d time.Duration, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Fatalf("timed out after %v waiting for %s", d, what)
}

// results reads every record of the campaign from storage: task → record.
func (f *farm) results(id string) (map[string]*record.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	keys, err := f.store.List(ctx, storage.ResultsPrefix(id))
	if err != nil {
		return nil, err
	}
	out := map[string]*record.Record{}
	for _, k := range keys {
		tid, ok := storage.ResultTaskID(id, k)
		if !ok {
			continue
		}
		r, _, err := record.Read(ctx, f.store, id, tid)
		if err != nil {
			return nil, fmt.Errorf("result %s: %w", k, err)
		}
		out[tid] = r
	}
	return out, nil
}

func (f *farm) summary(id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return f.store.Get(ctx, storage.SummaryKey(id))
}

// grepLogs returns the lines of the farm's process logs that contain any
// of the words (at most max lines), for the report of a failed fault.
func (f *farm) grepLogs(max int, words ...string) []string {
	var out []string
	logs, _ := filepath.Glob(filepath.Join(f.dir, "*.log"))
	for _, lp := range logs {
		if strings.HasSuffix(lp, "runs.log") {
			continue
		}
		fh, err := os.Open(lp)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			for _, w := range words {
				if strings.Contains(sc.Text(), w) {
					line := sc.Text()
					if len(line) > 400 {
						line = line[:400] + "…"
					}
					out = append(out, filepath.Base(lp)+": "+line)
					break
				}
			}
			if len(out) >= max {
				break
			}
		}
		fh.Close()
	}
	return out
}

// runEvent is one line of the workers' shared run log, stamped with the
// time the observer read it (the log has no clock; it is polled every
// 100 ms, so times are that precise).
type runEvent struct {
	at                           time.Time
	kind, campaign, task, worker string
	attempt                      string
}

type runLogTail struct {
	path   string
	mu     sync.Mutex
	events []runEvent
	quit   chan struct{}
	wg     sync.WaitGroup
}

func tailRunLog(path string) *runLogTail {
	r := &runLogTail{path: path, quit: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		var off int64
		var partial string
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			off, partial = r.read(off, partial)
			select {
			case <-r.quit:
				r.read(off, partial)
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

func (r *runLogTail) read(off int64, partial string) (int64, string) {
	fh, err := os.Open(r.path)
	if err != nil {
		return off, partial
	}
	defer fh.Close()
	if _, err := fh.Seek(off, 0); err != nil {
		return off, partial
	}
	buf := make([]byte, 1<<16)
	now := time.Now()
	for {
		n, err := fh.Read(buf)
		off += int64(n)
		partial += string(buf[:n])
		for {
			i := strings.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			fs := strings.Fields(partial[:i])
			partial = partial[i+1:]
			if len(fs) == 5 {
				r.mu.Lock()
				r.events = append(r.events, runEvent{at: now, kind: fs[0], campaign: fs[1], task: fs[2], worker: fs[3], attempt: fs[4]})
				r.mu.Unlock()
			}
		}
		if err != nil || n == 0 {
			return off, partial
		}
	}
}

func (r *runLogTail) stop() {
	select {
	case <-r.quit:
	default:
		close(r.quit)
	}
	r.wg.Wait()
}

func (r *runLogTail) snapshot() []runEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]runEvent(nil), r.events...)
}

// running returns the tasks started and not yet finished (done, failed,
// released or cancelled) at this moment.
func (r *runLogTail) running(campaign string) map[string]bool {
	open := map[string]int{}
	for _, e := range r.snapshot() {
		if e.campaign != campaign {
			continue
		}
		switch e.kind {
		case "start":
			open[e.task]++
		case "done", "duplicate", "fail", "release", "cancelled", "retry":
			open[e.task]--
		}
	}
	out := map[string]bool{}
	for t, n := range open {
		if n > 0 {
			out[t] = true
		}
	}
	return out
}

// waitRunning waits until some worker (any, or the named one) runs a task
// of the campaign and returns one such task.
func (f *farm) waitRunning(id, worker string, d time.Duration) string {
	f.t.Helper()
	var task string
	f.waitUntil("a running task on "+worker, d, func() bool {
		open := f.runLog.running(id)
		for _, e := range f.runLog.snapshot() {
			if e.kind == "start" && open[e.task] && (worker == "" || e.worker == worker) {
				task = e.task
				return true
			}
		}
		return false
	})
	return task
}

// killStrayPlugins kills (by pid) processes this farm's workers left
// behind, which a correct worker never does; it returns how many there
// were.
func killStrayPlugins(farmDir string) int {
	n := 0
	for _, pid := range strayPlugins(farmDir) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// strayPlugins lists the processes started for this farm's workers: plugin
// binaries under farmDir (fetched into a worker's cache), and any process
// whose environment carries the FLAKY_DIR the harness gives each worker
// under farmDir (so also msjfarm itself serving the built-in families as
// plugins). Called once the workers are stopped, every one is a leftover.
func strayPlugins(farmDir string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cl), "\x00")
		if len(args) > 0 && strings.HasPrefix(args[0], farmDir+string(os.PathSeparator)) && strings.Contains(args[0], "msjfarm-policy-") {
			out = append(out, pid)
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env), "\x00FLAKY_DIR="+farmDir+string(os.PathSeparator)) {
			out = append(out, pid)
		}
	}
	return out
}
