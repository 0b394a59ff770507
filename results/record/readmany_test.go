package record

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
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
	for i := range 10 {
		tk := sweep.Task{Policy: "fcfs", Replication: i, Seed: uint64(i + 1)}
		tk.ID = sweep.TaskID(tk)
		data, err := json.Marshal(Record{Task: tk, Error: "boom " + tk.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, storage.ResultKey("camp", tk.ID), data); err != nil {
			t.Fatal(err)
		}
		tids = append(tids, tk.ID)
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

// TestReadIntegrity: a campaign's reference to a stored result whose task
// is not the campaign's task (a tampered or foreign object under the
// content key) is an *IntegrityError naming the stored object, not a
// record to aggregate; an entry that is not JSON names the entry itself.
func TestReadIntegrity(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tk := sweep.Task{Policy: "fcfs", Replication: 1, Seed: 7}
	tk.ID = sweep.TaskID(tk)
	other := tk
	other.ArrivalRate = 3 // content that no longer hashes to tk.ID
	data, _ := json.Marshal(Record{Task: other})
	if err := st.Put(ctx, storage.StoredResultKey("ab12"), data); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, storage.ResultKey("camp", tk.ID), RefJSON("ab12")); err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(ctx, st, "camp", tk.ID)
	ie, ok := errors.AsType[*IntegrityError](err)
	if !ok || ie.Key != storage.StoredResultKey("ab12") {
		t.Fatalf("tampered stored result: %v", err)
	}
	if err := st.Put(ctx, storage.ResultKey("camp", "zz"), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(ctx, st, "camp", "zz")
	if ie, ok := errors.AsType[*IntegrityError](err); !ok || ie.Key != storage.ResultKey("camp", "zz") {
		t.Fatalf("not JSON: %v", err)
	}
}
