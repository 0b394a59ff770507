package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// TestExportCounterInfo: a campaign whose records refer to their counter
// descriptions (record.Store) is archived with the descriptions' object,
// once; imported into an empty store, its records read back with them.
// The committed archive's records are re-stored with descriptions (in a
// store it is imported into), as a worker of this version stores them.
func TestExportCounterInfo(t *testing.T) {
	ctx := t.Context()
	x := extract(t, committed, nil)
	id := x.Format.Campaign
	src, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, x, src); err != nil {
		t.Fatal(err)
	}
	keys, err := src.List(ctx, storage.ResultsPrefix(id))
	if err != nil || len(keys) == 0 {
		t.Fatalf("results of %s: %v", id, err)
	}
	info := sim.CounterInfos{{Name: "kills", Label: "jobs killed", Kind: sim.KindCount}}
	data, sum := record.EncodeCounterInfo(info)
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(id, k)
		r, objs, err := record.ReadObjects(ctx, src, id, tid)
		if err != nil {
			t.Fatal(err)
		}
		r.CounterInfo = info
		b, err := jsonRecord(r, sum)
		if err != nil {
			t.Fatal(err)
		}
		if err := src.Put(ctx, objs[len(objs)-1].Key, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := record.PutCounterInfo(ctx, src, info); err != nil {
		t.Fatal(err)
	}
	// The records were rewritten here, after the campaign finalised: its
	// checksums (of the old ones) would rightly refuse the export, so
	// they are written again, as a finalisation of these records would.
	var tids []string
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(id, k)
		tids = append(tids, tid)
	}
	sums, _, err := archive.Checksums(ctx, src, id, tids, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(ctx, storage.ChecksumsKey(id), sums); err != nil {
		t.Fatal(err)
	}
	var man map[string]any
	mdata, _ := src.Get(ctx, storage.ManifestKey(id))
	if err := json.Unmarshal(mdata, &man); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(sums)
	man["checksums_sha256"] = hex.EncodeToString(h[:])
	mdata, _ = json.Marshal(man)
	if err := src.Put(ctx, storage.ManifestKey(id), mdata); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "c.msjar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Export(ctx, src, id, f, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ms := readMembers(t, file)
	n := 0
	for _, m := range ms {
		if m.hdr.Name == StorePrefix+storage.CounterInfoKey(sum) {
			n++
			if !bytes.Equal(m.data, data) {
				t.Errorf("archived descriptions differ from the stored object")
			}
		}
	}
	if n != 1 {
		t.Fatalf("the archive has the descriptions' object %d times, want once", n)
	}
	y := extract(t, file, nil)
	dst, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(ctx, y, dst); err != nil {
		t.Fatal(err)
	}
	tid, _ := storage.ResultTaskID(id, keys[0])
	r, _, err := record.Read(ctx, dst, id, tid)
	if err != nil || !reflect.DeepEqual(r.CounterInfo, info) {
		t.Fatalf("imported record: %v, descriptions %+v", err, r.CounterInfo)
	}
	if got, err := dst.Get(ctx, storage.CounterInfoKey(sum)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("imported object: %v (%d bytes, want %d)", err, len(got), len(data))
	}
}

// jsonRecord is r as record.Store stores it: the descriptions replaced by
// the reference.
func jsonRecord(r *record.Record, sum string) ([]byte, error) {
	c := *r
	c.CounterInfo, c.CounterInfoRef = nil, sum
	return json.Marshal(&c)
}
