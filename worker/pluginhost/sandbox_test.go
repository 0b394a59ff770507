package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

func sandboxOff(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	s, err := sandbox.New(sandbox.Options{Mode: sandbox.Off, User: "self"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// requireSandbox is the sandbox in require mode for user ("self" or
// "nobody"), skipping where the kernel cannot confine.
func requireSandbox(t testing.TB, user string, memory int64) *sandbox.Sandbox {
	t.Helper()
	s, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: user, MemoryLimit: memory})
	if err != nil {
		t.Skipf("no full sandbox here: %v", err)
	}
	return s
}

// hostileTargets is a worker's worth of things a plugin must not reach:
// secrets in the environment, a 0600 config file, a store directory with
// a result, a plugin cache, a home directory, TCP and UDP listeners and a
// unix socket. It returns the plugin environment naming them and a check
// that the store is unchanged.
type hostileTargets struct {
	env     []string
	secrets []string
	store   string
	udp     net.PacketConn
}

func newHostileTargets(t *testing.T) *hostileTargets {
	t.Helper()
	secret := "s3cr3t-" + t.Name()
	t.Setenv("MSJFARM_S3_SECRET_KEY", secret+"-s3")
	t.Setenv("MSJFARM_NATS_PASSWORD", secret+"-nats")
	dir := t.TempDir()
	config := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(config, []byte("s3:\n  secret_key: "+secret+"-config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mk := func(name, file, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	store := mk("store", "result.json", `{"mean":7.0}`)
	cache := mk("cache", "msjfarm-policy-x", "binary")
	home := mk("home", ".netrc", "password "+secret+"-home")
	var tcp []string
	for range 2 { // stand-ins for the NATS and MinIO ports
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		tcp = append(tcp, l.Addr().String())
	}
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	sock := filepath.Join(dir, "host.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	return &hostileTargets{
		env: []string{"HOSTILE_CONFIG=" + config, "HOSTILE_STORE=" + store, "HOSTILE_CACHE=" + cache,
			"HOSTILE_HOME=" + home, "HOSTILE_TCP=" + strings.Join(tcp, ","), "HOSTILE_UDP=" + udp.LocalAddr().String(),
			"HOSTILE_UNIX=" + sock},
		secrets: []string{secret},
		store:   store,
		udp:     udp,
	}
}

// attacks are the hostile plugin's policies and what a confined plugin
// gets for each.
var attacks = []struct {
	name     string
	want     string // in the refusal
	rootWant string // instead, under a private root (not there at all)
}{
	{"procenv", "permission denied", "no such file or directory"},
	{"config", "permission denied", "no such file or directory"},
	{"chmod", "operation not permitted", ""},
	{"store", "permission denied", "no such file or directory"},
	{"cache", "permission denied", "no such file or directory"},
	{"home", "permission denied", "no such file or directory"},
	{"write-store", "permission denied", "no such file or directory"},
	{"tcp", "operation not permitted", ""},
	{"udp", "operation not permitted", ""},
	{"bind", "operation not permitted", ""},
	{"unix", "operation not permitted", ""},
	{"setsid", "operation not permitted", ""},
	{"fork", "operation not permitted", ""},
	{"signal", "operation not permitted", ""},
	{"ptrace", "operation not permitted", ""},
	{"pdeathsig", "operation not permitted", ""},
	{"undumpable", "operation not permitted", ""},
	{"killall", "operation not permitted", ""},
	{"sigio", "operation not permitted", ""},
	{"prlimit", "operation not permitted", ""},
	{"setpriority", "operation not permitted", ""},
	{"memfd", "operation not permitted", ""},
	{"shm", "operation not permitted", ""},
	{"msgq", "operation not permitted", ""},
	{"sem", "operation not permitted", ""},
	{"inotify", "operation not permitted", ""},
}

// A hostile plugin, built against the SDK, tries every attack of issue #28
// under the sandbox — as the worker's own user (root here: Landlock and
// seccomp hold even against root's file permissions) and as "nobody".
// Each is refused with the kernel's EACCES/EPERM, surfaced as the plugin's
// error with its sha256; no secret appears anywhere; the store is
// unchanged; nothing the plugin started survives; and the same host then
// runs an honest replication.
func TestHostilePluginConfined(t *testing.T) {
	users := []string{"self"}
	if os.Geteuid() == 0 {
		users = append(users, "nobody")
	}
	sum, err := pluginhost.Checksum(binary("hostile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range users {
		t.Run(user, func(t *testing.T) {
			sb := requireSandbox(t, user, 0)
			tg := newHostileTargets(t)
			h := newHost(t, pluginhost.Config{Sandbox: sb, Env: tg.env, MaxConcurrent: 2})
			b := pluginhost.Binary{Path: binary("hostile")}
			for _, a := range attacks {
				_, err := h.Run(context.Background(), b, request(t, "hostile-"+a.name, 100, 1), pluginhost.RunOptions{})
				if err == nil {
					t.Fatalf("%s: the replication succeeded", a.name)
				}
				msg := err.Error()
				t.Logf("%s: %s", a.name, msg)
				want := a.want
				if sb.PrivateRoot() && a.rootWant != "" {
					want = a.rootWant
				}
				if !errors.Is(err, pluginhost.ErrPolicy) || !strings.Contains(msg, "attack "+a.name+" refused") ||
					!strings.Contains(msg, want) || !strings.Contains(msg, "sha256 "+sum[:12]) {
					t.Errorf("%s: want a refusal with %q and the plugin's sha256, got %v", a.name, want, err)
				}
				for _, s := range tg.secrets {
					if strings.Contains(msg, s) {
						t.Errorf("%s: a secret reached the plugin: %s", a.name, msg)
					}
				}
			}
			// The environment holds only the allow-list.
			_, err := h.Run(context.Background(), b, request(t, "hostile-env", 100, 1), pluginhost.RunOptions{})
			env := envOf(t, err)
			for _, kv := range env {
				name, _, _ := strings.Cut(kv, "=")
				switch {
				case name == "MSJFARM_PLUGIN_MAX_CONCURRENT", name == "GOGC", name == "GOMAXPROCS", name == "TMPDIR",
					strings.HasPrefix(name, "PLUGIN_"), name == wire.Handshake().MagicCookieKey, strings.HasPrefix(name, "HOSTILE_"):
				default:
					t.Errorf("the plugin's environment holds %s", kv)
				}
			}
			if got, _ := os.ReadDir(tg.store); len(got) != 1 {
				t.Errorf("the store holds %d entries, want its 1 result", len(got))
			}
			tg.udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if n, _, err := tg.udp.ReadFrom(make([]byte, 64)); err == nil {
				t.Errorf("the UDP listener received %d bytes", n)
			}
			// Past its address-space limit the plugin dies, alone.
			hm := newHost(t, pluginhost.Config{Sandbox: requireSandbox(t, user, 3<<30), MaxConcurrent: 1})
			_, err = hm.Run(context.Background(), b, request(t, "hostile-alloc", 100, 1), pluginhost.RunOptions{})
			if !errors.Is(err, pluginhost.ErrCrash) || !strings.Contains(err.Error(), "out of memory") {
				t.Errorf("alloc: want a crash out of memory, got %v", err)
			} else {
				t.Logf("alloc: %.300s", err)
			}
			// The host goes on.
			if _, err := h.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after the attacks: %v", err)
			}
			h.Close()
			hm.Close()
			if pids := hosttest.Processes("HOSTILE_SLEEPER=1"); len(pids) > 0 {
				t.Errorf("processes the plugin started survived its host: %v", pids)
			}
		})
	}
}

// The same attacks with the sandbox off succeed (the control: the hostile
// plugin is not toothless, the refusals above are the sandbox's), except
// that the environment is an allow-list either way.
func TestHostilePluginUnconfined(t *testing.T) {
	tg := newHostileTargets(t)
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), Env: tg.env})
	b := pluginhost.Binary{Path: binary("hostile")}
	for _, a := range []string{"config", "store", "tcp", "bind", "shm", "inotify"} {
		_, err := h.Run(context.Background(), b, request(t, "hostile-"+a, 100, 1), pluginhost.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), "attack "+a+" SUCCEEDED") {
			t.Errorf("%s without the sandbox: want the attack to succeed, got %v", a, err)
		}
	}
	_, err := h.Run(context.Background(), b, request(t, "hostile-env", 100, 1), pluginhost.RunOptions{})
	for _, kv := range envOf(t, err) {
		if strings.HasPrefix(kv, "MSJFARM_S3") || strings.HasPrefix(kv, "MSJFARM_NATS") {
			t.Errorf("sandbox off, the plugin's environment still must not hold %s", kv)
		}
	}
}

// envOf parses the hostile-env policy's report.
func envOf(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("hostile-env succeeded")
	}
	_, after, ok := strings.Cut(err.Error(), "attack env SUCCEEDED: ")
	if !ok {
		t.Fatalf("hostile-env: %v", err)
	}
	after, _, _ = strings.Cut(after, "\n")
	return strings.Fields(after)
}

// A confined plugin binds an abstract unix socket name, as it would to
// take the connections meant for a service of the machine that listens on
// it (Landlock scopes connecting to such a name, not binding one; seccomp
// cannot read the address). In a network namespace of its own the name is
// not the machine's: the test's dial is refused. The control, with the
// sandbox off, reaches the plugin through the same name.
func TestAbstractNameIsolated(t *testing.T) {
	cases := []struct {
		name  string
		sb    func(t *testing.T) *sandbox.Sandbox
		reach bool
	}{
		{"sandbox off", func(t *testing.T) *sandbox.Sandbox { return sandboxOff(t) }, true},
		{"self", func(t *testing.T) *sandbox.Sandbox { return requireSandbox(t, "self", 0) }, false},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name  string
			sb    func(t *testing.T) *sandbox.Sandbox
			reach bool
		}{"nobody", func(t *testing.T) *sandbox.Sandbox { return requireSandbox(t, "nobody", 0) }, false})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := c.sb(t)
			if !c.reach && !sb.NetNS() {
				t.Skipf("no network namespace for plugins here: %s", sb.Describe())
			}
			name := fmt.Sprintf("msjfarm-test-squat-%d-%d", os.Getpid(), i)
			h := newHost(t, pluginhost.Config{Sandbox: sb, Env: []string{"HOSTILE_ABSTRACT=" + name}, MaxConcurrent: 1})
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("hostile")}, request(t, "hostile-squat", 100, 1), pluginhost.RunOptions{})
			if err == nil || !strings.Contains(err.Error(), "attack squat SUCCEEDED: bound @"+name) {
				t.Fatalf("squat: want the plugin to bind @%s, got %v", name, err)
			}
			// The plugin process lives on with its host, the name held.
			conn, err := net.Dial("unix", "@"+name)
			if !c.reach {
				if err == nil {
					conn.Close()
					t.Fatalf("the machine's @%s reached the confined plugin", name)
				}
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("dialing @%s: want connection refused (no such name here), got %v", name, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("control: dialing the unconfined plugin's @%s: %v", name, err)
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(time.Minute))
			b := make([]byte, 16)
			n, _ := conn.Read(b)
			if string(b[:n]) != "squatted" {
				t.Errorf("control: read %q from @%s, want the plugin's \"squatted\"", b[:n], name)
			}
		})
	}
}

// An honest plugin's results are byte for byte the same confined and not:
// the fcfs family's binary, two seeds, at load 0.5.
func TestSandboxResultsIdentical(t *testing.T) {
	on := newHost(t, pluginhost.Config{Sandbox: requireSandbox(t, "", 0)})
	off := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t)})
	b := pluginhost.Binary{Path: binary("fcfs")}
	for _, seed := range []uint64{1, 2} {
		req := request(t, "fcfs", 20000, seed)
		a, err := on.Run(context.Background(), b, req, pluginhost.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := off.Run(context.Background(), b, req, pluginhost.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(a.ResultJSON) != string(c.ResultJSON) {
			t.Fatalf("seed %d: confined and unconfined results differ:\n%s\n%s", seed, a.ResultJSON, c.ResultJSON)
		}
	}
}

// A pinned binary replaced by another is refused by the launcher, which
// hashes the very descriptor it would execute.
func TestSandboxVerifiesPin(t *testing.T) {
	h := newHost(t, pluginhost.Config{Sandbox: requireSandbox(t, "", 0)})
	sum, err := pluginhost.Checksum(binary("crashy"))
	if err != nil {
		t.Fatal(err)
	}
	// fcfs's binary, pinned with crashy's sha256.
	_, err = h.Info(context.Background(), pluginhost.Binary{Path: binary("fcfs"), SHA256: sum})
	wantKind(t, err, pluginhost.ErrChecksum, "campaign pins "+sum)
}

// --plugin-writable opens exactly the directory given: the hostile
// plugin's write lands there, and its neighbour stays closed.
func TestSandboxWritable(t *testing.T) {
	// As the worker's user: t.TempDir's parent is private to it.
	dir, other := t.TempDir(), t.TempDir()
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self", Writable: []string{dir}})
	if err != nil {
		t.Skipf("no full sandbox here: %v", err)
	}
	b := pluginhost.Binary{Path: binary("hostile")}
	for _, c := range []struct {
		store, want string
	}{{dir, "attack write-store SUCCEEDED"}, {other, "attack write-store refused"}} {
		h := newHost(t, pluginhost.Config{Sandbox: sb, Env: []string{"HOSTILE_STORE=" + c.store}})
		_, err := h.Run(context.Background(), b, request(t, "hostile-write-store", 100, 1), pluginhost.RunOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", c.store, c.want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "forged.json")); err != nil {
		t.Errorf("the write to the writable directory did not land: %v", err)
	}
}

// countWriter counts what the host's log receives.
type countWriter struct {
	mu sync.Mutex
	n  int
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	return len(p), nil
}

func (w *countWriter) bytes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// What a plugin logs (an hclog JSON line on its stderr, re-logged by
// go-plugin with its level and fields) carries its fields as the
// plugin's: "plugin.binary=…", never "binary=…", a field of the host's
// own lines, which a plugin forged beside "plugin sandbox disabled by
// operator".
func TestPluginLogFields(t *testing.T) {
	var log procutil.Buffer
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 1,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: &log})})
	b := pluginhost.Binary{Path: binary("hostile")}
	_, err := h.Run(context.Background(), b, request(t, "hostile-logfields", 100, 1), pluginhost.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "SUCCEEDED: wrote a forged log line") {
		t.Fatalf("logfields: %v", err)
	}
	got := log.String()
	if !strings.Contains(got, "plugin sandbox disabled by operator") || !strings.Contains(got, "plugin.binary=/usr/lib/msjfarm/msjfarm-policy-fcfs") ||
		!strings.Contains(got, "plugin.task=0000deadbeef") || strings.Contains(got, " binary=/usr/lib") || strings.Contains(got, " task=0000deadbeef") {
		t.Errorf("the host's log:\n%s", got)
	}
}

// A plugin that prints without end gets a bounded share of the host's
// log. go-plugin re-logs each stderr line that reads as a warning or an
// error, and every line after one that begins "panic: ", at that level:
// hostile-logflood's 64 MiB of "[ERROR] ..." lines all reached the
// worker's log (a Slurm job's output file, on a shared file system). Now
// a process gets a 16 KiB burst and 1 KiB/s after it, and the host says
// how much it dropped (a crash's report still has the stderr's tail).
func TestPluginLogBudget(t *testing.T) {
	var log countWriter
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 1,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: &log})})
	b := pluginhost.Binary{Path: binary("hostile")}
	_, err := h.Run(context.Background(), b, request(t, "hostile-logflood", 100, 1), pluginhost.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "SUCCEEDED: wrote 64 MiB to stderr") {
		t.Fatalf("logflood: %v", err)
	}
	// 16 KiB and the host's own lines, and 1 KiB for each second the
	// flood took; 1 MiB leaves room for a loaded machine.
	if n := log.bytes(); n > 1<<20 {
		t.Errorf("the host's log received %d MiB of the plugin's 64", n>>20)
	} else {
		t.Logf("the host's log received %d KiB", n>>10)
	}
	if _, err := h.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
		t.Fatalf("an honest replication after the flood: %v", err)
	}
}

// bothWays runs a test of what the host enforces itself with the sandbox
// off and on.
var bothWays = []struct {
	name string
	sb   func(t *testing.T) *sandbox.Sandbox
}{
	{"sandbox off", func(t *testing.T) *sandbox.Sandbox { return sandboxOff(t) }},
	{"sandbox", func(t *testing.T) *sandbox.Sandbox { return requireSandbox(t, "self", 0) }},
}

// A plugin that fills its private TMPDIR (the one place a confined plugin
// may write) is killed past the quota, and its replication fails saying
// so, not to be retried (each attempt would write the quota again); the
// host goes on. hostile-diskfill writes up to 4 GiB in files of
// 64 MiB: under the sandbox the first write past the quota kills it
// (RLIMIT_FSIZE), without it the host's watch does (every 250 ms).
func TestPluginTmpQuota(t *testing.T) {
	const quota = 32 << 20
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1, TmpQuota: quota})
			b := pluginhost.Binary{Path: binary("hostile")}
			_, err := h.Run(context.Background(), b, request(t, "hostile-diskfill", 100, 1), pluginhost.RunOptions{})
			var pe *pluginhost.Error
			if !errors.Is(err, pluginhost.ErrQuota) || !errors.As(err, &pe) || pe.Retryable() || !strings.Contains(err.Error(), "into its private TMPDIR, past the 32 MiB a plugin process may") {
				t.Fatalf("diskfill: want the process killed at the quota, got %v", err)
			}
			t.Logf("diskfill: %.300s", err)
			// Removed files held open count too: a walk of TMPDIR does
			// not see them, and a plugin held 1 GiB that way under a
			// 16 MiB quota ("SUCCEEDED: held 1024 MiB in 64 removed
			// files").
			_, err = h.Run(context.Background(), b, request(t, "hostile-diskhidden", 100, 1), pluginhost.RunOptions{})
			if !errors.Is(err, pluginhost.ErrQuota) || !strings.Contains(err.Error(), "into its private TMPDIR, past the 32 MiB a plugin process may") {
				t.Fatalf("diskhidden: want the process killed at the quota, got %v", err)
			}
			// And removed files kept mapped, their descriptors closed:
			// neither walk saw them ("SUCCEEDED: held 400 MiB of removed
			// files … past the quota").
			_, err = h.Run(context.Background(), b, request(t, "hostile-diskmapped", 100, 1), pluginhost.RunOptions{})
			if !errors.Is(err, pluginhost.ErrQuota) || !strings.Contains(err.Error(), "into its private TMPDIR, past the 32 MiB a plugin process may") {
				t.Fatalf("diskmapped: want the process killed at the quota, got %v", err)
			}
			if _, err := h.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after: %v", err)
			}
		})
	}
}

// A plugin that answers the handshake itself, naming a TCP address, does
// not make the host connect there: a confined plugin may not connect
// anywhere, and the host, which may, connected to 127.0.0.1:<its port>
// (HTTP/2's preface arrived at this test's listener). Refused before any
// connection, with or without the sandbox.
func TestPluginHandshakeAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), Env: []string{"BADPROTO_MODE=address", "BADPROTO_ADDR=" + ln.Addr().String()}})
			_, err := h.Info(context.Background(), pluginhost.Binary{Path: binary("badproto")})
			if !errors.Is(err, pluginhost.ErrStart) || !strings.Contains(err.Error(), `handshake names the tcp address "`+ln.Addr().String()+`"`) {
				t.Fatalf("want the handshake's address refused, got %v", err)
			}
		})
	}
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(500 * time.Millisecond))
	if conn, err := ln.Accept(); err == nil {
		conn.Close()
		t.Fatal("the host connected to the address the plugin named")
	}
}

// The plugin's TMPDIR is the plugin's: a link there, named in the
// handshake, to another process's unix socket (a root-owned 0600 one
// here) had the host connect to it as root and speak gRPC to it, graceful
// close included. A symbolic link is refused by its type; a hard link
// (the same inode, a socket: sandbox off, where the plugin may make one)
// by its listener, which is not the plugin (SO_PEERCRED, checked on the
// connection itself, so that a name swapped after the check changes
// nothing).
func TestPluginHandshakeLink(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "victim.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mode, sb, want string
	}{
		{"symlink", "sandbox", `, which is a symbolic link to "` + sock + `"`},
		{"symlink", "sandbox off", `, which is a symbolic link to "` + sock + `"`},
		{"hardlink", "sandbox off", fmt.Sprintf(`is not the plugin's: its listener is process %d`, os.Getpid())},
	}
	for _, c := range cases {
		t.Run(c.mode+" "+c.sb, func(t *testing.T) {
			sb := sandboxOff(t)
			if c.sb == "sandbox" {
				sb = requireSandbox(t, "self", 0)
			}
			h := newHost(t, pluginhost.Config{Sandbox: sb, Env: []string{"BADPROTO_MODE=" + c.mode, "BADPROTO_ADDR=" + sock}})
			_, err := h.Info(context.Background(), pluginhost.Binary{Path: binary("badproto")})
			if !errors.Is(err, pluginhost.ErrStart) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want the handshake's socket refused (%s), got %v", c.want, err)
			}
		})
	}
	// Nothing spoke to the victim (the hard link's connection, refused,
	// was closed before a byte was sent).
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if n, _ := conn.Read(make([]byte, 64)); n > 0 {
			t.Errorf("the host sent %d bytes to the socket the plugin named", n)
		}
		conn.Close()
	}
}

// A plugin does not get the worker's standard input. go-plugin gives its
// own: under `msjfarm run` on a terminal, a plugin, confined or not, read
// what the user typed, and through the terminal's descriptor could type
// into the user's shell (TIOCSTI), past the sandbox, which forbids
// opening /dev/tty but not a descriptor inherited. Here the worker's
// standard input is a pipe holding a line: the plugin read it
// ("SUCCEEDED: read \"typed at the worker's terminal\\n\"").
func TestPluginStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("typed at the worker's terminal\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = old; r.Close() })
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1})
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("hostile")}, request(t, "hostile-stdin", 100, 1), pluginhost.RunOptions{})
			if err == nil || !strings.Contains(err.Error(), "attack stdin refused: read nothing from its standard input: EOF") {
				t.Errorf("want the plugin's standard input empty, got %v", err)
			}
		})
	}
}

// A descriptor the worker inherited open (not close-on-exec: a shell's
// `201<secrets.env`) does not reach a plugin. It did, sandbox or not:
// the plugin read "MSJFARM_S3_SECRET_KEY=…" from it (and appended to a
// root-owned 0600 file through another).
func TestPluginInheritedDescriptors(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "secrets-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("MSJFARM_S3_SECRET_KEY=inherited-secret"); err != nil {
		t.Fatal(err)
	}
	const fd = 201
	if err := syscall.Dup3(int(f.Fd()), fd, 0); err != nil { // no O_CLOEXEC, as a shell's redirection
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			// Inherited as a shell's would be: open across exec until a
			// plugin starts.
			if _, err := unix.FcntlInt(fd, unix.F_SETFD, 0); err != nil {
				t.Fatal(err)
			}
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1, Env: []string{fmt.Sprintf("HOSTILE_FD=%d", fd)}})
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("hostile")}, request(t, "hostile-fd", 100, 1), pluginhost.RunOptions{})
			if err == nil || !strings.Contains(err.Error(), "attack fd refused: bad file descriptor") || strings.Contains(err.Error(), "inherited-secret") {
				t.Errorf("want the descriptor closed in the plugin, got %v", err)
			}
		})
	}
}

// A plugin's error is someone else's text, kept to termtext.MaxMessage:
// one of 8 MiB went whole to the terminal and the worker's log, was
// stored six times over and was too large for the task's state on NATS.
func TestPluginErrorClipped(t *testing.T) {
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 1})
	_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("hostile")}, request(t, "hostile-bigerror", 100, 1), pluginhost.RunOptions{})
	if !errors.Is(err, pluginhost.ErrPolicy) || len(err.Error()) > 20<<10 || !strings.Contains(err.Error(), "bytes more)") {
		t.Fatalf("want the plugin's error clipped, got %d bytes: %.300s", len(fmt.Sprint(err)), err)
	}
}

// A host whose own hard address-space limit is below the plugins' (a
// shell's `ulimit -v 6000000`) runs them under its limit: the launcher
// failed to set the 7 GiB a process of two replications gets
// ("address-space limit 7516192768: operation not permitted"), and every
// replication failed, five times each, where --runner inprocess ran.
func TestPluginUnderHostMemoryLimit(t *testing.T) {
	if _, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self"}); err != nil {
		t.Skipf("no full sandbox here: %v", err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HOSTTEST_ASLIMIT_PLUGIN="+binary("fcfs"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "replication: ok") {
		t.Fatalf("host under a 6 GB hard address-space limit: %v\n%s", err, out)
	}
}

// asLimitHelper is TestPluginUnderHostMemoryLimit's host.
func asLimitHelper(path string) {
	const limit = 6000000 << 10 // ulimit -v 6000000
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Println("setrlimit:", err)
		os.Exit(1)
	}
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self"})
	if err != nil {
		fmt.Println("sandbox:", err)
		os.Exit(1)
	}
	h := pluginhost.New(pluginhost.Config{Logger: quiet, Sandbox: sb, MaxConcurrent: 2, DigestDir: "off"})
	defer h.Close()
	if _, err := h.Run(context.Background(), pluginhost.Binary{Path: path}, request(exitTB{}, "fcfs", 2000, 1), pluginhost.RunOptions{}); err != nil {
		fmt.Println("replication:", err)
		return
	}
	fmt.Println("replication: ok")
}

// A plugin's process is killed for CPU its replications do not use: 64
// goroutines spinning on after its replication ended took every core of
// the worker while each result recorded 0.04 s of CPU (idle, more than
// half a core over a window), and spinning past its GOMAXPROCS (1 here)
// within a replication fails that replication, not to be retried. The
// host goes on with a new process. Waits on the process's death, with a
// ceiling far above the 5 s window.
func TestPluginCPU(t *testing.T) {
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1})
			b := pluginhost.Binary{Path: binary("hostile")}
			_, err := h.Run(context.Background(), b, request(t, "hostile-spin", 100, 1), pluginhost.RunOptions{})
			msg := fmt.Sprint(err)
			i := strings.Index(msg, "spinning in pid ")
			if i < 0 {
				t.Fatalf("spin: %v", err)
			}
			var pid int
			fmt.Sscan(msg[i+len("spinning in pid "):], &pid)
			for deadline := time.Now().Add(2 * time.Minute); syscall.Kill(pid, 0) == nil; time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the spinning plugin process %d still runs after 2 minutes", pid)
				}
			}
			if _, err := h.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after: %v", err)
			}
			if n := h.Starts(); n != 2 {
				t.Errorf("%d plugin processes started, want 2", n)
			}

			// Past its GOMAXPROCS (1) within a replication: a margin of
			// −0.5 cores, since on a loaded machine the spinner gets
			// fewer cores than it asks for (at +0.5 it did not cross
			// 1.5 beside four busy loops on these 2 cores).
			h1 := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1, Env: []string{"GOMAXPROCS=1"}, CPUMargin: -0.5})
			_, err = h1.Run(context.Background(), b, request(t, "hostile-spinprocs", 100, 1), pluginhost.RunOptions{})
			var pe *pluginhost.Error
			if !errors.Is(err, pluginhost.ErrCPU) || !errors.As(err, &pe) || pe.Retryable() ||
				!strings.Contains(err.Error(), "more than the 1 its GOMAXPROCS gives (-0.5)") {
				t.Fatalf("spinprocs: want the process killed for its CPU, got %v", err)
			}
			t.Logf("spinprocs: %.300s", err)
			if _, err := h1.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after: %v", err)
			}
		})
	}
}
