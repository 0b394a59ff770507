package bundle

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Compressions are the compressions Export writes and Read detects.
var Compressions = []string{"zstd", "gzip"}

// memberWriter is the tar stream being written: every member goes through
// add or addFile, which record it for the index.
type memberWriter struct {
	tw      *tar.Writer
	comp    io.WriteCloser
	mtime   time.Time
	entries []Entry
	seen    map[string]bool
	bytes   int64
	// lim are the readers' limits the archive must keep within, and
	// stream counts the tar stream as a reader's countingReader does
	// (headers and padding included): an archive a reader would refuse is
	// refused as it is written, not found out when it is read.
	lim    Limits
	stream countingWriter
	// sealing is the number of members seal writes: the index, and the
	// signature when the archive is signed.
	sealing int
	// bounds are the campaign's limits of its records, binaries and
	// trace, from its spec (nil: none).
	bounds *campaignBounds
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ErrTooLarge is a campaign that does not fit in one archive: a reader
// would refuse the archive at one of its Limits.
var ErrTooLarge = errors.New("too large for one archive")

// headerRoom bounds a member's tar header and padding in the stream: a
// PAX header of a storage key (at most a few hundred bytes of records)
// and the blocks around it.
const headerRoom = 4 << 10

// room refuses, before they are read, a campaign's objects (results of
// them) that cannot fit: each is a member, and a result stored by
// reference (layout 2) two, so objects plus the seal's bound the members
// from below. The rest is found by fits as the members are written.
func (m *memberWriter) room(objects, results int) error {
	if n := len(m.seen) + objects + m.sealing; n > m.lim.MaxMembers {
		return fmt.Errorf("its %d objects (%d of them results) would be more than the %d members an archive reader accepts: an archive holds at most about %d replications, two members each (%w)", objects, results, m.lim.MaxMembers, m.lim.MaxMembers/2, ErrTooLarge)
	}
	return nil
}

// fits refuses a member of size bytes that would take the archive past
// a reader's limits.
func (m *memberWriter) fits(path string, size int64) error {
	room := m.lim.MaxMembers
	if path != IndexMember && path != SignatureMember {
		room -= m.sealing
	}
	switch {
	case len(m.seen) >= room:
		return fmt.Errorf("member %s: the archive would hold more than %d members, the most an archive reader accepts (%w)", path, m.lim.MaxMembers, ErrTooLarge)
	case memberOver(path, size):
		max, what := memberLimit(path)
		return fmt.Errorf("member %s: %d bytes, more than the %d an archive reader accepts for %s (%w)", path, size, max, what, ErrTooLarge)
	case m.bounds != nil && strings.HasPrefix(path, StorePrefix):
		if max, what, _ := m.bounds.limit(strings.TrimPrefix(path, StorePrefix)); max > 0 && size > max {
			return fmt.Errorf("member %s: %d bytes, more than the %d an archive reader accepts for %s (%w)", path, size, max, what, ErrTooLarge)
		}
	}
	switch {
	case size > m.lim.MaxMember:
		return fmt.Errorf("member %s: %d bytes, more than the %d an archive reader accepts for one member (%w)", path, size, m.lim.MaxMember, ErrTooLarge)
	case m.stream.n+size+headerRoom > m.lim.MaxTotal:
		return fmt.Errorf("member %s: the archive would decompress to more than the %d bytes an archive reader accepts (%w)", path, m.lim.MaxTotal, ErrTooLarge)
	}
	return nil
}

func newMemberWriter(w io.Writer, compression string, mtime time.Time, lim Limits, signed bool) (*memberWriter, error) {
	var comp io.WriteCloser
	switch compression {
	case "", "zstd":
		// The default level: a 10^4-task campaign is mostly JSON, which
		// zstd's fastest levels already shrink ~10×; higher levels cost
		// seconds for a few percent.
		z, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(2))
		if err != nil {
			return nil, err
		}
		comp = z
	case "gzip":
		comp = gzip.NewWriter(w)
	default:
		return nil, fmt.Errorf("compression %q: want one of %v", compression, Compressions)
	}
	m := &memberWriter{comp: comp, mtime: mtime.UTC().Truncate(time.Second), seen: map[string]bool{}, lim: lim.withDefaults(), sealing: 1}
	if signed {
		m.sealing = 2
	}
	m.stream.w = comp
	m.tw = tar.NewWriter(&m.stream)
	return m, nil
}

func (m *memberWriter) header(path string, size int64, mode int64) error {
	if why := checkPath(path); why != "" {
		return fmt.Errorf("member %s: %s", path, why)
	}
	if m.seen[path] {
		return fmt.Errorf("member %s written twice", path)
	}
	if err := m.fits(path, size); err != nil {
		return err
	}
	m.seen[path] = true
	return m.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Size: size, Mode: mode,
		ModTime: m.mtime, Format: tar.FormatPAX})
}

// add writes one member whose content is in memory.
func (m *memberWriter) add(path string, data []byte) error {
	if err := m.header(path, int64(len(data)), 0o644); err != nil {
		return err
	}
	if _, err := m.tw.Write(data); err != nil {
		return fmt.Errorf("member %s: %w", path, err)
	}
	s := sha256.Sum256(data)
	m.entries = append(m.entries, Entry{Path: path, Size: int64(len(data)), SHA256: hex.EncodeToString(s[:])})
	m.bytes += int64(len(data))
	return nil
}

// addFile streams the file at src as a member (plugin binaries, traces:
// never read into memory whole).
func (m *memberWriter) addFile(path, src string, mode int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := m.header(path, fi.Size(), mode); err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(m.tw, io.TeeReader(f, h))
	if err != nil {
		return fmt.Errorf("member %s: %w", path, err)
	}
	m.entries = append(m.entries, Entry{Path: path, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	m.bytes += n
	return nil
}

func (m *memberWriter) close() error {
	if err := m.tw.Close(); err != nil {
		return err
	}
	return m.comp.Close()
}
