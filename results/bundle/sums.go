package bundle

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/internal/protocol"
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
//
// A finished campaign whose manifest records the checksums' hash must
// have them: without the object, nothing was checked, and a modified
// result passed export and import once the checksums were deleted beside
// it. A running one may lack them (a resubmission with --retry-failed
// deletes them until its finalisation writes them again).
func loadSums(ctx context.Context, st storage.Store, id string, man *archive.Manifest) (*archive.Sums, error) {
	sums, warn, err := archive.LoadChecksums(ctx, st, id, man)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		return nil, fmt.Errorf("%s (%w)", warn, ErrModified)
	}
	if sums == nil && man.State == protocol.CampaignDone && man.ChecksumsSHA256 != "" {
		return nil, fmt.Errorf("%s: missing, though the finished campaign's manifest records its sha256 %s: its results cannot be checked (%w)",
			storage.ChecksumsKey(id), man.ChecksumsSHA256, ErrModified)
	}
	return sums, nil
}

// checkMembers compares the store members of an index with sums, by the
// sha256 the index records: no object is read again. It names up to five
// that differ, and how many.
//
// In a finished campaign every object the checksums list must be there
// too: results deleted after finalisation (replications picked out of a
// point) passed export and import, the point's n quietly smaller. The
// checksums hold hashes of keys, not the keys, so the missing are counted
// rather than named.
//
// It returns how many objects it checked (0 without sums).
func checkMembers(sums *archive.Sums, members []Entry, finished bool) (int, error) {
	if sums == nil {
		return 0, nil
	}
	var bad []string
	n, listed := 0, 0
	for _, e := range members {
		key, ok := strings.CutPrefix(e.Path, StorePrefix)
		if !ok {
			continue
		}
		want, ok := sums.Lookup(key)
		if !ok {
			continue
		}
		listed++
		if hex.EncodeToString(want[:]) == e.SHA256 {
			continue
		}
		if n++; len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("%s (sha256 %s, the campaign's checksums record %s)", key, e.SHA256, hex.EncodeToString(want[:])))
		}
	}
	if n > 0 {
		more := ""
		if n > len(bad) {
			more = fmt.Sprintf(" and %d more", n-len(bad))
		}
		return 0, fmt.Errorf("%d result object(s) %w: %s%s", n, ErrModified, strings.Join(bad, ", "), more)
	}
	if missing := sums.Len() - listed; finished && missing > 0 {
		return 0, fmt.Errorf("%d of the %d result objects the finished campaign's checksums list are missing (deleted since it finalised: %w)", missing, sums.Len(), ErrModified)
	}
	return listed, nil
}

// consistent checks the campaign an archive holds (its members listed in
// o's index, the manifest and checksums readable from st) against its own
// checksums (ErrModified names what differs): the archive can be intact
// member for member and still carry a result modified in the store before
// it was exported, or in the archive with its index rewritten. It sets
// o.ResultsChecked.
func consistent(ctx context.Context, st storage.Store, o *Opened) error {
	id := o.Format.Campaign
	var man archive.Manifest
	data, err := st.Get(ctx, storage.ManifestKey(id))
	if err == nil {
		err = json.Unmarshal(data, &man)
	}
	if err != nil {
		return &Error{Archive: o.Path, Member: StorePrefix + storage.ManifestKey(id), Reason: err.Error(), Err: err}
	}
	if err := sumsFit(ctx, st, o); err != nil {
		return err
	}
	sums, err := loadSums(ctx, st, id, &man)
	if err == nil {
		defer sums.Close()
		o.Finalised = sums != nil // loaded, not only recorded in the manifest
		o.ResultsChecked, err = checkMembers(sums, o.Index.Members, man.State == protocol.CampaignDone)
	}
	if err != nil {
		return fmt.Errorf("%s: campaign %s: %w", o.Path, id, err)
	}
	return nil
}

// sumsFit refuses a checksums member larger than checksums of the
// archive's store objects can be: a line each (a sha256, two spaces, the
// key, a newline) and 64 KiB to spare. The checksums are parsed and sorted
// before their hash is known to be the manifest's, and a 1 GiB member of
// one line repeated (the manifest's hash set to match, the archive 974 KB)
// made verify take 2 GB of memory and 2.5 GB of disk.
func sumsFit(ctx context.Context, st storage.Store, o *Opened) error {
	key := storage.ChecksumsKey(o.Format.Campaign)
	info, err := st.Stat(ctx, key)
	if err != nil {
		return nil // none: loadSums says what that means
	}
	bound, n := int64(64<<10), 0
	for _, e := range o.Index.Members {
		if k, ok := strings.CutPrefix(e.Path, StorePrefix); ok {
			bound += int64(64 + 2 + len(k) + 1)
			n++
		}
	}
	if info.Size > bound {
		return &Error{Archive: o.Path, Member: StorePrefix + key, Reason: fmt.Sprintf("%d bytes, more than checksums of the archive's %d store objects can take (%d): padded?", info.Size, n, bound)}
	}
	return nil
}
