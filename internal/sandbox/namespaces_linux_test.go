package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nsProbeEnv makes this test binary, started through the launcher, run
// nsReport instead of its tests; its value is an abstract socket name the
// test holds in the machine's network namespace. secretEnv names a file
// of the test's, outside anything a plugin may use.
const (
	nsProbeEnv   = "SANDBOX_TEST_NSPROBE"
	secretEnv    = "SANDBOX_TEST_SECRET"
	writeRootEnv = "SANDBOX_TEST_WRITE_ROOT"
)

// nsReport reports, one line each, what a plugin process is in: its ids,
// its capabilities (the thread's, as the kernel checks them), whether it
// may bind the abstract name the test holds, and what it sees of the
// machine's files.
func nsReport(name string) {
	fmt.Printf("ids: %d %d %d %d\n", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var d [2]unix.CapUserData
	if err := unix.Capget(&hdr, &d[0]); err != nil {
		fmt.Printf("caps: %v\n", err)
	} else {
		fmt.Printf("caps: %x %x %x\n", uint64(d[1].Effective)<<32|uint64(d[0].Effective),
			uint64(d[1].Permitted)<<32|uint64(d[0].Permitted), uint64(d[1].Inheritable)<<32|uint64(d[0].Inheritable))
	}
	amb, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, unix.CAP_SYS_ADMIN, 0, 0)
	fmt.Printf("ambient: %d %v\n", amb, err)
	l, err := net.Listen("unix", "@"+name)
	if err == nil {
		l.Close()
		fmt.Println("bind: ok")
	} else {
		fmt.Printf("bind: %v\n", err)
	}
	result := func(err error) string {
		if err != nil {
			return err.Error()
		}
		return "ok"
	}
	secret := os.Getenv(secretEnv)
	_, err = os.Stat(secret)
	fmt.Printf("stat secret: %s\n", result(err))
	_, err = os.ReadFile(secret)
	fmt.Printf("read secret: %s\n", result(err))
	_, err = os.Stat("/etc/passwd")
	fmt.Printf("stat passwd: %s\n", result(err))
	var names []string
	if ents, err := os.ReadDir("/"); err != nil {
		names = []string{err.Error()}
	} else {
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	fmt.Printf("root: %s\n", strings.Join(names, " "))
	fmt.Printf("write outside: %s\n", result(os.WriteFile(filepath.Join(filepath.Dir(secret), "planted"), []byte("x"), 0o644)))
	if os.Getenv(writeRootEnv) != "" { // confined only: unconfined, this would be the machine's /
		fmt.Printf("write root: %s\n", result(os.WriteFile("/planted", []byte("x"), 0o644)))
	}
	fmt.Printf("write tmpdir: %s\n", result(os.WriteFile(filepath.Join(os.Getenv("TMPDIR"), "scratch"), []byte("x"), 0o644)))
}

// TestPluginNamespace: a plugin process has a network namespace of its
// own (it binds an abstract name the test holds in the machine's, which
// there is refused as in use), a root directory of its own (a file of the
// test's is not there even to stat, nor /etc/passwd; its root lists only
// the places of what it may use; it writes its TMPDIR and nothing else),
// the ids the sandbox gives it, and no capability: not even the
// CAP_SYS_ADMIN its launcher kept, as an ambient capability, to map its
// user namespace and build that root (a worker that is not root). The
// private root holds without Landlock too (a kernel without it, where it
// is the plugin's only file confinement). Run as root and as an ordinary
// user (`make test` runs this package's tests as nobody too): root's path
// is namespaces alone, the other's a user namespace that owns them. With
// the sandbox off, the control, the probe shares the test's namespaces:
// the bind is refused, the secret read.
func TestPluginNamespace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := holdAbstract(t, "msjfarm-sandbox-test")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		mode     Mode
		landlock bool
	}{{"require", Require, true}, {"without Landlock", BestEffort, false}, {"off", Off, false}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Options{Mode: c.mode})
			if err != nil {
				t.Skipf("no full sandbox here: %v", err)
			}
			if c.mode != Off && (!s.NetNS() || !s.PrivateRoot()) {
				t.Skipf("no namespaces for plugins here: %v; %v", s.netnsErr, s.rootErr)
			}
			if !c.landlock {
				s.landlock = 0
			}
			env := []string{nsProbeEnv + "=" + name, secretEnv + "=" + secret}
			if c.mode != Off {
				env = append(env, writeRootEnv+"=1")
			}
			out := runAsPlugin(t, s, exe, env...)
			t.Logf("uid %d: %s\n%s", os.Geteuid(), s.Describe(), out)
			got := probeLines(out)
			if c.mode == Off {
				if !strings.Contains(got["bind"], "address already in use") || got["read secret"] != "ok" || got["write outside"] != "ok" {
					t.Errorf("unconfined, the probe shares the test's namespaces: bind %q, read %q, write %q", got["bind"], got["read secret"], got["write outside"])
				}
				return
			}
			if got["bind"] != "ok" {
				t.Errorf("confined, binding @%s (the machine's is the test's): %q, want ok in a namespace of its own", name, got["bind"])
			}
			for _, k := range []string{"stat secret", "read secret", "stat passwd"} {
				if !strings.HasSuffix(got[k], "no such file or directory") {
					t.Errorf("%s: %q, want no such file or directory", k, got[k])
				}
			}
			// The places of the system libraries, /dev/null and TMPDIR.
			allowed := []string{"dev", "etc", "lib", "lib64", "usr", strings.Split(strings.TrimPrefix(os.TempDir(), "/"), "/")[0]}
			if c.landlock && got["root"] == "open /: permission denied" {
				got["root"] = "" // Landlock refuses to list it (no rule grants /)
			}
			for _, n := range strings.Fields(got["root"]) {
				if !slices.Contains(allowed, n) {
					t.Errorf("the plugin's root holds %q (all: %s)", n, got["root"])
				}
			}
			if got["write root"] == "ok" || got["write outside"] == "ok" || got["write tmpdir"] != "ok" {
				t.Errorf("writing its root: %q, the test's directory: %q (want both refused), its TMPDIR: %q (want ok)", got["write root"], got["write outside"], got["write tmpdir"])
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(secret), "planted")); err == nil {
				t.Errorf("the confined probe wrote into the test's directory")
			}
			uid, gid := os.Geteuid(), os.Getegid()
			if s.UID() >= 0 {
				uid, gid = s.UID(), s.gid
			}
			if want := fmt.Sprintf("%d %d %d %d", uid, uid, gid, gid); got["ids"] != want {
				t.Errorf("ids %q, want %q", got["ids"], want)
			}
			if uid != 0 && got["caps"] != "0 0 0" {
				t.Errorf("capabilities (effective, permitted, inheritable) %q, want none", got["caps"])
			}
			if got["ambient"] != "0 <nil>" {
				t.Errorf("ambient CAP_SYS_ADMIN: %q, want 0", got["ambient"])
			}
		})
	}
}

// What the probes found is what New reports: on this machine (Linux
// 6.x), both namespaces for plugins; the flags are root's (CLONE_NEWNET)
// or, for any other user, with the user namespace that owns them.
func TestNamespaceProbe(t *testing.T) {
	flags, netErr, rootErr := probeNamespaces()
	s, err := New(Options{Mode: BestEffort, User: "self"})
	if err != nil {
		t.Fatal(err)
	}
	if s.nsFlags != flags || (netErr == nil) != (s.netnsErr == nil) || (rootErr == nil) != (s.rootErr == nil) {
		t.Fatalf("New's probe (%#x, %v, %v) and probeNamespaces (%#x, %v, %v) differ", s.nsFlags, s.netnsErr, s.rootErr, flags, netErr, rootErr)
	}
	d := s.Describe()
	if rootErr != nil {
		if !strings.Contains(d, "not required, not here: a root directory of its own") {
			t.Errorf("Describe does not say what is missing: %s", d)
		}
		t.Skipf("no private root here: %v (network namespace: %v)", rootErr, netErr)
	}
	want := uintptr(unix.CLONE_NEWNET | unix.CLONE_NEWNS)
	if os.Geteuid() != 0 {
		want |= unix.CLONE_NEWUSER
	}
	if flags != want {
		t.Errorf("flags %#x, want %#x", flags, want)
	}
	if !strings.Contains(d, "a network namespace of its own") || !strings.Contains(d, "a root directory of its own (") || strings.Contains(d, "not required") {
		t.Errorf("Describe: %s", d)
	}
}

// Where the machine gives no namespaces (user namespaces off, a
// container's profile), the probes' errors are what Describe reports,
// and plugins start as before, in the machine's namespaces: here a clone
// the kernel refuses whatever its configuration (a new user namespace
// sharing the parent's file-system context, EINVAL) stands for such a
// machine.
func TestNamespacesUnavailable(t *testing.T) {
	err := probeFlags(unix.CLONE_NEWUSER|unix.CLONE_FS, false)
	if err == nil {
		t.Fatal("the probe of an impossible clone succeeded")
	}
	s, err2 := New(Options{Mode: Require})
	if err2 != nil {
		t.Skipf("no full sandbox here: %v", err2)
	}
	s.nsFlags, s.netnsErr, s.rootErr = 0, err, err
	t.Logf("the probe: %v", err)
	d := s.Describe()
	for _, want := range []string{"not required, not here: a network namespace of its own (" + err.Error() + ")",
		"not required, not here: a root directory of its own (" + err.Error() + "): a plugin may stat any path"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q: %s", want, d)
		}
	}
	if strings.Contains(d, "MISSING") {
		t.Errorf("Describe: %s", d)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := holdAbstract(t, "msjfarm-sandbox-test-unavail")
	out := runAsPlugin(t, s, exe, nsProbeEnv+"="+name)
	if got := probeLines(out)["bind"]; got != "listen unix @"+name+": bind: address already in use" {
		t.Errorf("in the machine's namespace the test's name is in use; the probe's bind: %q", got)
	}
}

// holdAbstract binds an abstract unix socket name (prefix and this
// process's pid) in the test's network namespace, the machine's, for the
// test's duration, as a service of the machine would, and returns it.
func holdAbstract(t *testing.T, prefix string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return name
}

// runAsPlugin starts exe (this test binary) through s's launcher as a
// plugin would be, with env (a probe's variables), and returns what it
// printed; it is killed after two minutes.
func runAsPlugin(t *testing.T, s *Sandbox, exe string, env ...string) []byte {
	t.Helper()
	p, err := s.Command(exe, []string{"-test.run=^$"}, env, 1, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Cleanup()
	var out bytes.Buffer
	p.Cmd.Stdout, p.Cmd.Stderr = &out, &out
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting the probe: %v", err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { p.Cmd.Process.Kill() })
	defer timer.Stop()
	if err := p.Cmd.Wait(); err != nil {
		t.Fatalf("probe: %v\n%s", err, out.Bytes())
	}
	return out.Bytes()
}

// probeLines reads a probe's report: one "name: result" a line.
func probeLines(out []byte) map[string]string {
	got := map[string]string{}
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ": ")
		got[k] = v
	}
	return got
}

// BenchmarkLaunch is what starting one plugin process costs through the
// launcher: in its own namespaces (network, and mount for its private
// root; not as root, with the user namespace that owns them), in a
// network namespace alone, and in the machine's: the probe binary (this
// test binary) confined, run to its exit. A worker starts one process per
// policy family and replaces it only when it fails.
func BenchmarkLaunch(b *testing.B) {
	s, err := New(Options{Mode: Require})
	if err != nil {
		b.Skipf("no full sandbox here: %v", err)
	}
	if !s.PrivateRoot() {
		b.Skipf("no private root here: %v", s.rootErr)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	flags := s.nsFlags
	for _, c := range []struct {
		name  string
		flags uintptr
	}{{"root+netns", flags}, {"netns", flags &^ unix.CLONE_NEWNS}, {"none", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s.nsFlags = c.flags
			for b.Loop() {
				p, err := s.Command(exe, []string{"-test.run=^$"}, []string{nsProbeEnv + "=bench"}, 1, "", 0)
				if err != nil {
					b.Fatal(err)
				}
				if out, err := p.Cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				p.Cleanup()
			}
		})
	}
	s.nsFlags = flags
}

// TestKernelAtLeast: the releases uname -r gives, read as major.minor
// (nprocPerNamespace asks for 5.14).
func TestKernelAtLeast(t *testing.T) {
	for _, c := range []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v1272", true},
		{"5.14.0-427.13.1.el9_4.x86_64", true}, // RHEL 9: 5.14 itself
		{"5.14-rc1", true},
		{"5.13.19-2-pve", false},
		{"5.4.0-150-generic", false},
		{"4.18.0-553.el8_10.x86_64", false},
		{"10.0", true},
		{"6", false}, // no minor: not a version read
		{"", false},
		{"x.y", false},
	} {
		if got := kernelAtLeast(c.release, 5, 14); got != c.want {
			t.Errorf("kernelAtLeast(%q, 5, 14) = %v, want %v", c.release, got, c.want)
		}
	}
}
