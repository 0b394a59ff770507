package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// benchCampaign is the committed campaign grown to n tasks: its spec,
// manifest and summary, and n records made from one of its records by
// changing the replication and seed (so each is a valid record of its
// own task id, stored under its content key with a reference from the
// campaign), with checksums of those records and a manifest recording
// their hash (as the campaign's finalisation writes them, so that export
// and verify check them as they would a real campaign's), in a read-only
// pack store held in one file. The numbers
// are not those the tasks would give; the benchmarks measure the
// archive's work (reading, hashing, compressing, checking), which does
// not look at them.
func benchCampaign(b *testing.B, n int) (storage.Store, string) {
	b.Helper()
	x, err := Extract(b.Context(), committed, nil, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	id := x.Format.Campaign
	p, err := newPack(filepath.Join(b.TempDir(), "pack"), "bench", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.close() })
	keys, _ := x.Store.List(b.Context(), "")
	var tmpl *record.Record
	for _, k := range keys {
		if tid, ok := storage.ResultTaskID(id, k); ok {
			if tmpl == nil {
				if tmpl, _, err = record.Read(b.Context(), x.Store, id, tid); err != nil {
					b.Fatal(err)
				}
			}
			continue
		}
		if _, ok := storage.StoredResultContentKey(k); ok || k == storage.ManifestKey(id) || k == storage.ChecksumsKey(id) {
			continue
		}
		data, _ := x.Store.Get(b.Context(), k)
		if err := p.add(k, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	im, _ := record.ImplOf(tmpl.Provenance)
	tids := make([]string, n)
	for i := range n {
		r := *tmpl
		r.Task.Replication, r.Task.Seed = i, uint64(i)*0x9e3779b97f4a7c15
		r.Task.ID = sweep.TaskID(r.Task)
		tids[i] = r.Task.ID
		data, _ := json.Marshal(&r)
		key := record.Key(r.Task.ID, im)
		if err := p.add(storage.StoredResultKey(key), bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		if err := p.add(storage.ResultKey(id, r.Task.ID), bytes.NewReader(record.RefJSON(key))); err != nil {
			b.Fatal(err)
		}
	}
	p.seal()
	sums, _, err := archive.Checksums(b.Context(), p, id, tids, nil)
	if err != nil {
		b.Fatal(err)
	}
	var man map[string]any
	data, _ := x.Store.Get(b.Context(), storage.ManifestKey(id))
	if err := json.Unmarshal(data, &man); err != nil {
		b.Fatal(err)
	}
	man["checksums_sha256"] = archive.SHA256(sums)
	data, _ = json.Marshal(man)
	if err := errors.Join(p.add(storage.ChecksumsKey(id), bytes.NewReader(sums)), p.add(storage.ManifestKey(id), bytes.NewReader(data))); err != nil {
		b.Fatal(err)
	}
	p.seal()
	return p, id
}

// exportTo exports campaign id of st to file.
func exportTo(b *testing.B, st storage.Store, id, file string) *Summary {
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	sum, err := Export(b.Context(), st, id, f, ExportOptions{})
	if err := errors.Join(err, f.Close()); err != nil {
		b.Fatal(err)
	}
	return sum
}

func benchArchive(b *testing.B, n int) (string, int64) {
	st, id := benchCampaign(b, n)
	file := filepath.Join(b.TempDir(), "a.msjar")
	sum := exportTo(b, st, id, file)
	if sum.Records != n {
		b.Fatalf("%d records exported, want %d", sum.Records, n)
	}
	return file, sum.Bytes
}

// BenchmarkExport10k: export of a 10^4-task campaign (2·10^4 store
// objects) from a pack store (one file on local disk) to a file.
func BenchmarkExport10k(b *testing.B) {
	st, id := benchCampaign(b, 10_000)
	file := filepath.Join(b.TempDir(), "a.msjar")
	var n int64
	for b.Loop() {
		n = exportTo(b, st, id, file).Bytes
	}
	b.SetBytes(n)
}

// BenchmarkVerify10k: verify of that archive (every member hashed and
// checked against the index and the Merkle root).
func BenchmarkVerify10k(b *testing.B) {
	file, n := benchArchive(b, 10_000)
	b.SetBytes(n)
	for b.Loop() {
		if _, err := Verify(file, nil, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtract10k: verify and extract it into a temporary pack
// store, as reproduce, report and import do.
func BenchmarkExtract10k(b *testing.B) {
	file, n := benchArchive(b, 10_000)
	b.SetBytes(n)
	for b.Loop() {
		x, err := Extract(b.Context(), file, nil, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if keys, _ := x.Store.List(b.Context(), "campaigns/"); !strings.HasPrefix(keys[0], "campaigns/") {
			b.Fatal("no campaign objects")
		}
		x.Close()
	}
}
