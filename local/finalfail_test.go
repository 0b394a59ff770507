package local_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker"
)

// fullDisk is a real local store whose summary.csv cannot be written, as
// on a full disk: every task's result is stored, the summary is not.
type fullDisk struct{ storage.Store }

func (s fullDisk) PutFile(ctx context.Context, key, path string) error {
	if strings.HasSuffix(key, "/summary.csv") {
		return &os.PathError{Op: "write", Path: key, Err: syscall.ENOSPC}
	}
	return s.Store.PutFile(ctx, key, path)
}

// TestRunStopsWhenFinalisationCannotSucceed: a run whose campaign cannot
// be finalised because the store is full ends with an error that says
// so, where it showed "6/6 done, ETA 0s" for ever (the cause only with
// -v, every 30 s). Run again on a store with room, it runs nothing and
// finishes.
func TestRunStopsWhenFinalisationCannotSucceed(t *testing.T) {
	f, camp := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A ceiling for a hang, not a timing: the run ends at its first
	// finalisation.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, err = local.Run(ctx, local.Options{Spec: f, Store: fullDisk{st}, Runner: worker.InProcess{}, Workers: 2})
	if ctx.Err() != nil {
		t.Fatal("the run did not end: it waits for a finalisation that cannot succeed")
	}
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "every task is finished and stored, but the campaign could not be finalised") ||
		!strings.Contains(err.Error(), "run the same command again: nothing is re-run") {
		t.Fatalf("run on a full store: %v", err)
	}
	if keys, err := st.List(t.Context(), storage.ResultsPrefix(camp.ID)); err != nil || len(keys) != 6 {
		t.Fatalf("%d results stored, %v; want 6", len(keys), err)
	}
	out, err := local.Run(t.Context(), local.Options{Spec: f, Store: st, Runner: worker.InProcess{}, Workers: 2})
	if err != nil || out.Submit.AlreadyDone != 6 || out.Status == nil || out.Status.Done != 6 {
		t.Fatalf("run again with room: %v, %+v", err, out)
	}
	if _, err := st.Stat(t.Context(), storage.SummaryKey(camp.ID)); err != nil {
		t.Fatalf("summary: %v", err)
	}
}

// fullForReport is a real local store with room for everything but the
// report's files.
type fullForReport struct{ storage.Store }

func (s fullForReport) Put(ctx context.Context, key string, data []byte) error {
	if strings.Contains(key, "/report") {
		return &os.PathError{Op: "write", Path: key, Err: syscall.ENOSPC}
	}
	return s.Store.Put(ctx, key, data)
}

// TestRunReportError: a campaign whose report cannot be published
// finishes (the report is a view of the summary), and the run's outcome
// says why: `msjfarm run` printed "report: not rendered (… index.html:
// not found)" of a full disk.
func TestRunReportError(t *testing.T) {
	f, camp := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := local.Run(t.Context(), local.Options{Spec: f, Store: fullForReport{st}, Runner: worker.InProcess{}, Workers: 2})
	if err != nil || out.Status == nil || out.Status.Done != 6 {
		t.Fatalf("run: %v, %+v", err, out)
	}
	if !errors.Is(out.ReportError, syscall.ENOSPC) {
		t.Fatalf("report error %v, want the store's no space left on device", out.ReportError)
	}
	if _, err := st.Stat(t.Context(), storage.SummaryKey(camp.ID)); err != nil {
		t.Fatalf("summary: %v", err)
	}
}
