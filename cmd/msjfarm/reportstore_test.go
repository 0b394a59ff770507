package main

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

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// enospcStore fails the first n Puts of staged report objects with ENOSPC.
type enospcStore struct {
	storage.Store
	mu sync.Mutex
	n  int
}

func (s *enospcStore) Put(ctx context.Context, key string, data []byte) error {
	s.mu.Lock()
	fail := strings.Contains(key, "report.staging/") && s.n > 0
	if fail {
		s.n--
	}
	s.mu.Unlock()
	if fail {
		return fmt.Errorf("storage: put %q: %w", key, syscall.ENOSPC)
	}
	return s.Store.Put(ctx, key, data)
}

// TestReportStoreRetried: `report --store` publishing into a full disk
// says why each attempt failed, leaves no staged object after a failed
// attempt, and publishes the report whole once there is room.
func TestReportStoreRetried(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every staged put of the first attempts fails (two files per attempt).
	st := &enospcStore{Store: base, n: 4}
	files := map[string][]byte{"index.html": []byte("<html></html>"), "summary.csv": []byte("a\n1\n")}
	code, _, errOut := captured(t, func() int {
		if err := publishWithRetry(ctx, st, "c1", archive.MapSource(files), 5, time.Millisecond); err != nil {
			t.Error(err)
			return 1
		}
		return 0
	})
	if code != 0 || !strings.Contains(errOut, "no space left on device") || !strings.Contains(errOut, "attempt 1 of 5") {
		t.Errorf("exit %d, stderr:\n%s\nwant two failures with their cause", code, errOut)
	}
	if ok, err := archive.ReportComplete(ctx, base, "c1"); err != nil || !ok {
		t.Fatalf("report not complete: %v %v", ok, err)
	}
	if _, err := os.Stat(filepath.Join(dir, storage.ReportStagingPrefix("c1"))); !os.IsNotExist(err) {
		t.Errorf("report.staging/ left behind (%v)", err)
	}
	// Out of attempts: the error, and still nothing staged.
	st.mu.Lock()
	st.n = 10
	st.mu.Unlock()
	if err := publishWithRetry(ctx, st, "c1", archive.MapSource(files), 2, time.Millisecond); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("out of attempts: %v", err)
	}
	if left, _ := base.List(ctx, storage.ReportStagingPrefix("c1")); len(left) != 0 {
		t.Errorf("staged objects left: %v", left)
	}
}
