package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestLocalDeletePrunesEmptyDirs: deleting the last object under a prefix
// leaves no empty directory (a report's staging area used to stay as an
// empty report.staging/ after every campaign), never removes the root or
// a directory that still holds objects, and a Put racing with the Delete
// that empties its directory still lands.
func TestLocalDeletePrunesEmptyDirs(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"campaigns/c1/report.staging/a", "campaigns/c1/report.staging/b", "campaigns/c1/summary.csv"} {
		if err := st.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"campaigns/c1/report.staging/a", "campaigns/c1/report.staging/b"} {
		if err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "campaigns", "c1", "report.staging")); !os.IsNotExist(err) {
		t.Fatalf("report.staging/ left behind (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "campaigns", "c1", "summary.csv")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "campaigns/c1/summary.csv"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "campaigns")); !os.IsNotExist(err) {
		t.Fatalf("campaigns/ left behind empty (%v)", err)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		t.Fatalf("the store's root was removed: %v", err)
	}

	// Puts into a directory that Deletes keep emptying.
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				k := fmt.Sprintf("x/y/%d-%d", w, i)
				if err := st.Put(ctx, k, []byte("v")); err != nil {
					errs <- err
					return
				}
				if data, err := st.Get(ctx, k); err != nil || string(data) != "v" {
					errs <- fmt.Errorf("get %s: %q %v", k, data, err)
					return
				}
				if err := st.Delete(ctx, k); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
