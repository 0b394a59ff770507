package local_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// outageSweep has enough tasks (60, tens of milliseconds each) for an
// outage to start mid-campaign with tasks running and queued.
const outageSweep = `name: outage
seed: 11
workload: one-or-all
axes:
  arrival_rate: [1, 2, 3]
policies: [fcfs, first-fit]
replications: 10
run: {arrivals: 3e4, warmup: 1e3}
`

// runLog counts a run's lines by kind ("start", "done", "duplicate",
// "retry", "fail", "release") and calls onDone with the running count of
// "done" lines.
type runLog struct {
	mu     sync.Mutex
	kinds  map[string]int
	starts map[string]int // per task
	onDone func(n int)
}

func (l *runLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	var dones []int
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		l.kinds[f[0]]++
		if f[0] == "start" {
			l.starts[f[2]]++
		}
		if f[0] == "done" {
			dones = append(dones, l.kinds["done"])
		}
	}
	cb := l.onDone
	l.mu.Unlock()
	for _, n := range dones {
		if cb != nil {
			cb(n)
		}
	}
	return len(p), nil
}

func (l *runLog) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kinds[kind]
}

// rerun is the number of starts beyond one per task.
func (l *runLog) reruns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.starts {
		n += c - 1
	}
	return n
}

// timedLog keeps log lines with their time.
type timedLog struct {
	mu    sync.Mutex
	lines []string
	at    []time.Time
}

func (l *timedLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.at = append(l.at, time.Now())
}

// first returns the first line containing s after t0, and its time.
func (l *timedLog) first(s string, t0 time.Time) (string, time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, line := range l.lines {
		if l.at[i].After(t0) && strings.Contains(line, s) {
			return line, l.at[i], true
		}
	}
	return "", time.Time{}, false
}

func (l *timedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func outageSpec(t *testing.T) (*sweep.File, *sweep.Campaign) {
	t.Helper()
	f, err := sweep.Parse([]byte(outageSweep), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// outageLength is MSJFARM_OUTAGE (a Go duration or seconds), by default
// def: the 10-minute outage of the fault suite is one command,
// MSJFARM_OUTAGE=10m go test ./local -run StorageOutage -timeout 30m.
func outageLength(t *testing.T, def time.Duration) time.Duration {
	v := os.Getenv("MSJFARM_OUTAGE")
	if v == "" {
		return def
	}
	if d, err := time.ParseDuration(v); err == nil {
		return d
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(s * float64(time.Second))
	}
	t.Fatalf("MSJFARM_OUTAGE=%q: want a duration (10m) or seconds (600)", v)
	return 0
}

// runCampaign runs f on st with a short AckWait and MaxDeliver 3, so that
// an outage that spent deliveries or let messages expire would show as
// failed, retried or re-run tasks.
func runCampaign(t *testing.T, f *sweep.File, st storage.Store, rl *runLog, logf func(string, ...any)) *local.Outcome {
	t.Helper()
	out, err := local.Run(t.Context(), local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2,
		AckWait: 2 * time.Second, MaxDeliver: 3, RunLog: rl, Logf: logf})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkOutcome asserts what a campaign run through a storage outage must
// show: done, nothing failed, duplicated, retried or run twice, every
// result stored, and the fault-free run's summary byte for byte.
func checkOutcome(t *testing.T, out *local.Outcome, rl *runLog, st storage.Store, camp *sweep.Campaign, refSummary []byte) {
	t.Helper()
	s := out.Status
	n := len(camp.Tasks)
	if out.Interrupted || s == nil || s.State != protocol.CampaignDone || s.Done != n || s.Failed != 0 {
		t.Errorf("status %+v: want done, %d done, 0 failed", s, n)
	}
	for _, k := range []string{"fail", "retry", "duplicate", "release"} {
		if c := rl.count(k); c != 0 {
			t.Errorf("%d %q lines in the run log, want 0", c, k)
		}
	}
	if r := rl.reruns(); r != 0 {
		t.Errorf("%d re-runs (starts %d for %d tasks)", r, rl.count("start"), n)
	}
	if keys, err := st.List(t.Context(), storage.ResultsPrefix(camp.ID)); err != nil || len(keys) != n {
		t.Errorf("%d results stored, want %d (%v)", len(keys), n, err)
	}
	sum, err := st.Get(t.Context(), storage.SummaryKey(camp.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sum, refSummary) {
		t.Errorf("summary differs from the fault-free run's:\n%s\nwant\n%s", sum, refSummary)
	}
}

// TestStorageOutageMinIO stops the MinIO server holding a campaign's
// results mid-campaign for MSJFARM_OUTAGE (20 s by default), restarts it
// on the same address and data, and checks that nothing failed, nothing
// ran twice and the summary is the fault-free run's.
func TestStorageOutageMinIO(t *testing.T) {
	t.Parallel() // mostly waits out its faults (docs/testing.md)
	outage := outageLength(t, 20*time.Second)
	srv := miniotest.StartServer(t)
	open := func(bucket string) storage.Store {
		st, err := storage.Open(t.Context(), "s3://"+bucket+"?secure=false&endpoint="+srv.Endpoint,
			storage.WithCredentials(srv.AccessKey, srv.SecretKey))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	f, camp := outageSpec(t)
	n := len(camp.Tasks)

	ref := open("reference")
	refOut := runCampaign(t, f, ref, &runLog{kinds: map[string]int{}, starts: map[string]int{}}, nil)
	if refOut.Status.Done != n {
		t.Fatalf("fault-free run: %+v", refOut.Status)
	}
	refSummary, err := ref.Get(t.Context(), storage.SummaryKey(camp.ID))
	if err != nil {
		t.Fatal(err)
	}

	st := open("outage")
	logs := &timedLog{}
	// stopping and restarting are when Stop and Restart began: a write can
	// fail (or go through) while either call still waits for the server,
	// so the worker's "unavailable" and "back" lines may come before the
	// call returns (stopped, restarted).
	var stopping, stopped, restarting, restarted time.Time
	var once sync.Once
	outageDone := make(chan struct{})
	rl := &runLog{kinds: map[string]int{}, starts: map[string]int{}}
	rl.onDone = func(done int) {
		if done != n/4 {
			return
		}
		once.Do(func() {
			go func() {
				defer close(outageDone)
				stopping = time.Now()
				srv.Stop()
				stopped = time.Now()
				time.Sleep(outage)
				restarting = time.Now()
				srv.Restart()
				restarted = time.Now()
			}()
		})
	}
	out := runCampaign(t, f, st, rl, logs.logf)
	<-outageDone
	if t.Failed() {
		return
	}
	doneAtStop := n / 4
	checkOutcome(t, out, rl, st, camp, refSummary)
	downLine, downAt, down := logs.first("unavailable", stopping)
	backLine, backAt, back := logs.first("is back", restarting)
	if !down || !back {
		t.Fatalf("no outage logged by the worker (down %v, back %v); log:\n%s", down, back, logs)
	}
	t.Logf("outage %v (MinIO stopped after %d of %d tasks done); worker paused %v after the stop: %s",
		restarted.Sub(stopped).Round(100*time.Millisecond), doneAtStop, n, downAt.Sub(stopped).Round(100*time.Millisecond), downLine)
	t.Logf("resumed %v after MinIO's restart began (Restart returned %v after it began): %s",
		backAt.Sub(restarting).Round(100*time.Millisecond), restarted.Sub(restarting).Round(100*time.Millisecond), backLine)
	t.Logf("tasks %d, failed %d, duplicates %d, retries %d, re-runs %d", n, out.Status.Failed, rl.count("duplicate"), rl.count("retry"), rl.reruns())
	if d := backAt.Sub(restarted); d > 35*time.Second {
		t.Errorf("the worker resumed %v after storage came back, want within the 30 s back-off cap", d)
	}
}

// TestLocalStoreFullAndReadOnly runs a campaign on a local store on a
// real tmpfs that is filled up, then made read-only, mid-campaign (each
// for 3 s): nothing fails, nothing runs twice, the summary is the
// fault-free run's.
func TestLocalStoreFullAndReadOnly(t *testing.T) {
	t.Parallel() // mostly waits out its faults (docs/testing.md)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): mount: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	// remount retries while the kernel answers "busy": a remount read-only
	// is refused while a file on the tmpfs is open for writing, which is
	// whenever the worker happens to be writing a result (seen under load).
	remount := func(opts string) {
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput()
			if err == nil {
				return
			}
			if !strings.Contains(string(out), "busy") || time.Now().After(deadline) {
				t.Errorf("mount -o remount,%s %s: %v: %s", opts, dir, err, out)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	f, camp := outageSpec(t)
	n := len(camp.Tasks)

	ref, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runCampaign(t, f, ref, &runLog{kinds: map[string]int{}, starts: map[string]int{}}, nil)
	refSummary, err := ref.Get(t.Context(), storage.SummaryKey(camp.ID))
	if err != nil {
		t.Fatal(err)
	}

	st, err := storage.Open(t.Context(), filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &timedLog{}
	const fault = 3 * time.Second
	var fullAt, roAt time.Time
	var faults sync.WaitGroup
	faults.Add(2)
	rl := &runLog{kinds: map[string]int{}, starts: map[string]int{}}
	// Each fault starts at a count of finished tasks (a callback of the
	// worker's run log, so once each) and lasts 3 s.
	rl.onDone = func(done int) {
		switch done {
		case n / 4:
			fullAt = time.Now()
			go func() {
				defer faults.Done()
				filler := filepath.Join(dir, "filler")
				if err := fillDisk(filler); err != nil {
					t.Errorf("filling the disk: %v", err)
				}
				time.Sleep(fault)
				os.Remove(filler)
			}()
		case 2 * n / 3:
			roAt = time.Now()
			go func() {
				defer faults.Done()
				remount("ro")
				time.Sleep(fault)
				remount("rw")
			}()
		}
	}
	out := runCampaign(t, f, st, rl, logs.logf)
	faults.Wait()
	checkOutcome(t, out, rl, st, camp, refSummary)
	for _, c := range []struct {
		at   time.Time
		want string
	}{{fullAt, "disk full"}, {roAt, "read-only file system"}} {
		line, _, ok := logs.first(c.want, c.at)
		if !ok || !strings.Contains(line, dir) || !strings.Contains(line, "pausing") {
			t.Errorf("no pause logged naming %s and %q; log:\n%s", dir, c.want, logs)
			continue
		}
		t.Logf("%s", line)
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs)
	}
}

// fillDisk writes path until its file system is full.
func fillDisk(path string) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	buf := make([]byte, 256<<10)
	for len(buf) >= 512 {
		if _, err := fh.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				return err
			}
			buf = buf[:len(buf)/2]
		}
	}
	return nil
}
