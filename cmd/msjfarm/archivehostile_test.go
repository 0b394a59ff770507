package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/msjfarm/msjfarm/results/bundle"
)

// hostileMember is one member of an archive a test forges.
type hostileMember struct {
	name string
	data []byte
}

// forgeArchive rewrites the committed archive as a forger would: edit
// changes a member's content (nil keeps it), extra members go before the
// sweep file, and the index (entries and Merkle root) is rewritten to
// match, so that only a signature could tell.
func forgeArchive(t *testing.T, edit func(name string, data []byte) []byte, extra ...hostileMember) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "results", "bundle", "testdata", "small-v1.msjar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	tr := tar.NewReader(z)
	var ms []hostileMember
	var idx bundle.Index
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Name == bundle.IndexMember:
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			continue
		case h.Name == bundle.SubmittedMember:
			ms = append(ms, extra...)
		case edit != nil:
			data = edit(h.Name, data)
		}
		ms = append(ms, hostileMember{h.Name, data})
	}
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	put := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(data)), Mode: 0o644, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	idx.Members = nil
	for _, m := range ms {
		put(m.name, m.data)
		s := sha256.Sum256(m.data)
		idx.Members = append(idx.Members, bundle.Entry{Path: m.name, Size: int64(len(m.data)), SHA256: hex.EncodeToString(s[:])})
	}
	idx.Root = bundle.MerkleRoot(idx.Members)
	ij, _ := json.Marshal(idx)
	put(bundle.IndexMember, ij)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	zw.Write(plain.Bytes())
	zw.Close()
	file := filepath.Join(t.TempDir(), "forged.msjar")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

const smallCampaign = "5781fb9038c80f0b"

// storeFiles lists the files under dir (none if it does not exist).
func storeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out = append(out, strings.TrimPrefix(p, dir+"/"))
		}
		return nil
	})
	return out
}

// TestArchivePaddedManifestCLI: a manifest padded with spaces (valid JSON,
// covered by no checksum) is refused by verify, report and import, which
// name the member and the limit and write nothing. Padded to 1 GiB (a 49
// KB archive) it made verify take 1.07 GB and say OK, report 7.2 GB, and
// import 14.5 GB, writing 3 GB into the store. Here the padding is what a
// manifest of the committed campaign's points and tasks cannot take
// (bundle.TestMemberLimits has the header limit, MaxManifest).
func TestArchivePaddedManifestCLI(t *testing.T) {
	file := forgeArchive(t, func(name string, data []byte) []byte {
		if name == "store/campaigns/"+smallCampaign+"/manifest.json" {
			return append(data, bytes.Repeat([]byte(" "), 8<<20)...)
		}
		return data
	})
	everyReaderRefuses(t, file, "member store/campaigns/"+smallCampaign+"/manifest.json: 8390", "padded?")
}

// TestArchiveReportPlotsNotExtracted: report plots (which report and
// import rebuild from the records) are hashed and dropped, not extracted.
// Four 1 GiB plots of zeros, a 159 KB archive, made `report FILE` write 4
// GB to $TMPDIR and exit 0. Run under a file size limit of 8 MiB (`ulimit
// -f`), an extraction of the 24 MiB of plots fails.
func TestArchiveReportPlotsNotExtracted(t *testing.T) {
	var plots []hostileMember
	for _, n := range []string{"p0.png", "p1.png", "p2.png"} {
		plots = append(plots, hostileMember{"store/campaigns/" + smallCampaign + "/report/" + n, make([]byte, 8<<20)})
	}
	file := forgeArchive(t, nil, plots...)
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// 8 MiB in blocks of 512 or of 1024 bytes, as the shell counts them:
	// at most 8 MiB either way.
	cmd := exec.Command("sh", "-c", `ulimit -f 8192 && exec "$0" "$@"`, msjfarmBinary(t), "report", file, "--out", filepath.Join(dir, "rep"))
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("report under a file size limit of 8 MiB: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "rep", "index.html")); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "st")
	code, stdout, errs := msjfarm(t, []string{"TMPDIR=" + tmp}, "archive", "import", file, "--storage", st)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, errs)
	}
	for _, f := range storeFiles(t, st) {
		if strings.HasSuffix(f, ".png") && strings.HasPrefix(filepath.Base(f), "p") && len(filepath.Base(f)) == 6 {
			t.Fatalf("import stored the archive's plot %s", f)
		}
	}
}

// TestArchiveSpecNotTheCampaignsCLI: an archive whose spec.yaml was edited
// (replications 2 → 3, the index rewritten to match) is refused by
// verify, report and import, naming the spec and the campaign it expands
// to; import writes nothing. Verify said OK; import wrote the spec,
// manifest, results and checksums, exited 1 ("the stored spec expands to
// campaign …"), and results and reproduce failed on the campaign for good.
// A manifest naming another campaign passed all three without a word.
func TestArchiveSpecNotTheCampaignsCLI(t *testing.T) {
	for _, c := range []struct {
		name, member, want string
		edit               func([]byte) []byte
	}{
		{"spec", "spec.yaml", ": expands to campaign ", func(b []byte) []byte {
			return bytes.Replace(b, []byte("replications: 2"), []byte("replications: 3"), 1)
		}},
		{"manifest", "manifest.json", `: names campaign "1ed465688f7eab18", not the archive's campaign ` + smallCampaign, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"campaign": "`+smallCampaign+`"`), []byte(`"campaign": "1ed465688f7eab18"`), 1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			member := "store/campaigns/" + smallCampaign + "/" + c.member
			edited := false
			file := forgeArchive(t, func(name string, data []byte) []byte {
				if name == member {
					out := c.edit(data)
					edited = !bytes.Equal(out, data)
					return out
				}
				return data
			})
			if !edited {
				t.Fatal("nothing edited")
			}
			everyReaderRefuses(t, file, "member "+member+c.want)
		})
	}
}

// everyReaderRefuses runs verify, report and import of file: each must
// exit 1 with every want in its error, report write no --out and import
// nothing into its store.
func everyReaderRefuses(t *testing.T, file string, want ...string) {
	t.Helper()
	dir := t.TempDir()
	st := filepath.Join(dir, "st")
	for _, args := range [][]string{
		{"archive", "verify", file},
		{"report", file, "--out", filepath.Join(dir, "rep")},
		{"archive", "import", file, "--storage", st},
	} {
		code, out, errs := msjfarm(t, nil, args...)
		ok := code == 1
		for _, w := range want {
			ok = ok && strings.Contains(errs, w)
		}
		if !ok {
			t.Fatalf("%s: exit %d, want 1 and %q\n%s%s", args[:2], code, want, out, errs)
		}
	}
	if left := storeFiles(t, st); len(left) != 0 {
		t.Fatalf("a refused import wrote %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "rep")); err == nil {
		t.Fatal("a refused report wrote --out")
	}
}
