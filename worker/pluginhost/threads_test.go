package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// A plugin that starts thousands of threads (hostile-threads: goroutines
// locked to threads of their own, 8000 of them here, about 20 000 a
// second) is killed once the host counts more than MaxThreads, and its
// replication fails saying so, not to be retried; the host goes on. As
// root (CI) the kernel does not bound root's tasks, and with the sandbox
// off there is no kernel bound: this is the host's count alone. Before
// the count, the plugin ran all 8000 (its report: "SUCCEEDED: ran 8000
// threads").
func TestPluginThreads(t *testing.T) {
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1, Env: []string{"HOSTILE_THREADS=8000"}})
			b := pluginhost.Binary{Path: binary("hostile")}
			_, err := h.Run(context.Background(), b, request(t, "hostile-threads", 100, 1), pluginhost.RunOptions{})
			var pe *pluginhost.Error
			if !errors.Is(err, pluginhost.ErrThreads) || !errors.As(err, &pe) || pe.Retryable() ||
				!regexp.MustCompile(`the plugin ran \d+ threads, past the 1024 a plugin process may`).MatchString(err.Error()) {
				t.Fatalf("threads: want the process killed past 1024 threads, got %v", err)
			}
			t.Logf("threads: %.300s", err)
			if _, err := h.Run(context.Background(), b, request(t, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("an honest replication after: %v", err)
			}
		})
	}
}

// The kernel's bound, which holds between two of the host's counts and
// before the first: a host running as an ordinary user (uid helperUID
// here when the test runs as root) starts hostile-threads confined, with the
// host's count off (MaxThreads < 0), and the plugin's 20 000 threads stop
// at 4096 (RLIMIT_NPROC): the Go runtime cannot start the next one and the
// plugin dies. The host then runs an honest replication. Without the limit
// the plugin ran all 20 000 ("SUCCEEDED: ran 20000 threads"), as many as
// this machine's pid_max (32768) leaves.
//
// In a pid namespace of its own (a container's), the host cannot count its
// user's tasks outside it, and before the plugin's user namespace counted
// them apart, its plugins had no kernel bound: there the plugin ran all
// 20 000. That subtest needs root to make the namespace.
func TestPluginThreadsKernel(t *testing.T) {
	if _, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self"}); err != nil {
		t.Skipf("no full sandbox here: %v", err)
	}
	dir, err := os.MkdirTemp("", "msjfarm-threads-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	self, plug := filepath.Join(dir, "pluginhost.test"), filepath.Join(dir, "msjfarm-policy-hostile")
	for from, to := range map[string]string{os.Args[0]: self, binary("hostile"): plug} {
		if err := copyExec(from, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags uintptr
	}{{"host", 0}, {"host in a pid namespace", syscall.CLONE_NEWPID}} {
		t.Run(c.name, func(t *testing.T) {
			if c.flags != 0 && os.Geteuid() != 0 {
				t.Skip("making a pid namespace for the host needs root")
			}
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "HOSTTEST_THREADS_PLUGIN="+plug)
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: c.flags}
			if os.Geteuid() == 0 {
				cmd.SysProcAttr.Credential = &syscall.Credential{Uid: helperUID, Gid: helperUID}
			}
			out, err := cmd.CombinedOutput()
			t.Logf("host as uid %d: %.1500s", map[bool]int{true: helperUID, false: os.Geteuid()}[os.Geteuid() == 0], out)
			if err != nil {
				t.Fatalf("the host: %v", err)
			}
			if c.flags != 0 && !tasksCountedApart(string(out)) {
				t.Skip("the kernel does not count a plugin's tasks apart from its user's here (Linux before 5.14, or no user namespace for the plugin)")
			}
			m := regexp.MustCompile(`failed to create new OS thread \(have (\d+) already`).FindSubmatch(out)
			if m == nil || !strings.Contains(string(out), "honest: ok") {
				t.Fatalf("want the plugin stopped by the kernel at its next thread and the host going on")
			}
			// The limit is 4096 tasks in the plugin's own user namespace, or
			// the user's tasks as the plugin started (the host's few dozen
			// threads) plus 4096.
			if n, _ := strconv.Atoi(string(m[1])); n > 4096+256 {
				t.Errorf("the plugin ran %d threads, want at most 4096 more than its user's", n)
			}
		})
	}
}

// tasksCountedApart: the kernel counts the plugin's tasks apart from its
// user's others (Linux 5.14 or later, and the start line out says the
// plugin has namespaces of its own, which are a user namespace for a host
// that is not root). Read here from the machine, not from what the
// sandbox decided, which is what the test checks.
func tasksCountedApart(out string) bool {
	var major, minor int
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if n, _ := fmt.Sscanf(string(rel), "%d.%d", &major, &minor); err != nil || n != 2 {
		return false
	}
	return (major > 5 || major == 5 && minor >= 14) && strings.Contains(out, "a network namespace of its own (the abstract")
}

// helperUID is the user TestPluginThreadsKernel's host runs as under
// root: one of its own, not nobody, which a root host's plugins run as
// (the tests of other packages, at the same time): its plugin takes its
// user's 4096 tasks, and theirs could not start a thread.
const helperUID = 64917

// threadsHelper is TestPluginThreadsKernel's host.
func threadsHelper(path string) {
	sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require})
	if err != nil {
		fmt.Println("sandbox:", err)
		os.Exit(1)
	}
	fmt.Println(sb.Describe())
	h := pluginhost.New(pluginhost.Config{Logger: quiet, Sandbox: sb, MaxThreads: -1, MaxConcurrent: 1, DigestDir: "off",
		Env: []string{"HOSTILE_THREADS=20000"}})
	defer h.Close()
	b := pluginhost.Binary{Path: path}
	_, err = h.Run(context.Background(), b, request(exitTB{}, "hostile-threads", 100, 1), pluginhost.RunOptions{})
	var pe *pluginhost.Error
	if errors.As(err, &pe) {
		fmt.Printf("threads: %v\n%s\n", err, pe.Stderr)
	} else {
		fmt.Printf("threads: %v\n", err)
	}
	if _, err := h.Run(context.Background(), b, request(exitTB{}, "hostile-honest", 2000, 1), pluginhost.RunOptions{}); err != nil {
		fmt.Println("honest:", err)
		os.Exit(1)
	}
	fmt.Println("honest: ok")
}

// exitTB is request's testing.TB in a helper process: Fatal says why and
// exits.
type exitTB struct{ testing.TB }

func (exitTB) Helper() {}

func (exitTB) Fatal(a ...any) {
	fmt.Println(a...)
	os.Exit(1)
}

func copyExec(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// A process killed for a bound while it ran other replications fails them
// all, and which one crossed the bound is not known: each is retried
// (Shared). On the farm, the honest replications beside a thread bomb in
// the same plugin process failed with it, for good.
func TestPluginThreadsShared(t *testing.T) {
	h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 2, Env: []string{"HOSTILE_THREADS=8000"}})
	b := pluginhost.Binary{Path: binary("hostile")}
	honest := make(chan error, 1)
	go func() {
		_, err := h.Run(context.Background(), b, request(t, "hostile-honest", 5e6, 1), pluginhost.RunOptions{})
		honest <- err
	}()
	time.Sleep(200 * time.Millisecond) // the honest replication is under way
	_, err := h.Run(context.Background(), b, request(t, "hostile-threads", 100, 1), pluginhost.RunOptions{})
	herr := <-honest
	for name, e := range map[string]error{"threads": err, "honest": herr} {
		var pe *pluginhost.Error
		if !errors.Is(e, pluginhost.ErrThreads) || !errors.As(e, &pe) || !pe.Retryable() ||
			!strings.Contains(e.Error(), "while it ran 2 replications; which crossed the bound is not known, so each is retried") {
			t.Errorf("%s: want a shared, retried thread error, got %v", name, e)
		}
	}
}

// A plugin that starts its threads before its handshake (in init, or in
// main before Serve: HOSTILE_INIT_THREADS) is counted from its first
// instant, not from its answer: it is killed as it starts, well short of
// the 8000 it would run. Before, the host learnt of the process from its
// handshake, which this plugin sends once all 8000 run; one that never
// answered had StartTimeout (20 s) of threads, bounded only by the
// kernel, which does not bound root, a pid namespace of its own or the
// sandbox off.
func TestPluginThreadsAtStart(t *testing.T) {
	for _, c := range bothWays {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, pluginhost.Config{Sandbox: c.sb(t), MaxConcurrent: 1, Env: []string{"HOSTILE_INIT_THREADS=8000"}})
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: binary("hostile")}, request(t, "hostile-honest", 100, 1), pluginhost.RunOptions{})
			var pe *pluginhost.Error
			m := regexp.MustCompile(`the plugin ran (\d+) threads as it started, past the 1024 a plugin process may`).FindStringSubmatch(fmt.Sprint(err))
			if !errors.Is(err, pluginhost.ErrThreads) || !errors.As(err, &pe) || pe.Retryable() || m == nil {
				t.Fatalf("want the process killed as it started, got %v", err)
			}
			if n, _ := strconv.Atoi(m[1]); n >= 8000 {
				t.Errorf("the host counted %d threads: it let the plugin run all it wanted before counting", n)
			}
			t.Logf("%.300s", err)
		})
	}
}
