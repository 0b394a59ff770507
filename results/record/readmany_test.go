package record

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// TestReadMany: every stored record comes back under its task id; a task
// without an entry is left out and reported to onErr with ErrNotFound.
func TestReadMany(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var tids []string
	for _, tid := range []string{"a1", "b2", "c3", "d4", "e5", "f6", "g7", "h8", "i9", "j10"} {
		if err := st.Put(ctx, storage.ResultKey("camp", tid), []byte(`{"error":"boom `+tid+`"}`)); err != nil {
			t.Fatal(err)
		}
		tids = append(tids, tid)
	}
	var mu sync.Mutex
	var missing []string
	got := ReadMany(ctx, st, "camp", append(tids, "zz"), func(tid string, err error) {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: %v, want not found", tid, err)
		}
		mu.Lock()
		missing = append(missing, tid)
		mu.Unlock()
	})
	if len(got) != len(tids) || len(missing) != 1 || missing[0] != "zz" {
		t.Fatalf("got %d records, missing %v", len(got), missing)
	}
	for _, tid := range tids {
		if r := got[tid]; r == nil || r.Error != "boom "+tid {
			t.Errorf("%s: %+v", tid, r)
		}
	}
}
