package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// nonRoot is msjfarm run as a user other than root with the hostile test
// plugin on its search path: nobody when the test runs as root (root
// reads every process's /proc and lists every directory whatever its
// mode), the test's own user otherwise. Plugins run as that user too.
type nonRoot struct {
	dir, bin, plugins, home, tmp string
}

func newNonRoot(t *testing.T) *nonRoot {
	t.Helper()
	dir, err := os.MkdirTemp("", "msjfarm-nonroot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Everything the other user runs or reads is in dir, readable by all
	// (t.TempDir and the test binary's own directory are root's 0700).
	n := &nonRoot{dir: dir, bin: filepath.Join(dir, "msjfarm"), plugins: filepath.Join(dir, "plugins"),
		home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp")}
	b, err := os.ReadFile(msjfarmBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := hosttest.Build(n.plugins, "./worker/pluginhost/testdata/msjfarm-policy-hostile"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{n.home, n.tmp} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for p, mode := range map[string]os.FileMode{dir: 0o755, n.plugins: 0o755, n.home: 0o777, n.tmp: 0o777} {
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	return n
}

// sweep writes a sweep of one replication of policy and returns its path.
func (n *nonRoot) sweep(t *testing.T, policy string) string {
	t.Helper()
	p := filepath.Join(n.dir, policy+".yaml")
	if err := os.WriteFile(p, []byte("name: "+policy+"\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: ["+policy+"]\nreplications: 1\nrun: {arrivals: 1000}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs msjfarm with args as the other user, with env added to an
// environment of its own, and returns its combined output and error.
func (n *nonRoot) run(env []string, args ...string) (string, error) {
	cmd := exec.Command(n.bin, args...)
	cmd.Dir = n.home
	cmd.Env = append([]string{"HOME=" + n.home, "TMPDIR=" + n.tmp, "PATH=/usr/bin:/bin"}, env...)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestUnconfinedPluginCannotReadEnviron: a plugin the sandbox does not
// confine (--plugin-sandbox off here; best-effort on a kernel without
// Landlock alike) and that runs as msjfarm's own user, as on a cluster
// where workers run as the researcher, read /proc/<msjfarm>/environ: the
// S3 and NATS secrets of a process configured by its environment. msjfarm
// makes itself non-dumpable at start (sandbox.Undumpable), so the hostile
// plugin's procenv attack is refused by the kernel: `msjfarm run`, as a
// user other than root, runs it as a task (--plugin-trial=false) and as
// submit's trial would, and both report the refusal, never "SUCCEEDED".
func TestUnconfinedPluginCannotReadEnviron(t *testing.T) {
	const secret = "environ-secret-do-not-read"
	n := newNonRoot(t)
	sweep := n.sweep(t, "hostile-procenv")
	for _, trial := range []string{"true", "false"} {
		out, err := n.run([]string{"MSJFARM_S3_SECRET_KEY=" + secret}, "run", "--plugin-sandbox", "off", "--plugin-user", "self",
			"--plugin-trial="+trial, "--plugin-path", n.plugins, "--storage", filepath.Join(n.home, "data-"+trial), sweep)
		t.Logf("--plugin-trial=%s: %v\n%s", trial, err, out)
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("--plugin-trial=%s: want the run to fail with the attack's error, got %v", trial, err)
		}
		if !strings.Contains(out, "attack procenv refused") || !strings.Contains(out, "environ: permission denied") ||
			strings.Contains(out, "SUCCEEDED") {
			t.Errorf("--plugin-trial=%s: the unconfined plugin was not refused the host's environ", trial)
		}
	}
}

// TestPluginModesHideNothing: a confined plugin owns its private TMPDIR
// and gives its directories modes as it makes them (chmod is refused
// under the sandbox, mkdir's mode is not). The hostile plugin's diskdark
// writes 256 MiB into a directory of mode 0300 (it may fill it by name,
// only root may list it). A host that is not
// root, running plugins as its own user, counted none of it against a
// 32 MiB quota ("attack diskdark SUCCEEDED: held 256 MiB …") and left it
// on disk when the process exited. The host gives back to itself what it
// owns (sandbox.TmpUsage): the process is killed at the quota, and the
// run leaves no plugin TMPDIR behind.
func TestPluginModesHideNothing(t *testing.T) {
	n := newNonRoot(t)
	out, err := n.run(nil, "run", "--plugin-user", "self", "--plugin-trial=false", "--plugin-tmp-quota", "33554432",
		"--plugin-path", n.plugins, "--storage", filepath.Join(n.home, "data"), n.sweep(t, "hostile-diskdark"))
	t.Logf("%v\n%s", err, out)
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("want the run to fail with the task, got %v", err)
	}
	if !strings.Contains(out, "TMPDIR quota exceeded") || strings.Contains(out, "SUCCEEDED") {
		t.Errorf("the plugin's unreadable directory was not counted against its quota")
	}
	left, _ := filepath.Glob(filepath.Join(n.tmp, "msjfarm-plugin-*"))
	if len(left) > 0 {
		t.Errorf("plugin TMPDIRs left behind: %v", left)
	}
}
