package bundle

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// ErrModified is a campaign holding a result object that its own
// checksums (recorded at finalisation) say was modified after it was
// written. Export and import refuse it: an archive is what a paper's
// numbers are checked against, and one carrying such a result passed
// export, verify and import, only report and reproduce saying so.
var ErrModified = errors.New("modified since the campaign finalised")

// loadSums reads campaign id's checksums from st, checked against the
// manifest's hash of them: nil when the campaign has none (not
// finalised); an ErrModified error when the checksums object itself is
// not the one the manifest records.
func loadSums(ctx context.Context, st storage.Store, id string, man *archive.Manifest) (*archive.Sums, error) {
	sums, warn, err := archive.LoadChecksums(ctx, st, id, man)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		return nil, fmt.Errorf("%s (%w)", warn, ErrModified)
	}
	return sums, nil
}

// checkMembers compares the store members of an index with sums, by the
// sha256 the index records: no object is read again. It names up to five
// that differ, and how many.
func checkMembers(sums *archive.Sums, members []Entry) error {
	if sums == nil {
		return nil
	}
	var bad []string
	n := 0
	for _, e := range members {
		key, ok := strings.CutPrefix(e.Path, StorePrefix)
		if !ok {
			continue
		}
		want, listed := sums.Lookup(key)
		if !listed || hex.EncodeToString(want[:]) == e.SHA256 {
			continue
		}
		if n++; len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("%s (sha256 %s, the campaign's checksums record %s)", key, e.SHA256, hex.EncodeToString(want[:])))
		}
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > len(bad) {
		more = fmt.Sprintf(" and %d more", n-len(bad))
	}
	return fmt.Errorf("%d result object(s) %w: %s%s", n, ErrModified, strings.Join(bad, ", "), more)
}

// consistent checks the campaign an extracted archive holds against its
// own checksums (ErrModified names what differs): the archive can be
// intact member for member and still carry a result modified in the
// store before it was exported.
func (x *Extracted) consistent(ctx context.Context) error {
	id := x.Format.Campaign
	var man archive.Manifest
	data, err := x.Store.Get(ctx, storage.ManifestKey(id))
	if err == nil {
		err = json.Unmarshal(data, &man)
	}
	if err != nil {
		return &Error{Archive: x.Path, Member: StorePrefix + storage.ManifestKey(id), Reason: err.Error(), Err: err}
	}
	sums, err := loadSums(ctx, x.Store, id, &man)
	if err == nil {
		err = checkMembers(sums, x.Index.Members)
	}
	if err != nil {
		return fmt.Errorf("%s: campaign %s: %w; not imported", x.Path, id, err)
	}
	return nil
}
