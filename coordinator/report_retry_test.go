package coordinator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// fullDisk fails every Put of a report object (staged or published)
// with ENOSPC once more than room of them were written while full is set:
// a disk that fills up while the report is being written.
type fullDisk struct {
	storage.Store
	mu      sync.Mutex
	full    bool
	room    int
	written int
	failed  int
}

func (f *fullDisk) Put(ctx context.Context, key string, data []byte) error {
	if strings.Contains(key, "/report") {
		f.mu.Lock()
		fail := false
		if f.full {
			f.written++
			if fail = f.written > f.room; fail {
				f.failed++
			}
		}
		f.mu.Unlock()
		if fail {
			return fmt.Errorf("storage: put %q: write: %w", key, syscall.ENOSPC)
		}
	}
	return f.Store.Put(ctx, key, data)
}

func (f *fullDisk) set(full bool) {
	f.mu.Lock()
	f.full = full
	f.mu.Unlock()
}

// TestReportPublishRetried: the disk fills up while a finished campaign's
// report is being written (10 objects in). The coordinator logs the cause,
// removes what it staged, and publishes the report again by itself, with
// backoff, once there is room — no resubmission — and the campaign ends
// with a complete report and no staging object or empty report.staging/
// directory. Before, the campaign stayed done with no report, staging
// debris and nothing retried.
func TestReportPublishRetried(t *testing.T) {
	defer func(w time.Duration) { coordinator.ReportRetryWait = w }(coordinator.ReportRetryWait)
	coordinator.ReportRetryWait = 100 * time.Millisecond
	e := newEnv(t)
	disk := &fullDisk{Store: e.store, room: 10, full: true}
	var log syncBuf
	co, err := coordinator.New(context.Background(), coordinator.Options{Conn: e.nc, Store: disk,
		Reconcile: 500 * time.Millisecond, Logf: func(format string, args ...any) {
			t.Logf(format, args...)
			log.Write([]byte(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"))
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- co.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-co.Ready()
	_, stopWorker := e.startWorker(worker.Options{Concurrency: 2})
	defer stopWorker()
	r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: loadSpec(t, "testdata/small.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, co, r.Campaign, 5*time.Minute)
	bg := context.Background()
	// Wait (on the log) for two failed attempts: the first, then a retry.
	waitFor(t, 2*time.Minute, func() bool { return strings.Count(log.String(), "no space left on device") >= 2 }, "two failed publications logged", &log)
	if ok, _ := archive.ReportComplete(bg, e.store, r.Campaign); ok {
		t.Fatal("a report counted as complete while the disk was full")
	}
	// The disk gets room: the next retry publishes the report whole.
	disk.set(false)
	waitFor(t, 2*time.Minute, func() bool { return strings.Contains(log.String(), "published whole on attempt") },
		"retry publishing the report after the disk got room", &log)
	if ok, err := archive.ReportComplete(bg, e.store, r.Campaign); err != nil || !ok {
		t.Fatalf("the retry said published, but the report is not complete (%v, %v)", ok, err)
	}
	if left, _ := e.store.List(bg, storage.ReportStagingPrefix(r.Campaign)); len(left) != 0 {
		t.Fatalf("staged objects left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(e.store.URL(), "file://"), storage.ReportStagingPrefix(r.Campaign))); !os.IsNotExist(err) {
		t.Errorf("an empty report.staging/ directory is left behind (%v)", err)
	}
}

// waitFor polls cond until it holds, failing after ceiling (a generous
// bound on an event, not a timing assertion).
func waitFor(t *testing.T, ceiling time.Duration, cond func() bool, what string, log *syncBuf) {
	t.Helper()
	for deadline := time.Now().Add(ceiling); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s; log:\n%s", what, ceiling, log.String())
		}
	}
}
