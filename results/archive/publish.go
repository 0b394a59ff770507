package archive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/storage"
)

// A report is several dozen objects (index.html, plots, tables). Written in
// place, a writer killed half-way left a report with plots missing that a
// restarted coordinator then kept ("results unchanged, report kept"). So a
// report is published whole: every file is first written under
// storage.ReportStagingPrefix, then the marker storage.ReportMarkerKey is
// removed, the files are copied under storage.ReportPrefix (objects of an
// earlier report that the new one lacks are deleted), and the marker is
// written last, listing each file with its sha256. A report prefix
// without a marker, or whose files do not match it, is incomplete
// (ReportComplete) and is rewritten by the next finalisation.

// PublishReport stores files as campaign id's report, whole (see above).
func PublishReport(ctx context.Context, st storage.Store, id string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		if n == "published" {
			return fmt.Errorf("report: a report file may not be named %q (the marker)", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	staging := storage.ReportStagingPrefix(id)
	if err := putAll(ctx, st, staging, names, files); err != nil {
		return fmt.Errorf("report: staging: %w", err)
	}
	if err := st.Delete(ctx, storage.ReportMarkerKey(id)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Copied from the staged objects (not from memory) so that what is
	// published is what was staged.
	staged := make(map[string][]byte, len(names))
	for _, n := range names {
		data, err := st.Get(ctx, staging+n)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		staged[n] = data
	}
	if err := putAll(ctx, st, storage.ReportPrefix(id), names, staged); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	old, err := st.List(ctx, storage.ReportPrefix(id))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, k := range old {
		n := strings.TrimPrefix(k, storage.ReportPrefix(id))
		if _, ok := files[n]; !ok && k != storage.ReportMarkerKey(id) {
			if err := st.Delete(ctx, k); err != nil {
				return fmt.Errorf("report: removing stale %s: %w", k, err)
			}
		}
	}
	if err := st.Put(ctx, storage.ReportMarkerKey(id), checksumLines("", names, staged)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, n := range names {
		if err := st.Delete(ctx, staging+n); err != nil {
			return fmt.Errorf("report: removing staged %s: %w", n, err)
		}
	}
	return nil
}

// ReportComplete reports whether campaign id has a published report: the
// marker exists and every file it lists is stored with its sha256. An
// error is returned only when storage cannot be read.
func ReportComplete(ctx context.Context, st storage.Store, id string) (bool, error) {
	marker, err := st.Get(ctx, storage.ReportMarkerKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sums, err := ParseChecksums(marker)
	if err != nil || len(sums) == 0 {
		return false, nil
	}
	for name, want := range sums {
		data, err := st.Get(ctx, storage.ReportPrefix(id)+name)
		if errors.Is(err, storage.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if SHA256(data) != want {
			return false, nil
		}
	}
	return true, nil
}

// putAll stores files[n] under prefix+n for every name, eight at a time:
// one at a time a report costs a few dozen fsyncs (local) or round trips
// (S3) in a row at the end of every campaign.
func putAll(ctx context.Context, st storage.Store, prefix string, names []string, files map[string][]byte) error {
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(names))
	for _, n := range names {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- st.Put(ctx, prefix+n, files[n])
		}()
	}
	var first error
	for range names {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// SHA256 is the hex sha256 of data.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// checksumLines writes "<sha256>  <prefix><name>\n" per name, in the
// order given: the format of sha256sum, so that `sha256sum -c` checks a
// local store's files.
func checksumLines(prefix string, names []string, data map[string][]byte) []byte {
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s%s\n", SHA256(data[n]), prefix, n)
	}
	return b.Bytes()
}

// ParseChecksums reads sha256sum-format lines ("<64 hex>  <name>") into a
// map from name to digest.
func ParseChecksums(data []byte) (map[string]string, error) {
	out := map[string]string{}
	err := eachChecksum(data, func(sum [32]byte, name []byte) { out[string(name)] = hex.EncodeToString(sum[:]) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachChecksum calls fn with every line of a checksums object (sha256sum
// format: "<64 hex>  <name>"; empty lines are skipped), or returns an
// error naming the first line that is not one.
func eachChecksum(data []byte, fn func(sum [32]byte, name []byte)) error {
	return eachChecksumIn(bytes.NewReader(data), fn)
}

// lineError is a line of a checksums object that is not one (as opposed
// to a failure to read it).
type lineError struct{ error }

// eachChecksumIn is eachChecksum reading r a line at a time.
func eachChecksumIn(r io.Reader, fn func(sum [32]byte, name []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10) // a line is a sum and a storage key
	for i := 1; sc.Scan(); i++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		sum, name, ok := bytes.Cut(line, []byte("  "))
		if !ok || len(sum) != 64 || len(name) == 0 {
			return lineError{fmt.Errorf("checksums line %d: want \"<sha256>  <key>\", got %q", i, line)}
		}
		var b [32]byte
		if _, err := hex.Decode(b[:], sum); err != nil {
			return lineError{fmt.Errorf("checksums line %d: %q is not a hex sha256", i, sum)}
		}
		fn(b, name)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return lineError{fmt.Errorf("checksums: a line longer than 64 kB")}
	} else if err != nil {
		return err
	}
	return nil
}
