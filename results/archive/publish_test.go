package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// TestPublishReportFromDir publishes a report rendered into a directory
// (DirSource): two small files, which go concurrently, and one of 3 MiB,
// over the 1 MiB up to which files are stored concurrently, which goes
// alone. The published objects are the files byte for byte, the marker
// lists all three with their sha256 (ReportComplete), nothing is left
// staged, and a file of an earlier report that this one lacks is removed.
func TestPublishReportFromDir(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.PublishReport(ctx, st, "c1", map[string][]byte{"old.png": []byte("old")}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"index.html":     []byte("<html></html>"),
		"summary.csv":    []byte("a\n1\n"),
		"summary.csv.gz": bytes.Repeat([]byte{7}, 3<<20),
	}
	for n, data := range files {
		if err := os.WriteFile(filepath.Join(dir, n), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := archive.PublishReportFrom(ctx, st, "c1", archive.DirSource(dir)); err != nil {
		t.Fatal(err)
	}
	for n, want := range files {
		got, err := st.Get(ctx, storage.ReportPrefix("c1")+n)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes (%v), want %d", n, len(got), err, len(want))
		}
	}
	marker, err := st.Get(ctx, storage.ReportMarkerKey("c1"))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := archive.ParseChecksums(marker)
	if err != nil {
		t.Fatal(err)
	}
	for n, data := range files {
		if sums[n] != archive.SHA256(data) {
			t.Errorf("marker: %s has sum %q, want %q", n, sums[n], archive.SHA256(data))
		}
	}
	if len(sums) != len(files) {
		t.Errorf("marker lists %d files, want %d", len(sums), len(files))
	}
	if ok, err := archive.ReportComplete(ctx, st, "c1"); err != nil || !ok {
		t.Errorf("report not complete: %v %v", ok, err)
	}
	keys, err := st.List(ctx, storage.ReportPrefix("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys, storage.ReportPrefix("c1")+"old.png") {
		t.Errorf("the earlier report's old.png is still published")
	}
	if left, _ := st.List(ctx, storage.ReportStagingPrefix("c1")); len(left) != 0 {
		t.Errorf("staged objects left: %v", left)
	}
}

// TestPublishReportFromMarkerName: a source with a file named as the
// marker is refused before anything is staged.
func TestPublishReportFromMarkerName(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = archive.PublishReportFrom(ctx, st, "c1", archive.MapSource{"published": []byte("x")})
	if err == nil {
		t.Fatal("a file named published was accepted")
	}
	if left, _ := st.List(ctx, ""); len(left) != 0 {
		t.Errorf("objects written: %v", left)
	}
}
