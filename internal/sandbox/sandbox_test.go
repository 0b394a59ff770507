package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Auto, "auto": Auto, "require": Require, "Best-Effort": BestEffort, " off ": Off} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("on"); err == nil || !strings.Contains(err.Error(), "--plugin-sandbox") {
		t.Errorf("ParseMode(on): want an error naming the flag, got %v", err)
	}
}

// The plugin user: root defaults to nobody and may not pick root; a bad
// name is an error naming the flag.
func TestUser(t *testing.T) {
	if _, err := New(Options{Mode: Off, User: "no-such-user-here"}); err == nil || !strings.Contains(err.Error(), "--plugin-user") {
		t.Errorf("unknown user: want an error naming --plugin-user, got %v", err)
	}
	s, err := New(Options{Mode: Off, User: "self"})
	if err != nil || s.UID() != -1 {
		t.Errorf("self: uid %d, %v; want the host's (-1)", s.UID(), err)
	}
	if os.Geteuid() != 0 {
		return
	}
	if s, err := New(Options{Mode: Off}); err != nil || s.UID() <= 0 {
		t.Errorf("root's default plugin user: uid %d, %v; want nobody", s.UID(), err)
	}
	if _, err := New(Options{Mode: Off, User: "0"}); err == nil || !strings.Contains(err.Error(), "must not run as root") {
		t.Errorf("--plugin-user 0: want a refusal, got %v", err)
	}
	if s, err := New(Options{Mode: Off, User: "1234:5678"}); err != nil || s.uid != 1234 || s.gid != 5678 {
		t.Errorf("1234:5678: %+v, %v", s, err)
	}
	// Linux ids are 32 bits: 99999999999 was taken, and the kernel call
	// would truncate it; 2^32−1 is setresuid's "unchanged".
	for _, u := range []string{"99999999999", "4294967295", "1234:4294967295"} {
		if _, err := New(Options{Mode: Off, User: u}); err == nil || !strings.Contains(err.Error(), "is at most 4294967294") {
			t.Errorf("--plugin-user %s: want a refusal, got %v", u, err)
		}
	}
}

// The address-space limit: 2 GiB + 2.5 GiB per slot (512 MiB × 5), or
// the explicit value: 1 slot = 4.5 GiB, 4 slots = 12 GiB.
func TestLimit(t *testing.T) {
	s := &Sandbox{}
	if got := s.Limit(1); got != 4608<<20 {
		t.Errorf("1 slot: %d MiB, want 4608", got>>20)
	}
	if got := s.Limit(4); got != 12<<30 {
		t.Errorf("4 slots: %d MiB, want 12288", got>>20)
	}
	s.memory = 3 << 30
	if got := s.Limit(4); got != 3<<30 {
		t.Errorf("explicit: %d, want 3 GiB", got)
	}
}

// --plugin-env refuses credentials by family and by name.
func TestCheckEnvName(t *testing.T) {
	for _, ok := range []string{"FLAKY_MODE", "OMP_NUM_THREADS", "LANG"} {
		if err := CheckEnvName(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"MSJFARM_S3_SECRET_KEY", "MSJFARM_NATS_URL", "AWS_REGION", "minio_root_user",
		"GITHUB_TOKEN", "DB_PASSWORD", "API_KEY", "my_secret", "GOOGLE_APPLICATION_CREDENTIALS", "A=B", ""} {
		if err := CheckEnvName(bad); err == nil || !strings.Contains(err.Error(), "--plugin-env") {
			t.Errorf("%q: want a refusal naming --plugin-env, got %v", bad, err)
		}
	}
}

// --plugin-writable and --plugin-readable must name existing directories;
// one reached through a symbolic link is given as the link and as where
// it leads (the plugin's root recreates the link, and needs its target).
func TestWritable(t *testing.T) {
	d := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(d, link); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(d) // macOS's temporary directory is itself behind a link
	if err != nil {
		t.Fatal(err)
	}
	wantW := []string{d}
	if real != d {
		wantW = append(wantW, real)
	}
	s, err := New(Options{Mode: Off, User: "self", Writable: []string{d}, Readable: []string{link}})
	if err != nil || !slices.Equal(s.writable, wantW) || !slices.Equal(s.readable, []string{link, real}) {
		t.Fatalf("%v, %v", s, err)
	}
	f := d + "/file"
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{f, d + "/missing"} {
		if _, err := New(Options{Mode: Off, User: "self", Writable: []string{bad}}); err == nil || !strings.Contains(err.Error(), "--plugin-writable") {
			t.Errorf("%s: want a refusal naming --plugin-writable, got %v", bad, err)
		}
		if _, err := New(Options{Mode: Off, User: "self", Readable: []string{bad}}); err == nil || !strings.Contains(err.Error(), "--plugin-readable") {
			t.Errorf("%s: want a refusal naming --plugin-readable, got %v", bad, err)
		}
	}
}

// TestRemoveStale: the private TMPDIRs of a host that is gone are removed
// with what is in them; those of this process, of a live process and of
// an older msjfarm (no pid in the name) are left.
func TestRemoveStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{ // name: removed
		fmt.Sprintf("msjfarm-plugin-%d-123", gone.Process.Pid): true,
		fmt.Sprintf("msjfarm-plugin-%d-456", os.Getpid()):      false,
		"msjfarm-plugin-1-789":                                 false, // init: alive
		"msjfarm-plugin-3141592653":                            false,
	}
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, d, "fill0"), make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := RemoveStale(); n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	for d, removed := range dirs {
		if _, err := os.Stat(filepath.Join(tmp, d)); os.IsNotExist(err) != removed {
			t.Errorf("%s: removed %v, want %v", d, os.IsNotExist(err), removed)
		}
	}
}

// userTasks counts what the kernel counts against RLIMIT_NPROC: every
// thread of the user's processes, this one's among them, here with twenty
// goroutines locked to threads of their own.
func TestUserTasks(t *testing.T) {
	if _, ok := userTasks(os.Getuid()); !ok {
		t.Skip("the tasks of this user cannot all be counted here (not Linux, or a pid namespace of its own)")
	}
	stop := make(chan struct{})
	started := make(chan struct{})
	for range 20 {
		go func() {
			runtime.LockOSThread()
			started <- struct{}{}
			<-stop
		}()
	}
	for range 20 {
		<-started
	}
	defer close(stop)
	own := Threads(os.Getpid())
	n, _ := userTasks(os.Getuid())
	if own < 21 || n < own {
		t.Errorf("this process has %d threads (20 locked), its user %d in all", own, n)
	}
}
