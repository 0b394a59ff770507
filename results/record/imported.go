package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/storage"
)

// Imported results. An archive import writes its campaign's results under
// their content keys, where any later campaign with the same task would
// reuse them: an archive from anyone (a paper's supplement) could thus put
// its numbers into a sweep of one's own, counted only as "reused from
// other campaigns". So the import marks each result it writes
// (storage.ImportedKey, holding the importing campaign's id): such a
// result answers the campaign it came with, and other campaigns run the
// task again. The first run here whose result agrees with it (the same
// Result, bit for bit: the engine is deterministic) removes the mark and
// is referenced like any stored result; one that disagrees fails its task
// (ImportedMismatchError), and the imported result is kept as it was, for
// `msjfarm reproduce` of its campaign to show.

// Reusable reports whether the result with content key key is stored and
// may answer a task of any campaign: it is, and no unconfirmed import
// wrote it.
func Reusable(ctx context.Context, st storage.Store, key string) (bool, error) {
	stored, err := exists(ctx, st, storage.StoredResultKey(key))
	if err != nil || !stored {
		return false, err
	}
	marked, err := exists(ctx, st, storage.ImportedKey(key))
	return err == nil && !marked, err
}

// exists reports whether st holds key.
func exists(ctx context.Context, st storage.Store, key string) (bool, error) {
	_, err := st.Stat(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ConfirmImported removes the imported mark of campaign id's result of
// task tid if the campaign refers to it under key, the content key of a
// run here that gave the same result (msjfarm reproduce): the result is
// then reusable, as after a worker's agreeing run. It reports whether a
// mark was removed.
func ConfirmImported(ctx context.Context, st storage.Store, id, tid, key string) (bool, error) {
	data, err := st.Get(ctx, storage.ResultKey(id, tid))
	if err != nil {
		return false, err
	}
	if ref, ok := ParseRef(data); !ok || ref != key {
		return false, nil
	}
	if marked, err := exists(ctx, st, storage.ImportedKey(key)); err != nil || !marked {
		return false, err
	}
	return true, st.Delete(ctx, storage.ImportedKey(key))
}

// ImportedMismatchError is Store's error when the result already stored
// under the record's content key came from an archive import and says
// otherwise than this run: the archive's claim is not what this engine
// and policy compute.
type ImportedMismatchError struct {
	Key      string // the content key
	Campaign string // the imported campaign that brought it
}

func (e *ImportedMismatchError) Error() string {
	return fmt.Sprintf("the result stored for this task (%s) was imported with campaign %s and differs from this run's: that archive's result is not what this code computes (check it with `msjfarm reproduce %s --all`); it was left in place, and this task is not answered by it", storage.StoredResultKey(e.Key), e.Campaign, e.Campaign)
}

// confirmImported is Store's check of a result it found stored under key
// (rec's own was not written): nothing unless an import wrote it; then
// the mark is removed if rec's Result is the stored one's, and
// ImportedMismatchError returned if not.
func confirmImported(ctx context.Context, st storage.Store, key string, rec *Record) error {
	mark, err := st.Get(ctx, storage.ImportedKey(key))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	data, err := st.Get(ctx, storage.StoredResultKey(key))
	if err != nil {
		return err
	}
	var stored Record
	mine, err1 := json.Marshal(rec.Result)
	err2 := json.Unmarshal(data, &stored)
	theirs, err3 := json.Marshal(stored.Result)
	if err1 != nil || err2 != nil || err3 != nil || !bytes.Equal(mine, theirs) {
		return &ImportedMismatchError{Key: key, Campaign: strings.TrimSpace(string(mark))}
	}
	return st.Delete(ctx, storage.ImportedKey(key))
}
