package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/storage"
)

// storedResult is the first content-addressed result member of ms.
func storedResult(t *testing.T, ms []member) int {
	t.Helper()
	i := find(ms, StorePrefix+storage.StoredResultsPrefix)
	if i < 0 {
		t.Fatal("no stored result in the committed archive")
	}
	return i
}

// edited is data with its first "mean_response":<digit> changed: still a
// record, no longer the one written.
func edited(t *testing.T, data []byte) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(`"mean_response":`))
	if i < 0 {
		t.Fatalf("no mean_response in %s", data)
	}
	out := bytes.Clone(data)
	d := &out[i+len(`"mean_response":`)]
	*d = '0' + (*d-'0'+1)%10
	return out
}

// imported is the committed campaign imported into a fresh local store,
// where a test may change it.
func imported(t *testing.T) (string, storage.Store) {
	t.Helper()
	src := extract(t, committed, nil)
	dst, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(t.Context(), src, dst); err != nil {
		t.Fatal(err)
	}
	return src.Format.Campaign, dst
}

// TestModifiedResultNotArchived: a result object modified in the store
// after the campaign finalised (its checksums say otherwise) is refused
// by export, and an archive carrying one (member hashes and index
// rewritten to match, so the file itself is intact) by import, which
// writes nothing. Before, both exited 0 and the modified record reached
// the new store; only report and reproduce said so.
func TestModifiedResultNotArchived(t *testing.T) {
	id, dst := imported(t)
	export := func() (*Summary, string, error) {
		file := filepath.Join(t.TempDir(), "a.msjar")
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := Export(t.Context(), dst, id, f, ExportOptions{})
		f.Close()
		return sum, file, err
	}
	// Unmodified: exported, and verify counts the bytes export counted.
	sum, file, err := export()
	if err != nil {
		t.Fatal(err)
	}
	if o, err := Verify(file, nil, Limits{}); err != nil || o.Bytes != sum.Bytes || len(o.Index.Members) != sum.Members {
		t.Fatalf("verify: %v; %d members, %d bytes; export said %d, %d", err, len(o.Index.Members), o.Bytes, sum.Members, sum.Bytes)
	} else if !o.Finalised || o.ResultsChecked != 16 { // 8 results: a campaign entry and a stored object each
		t.Fatalf("verify checked %d result objects (finalised %v), want 16", o.ResultsChecked, o.Finalised)
	}

	ms := readMembers(t, committed)
	i := storedResult(t, ms)
	key := strings.TrimPrefix(ms[i].hdr.Name, StorePrefix)
	data, err := dst.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Put(t.Context(), key, edited(t, data)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := export(); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), key) {
		t.Fatalf("export of a store with %s modified: %v", key, err)
	}

	ms[i].data = edited(t, ms[i].data)
	forged := writeMembers(t, reindex(t, ms))
	// The file is intact (its index matches), but not the campaign: verify
	// said OK to it.
	if _, err := Verify(forged, nil, Limits{}); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), key) {
		t.Fatalf("verify of an archive carrying %s modified: %v", key, err)
	}
	x := extract(t, forged, nil)
	fresh, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(t.Context(), x, fresh); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), key) {
		t.Fatalf("import of an archive carrying %s modified: %v", key, err)
	}
	if keys, _ := fresh.List(t.Context(), ""); len(keys) != 0 {
		t.Fatalf("a refused import wrote %v", keys)
	}
}

// TestVerifyNeedsTheCampaign: an archive without its campaign's spec (or
// whose store members are another campaign's), its index rewritten to
// match, was "OK" for verify and refused by every other reader.
func TestVerifyNeedsTheCampaign(t *testing.T) {
	ms := readMembers(t, committed)
	i := find(ms, StorePrefix+storage.CampaignSpecKey(readFormat(t, ms).Campaign))
	if i < 0 {
		t.Fatal("no spec member")
	}
	ms = append(ms[:i:i], ms[i+1:]...)
	file := writeMembers(t, reindex(t, ms))
	if _, err := Verify(file, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "spec.yaml: missing") {
		t.Fatalf("verify without the spec: %v", err)
	}
}

func readFormat(t *testing.T, ms []member) Format {
	t.Helper()
	var f Format
	if err := json.Unmarshal(ms[find(ms, FormatMember)].data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExportUnfinishedSaysWhatItKnows: a campaign whose manifest says
// running may be running or interrupted (a killed msjfarm run); the
// export's warning said a process was still at work.
func TestExportUnfinishedSaysWhatItKnows(t *testing.T) {
	id, dst := imported(t)
	var man map[string]any
	data, _ := dst.Get(t.Context(), storage.ManifestKey(id))
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	man["state"] = "running"
	data, _ = json.Marshal(man)
	if err := dst.Put(t.Context(), storage.ManifestKey(id), data); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "a.msjar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := Export(t.Context(), dst, id, f, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(sum.Warnings, "\n"); !strings.Contains(w, `its manifest says "running": still running, or interrupted`) {
		t.Fatalf("warnings: %s", w)
	}
}

// TestDeletedAfterFinalisationNotArchived: a finished campaign missing
// what its finalisation recorded is refused by export and import: its
// checksums object (which had let a modified result through unchecked),
// or result objects the checksums list (replications picked out of a
// point: the point's n quietly smaller).
func TestDeletedAfterFinalisationNotArchived(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	i := storedResult(t, ms)
	resultKey := strings.TrimPrefix(ms[i].hdr.Name, StorePrefix)
	// The campaign entry that refers to that stored result: {"ref": <its
	// content key>}.
	ref := []byte(strings.TrimSuffix(path.Base(resultKey), ".json"))
	entry := ""
	for _, m := range ms {
		if k, ok := strings.CutPrefix(m.hdr.Name, StorePrefix+storage.ResultsPrefix(id)); ok && bytes.Contains(m.data, ref) {
			entry = storage.ResultsPrefix(id) + k
		}
	}
	if entry == "" {
		t.Fatalf("no campaign entry refers to %s", resultKey)
	}
	for _, c := range []struct {
		name   string
		delete []string
		want   string
	}{
		{"checksums", []string{storage.ChecksumsKey(id)}, "checksums: missing, though the finished campaign's manifest records its sha256"},
		// 8 results, each a campaign entry and a stored object: 16 listed.
		{"result", []string{resultKey, entry}, "2 of the 16 result objects the finished campaign's checksums list are missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, dst := imported(t)
			for _, k := range c.delete {
				if err := dst.Delete(t.Context(), k); err != nil {
					t.Fatal(err)
				}
			}
			f, err := os.Create(filepath.Join(t.TempDir(), "a.msjar"))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Export(t.Context(), dst, id, f, ExportOptions{})
			f.Close()
			if !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("export: %v", err)
			}
			var kept []member
			for _, m := range readMembers(t, committed) {
				if !slices.Contains(c.delete, strings.TrimPrefix(m.hdr.Name, StorePrefix)) {
					kept = append(kept, m)
				}
			}
			file := writeMembers(t, reindex(t, kept))
			if _, err := Verify(file, nil, Limits{}); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("verify: %v", err)
			}
			x := extract(t, file, nil)
			fresh, err := storage.Open(t.Context(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Import(t.Context(), x, fresh); !errors.Is(err, ErrModified) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import: %v", err)
			}
		})
	}
}

// TestEntryRefersToAnotherTasksResult: a campaign entry that refers to a
// result filed under another task's content key is refused by import,
// with the checksums and the manifest's hash of them rewritten to match
// (so the campaign is consistent with itself). Results are shared between
// campaigns by that key: such an archive planted a forged record for
// another sweep's task, whose later run then failed for good.
func TestEntryRefersToAnotherTasksResult(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	var entries []int
	for i, m := range ms {
		if strings.HasPrefix(m.hdr.Name, StorePrefix+storage.ResultsPrefix(id)) && bytes.Contains(m.data, []byte(`"ref"`)) {
			entries = append(entries, i)
		}
	}
	if len(entries) < 2 {
		t.Fatalf("%d campaign entries with a reference in the committed archive", len(entries))
	}
	a, b := entries[0], entries[1]
	ms[a].data = bytes.Clone(ms[b].data) // a's entry now names b's result
	// The checksums list a's entry with its new hash, and the manifest
	// records the new checksums' hash.
	si := find(ms, StorePrefix+storage.ChecksumsKey(id))
	aKey := strings.TrimPrefix(ms[a].hdr.Name, StorePrefix)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(ms[si].data)), "\n") {
		if strings.HasSuffix(l, "  "+aKey) {
			l = fmt.Sprintf("%x  %s", sha256.Sum256(ms[a].data), aKey)
		}
		lines = append(lines, l)
	}
	setChecksums(t, ms, id, []byte(strings.Join(lines, "\n")+"\n"))
	file := writeMembers(t, reindex(t, ms))
	if _, err := Verify(file, nil, Limits{}); err != nil {
		t.Fatalf("verify (the file and its checksums agree): %v", err)
	}
	fresh, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(t.Context(), extract(t, file, nil), fresh)
	if err == nil || !strings.Contains(err.Error(), "nothing imported") || !strings.Contains(err.Error(), "which is not a record of its task") {
		t.Fatalf("import of an entry referring to another task's result: %v", err)
	}
	if keys, _ := fresh.List(t.Context(), ""); len(keys) != 0 {
		t.Fatalf("a refused import wrote %v", keys)
	}
}

// setChecksums replaces campaign id's checksums member with data and the
// manifest's hash of it: a campaign consistent with itself.
func setChecksums(t *testing.T, ms []member, id string, data []byte) {
	t.Helper()
	si, mi := find(ms, StorePrefix+storage.ChecksumsKey(id)), find(ms, StorePrefix+storage.ManifestKey(id))
	ms[si].data = data
	var man map[string]any
	if err := json.Unmarshal(ms[mi].data, &man); err != nil {
		t.Fatal(err)
	}
	man["checksums_sha256"] = fmt.Sprintf("%x", sha256.Sum256(data))
	ms[mi].data, _ = json.Marshal(man)
}

// TestPaddedChecksums: a checksums member larger than checksums of the
// archive's objects can be is refused before it is parsed. One line
// repeated to 1 GiB, the manifest's hash set to match (a 974 KB archive),
// made verify take 2 GB of memory and 2.5 GB of disk before it failed.
func TestPaddedChecksums(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	line := strings.Repeat("0", 64) + "  " + storage.ResultsPrefix(id) + "zzzz.json\n"
	setChecksums(t, ms, id, bytes.Repeat([]byte(line), (4<<20)/len(line)))
	file := writeMembers(t, reindex(t, ms))
	for name, read := range map[string]func() error{
		"verify": func() error { _, err := Verify(file, nil, Limits{}); return err },
		"import": func() error {
			dst, err := storage.Open(t.Context(), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Import(t.Context(), extract(t, file, nil), dst)
			return err
		},
	} {
		if err := read(); err == nil || !strings.Contains(err.Error(), "more than checksums of the archive's") || !strings.Contains(err.Error(), "padded?") {
			t.Errorf("%s of padded checksums: %v", name, err)
		}
	}
}
