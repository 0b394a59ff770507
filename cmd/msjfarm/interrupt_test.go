package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

// An interrupt while a sweep is read, planned and checked (and during a
// dry run) exits at once, 130 on SIGINT and 143 on SIGTERM: that work
// creates nothing and did not look at the signal, so a sweep that takes
// long to plan (here 20 systems of about 10^6 servers, each tried and
// calibrated: 51 s) held run and submit for its whole length after Ctrl-C
// or SIGTERM, and they then exited 2 or 1. The process is signalled once
// it has printed its first line, and must be gone, with its status, well
// before its planning could have finished.
func TestInterruptWhilePlanning(t *testing.T) {
	bin := msjfarmBinary(t)
	dir := t.TempDir()
	var servers []string
	for i := range 20 {
		servers = append(servers, fmt.Sprint(1<<20-i))
	}
	sw := filepath.Join(dir, "bigk.yaml")
	body := "name: bigk\nworkload: one-or-all\naxes:\n  servers: [" + strings.Join(servers, ", ") + "]\n  load: [0.5]\npolicies: [fcfs, msf, first-fit]\nreplications: 1\nrun: {arrivals: 1e3}\n"
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sig  syscall.Signal
		args []string
	}{
		{syscall.SIGINT, []string{"submit", "--dry-run", "--nats-url", "nats://127.0.0.1:1", sw}},
		{syscall.SIGTERM, []string{"run", "--dry-run", "--storage", filepath.Join(dir, "store"), sw}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitPlanning(t, cmd.Process.Pid) // planning takes tens of seconds of CPU
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			sent := time.Now()
			err := signalWait(t, cmd, done, c.sig, &stderr)
			var ee *exec.ExitError
			want := 128 + int(c.sig)
			if !errors.As(err, &ee) || ee.ExitCode() != want || !strings.Contains(stderr.String(), "interrupted; nothing was created") {
				t.Fatalf("exit %v %.1fs after %v, want %d at once; stderr:\n%s", err, time.Since(sent).Seconds(), c.sig, want, stderr.String())
			}
			t.Logf("exit %d %.2fs after %v", want, time.Since(sent).Seconds(), c.sig)
			if _, err := os.Stat(filepath.Join(dir, "store")); err == nil {
				t.Errorf("an interrupted dry run created the store")
			}
		})
	}
}

// signalWait sends sig to cmd's process, whose Wait's result done
// delivers, and returns that result; a process still running two minutes
// after the signal (a ceiling for a hang, not a timing) is killed and
// fails the test, with its stderr so far.
func signalWait(t *testing.T, cmd *exec.Cmd, done <-chan error, sig os.Signal, stderr fmt.Stringer) error {
	t.Helper()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("still running two minutes after %v: %s", sig, stderr)
		return nil
	}
}

// waitPlanning waits until process pid has used half a second of CPU
// (a minute at most): flags parsed and signals caught long before, the
// sweep's planning under way. (Its signal mask says nothing: the Go
// runtime catches SIGINT from its start.)
func waitPlanning(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// After the command's name (in parentheses): state is field 3,
		// utime and stime fields 14 and 15, in clock ticks (100 a second).
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		if ut+st >= 50 {
			return
		}
	}
	t.Fatalf("process %d did not use half a second of CPU within a minute", pid)
}

// TestReaderInterrupted: Ctrl-C while `msjfarm report FILE` extracts its
// archive, or `archive verify FILE` reads it, removes the temporary
// directory and exits 130 (143 on SIGTERM). Neither had a handler: the
// signal killed them and left the directory in $TMPDIR (954 MB of a
// probe's report, 537 MB of a verify's checksums). `archive import FILE`
// and `reproduce FILE` did catch the signal, and went on waiting in the
// read: neither Ctrl-C nor SIGTERM ended them. The archive comes through
// a pipe that gets half of it and stays open, so the signal lands while
// the reading waits. Killed (SIGKILL), it removes nothing, and the next
// msjfarm does.
func TestReaderInterrupted(t *testing.T) {
	bin := msjfarmBinary(t)
	data, err := os.ReadFile("../../results/bundle/testdata/small-v1.msjar")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		sig  syscall.Signal
	}{
		{[]string{"report", "FIFO", "--out", "report"}, syscall.SIGINT},
		{[]string{"report", "FIFO", "--out", "report"}, syscall.SIGTERM},
		{[]string{"archive", "verify", "FIFO"}, syscall.SIGINT},
		{[]string{"archive", "verify", "FIFO"}, syscall.SIGKILL},
		// Held in the read, deaf to either signal, until killed.
		{[]string{"archive", "import", "FIFO", "--storage", "imported"}, syscall.SIGTERM},
		{[]string{"reproduce", "FIFO"}, syscall.SIGTERM},
	} {
		args := append([]string(nil), c.args...) // the FIFO filled in below
		t.Run(args[0]+"-"+c.sig.String(), func(t *testing.T) {
			dir, tmp := t.TempDir(), t.TempDir()
			fifo := filepath.Join(dir, "a.msjar")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			for i, a := range args {
				if a == "FIFO" {
					args[i] = fifo
				}
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "TMPDIR="+tmp)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // until the command opens it
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Write(data[:len(data)/2]); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if m, _ := filepath.Glob(filepath.Join(tmp, "msjfarm-tmp-*", "msjar-*", "store.pack")); len(m) > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no reading started in a minute: %s", stderr.String())
				}
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			err = signalWait(t, cmd, done, c.sig, &stderr)
			if c.sig == syscall.SIGKILL {
				// Killed, it removed nothing; the next msjfarm started
				// with the same $TMPDIR does (scratch.RemoveStale). A
				// killed process left its extraction for good.
				if left, _ := os.ReadDir(tmp); len(left) == 0 {
					t.Fatal("nothing in $TMPDIR after SIGKILL: the test saw no extraction")
				}
				next := exec.Command(bin, "workloads")
				next.Dir, next.Env = dir, append(os.Environ(), "HOME="+dir, "TMPDIR="+tmp)
				if out, err := next.CombinedOutput(); err != nil {
					t.Fatalf("msjfarm workloads: %v: %s", err, out)
				}
			} else if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 128+int(c.sig) {
				t.Errorf("exit %v, want %d: %s", err, 128+int(c.sig), stderr.String())
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left in $TMPDIR after the interrupt: %v", left)
			}
		})
	}
}

// TestRunInterrupted: a SIGTERM to `msjfarm run` while its campaign runs
// (Slurm's scancel or time limit, a pod's stop) is cleaned up as a Ctrl-C
// is: the workers give their tasks back, the run's entry in the store
// (runs/<id>.json) and its temporary files (embedded server, token, lock)
// go, and it says how to resume; but it exits 143, where it exited 130
// as for Ctrl-C, which still exits 130.
func TestRunInterrupted(t *testing.T) {
	bin := msjfarmBinary(t)
	t.Setenv("MSJFARM_NATS_URL", "")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp := t.TempDir()
			cmd, done, stderr, data := startLongRun(t, bin, "longi", "TMPDIR="+tmp)
			if left, _ := os.ReadDir(tmp); len(left) == 0 {
				t.Fatal("the running campaign has nothing in $TMPDIR: the test would see no cleanup")
			}
			err := signalWait(t, cmd, done, sig, stderr)
			want := 128 + int(sig)
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != want {
				t.Errorf("exit %v after %v, want %d: %s", err, sig, want, stderr.String())
			}
			if !strings.Contains(stderr.String(), "msjfarm run: interrupted with ") || !strings.Contains(stderr.String(), "run the same command again to resume") {
				t.Errorf("no resume message after %v: %s", sig, stderr.String())
			}
			if m, _ := filepath.Glob(filepath.Join(data, "runs", "*.json")); len(m) != 0 {
				t.Errorf("the run's entry left in the store after %v: %v", sig, m)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("left in $TMPDIR after %v: %v", sig, names)
			}
		})
	}
}

// TestSubmitWaitInterrupted: `submit --wait` watching a campaign (here
// one no worker runs) ends on SIGTERM with 143 and on Ctrl-C with 130;
// the campaign goes on on the farm. Both exited 130.
func TestSubmitWaitInterrupted(t *testing.T) {
	bin := msjfarmBinary(t)
	f := startTestFarm(t, limitTestSweep, false)
	dir, url, farm, sw := f.dir, f.url, f.store, f.sweep
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "submit", "--wait", "--nats-url", url, "--storage", farm, "--plugin-trial=false", sw)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Submitted once it prints the campaign's line; it then waits.
			submitted := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "campaign ") {
						submitted <- true
						io.Copy(io.Discard, stdout)
						return
					}
				}
				submitted <- false
			}()
			select {
			case ok := <-submitted:
				if !ok {
					cmd.Wait()
					t.Fatalf("submit --wait ended without submitting: %s", stderr.String())
				}
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("no campaign submitted in 2 minutes")
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			err = signalWait(t, cmd, done, sig, &stderr)
			want := 128 + int(sig)
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != want {
				t.Errorf("exit %v after %v, want %d:\n%s", err, sig, want, stderr.String())
			}
		})
	}
}

// TestCancelALocalRun: `msjfarm cancel NAME --storage DIR` cancels the
// campaign a `msjfarm run` runs there, through the run's embedded server
// (runs/<id>.json, as status finds it); it said "no NATS server". The run
// then says it was cancelled and exits 1: it ended on "getfile
// …/summary.csv: not found".
func TestCancelALocalRun(t *testing.T) {
	bin := msjfarmBinary(t)
	t.Setenv("MSJFARM_NATS_URL", "")
	cmd, done, stderr, data := startLongRun(t, bin, "longc")
	// The run's server takes only its token, which a file only this user
	// reads holds: it accepted anyone on the machine, the store naming it.
	if m, _ := filepath.Glob(filepath.Join(data, "runs", "*.json")); len(m) == 1 {
		var lr protocol.LiveRun
		if b, err := os.ReadFile(m[0]); err != nil || json.Unmarshal(b, &lr) != nil || lr.TokenFile == "" {
			t.Fatalf("runs entry %s: %v", b, err)
		}
		if fi, err := os.Stat(lr.TokenFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("token file %s: %v, mode %v; want 0600", lr.TokenFile, err, fi.Mode())
		}
		if nc, err := nats.Connect(lr.NATSURL, nats.MaxReconnects(0)); err == nil {
			nc.Close()
			t.Errorf("connected to the run's server at %s without its token", lr.NATSURL)
		} else if !strings.Contains(err.Error(), "Authorization Violation") {
			t.Errorf("without the token: %v, want an authorization violation", err)
		}
	} else {
		t.Fatalf("runs entries %v", m)
	}
	code, out, errOut := captured(t, func() int { return dispatch([]string{"cancel", "--storage", data, "longc"}) })
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the run still going 2 minutes after its campaign was cancelled: %s", stderr.String())
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "was cancelled (") ||
		strings.Contains(stderr.String(), "not found") {
		t.Errorf("run: %v\n%s", err, stderr.String())
	}
}

// startLongRun starts the built binary's `run` of a campaign named name
// that takes minutes (one worker, 560 replications), in a directory of
// its own with env added to the environment, and returns once the run has
// stored its runs/ entry: the process, its Wait's result, its stderr and
// its store directory.
func startLongRun(t *testing.T, bin, name string, env ...string) (*exec.Cmd, chan error, *strings.Builder, string) {
	t.Helper()
	dir := t.TempDir()
	sw := filepath.Join(dir, "long.yaml")
	body := "name: " + name + "\nworkload: one-or-all\naxes:\n  arrival_rate: [1, 2, 3, 4, 5, 6, 7]\npolicies: [fcfs, msf]\nreplications: 40\nrun: {arrivals: 3e5, warmup: 1e3}\n"
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "run", "--workers", "1", "--runner", "inprocess", "--storage", data, sw)
	cmd.Dir, cmd.Env = dir, append(append(os.Environ(), "HOME="+dir), env...)
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(data, "runs", "*.json")); len(m) > 0 {
			return cmd, done, stderr, data
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the run stored no runs/ entry in 2 minutes: %s", stderr.String())
		}
	}
}
