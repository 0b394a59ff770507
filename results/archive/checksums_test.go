package archive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// TestLoadChecksums: the checksums object is read a line at a time and
// trusted only when its hash is the manifest's. Five lines give five
// sums; the same object with its last line altered is refused as
// modified (its hash is no longer the manifest's), and a line that is
// not one is named, the object's hash matching or not.
func TestLoadChecksums(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, "%064x  campaigns/c/results/%024x.json\n", i+1, i)
	}
	good := b.String()
	// A bad line early in a large object: the hash must still cover the
	// bytes after it.
	bad := good + "not a checksum\n" + strings.Repeat(good, 400)
	for _, c := range []struct {
		name, object, manifest string
		n                      int
		warn                   string
	}{
		{"intact", good, archive.SHA256([]byte(good)), 5, ""},
		{"no manifest hash", good, "", 5, ""},
		{"modified", good[:len(good)-3] + "x\n", archive.SHA256([]byte(good)), 0, "was modified after it was written"},
		{"bad line", bad, archive.SHA256([]byte(bad)), 0, "checksums line 6"},
		{"bad line, modified", bad, archive.SHA256([]byte(good)), 0, "was modified after it was written"},
	} {
		if err := st.Put(ctx, storage.ChecksumsKey("c"), []byte(c.object)); err != nil {
			t.Fatal(err)
		}
		sums, warn, err := archive.LoadChecksums(ctx, st, "c", &archive.Manifest{ChecksumsSHA256: c.manifest})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sums.Len() != c.n || (c.warn == "") != (warn == "") || !strings.Contains(warn, c.warn) {
			t.Errorf("%s: %d sums, warning %q; want %d sums, warning with %q", c.name, sums.Len(), warn, c.n, c.warn)
		}
	}
	// No object: no sums, no warning.
	if err := st.Delete(ctx, storage.ChecksumsKey("c")); err != nil {
		t.Fatal(err)
	}
	if sums, warn, err := archive.LoadChecksums(ctx, st, "c", nil); sums != nil || warn != "" || err != nil {
		t.Errorf("no object: %d sums, %q, %v", sums.Len(), warn, err)
	}
}
