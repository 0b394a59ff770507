package scratch

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHelperProcess is not a test: run by holder below as a separate
// process, it makes its scratch directory with a file in it, prints the
// directory and waits to be killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("SCRATCH_HELPER") != "1" {
		t.Skip("helper process")
	}
	f, err := CreateTemp("held-*")
	if err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString(filepath.Dir(f.Name()) + "\n")
	time.Sleep(time.Hour)
}

// holder starts a process that holds a scratch directory in tmp, and
// returns it with the directory once made.
func holder(t *testing.T, tmp string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "SCRATCH_HELPER=1", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper made no directory: %v", err)
	}
	return cmd, strings.TrimSpace(line)
}

// TestRemoveStale: a killed process's directory goes, with what it
// held; a live process's stays, and so do this process's own and what
// merely looks like one (a link, a directory without a lock file); an
// unrenamed directory goes only once an hour old.
func TestRemoveStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	live, liveDir := holder(t, tmp)
	killed, deadDir := holder(t, tmp)
	if err := killed.Process.Kill(); err != nil { // SIGKILL: no deferred removal runs
		t.Fatal(err)
	}
	killed.Wait()

	own, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	defer Close()
	lookalike := filepath.Join(tmp, prefix+"nolock")
	if err := os.Mkdir(lookalike, 0o700); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, lockName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, prefix+"link")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	young := filepath.Join(tmp, initPrefix+"young")
	old := filepath.Join(tmp, initPrefix+"old")
	for _, d := range []string{young, old} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * initAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}

	if n := RemoveStale(); n != 2 {
		t.Errorf("removed %d, want 2 (the killed process's and the old unrenamed one)", n)
	}
	for _, d := range []string{deadDir, old} {
		if _, err := os.Lstat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
	for _, d := range []string{liveDir, own, lookalike, link, young, filepath.Join(elsewhere, lockName)} {
		if _, err := os.Lstat(d); err != nil {
			t.Errorf("%s removed: %v", d, err)
		}
	}
	if held, _ := filepath.Glob(filepath.Join(liveDir, "held-*")); len(held) != 1 {
		t.Errorf("the live process's file is gone: %v", held)
	}

	// Once the live one is killed too, its directory goes.
	live.Process.Kill()
	live.Wait()
	if n := RemoveStale(); n != 1 {
		t.Errorf("removed %d after the second kill, want 1", n)
	}
	Close()
	if _, err := os.Lstat(own); !os.IsNotExist(err) {
		t.Errorf("Close left %s (%v)", own, err)
	}
}

// TestScratchPaths: MkdirTemp and CreateTemp make their paths in the
// process's one directory, and Close removes them with it.
func TestScratchPaths(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	d, err := MkdirTemp("dir-")
	if err != nil {
		t.Fatal(err)
	}
	f, err := CreateTemp("file-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	root, _ := Dir()
	if filepath.Dir(d) != root || filepath.Dir(f.Name()) != root || filepath.Dir(root) != tmp {
		t.Errorf("paths %s, %s not in one directory %s of %s", d, f.Name(), root, tmp)
	}
	Close()
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left after Close: %v", left)
	}
}

// TestScratchRemade: a scratch directory removed under the process (a
// cleaner of /tmp), or a $TMPDIR changed, is made again, not used gone:
// a temporary file failed with "no such file or directory".
func TestScratchRemade(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer Close()
	first, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(first); err != nil {
		t.Fatal(err)
	}
	f, err := CreateTemp("after-")
	if err != nil {
		t.Fatalf("after the directory was removed: %v", err)
	}
	f.Close()
	other := t.TempDir()
	t.Setenv("TMPDIR", other)
	d, err := MkdirTemp("moved-")
	if err != nil || filepath.Dir(filepath.Dir(d)) != other {
		t.Fatalf("after TMPDIR changed: %s, %v; want it in %s", d, err, other)
	}
}
