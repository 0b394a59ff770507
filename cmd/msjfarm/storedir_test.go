package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStoreDirInUse: a second coordinator started on the first's
// --store-dir is refused, naming the holder, and the first goes on; once
// the first is killed, the directory may be used again. Both had run as
// the active coordinator on one JetStream store, with different views of
// its files, the first could not be stopped, and a campaign was lost (two
// Slurm allocations submitted from one directory do this: the script's
// default store directory is the submit directory).
func TestStoreDirInUse(t *testing.T) {
	bin := msjfarmBinary(t)
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "nats")
	start := func() (*exec.Cmd, *bufio.Reader) {
		cmd := exec.Command(bin, "coordinator", "--listen", "127.0.0.1:0", "--store-dir", storeDir, "--storage", filepath.Join(dir, "data"))
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "MSJFARM_NATS_URL=")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); pr.Close() })
		return cmd, bufio.NewReader(pr)
	}
	waitFor := func(r *bufio.Reader, want string) {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			var seen strings.Builder
			for {
				line, err := r.ReadString('\n')
				seen.WriteString(line)
				if strings.Contains(line, want) || err != nil {
					got <- seen.String()
					return
				}
			}
		}()
		select {
		case s := <-got:
			if !strings.Contains(s, want) {
				t.Fatalf("no %q from the coordinator:\n%s", want, s)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("no %q from the coordinator in 2 minutes", want)
		}
	}
	first, r1 := start()
	waitFor(r1, "embedded NATS server on")

	second := exec.Command(bin, "coordinator", "--listen", "127.0.0.1:0", "--store-dir", storeDir, "--storage", filepath.Join(dir, "data"))
	second.Dir, second.Env = dir, append(os.Environ(), "HOME="+dir, "MSJFARM_NATS_URL=")
	out, err := second.CombinedOutput()
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok || ee.ExitCode() != 1 {
		t.Fatalf("second coordinator on the same --store-dir: %v, want exit 1\n%s", err, out)
	}
	want := "store directory " + storeDir + " is in use by msjfarm pid " + strconv.Itoa(first.Process.Pid)
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "give this one its own --store-dir") {
		t.Errorf("second coordinator's message lacks %q:\n%s", want, out)
	}
	if err := first.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the first coordinator is gone: %v", err)
	}

	// Killed, the first lets go (the kernel drops its lock).
	first.Process.Kill()
	first.Wait()
	_, r3 := start()
	waitFor(r3, "embedded NATS server on")
}
