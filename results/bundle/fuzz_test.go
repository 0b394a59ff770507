package bundle

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/msjfarm/msjfarm/storage"
)

// FuzzExtract feeds arbitrary tar streams (gzip-compressed here, so that
// the fuzzer explores the tar and the members rather than the
// decompressor's checksums) to Extract under small limits: it must not
// panic, and whatever it accepts holds only valid storage keys and the
// fixed members, inside its directory, which Close removes.
func FuzzExtract(f *testing.F) {
	raw, err := os.ReadFile(committed)
	if err != nil {
		f.Fatal(err)
	}
	z, err := zstd.NewReader(bytes.NewReader(raw))
	if err != nil {
		f.Fatal(err)
	}
	tarball, err := io.ReadAll(z)
	z.Close()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tarball)
	f.Add(tarball[:len(tarball)/2])
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		g := gzip.NewWriter(&buf)
		g.Write(data)
		g.Close()
		file := filepath.Join(dir, "f.msjar")
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := Extract(t.Context(), file, nil, Limits{MaxMember: 1 << 20, MaxTotal: 8 << 20, MaxMembers: 10000, MaxIndex: 1 << 20})
		if err != nil {
			return
		}
		keys, _ := x.Store.List(t.Context(), "")
		for _, k := range keys {
			if err := storage.ValidateKey(k); err != nil {
				t.Fatalf("accepted store member %q: %v", k, err)
			}
		}
		d := x.Dir
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Fatalf("Close left %s: %v", d, err)
		}
	})
}
