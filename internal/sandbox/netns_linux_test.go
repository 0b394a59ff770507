package sandbox

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nsProbeEnv makes this test binary, started through the launcher, run
// nsProbe instead of its tests; its value is an abstract socket name the
// test holds in the machine's network namespace.
const nsProbeEnv = "SANDBOX_TEST_NSPROBE"

// nsProbe reports, one line each, what a plugin process is in: its ids,
// its capabilities (the thread's, as the kernel checks them), and whether
// it may bind the abstract name the test holds.
func nsProbe(name string) {
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
}

// TestPluginNamespace: a plugin process has a network namespace of its
// own (it binds an abstract name the test holds in the machine's, which
// there is refused as in use), the ids the sandbox gives it, and no
// capability: not even the CAP_SYS_ADMIN its launcher kept, as an
// ambient capability, to map its user namespace (a worker that is not
// root). Run as root and as an ordinary user (.ci/run runs this package's
// tests as nobody too): root's path is a network namespace alone, the
// other's a user namespace that owns one. With the sandbox off, the
// control, the probe shares the test's namespace and the bind is refused.
func TestPluginNamespace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := holdAbstract(t, "msjfarm-sandbox-test")
	for _, mode := range []Mode{Require, Off} {
		t.Run(string(mode), func(t *testing.T) {
			s, err := New(Options{Mode: mode})
			if err != nil {
				t.Skipf("no full sandbox here: %v", err)
			}
			if mode != Off && !s.NetNS() {
				t.Skipf("no network namespace for plugins here: %v", s.netnsErr)
			}
			out := runAsPlugin(t, s, exe, nsProbeEnv+"="+name)
			t.Logf("uid %d: %s\n%s", os.Geteuid(), s.Describe(), out)
			got := probeLines(out)
			if mode == Off {
				if !strings.Contains(got["bind"], "address already in use") {
					t.Errorf("unconfined, binding the test's @%s: %q, want address already in use", name, got["bind"])
				}
				return
			}
			if got["bind"] != "ok" {
				t.Errorf("confined, binding @%s (the machine's is the test's): %q, want ok in a namespace of its own", name, got["bind"])
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

// The probe's error, when the machine has no network namespace for
// plugins, is what Describe reports; here, the real probe, started again,
// must agree with the one New made (it is cached), and name nothing that
// is not the machine's.
func TestNetNSProbe(t *testing.T) {
	flags, err := probeNetNS()
	s, err2 := New(Options{Mode: BestEffort, User: "self"})
	if err2 != nil {
		t.Fatal(err2)
	}
	if s.netns != flags || (err == nil) != (s.netnsErr == nil) {
		t.Fatalf("New's probe (%#x, %v) and probeNetNS (%#x, %v) differ", s.netns, s.netnsErr, flags, err)
	}
	d := s.Describe()
	if err != nil {
		if !strings.Contains(d, "not required, not here: a network namespace of its own") {
			t.Errorf("Describe does not say what is missing: %s", d)
		}
		t.Skipf("no network namespace here: %v", err)
	}
	want := uintptr(unix.CLONE_NEWNET)
	if os.Geteuid() != 0 {
		want |= unix.CLONE_NEWUSER
	}
	if flags != want {
		t.Errorf("flags %#x, want %#x", flags, want)
	}
	if !strings.Contains(d, "a network namespace of its own") {
		t.Errorf("Describe: %s", d)
	}
}

// Where the machine gives no network namespace (user namespaces off, a
// container's profile), the probe's error is what Describe reports, and
// plugins start as before, in the machine's namespace: here a clone the
// kernel refuses whatever its configuration (a new user namespace sharing
// the parent's file-system context, EINVAL) stands for such a machine.
func TestNetNSUnavailable(t *testing.T) {
	err := probeFlags(unix.CLONE_NEWUSER | unix.CLONE_FS)
	if err == nil {
		t.Fatal("the probe of an impossible clone succeeded")
	}
	s, err2 := New(Options{Mode: Require})
	if err2 != nil {
		t.Skipf("no full sandbox here: %v", err2)
	}
	s.netns, s.netnsErr = 0, err
	t.Logf("the probe: %v", err)
	if d := s.Describe(); !strings.Contains(d, "not required, not here: a network namespace of its own ("+err.Error()+")") ||
		strings.Contains(d, "MISSING") {
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
// plugin would be, with env (a probe's variable), and returns what it
// printed; it is killed after two minutes.
func runAsPlugin(t *testing.T, s *Sandbox, exe, env string) []byte {
	t.Helper()
	p, err := s.Command(exe, []string{"-test.run=^$"}, []string{env}, 1, "", 0)
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
// launcher, in its own network namespace (and, not as root, the user
// namespace that owns it) and without: the probe binary (this test
// binary) confined, run to its exit. A worker starts one process per
// policy family and replaces it only when it fails.
func BenchmarkLaunch(b *testing.B) {
	s, err := New(Options{Mode: Require})
	if err != nil {
		b.Skipf("no full sandbox here: %v", err)
	}
	if !s.NetNS() {
		b.Skipf("no network namespace here: %v", s.netnsErr)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	flags := s.netns
	for _, c := range []struct {
		name  string
		flags uintptr
	}{{"netns", flags}, {"no-netns", 0}} {
		b.Run(c.name, func(b *testing.B) {
			s.netns = c.flags
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
	s.netns = flags
}
