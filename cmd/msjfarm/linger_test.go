package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// TestRunLingerCtrlC: `msjfarm run --http … --http-linger 10m`, then
// Ctrl-C (SIGINT) while the page lingers, as the message says: the run
// has printed its summary table and the paths of the summary and report
// before the linger, exits 0, and its "done in" does not count the
// linger. Before, the summary was read after the linger with the
// cancelled context: exit 1 with "context canceled", no table, no paths.
func TestRunLingerCtrlC(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	outF, _ := os.Create(filepath.Join(dir, "out"))
	errF, _ := os.Create(filepath.Join(dir, "err"))
	so, se := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = outF, errF
	codec := make(chan int, 1)
	go func() {
		codec <- dispatch([]string{"run", "--workers", "2", "-q", "--runner", "inprocess", "--storage", filepath.Join(dir, "data"),
			"--http", "127.0.0.1:0", "--http-linger", "10m", sw})
	}()
	// Wait for the linger message (the event), with a generous ceiling.
	var lingerAt time.Time
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		b, _ := os.ReadFile(errF.Name())
		if strings.Contains(string(b), "the live page stays at") {
			lingerAt = time.Now()
			break
		}
	}
	if lingerAt.IsZero() {
		os.Stdout, os.Stderr = so, se
		b, _ := os.ReadFile(errF.Name())
		t.Fatalf("no linger message:\n%s", b)
	}
	// Linger a little, so that a "done in" counting it would show.
	time.Sleep(1500 * time.Millisecond)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-codec:
	case <-time.After(5 * time.Minute):
		os.Stdout, os.Stderr = so, se
		t.Fatal("run did not end after SIGINT")
	}
	os.Stdout, os.Stderr = so, se
	out, _ := os.ReadFile(outF.Name())
	errOut, _ := os.ReadFile(errF.Name())
	if code != 0 {
		t.Errorf("exit %d after Ctrl-C during the linger, want 0\nstderr:\n%s", code, errOut)
	}
	for _, want := range []string{"summary: ", "report: ", "fcfs"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "report: not rendered") {
		t.Errorf("the report was not published when run printed its path:\n%s", out)
	}
	m := regexp.MustCompile(`campaign \S+ done in ([0-9.]+)(ms|s)`).FindStringSubmatch(string(errOut))
	if m == nil {
		t.Fatalf("no \"done in\" line:\n%s", errOut)
	}
	if strings.Index(string(errOut), m[0]) > strings.Index(string(errOut), "the live page stays at") {
		t.Errorf("\"done in\" printed after the linger began:\n%s", errOut)
	}
	if strings.Contains(string(errOut), "context canceled") {
		t.Errorf("stderr: %s", errOut)
	}
}

// TestRunCancelledElsewhere: a campaign cancelled by `msjfarm cancel`
// while `msjfarm run` runs it has no summary; run ended on the store's
// error for it ("getfile …/summary.csv: not found"). It says what
// happened, what was kept and how to go on, exit 1.
func TestRunCancelledElsewhere(t *testing.T) {
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &protocol.Status{Campaign: "dbba7fa368bc8a5a", State: protocol.CampaignCancelled, Done: 243, Total: 720}
	code, out, errOut := captured(t, func() int {
		return printRunSummary(t.Context(), st, newProgress(os.Stderr, 0), s, s.Campaign, nil)
	})
	if code != 1 || !strings.Contains(errOut, "campaign dbba7fa368bc8a5a was cancelled (243 of 720 tasks done, kept in file://") ||
		!strings.Contains(errOut, "running the sweep again resumes it") || strings.Contains(errOut, "not found") || strings.TrimSpace(out) != "" {
		t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
}

// TestRunReportNotRendered: a run whose report cannot be written (a full
// disk; here a file where its directory goes) keeps its results and
// summary, says the report is missing and why, and exits 1: it exited 0,
// and a script went on to copy a report that was not there. `msjfarm
// report --store` (the command it names) then stores it once the cause
// is gone.
func TestRunReportNotRendered(t *testing.T) {
	bin := msjfarmBinary(t)
	dir := t.TempDir()
	sw := filepath.Join(dir, "tiny.yaml")
	body := "name: tiny\nworkload: one-or-all\naxes:\n  arrival_rate: [1, 2]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 2000, warmup: 100}\n"
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "HOME="+dir, "MSJFARM_NATS_URL=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return ee.ExitCode(), stdout.String(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String(), stderr.String()
	}
	_, dry, _ := run("run", "--dry-run", "--storage", data, sw)
	m := regexp.MustCompile(`campaign ([0-9a-f]{16}) `).FindStringSubmatch(dry)
	if m == nil {
		t.Fatalf("no campaign id in the dry run: %s", dry)
	}
	blocker := filepath.Join(data, "campaigns", m[1], "report")
	if err := os.MkdirAll(filepath.Dir(blocker), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blocker, []byte("in the way\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("run", "--runner", "inprocess", "--workers", "1", "--storage", data, sw)
	if code != 1 || !strings.Contains(out, "report: not rendered (") || !strings.Contains(out, "not a directory") ||
		!strings.Contains(errOut, "msjfarm run: the report was not rendered (above); the results and summary are stored") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(data, "campaigns", m[1], "summary.csv")); err != nil {
		t.Errorf("summary not kept: %v", err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run("report", "--store", "--storage", data, m[1]); code != 0 {
		t.Fatalf("report after the cause was removed: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(blocker, "index.html")); err != nil {
		t.Errorf("report not rendered by msjfarm report: %v", err)
	}
}
