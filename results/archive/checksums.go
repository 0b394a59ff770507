package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// A finalised campaign records the sha256 of every result object it was
// summarised from in storage.ChecksumsKey (sha256sum format: one line
// "<sha256>  <key>" per object; Checksums sorts them by key, the
// coordinator's streaming finalisation writes them in task order; from a local store's
// directory, `sha256sum -c checksums` checks it), and the sha256 of that
// object in the manifest (Manifest.ChecksumsSHA256). The objects are what
// record.ReadObjects reads for each task: the campaign's entry and, for a
// reference, the stored result it names. Load checks every result against
// it: a result object modified after the campaign finalised is left out
// of the archive (so out of every summary and report made from it) with a
// warning naming the key, and msjfarm reproduce reports the task as
// different (Archive.Modified).

// Checksums reads the result objects of tasks tids of campaign id (eight
// at a time) and returns the checksums object. A task without an entry
// is skipped; an object that is not a record of its task is listed all
// the same (it is what is stored). Any other read error is returned.
//
// With old (the checksums of an earlier finalisation, LoadChecksums; may
// be nil) it also checks the objects against it: the tasks whose object
// was modified since are returned in modified (task id → message naming
// the key) and left out of the new checksums.
func Checksums(ctx context.Context, st storage.Store, id string, tids []string, old *Sums) (sums []byte, modifiedTasks map[string]string, err error) {
	hashes := map[string]string{}
	modifiedTasks = map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	sem := make(chan struct{}, 8)
	for _, tid := range tids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, objs, err := record.ReadObjects(ctx, st, id, tid)
			mu.Lock()
			defer mu.Unlock()
			if _, integrity := errors.AsType[*record.IntegrityError](err); err != nil && !integrity {
				if !errors.Is(err, storage.ErrNotFound) && firstErr == nil {
					firstErr = err
				}
				return
			}
			if msg := modified(old, objs); msg != "" {
				modifiedTasks[tid] = msg
				return
			}
			for _, o := range objs {
				hashes[o.Key] = SHA256(o.Data)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	keys := make([]string, 0, len(hashes))
	for k := range hashes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]byte, 0, len(keys)*(64+2+60))
	for _, k := range keys {
		out = fmt.Appendf(out, "%s  %s\n", hashes[k], k)
	}
	return out, modifiedTasks, nil
}

// LoadChecksums reads the campaign's checksums object and checks it
// against the manifest's hash of it. It returns nil (and no error) when
// the campaign has none (not finalised, or finalised before checksums were
// recorded); a checksums object whose hash is not the manifest's is not
// trusted: it is returned as nil with a warning.
func LoadChecksums(ctx context.Context, st storage.Store, id string, m *Manifest) (*Sums, string, error) {
	// The object is as large as the campaign (about 250 B a result: 246
	// MB for 10^6 results), so it is copied to a temporary file and read
	// a line at a time, hashed as it is read; the sums are sorted on disk
	// when many (sumsBuilder).
	dir, err := scratch.MkdirTemp("msjfarm-checksums-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "checksums")
	err = st.GetFile(ctx, storage.ChecksumsKey(id), path)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	h := sha256.New()
	expect := 0
	if fi, err := f.Stat(); err == nil {
		expect = int(fi.Size() / 100) // a line is about 125 bytes
	}
	sb := &sumsBuilder{dir: dir}
	defer sb.close()
	tee := io.TeeReader(f, h)
	perr := eachChecksumIn(tee, func(sum [32]byte, name []byte) {
		sb.add(sumEntry{sumsKey(string(name)), sum}, expect)
	})
	if le := (lineError{}); perr != nil && !errors.As(perr, &le) {
		return nil, "", perr
	}
	// Read to the end even after a bad line, so that the hash is the
	// object's.
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return nil, "", err
	}
	if got := hex.EncodeToString(h.Sum(nil)); m != nil && m.ChecksumsSHA256 != "" && got != m.ChecksumsSHA256 {
		return nil, fmt.Sprintf("%s was modified after it was written (sha256 %s, the manifest records %s): result objects are not checked",
			storage.ChecksumsKey(id), got, m.ChecksumsSHA256), nil
	}
	if perr != nil {
		return nil, fmt.Sprintf("%s: %v: result objects are not checked", storage.ChecksumsKey(id), perr), nil
	}
	// The text is no longer needed: the disk holds the sorted sums
	// instead, not both.
	f.Close()
	if err := os.Remove(path); err != nil {
		return nil, "", err
	}
	sums, err := sb.finish()
	if err != nil {
		return nil, "", fmt.Errorf("checksums: %w", err)
	}
	return sums, "", nil
}

// ModifiedObject checks the objects record.ReadObjects read for one task
// against sums (the checksums of an earlier finalisation, may be nil) and
// describes the first that differs ("" if none does): Checksums' check,
// for a caller that reads the objects itself (the coordinator's streaming
// finalisation).
func ModifiedObject(sums *Sums, objs []record.Object) string { return modified(sums, objs) }

// deleted describes the stored result that objs (a campaign entry whose
// result could not be read) refer to when sums list it: the result was
// there when the campaign finalised ("" if sums do not list it).
func deleted(sums *Sums, objs []record.Object) string {
	if len(objs) == 0 {
		return ""
	}
	k, ok := record.ParseRef(objs[0].Data)
	if !ok {
		return ""
	}
	key := storage.StoredResultKey(k)
	if _, listed := sums.lookup(key); !listed {
		return ""
	}
	return fmt.Sprintf("%s refers to result object %s, which is missing: it was there when the campaign finalised (its checksums list it)", objs[0].Key, key)
}

// modified checks the objects read for one task against sums and
// describes the first that differs ("" if none does).
func modified(sums *Sums, objs []record.Object) string {
	for _, o := range objs {
		want, ok := sums.lookup(o.Key)
		if !ok {
			continue
		}
		if got := sha256.Sum256(o.Data); got != want {
			return fmt.Sprintf("result object %s was modified after it was written (sha256 %s, recorded %s)", o.Key, hex.EncodeToString(got[:]), hex.EncodeToString(want[:]))
		}
	}
	return ""
}
