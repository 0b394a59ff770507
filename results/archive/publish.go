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
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

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
	return PublishReportFrom(ctx, st, id, MapSource(files))
}

// A ReportSource is a rendered report's files, read one at a time when
// published: a report of 10^5 points is over 100 MB, which a publisher
// holding it whole (twice, with the staged copies) added to the
// coordinator's memory at its peak.
type ReportSource interface {
	// Names lists the files.
	Names() ([]string, error)
	// Size is a file's size in bytes, to decide how many to hold at once.
	Size(name string) (int64, error)
	// Read returns a file's contents.
	Read(name string) ([]byte, error)
}

// MapSource is a report held in memory (report.Render, RenderReport).
type MapSource map[string][]byte

func (m MapSource) Names() ([]string, error) {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return names, nil
}

func (m MapSource) Size(name string) (int64, error) { return int64(len(m[name])), nil }

func (m MapSource) Read(name string) ([]byte, error) { return m[name], nil }

// DirSource is a report rendered into a directory (report.DirSink): its
// regular files.
type DirSource string

// Names lists the directory's regular files.
func (d DirSource) Names() ([]string, error) {
	ents, err := os.ReadDir(string(d))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// Size is the file's size.
func (d DirSource) Size(name string) (int64, error) {
	fi, err := os.Stat(filepath.Join(string(d), name))
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Read reads the file.
func (d DirSource) Read(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), name))
}

// PublishReportFrom is PublishReport of the files of src, each read when
// it is stored: at most a few small files or one large one are in memory
// at a time.
func PublishReportFrom(ctx context.Context, st storage.Store, id string, src ReportSource) error {
	names, err := src.Names()
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	size := make(map[string]int64, len(names))
	for _, n := range names {
		if n == "published" {
			return fmt.Errorf("report: a report file may not be named %q (the marker)", n)
		}
		if size[n], err = src.Size(n); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	sort.Strings(names)
	staging := storage.ReportStagingPrefix(id)
	if _, err := putAll(ctx, st, staging, names, size, src.Read); err != nil {
		return fmt.Errorf("report: staging: %w", err)
	}
	if err := st.Delete(ctx, storage.ReportMarkerKey(id)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// Copied from the staged objects (not from the source) so that what
	// is published is what was staged, and the marker's sums are theirs.
	sums, err := putAll(ctx, st, storage.ReportPrefix(id), names, size, func(n string) ([]byte, error) {
		return st.Get(ctx, staging+n)
	})
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	old, err := st.List(ctx, storage.ReportPrefix(id))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, k := range old {
		n := strings.TrimPrefix(k, storage.ReportPrefix(id))
		if _, ok := size[n]; !ok && k != storage.ReportMarkerKey(id) {
			if err := st.Delete(ctx, k); err != nil {
				return fmt.Errorf("report: removing stale %s: %w", k, err)
			}
		}
	}
	if err := st.Put(ctx, storage.ReportMarkerKey(id), checksumLines("", names, sums)); err != nil {
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

// smallFile is the size up to which putAll stores files concurrently; a
// larger one is read and stored alone, so that a report's few large tables
// (tens of MB each at 10^5 points) are never in memory together.
const smallFile = 1 << 20

// putAll stores read(n) under prefix+n for every name and returns each
// file's sha256 by name. Small files go eight at a time (one at a time a
// report costs a few dozen fsyncs (local) or round trips (S3) in a row at
// the end of every campaign), then the large ones one at a time.
func putAll(ctx context.Context, st storage.Store, prefix string, names []string, size map[string]int64, read func(string) ([]byte, error)) (map[string]string, error) {
	var mu sync.Mutex
	sums := make(map[string]string, len(names))
	put := func(n string) error {
		data, err := read(n)
		if err != nil {
			return err
		}
		if err := st.Put(ctx, prefix+n, data); err != nil {
			return err
		}
		mu.Lock()
		sums[n] = SHA256(data)
		mu.Unlock()
		return nil
	}
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(names))
	var large []string
	small := 0
	for _, n := range names {
		if size[n] > smallFile {
			large = append(large, n)
			continue
		}
		small++
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- put(n)
		}()
	}
	var first error
	for range small {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	for _, n := range large {
		if first != nil {
			break
		}
		first = put(n)
	}
	return sums, first
}

// SHA256 is the hex sha256 of data.
func SHA256(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// checksumLines writes "<sha256>  <prefix><name>\n" per name, in the
// order given: the format of sha256sum, so that `sha256sum -c` checks a
// local store's files.
func checksumLines(prefix string, names []string, sums map[string]string) []byte {
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s%s\n", sums[n], prefix, n)
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
