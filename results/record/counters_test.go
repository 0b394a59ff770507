package record

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// inlineMSFQ is a record stored before the counter descriptions had their
// own object (msjfarm 0.7.2, MSFQ in q-fig3): counter_info inline.
const inlineMSFQ = "testdata/v2-msfq-inline-counters.json"

func readInline(t *testing.T) ([]byte, *Record) {
	t.Helper()
	data, err := os.ReadFile(inlineMSFQ)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.CounterInfo) == 0 || r.CounterInfoRef != "" {
		t.Fatalf("%s: want inline descriptions and no reference", inlineMSFQ)
	}
	return data, &r
}

// TestCounterInfoObject: Store moves the descriptions into one object
// named by its sha256 and the record refers to it; reading the record puts
// them back. The record shrinks by the descriptions' size (the MSFQ record
// of testdata: 5,408 bytes with them inline, 1,345 of them the
// descriptions; the reference is 86 bytes). A second record of the same
// descriptions writes nothing more. A record of before (inline) is read
// as it is, from the store and by Decode.
func TestCounterInfoObject(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	old, rec := readInline(t)
	want := rec.CounterInfo
	key, _, err := Store(ctx, st, "c1", rec)
	if err != nil {
		t.Fatal(err)
	}
	if rec.CounterInfo != nil || rec.CounterInfoRef == "" {
		t.Fatalf("after Store: inline %d, ref %q; want the reference only", len(rec.CounterInfo), rec.CounterInfoRef)
	}
	stored, err := st.Get(ctx, storage.StoredResultKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(`"counter_info"`)) {
		t.Errorf("stored record still carries the descriptions")
	}
	data, sum := EncodeCounterInfo(want)
	if sum != rec.CounterInfoRef {
		t.Errorf("reference %s, want the sha256 of the descriptions %s", rec.CounterInfoRef, sum)
	}
	if obj, err := st.Get(ctx, storage.CounterInfoKey(sum)); err != nil || !bytes.Equal(obj, data) {
		t.Fatalf("object %s: %v (%d bytes, want %d)", storage.CounterInfoKey(sum), err, len(obj), len(data))
	}
	// Same size as before, less the descriptions, plus the reference.
	ref := len(`,"counter_info_ref":""`) + 64
	enc, _ := json.Marshal(rec)
	t.Logf("MSFQ record: %d bytes inline, %d with the reference (descriptions %d bytes, stored once)", len(old), len(stored), len(data))
	if len(stored) != len(enc) || len(stored) >= len(old)-len(data)+ref+64 {
		t.Errorf("stored %d bytes; want about %d (%d less the %d of the descriptions, plus %d)", len(stored), len(old)-len(data)+ref, len(old), len(data), ref)
	}

	got, _, err := Read(ctx, st, "c1", rec.Task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.CounterInfo, want) {
		t.Errorf("read back: %d descriptions, want %d", len(got.CounterInfo), len(want))
	}

	// A record of before, stored inline in a campaign (layout 1), reads as
	// it is.
	if err := st.Put(ctx, storage.ResultKey("c0", rec.Task.ID), old); err != nil {
		t.Fatal(err)
	}
	r0, _, err := Read(ctx, st, "c0", rec.Task.ID)
	if err != nil || !reflect.DeepEqual(r0.CounterInfo, want) {
		t.Fatalf("inline record: %v, %d descriptions", err, len(r0.CounterInfo))
	}
	if r, err := Decode(old, rec.Task.ID); err != nil || !reflect.DeepEqual(r.CounterInfo, want) {
		t.Fatalf("Decode of the inline record: %v", err)
	}
}

// TestCounterInfoHostile: an object under a description's name with other
// bytes (a worker with write access, a damaged store) is not used, the
// counters show their raw names and the record is still read; the next
// Store of the descriptions puts the right bytes back. A reference that is
// not a sha256 ("../../campaigns/x/spec.yaml") names no object. Concurrent
// workers storing the same descriptions write one object.
func TestCounterInfoHostile(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, rec := readInline(t)
	info := append(sim.CounterInfos(nil), rec.CounterInfo...)
	info[0].Label = "hostile words" // descriptions no process has read yet
	data, sum := EncodeCounterInfo(info)
	forged := bytes.Replace(data, []byte("hostile words"), []byte("other words!!"), 1)
	if err := st.Put(ctx, storage.CounterInfoKey(sum), forged); err != nil {
		t.Fatal(err)
	}
	r := *rec
	r.CounterInfo, r.CounterInfoRef = nil, sum
	raw, _ := json.Marshal(&r)
	if err := st.Put(ctx, storage.ResultKey("c", r.Task.ID), raw); err != nil {
		t.Fatal(err)
	}
	got, _, err := Read(ctx, st, "c", r.Task.ID)
	if err != nil || got.Result == nil {
		t.Fatalf("record with a forged description object: %v", err)
	}
	if got.CounterInfo != nil {
		t.Errorf("forged object used: %d descriptions", len(got.CounterInfo))
	}

	// Workers store the descriptions at once: one object, the right bytes.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if s, err := PutCounterInfo(ctx, st, info); err != nil || s != sum {
				t.Errorf("PutCounterInfo: %s, %v", s, err)
			}
		})
	}
	wg.Wait()
	if obj, err := st.Get(ctx, storage.CounterInfoKey(sum)); err != nil || !bytes.Equal(obj, data) {
		t.Fatalf("after Store over a forged object: %v, repaired %v", err, bytes.Equal(obj, data))
	}
	keys, _ := st.List(ctx, storage.CounterInfosPrefix)
	if len(keys) != 1 {
		t.Errorf("description objects %v, want one", keys)
	}
	got, _, err = Read(ctx, st, "c", r.Task.ID)
	if err != nil || !reflect.DeepEqual(got.CounterInfo, info) {
		t.Errorf("after the repair: %v, %d descriptions", err, len(got.CounterInfo))
	}

	r.CounterInfoRef = "../../campaigns/c/spec.yaml"
	raw, _ = json.Marshal(&r)
	if err := st.Put(ctx, storage.ResultKey("c", r.Task.ID), raw); err != nil {
		t.Fatal(err)
	}
	got, _, err = Read(ctx, st, "c", r.Task.ID)
	if err != nil || got.CounterInfo != nil {
		t.Errorf("a reference that is not a sha256: %v, %d descriptions", err, len(got.CounterInfo))
	}
	if _, err := GetCounterInfo(ctx, st, r.CounterInfoRef); err == nil || !strings.Contains(err.Error(), "not a sha256") {
		t.Errorf("GetCounterInfo of a path: %v", err)
	}
}
