package bundle

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
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
}

func newMemberWriter(w io.Writer, compression string, mtime time.Time) (*memberWriter, error) {
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
	return &memberWriter{tw: tar.NewWriter(comp), comp: comp, mtime: mtime.UTC().Truncate(time.Second), seen: map[string]bool{}}, nil
}

func (m *memberWriter) header(path string, size int64, mode int64) error {
	if why := checkPath(path); why != "" {
		return fmt.Errorf("member %s: %s", path, why)
	}
	if m.seen[path] {
		return fmt.Errorf("member %s written twice", path)
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
