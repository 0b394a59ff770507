package storage_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// TestPutTraceAndCheck: PutTrace stores a trace once under its sha256
// (a second upload writes nothing), replaces an object that is not the
// content (another size, or the same size tampered with), and CheckTrace
// verifies presence, size and limit.
func TestPutTraceAndCheck(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("; MaxProcs: 4\n1 0 0 5 1\n")
	sum, created, err := storage.PutTrace(ctx, st, data)
	if err != nil || !created || sum != storage.TraceSHA256(data) || !storage.ValidTraceSHA256(sum) {
		t.Fatalf("first upload: %s %v %v", sum, created, err)
	}
	if _, created, err = storage.PutTrace(ctx, st, data); err != nil || created {
		t.Fatalf("second upload: created %v, %v", created, err)
	}
	if err := storage.CheckTrace(ctx, st, sum, int64(len(data)), 0); err != nil {
		t.Fatal(err)
	}
	if err := storage.CheckTrace(ctx, st, sum, int64(len(data))+1, 0); err == nil || !strings.Contains(err.Error(), "the sweep says") {
		t.Fatalf("wrong size: %v", err)
	}
	if err := storage.CheckTrace(ctx, st, sum, int64(len(data)), 4); err == nil || !strings.Contains(err.Error(), "limit of 4") {
		t.Fatalf("over the limit: %v", err)
	}
	other := strings.Repeat("0", 64)
	if err := storage.CheckTrace(ctx, st, other, 1, 0); !errors.Is(err, storage.ErrTraceMissing) {
		t.Fatalf("missing: %v", err)
	}
	for _, bad := range []string{"", "../x", strings.ToUpper(sum), sum + "0"} {
		if err := storage.CheckTrace(ctx, st, bad, 1, 0); err == nil || !strings.Contains(err.Error(), "not a sha256") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	bad := []byte(strings.Replace(string(data), "5", "6", 1))
	for _, obj := range [][]byte{append(append([]byte(nil), data...), 'x'), bad} {
		if err := st.Put(ctx, storage.TraceKey(sum), obj); err != nil {
			t.Fatal(err)
		}
		if _, written, err := storage.PutTrace(ctx, st, data); err != nil || !written {
			t.Fatalf("corrupt object %q: written %v, %v", obj, written, err)
		}
		if have, err := st.Get(ctx, storage.TraceKey(sum)); err != nil || string(have) != string(data) {
			t.Fatalf("after repair: %q, %v", have, err)
		}
	}
}
