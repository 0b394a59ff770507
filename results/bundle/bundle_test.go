package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/reproduce"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// committed is a real campaign's archive of format version 1
// (testdata/small.yaml: 2 policies × 2 rates × 2 replications = 8
// records, exported --no-report). Readers must keep accepting it.
const committed = "testdata/small-v1.msjar"

const committedRecords = 8

// isolate points TMPDIR at a fresh directory and returns it, so that a
// test can check that a refused archive left nothing behind.
func isolate(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	t.Setenv("TMPDIR", d)
	return d
}

func extract(t *testing.T, file string, pub ed25519.PublicKey) *Extracted {
	t.Helper()
	x, err := Extract(t.Context(), file, pub, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestCommittedV1 reads the committed version-1 archive: verified,
// extracted, loaded as a campaign (8 records), its report rendered, and
// one task re-run: bit-identical while the engine that computed it is
// this one, "not reproducible here" (naming both engines) once sim.Version
// moves on.
func TestCommittedV1(t *testing.T) {
	o, err := Verify(committed, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Format.Version != 1 || o.Format.Name != "small" || o.Signature != nil || o.Compression != "zstd" {
		t.Fatalf("format %+v, signature %v, compression %s", o.Format, o.Signature, o.Compression)
	}
	x := extract(t, committed, nil)
	a, err := archive.Load(t.Context(), x.Store, x.Format.Campaign, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Records) != committedRecords || len(a.Warnings) != 0 || len(a.Modified) != 0 {
		t.Fatalf("%d records, warnings %v, modified %v", len(a.Records), a.Warnings, a.Modified)
	}
	files, err := a.Report()
	if err != nil || files["index.html"] == nil {
		t.Fatalf("report: %v (%d files)", err, len(files))
	}
	sub, err := os.ReadFile(filepath.Join(x.Dir, SubmittedMember))
	if err != nil || !bytes.Contains(sub, []byte("name: small")) {
		t.Fatalf("submitted sweep: %v %q", err, sub)
	}
	chosen, err := reproduce.ChooseTasks(a, "", 1, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	res := reproduce.RunWith(t.Context(), a, chosen, 1, nil, func(e string) string { return "hint for " + e })
	engine := a.Records[chosen[0]].Result.Engine
	switch {
	case engine == sim.Version && res[0].Verdict != reproduce.Same:
		t.Fatalf("engine %s: %s (%s)", engine, res[0].Verdict, res[0].Detail)
	case engine != sim.Version && (res[0].Verdict != reproduce.NotHere || !strings.Contains(res[0].Detail, "hint for "+engine)):
		t.Fatalf("engine %s, this %s: %s (%s)", engine, sim.Version, res[0].Verdict, res[0].Detail)
	}
}

// TestExportRoundTrip exports the committed archive's store again (signed,
// both compressions) and checks that every store object comes back byte
// for byte, the index's root is its members' Merkle root, the signature
// verifies with the signer's key only, and the metadata members parse.
//
// Complexity 27: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestExportRoundTrip(t *testing.T) {
	src := extract(t, committed, nil)
	pub, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := ed25519.GenerateKey(nil)
	for _, comp := range Compressions {
		t.Run(comp, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "a.msjar")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Export(t.Context(), src.Store, src.Format.Campaign, f, ExportOptions{Compression: comp, Key: key, Authors: []string{"A. Author"}})
			if err := errors.Join(err, f.Close()); err != nil {
				t.Fatal(err)
			}
			if sum.Records != committedRecords || !sum.Signed {
				t.Fatalf("summary %+v", sum)
			}
			x := extract(t, file, pub)
			if !x.KeyChecked || x.Compression != comp || x.Index.Root != sum.Root || MerkleRoot(x.Index.Members) != sum.Root {
				t.Fatalf("checked %v, compression %s, root %s / %s", x.KeyChecked, x.Compression, x.Index.Root, sum.Root)
			}
			keys, _ := src.Store.List(t.Context(), "")
			got, _ := x.Store.List(t.Context(), "")
			if strings.Join(keys, ",") != strings.Join(got, ",") {
				t.Fatalf("store keys differ:\n%v\n%v", keys, got)
			}
			for _, k := range keys {
				a, _ := src.Store.Get(t.Context(), k)
				b, _ := x.Store.Get(t.Context(), k)
				if !bytes.Equal(a, b) {
					t.Fatalf("%s differs", k)
				}
			}
			if _, err := Verify(file, otherPub, Limits{}); err == nil || !strings.Contains(err.Error(), SignatureMember) || !strings.Contains(err.Error(), "does not verify") {
				t.Fatalf("verify with another key: %v", err)
			}
			var prov Provenance
			readJSON(t, filepath.Join(x.Dir, ProvenanceMember), &prov)
			if prov.Records != committedRecords || len(prov.Engines) != 1 || prov.Engines[0].Results != committedRecords || len(prov.Hosts) == 0 || prov.Exporter.Go == "" {
				t.Fatalf("provenance %+v", prov)
			}
			var crate struct {
				Context string           `json:"@context"`
				Graph   []map[string]any `json:"@graph"`
			}
			readJSON(t, filepath.Join(x.Dir, ROCrateMember), &crate)
			if !strings.Contains(crate.Context, "ro/crate/1.1") || len(crate.Graph) < 4 || crate.Graph[1]["@id"] != "./" {
				t.Fatalf("ro-crate %+v", crate)
			}
			cff, _ := os.ReadFile(filepath.Join(x.Dir, CitationMember))
			if !bytes.HasPrefix(cff, []byte("cff-version: 1.2.0\n")) || !bytes.Contains(cff, []byte(`- name: "A. Author"`)) {
				t.Fatalf("CITATION.cff:\n%s", cff)
			}
			// The abstract and the crate's description name the report and
			// plugin binaries only if the archive holds them.
			var report, plugins bool
			for _, k := range keys {
				report = report || strings.HasPrefix(k, storage.ReportPrefix(src.Format.Campaign))
				plugins = plugins || strings.HasPrefix(k, "plugins/")
			}
			desc, _ := crate.Graph[1]["description"].(string)
			for _, c := range []struct {
				part string
				want bool
			}{{"the report, ", report}, {"the plugin binaries, ", plugins}} {
				if bytes.Contains(cff, []byte(c.part)) != c.want || strings.Contains(desc, c.part) != c.want {
					t.Errorf("%q in the descriptions: want %v\nCITATION.cff:\n%s\nro-crate: %s", c.part, c.want, cff, desc)
				}
			}
		})
	}
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// member is one tar entry of an archive being rewritten by a test.
type member struct {
	hdr  tar.Header
	data []byte
}

func readMembers(t *testing.T, file string) []member {
	t.Helper()
	f, err := os.Open(file)
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
	var out []member
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, member{*h, data})
	}
}

// writeMembers writes members as a zstd tar, as given (headers and all).
func writeMembers(t *testing.T, ms []member) string {
	t.Helper()
	return writeMembersEdited(t, ms, nil)
}

// writeMembersEdited is writeMembers with the tar's bytes edited before
// they are compressed: what Go's tar writer will not write.
func writeMembersEdited(t *testing.T, ms []member, edit func([]byte) []byte) string {
	t.Helper()
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	for _, m := range ms {
		h := m.hdr
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(m.data))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	raw := plain.Bytes()
	if edit != nil {
		raw = edit(raw)
	}
	var buf bytes.Buffer
	z, _ := zstd.NewWriter(&buf)
	if _, err := z.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, buf.Bytes())
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "bad.msjar")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func reg(name string, data []byte) member {
	return member{tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Format: tar.FormatPAX}, data}
}

// reindex rewrites the index (entries and root) to match the members: a
// forger's edit, which only a signature detects.
func reindex(t *testing.T, ms []member) []member {
	t.Helper()
	var idx Index
	var entries []Entry
	at := -1
	for i, m := range ms {
		switch m.hdr.Name {
		case IndexMember:
			at = i
			if err := json.Unmarshal(m.data, &idx); err != nil {
				t.Fatal(err)
			}
		case SignatureMember:
		default:
			s := sha256.Sum256(m.data)
			entries = append(entries, Entry{Path: m.hdr.Name, Size: int64(len(m.data)), SHA256: hex.EncodeToString(s[:])})
		}
	}
	idx.Members, idx.Root = entries, MerkleRoot(entries)
	ms[at].data, _ = json.Marshal(idx)
	return ms
}

func find(ms []member, prefix string) int {
	for i, m := range ms {
		if strings.HasPrefix(m.hdr.Name, prefix) {
			return i
		}
	}
	return -1
}

// TestBadArchives: each hostile or damaged archive is refused with an
// error naming the member and the reason, and leaves nothing behind (the
// extraction directory is removed; nothing is written outside it).
func TestBadArchives(t *testing.T) {
	raw, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	orig := readMembers(t, committed)
	resultIdx := find(orig, "store/results/")
	resultName := orig[resultIdx].hdr.Name
	edit := func(f func(ms []member) []member) func(t *testing.T) (string, Limits) {
		return func(t *testing.T) (string, Limits) {
			ms := append([]member(nil), orig...)
			return writeMembers(t, f(ms)), Limits{}
		}
	}
	insertBefore := func(ms []member, name string, m member) []member {
		i := find(ms, name)
		return append(ms[:i], append([]member{m}, ms[i:]...)...)
	}
	cases := []struct {
		name string
		make func(t *testing.T) (string, Limits)
		want []string
	}{
		{"truncated", func(t *testing.T) (string, Limits) { return writeFile(t, raw[:len(raw)*6/10]), Limits{} },
			[]string{"truncated"}},
		{"truncated before the index", edit(func(ms []member) []member { return ms[:len(ms)-1] }),
			[]string{IndexMember, "missing", "truncated"}},
		// The tar reader stopped at its end marker: bytes appended to the
		// file, or a second compressed frame (which the decompressor joins
		// to the first), passed verify.
		{"bytes appended", func(t *testing.T) (string, Limits) {
			return writeFile(t, append(bytes.Clone(raw), bytes.Repeat([]byte("GARBAGE"), 100)...)), Limits{}
		}, []string{"(after the last member)", "after the end of the archive's tar stream", "appended"}},
		{"a frame appended", func(t *testing.T) (string, Limits) {
			return writeFile(t, append(bytes.Clone(raw), raw...)), Limits{}
		}, []string{"(after the last member)", "which only zero padding may follow"}},
		// A GNU sparse member (PAX form) is a regular entry whose holes
		// the tar reader expands: 1 MB of such members read as 75 GB.
		// (Go's tar writer drops GNU.sparse records: they are written
		// under another name of the same length and renamed.)
		{"sparse member", func(t *testing.T) (string, Limits) {
			m := reg(StorePrefix+"campaigns/x/report/bomb.bin", nil)
			m.hdr.PAXRecords = map[string]string{"GNU_sparse.numblocks": "1", "GNU_sparse.map": "4096,0", "GNU_sparse.size": "4096"}
			ms := insertBefore(append([]member(nil), orig...), IndexMember, m)
			return writeMembersEdited(t, ms, func(b []byte) []byte {
				return bytes.ReplaceAll(b, []byte("GNU_sparse."), []byte("GNU.sparse."))
			}), Limits{}
		}, []string{"a sparse file (PAX record GNU.sparse."}},
		// A name with a carriage return and escapes printed a fake "OK"
		// line over the refusal and set the terminal's title.
		{"control characters in a name", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, reg(StorePrefix+"campaigns/x/report/x\r\x1b[2K\x1b]0;owned\x07", []byte("x")))
		}), []string{`member "store/campaigns/x/report/x\r\x1b[2K\x1b]0;owned\a": name holds control characters`}},
		{"corrupted byte", func(t *testing.T) (string, Limits) {
			b := bytes.Clone(raw)
			b[len(b)/2] ^= 0x5a
			return writeFile(t, b), Limits{}
		}, []string{"corrupt"}},
		{"hand-edited result", edit(func(ms []member) []member {
			ms[resultIdx].data = bytes.Replace(bytes.Clone(ms[resultIdx].data), []byte(`"mean`), []byte(`"Mean`), 1)
			return ms
		}), []string{"member " + resultName + ": sha256", "(modified)", "1 member(s)"}},
		{"member removed", edit(func(ms []member) []member { return append(ms[:resultIdx], ms[resultIdx+1:]...) }),
			[]string{"member " + resultName + ": listed in the index but not in the archive"}},
		{"member added", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, reg("store/campaigns/x/extra", []byte("x")))
		}), []string{"member store/campaigns/x/extra: not in the index (added)"}},
		{"index edited", edit(func(ms []member) []member {
			i := find(ms, IndexMember)
			ms[i].data = bytes.Replace(bytes.Clone(ms[i].data), []byte(`"size": `), []byte(`"size": 1`), 1)
			return ms
		}), []string{"member " + IndexMember, "Merkle root", "edited"}},
		{"dot-dot path", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, reg("store/../../evil", []byte("x")))
		}), []string{"member store/../../evil", "escapes"}},
		{"absolute path", edit(func(ms []member) []member { return insertBefore(ms, IndexMember, reg("/tmp/evil", []byte("x"))) }),
			[]string{"member /tmp/evil", "not a member of the format"}},
		{"symlink", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, member{tar.Header{Typeflag: tar.TypeSymlink, Name: "store/results/ln", Linkname: "/etc/passwd"}, nil})
		}), []string{"member store/results/ln", "symbolic link", "/etc/passwd"}},
		{"hardlink", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, member{tar.Header{Typeflag: tar.TypeLink, Name: "store/results/hl", Linkname: "/etc/shadow"}, nil})
		}), []string{"member store/results/hl", "hard link"}},
		{"directory", edit(func(ms []member) []member {
			return insertBefore(ms, IndexMember, member{tar.Header{Typeflag: tar.TypeDir, Name: "store/results/d/", Mode: 0o755}, nil})
		}), []string{"member store/results/d/", "directory"}},
		{"declared-size bomb", func(t *testing.T) (string, Limits) {
			// A header declaring 1 TiB, followed by nothing.
			var buf bytes.Buffer
			z, _ := zstd.NewWriter(&buf)
			tw := tar.NewWriter(z)
			_ = tw.WriteHeader(&orig[0].hdr)
			_, _ = tw.Write(orig[0].data)
			_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "store/traces/big", Size: 1 << 40, Mode: 0o644})
			_ = tw.Flush()
			_ = z.Close()
			return writeFile(t, buf.Bytes()), Limits{}
		}, []string{"member store/traces/big", "declares 1099511627776 bytes", "limit"}},
		{"member over the limit", func(t *testing.T) (string, Limits) { return committed, Limits{MaxMember: 600} },
			[]string{"member store/", "more than the limit of 600"}},
		{"decompression bomb", func(t *testing.T) (string, Limits) { return committed, Limits{MaxTotal: 8000} },
			[]string{"decompresses to more than 8000 bytes"}},
		{"unknown version", edit(func(ms []member) []member {
			ms[0].data = bytes.Replace(bytes.Clone(ms[0].data), []byte(`"version": 1`), []byte(`"version": 99`), 1)
			return reindex(t, ms)
		}), []string{"member " + FormatMember, "format version 99", "reads versions 1 to 1"}},
		// A campaign id naming another campaign's directory made the
		// archive's "own" objects that campaign's entries: import wrote
		// a forged result into it, and a run of its sweep took it as done.
		{"campaign id a path", edit(func(ms []member) []member {
			id := readFormat(t, ms).Campaign
			ms[0].data = bytes.Replace(bytes.Clone(ms[0].data), []byte(`"campaign": "`+id+`"`), []byte(`"campaign": "6b145719cbe06a04/results"`), 1)
			return reindex(t, ms)
		}), []string{"member " + FormatMember, `campaign "6b145719cbe06a04/results" is not a campaign id`}},
		// verify and import printed the name raw: escapes rewrote the
		// terminal (a carriage return and a fake line over the output).
		{"escapes in the name", edit(func(ms []member) []member {
			var f map[string]any
			_ = json.Unmarshal(ms[0].data, &f)
			f["name"] = "p1\r\x1b[2K\x1b]0;pwned\aFAKE"
			ms[0].data, _ = json.Marshal(f)
			return reindex(t, ms)
		}), []string{"member " + FormatMember, `name "p1\r\x1b[2K\x1b]0;pwned\aFAKE" or version`, "control characters"}},
		// Spaces are valid JSON: an index padded to the 1 GiB limit (34 KB
		// compressed) made verify hold 3.5 GB before it said OK.
		{"padded index", edit(func(ms []member) []member {
			ms = reindex(t, ms)
			i := find(ms, IndexMember)
			ms[i].data = append(bytes.Clone(ms[i].data), bytes.Repeat([]byte(" "), 8<<20)...)
			ms[i].hdr.Size = int64(len(ms[i].data))
			return ms
		}), []string{"member " + IndexMember, "more than an index of the", "padded?"}},
		// Each was allowed the 1 GiB of any member, and extracted.
		{"padded provenance", edit(func(ms []member) []member {
			i := find(ms, ProvenanceMember)
			ms[i].data = append(bytes.Clone(ms[i].data), bytes.Repeat([]byte(" "), 17<<20)...)
			ms[i].hdr.Size = int64(len(ms[i].data))
			return reindex(t, ms)
		}), []string{"member " + ProvenanceMember, "more than the limit of 16777216 for this member"}},
		{"plugin hash mismatch", edit(func(ms []member) []member {
			other := sha256.Sum256([]byte("the real binary"))
			return reindex(t, insertBefore(ms, ProvenanceMember, reg("store/plugins/evil/"+hex.EncodeToString(other[:]), []byte("#!/bin/sh\nrm -rf /\n"))))
		}), []string{"member store/plugins/evil/", "plugin binary's sha256", "refusing"}},
		// Results, counter descriptions, plugin binaries and traces had
		// only the 1 GiB of any member (campaignlimit_test.go has the rest).
		{"padded result", edit(func(ms []member) []member {
			ms[resultIdx].data = append(bytes.Clone(ms[resultIdx].data), bytes.Repeat([]byte(" "), 8<<20)...)
			return reindex(t, ms)
		}), []string{"member " + resultName + ": declares", "for one replication's record of this campaign", "padded?"}},
		{"trace not the campaign's", edit(func(ms []member) []member {
			body := []byte("1 0 1 5 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
			sum := sha256.Sum256(body)
			return reindex(t, insertBefore(ms, ProvenanceMember, reg("store/traces/"+hex.EncodeToString(sum[:]), body)))
		}), []string{"member store/traces/", "not the trace the campaign's sweep pins"}},
		{"result before the manifest", edit(func(ms []member) []member {
			i := find(ms, "store/campaigns/"+readFormat(t, ms).Campaign+"/manifest.json")
			man := ms[i]
			return reindex(t, insertBefore(append(ms[:i:i], ms[i+1:]...), ProvenanceMember, man))
		}), []string{"member store/campaigns/", "comes before the campaign's manifest.json", "out of order"}},
		{"duplicate member", edit(func(ms []member) []member { return insertBefore(ms, IndexMember, ms[resultIdx]) }),
			[]string{"member " + resultName + ": appears twice"}},
		{"member after the index", edit(func(ms []member) []member { return append(ms, reg(CitationMember+"x", nil)) }),
			[]string{"member CITATION.cffx"}},
		{"format not first", edit(func(ms []member) []member { return append(ms[1:2], ms...) }),
			[]string{"the first member must be " + FormatMember}},
		{"not an archive", func(t *testing.T) (string, Limits) { return writeFile(t, []byte("name: q-fig3\n")), Limits{} },
			[]string{"neither zstd nor gzip"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file, lim := c.make(t)
			tmp := isolate(t)
			_, verr := Verify(file, nil, lim)
			x, err := Extract(context.Background(), file, nil, lim)
			if err == nil {
				x.Close()
				t.Fatal("extracted")
			}
			for _, e := range []error{verr, err} {
				for _, w := range c.want {
					if e == nil || !strings.Contains(e.Error(), w) {
						t.Fatalf("error %v, want it to contain %q", e, w)
					}
				}
			}
			if left := scratch.Left(tmp); len(left) != 0 {
				t.Fatalf("left behind in TMPDIR: %v", left)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), "evil")); err == nil {
				t.Fatal("a member was written outside the extraction directory")
			}
		})
	}
}

// TestForgedIndexNeedsSignature: a forger who edits a member and rewrites
// the index consistently passes an unsigned check, and is caught by the
// signature, naming its member. The member is the citation (who to credit
// for the numbers), which no checksum of the campaign covers: an edited
// result is refused by them without a signature (TestModifiedResultNotArchived).
func TestForgedIndexNeedsSignature(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	src := extract(t, committed, nil)
	var buf bytes.Buffer
	if _, err := Export(t.Context(), src.Store, src.Format.Campaign, &buf, ExportOptions{Key: key}); err != nil {
		t.Fatal(err)
	}
	signed := writeFile(t, buf.Bytes())
	ms := readMembers(t, signed)
	i := find(ms, CitationMember)
	ms[i].data = append(bytes.Clone(ms[i].data), "  - name: A. Forger\n"...)
	ms = reindex(t, ms)
	forged := writeMembers(t, ms)
	// The signed statement names the old root: refused even without a key.
	if _, err := Verify(forged, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "member "+SignatureMember) || !strings.Contains(err.Error(), "not this archive's root") {
		t.Fatalf("unkeyed check of a forgery with a stale statement: %v", err)
	}
	// The forger rewrites the statement too: only the key catches it.
	var idx Index
	_ = json.Unmarshal(ms[find(ms, IndexMember)].data, &idx)
	si := find(ms, SignatureMember)
	var sig Signature
	_ = json.Unmarshal(ms[si].data, &sig)
	sig.Statement = statement(idx.Campaign, idx.Root)
	ms[si].data, _ = json.Marshal(sig)
	forged = writeMembers(t, ms)
	// Its signature no longer verifies even with the key it carries.
	// Before, this printed "signature: ed25519 by key fingerprint <the
	// author's>", as the genuine archive does.
	if _, err := Verify(forged, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "does not verify even with the key the archive carries (fingerprint "+Fingerprint(pub)) {
		t.Fatalf("unkeyed check of a stale signature: %v", err)
	}
	// Nor does one naming the author's fingerprint over another key.
	forgerPub, forgerKey, _ := ed25519.GenerateKey(nil)
	sig.PublicKey = base64.StdEncoding.EncodeToString(forgerPub)
	sig.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(forgerKey, []byte(sig.Statement)))
	ms[si].data, _ = json.Marshal(sig)
	if _, err := Verify(writeMembers(t, ms), nil, Limits{}); err == nil || !strings.Contains(err.Error(), "but the key it carries has fingerprint "+Fingerprint(forgerPub)) {
		t.Fatalf("unkeyed check of a borrowed fingerprint: %v", err)
	}
	// Re-signed by the forger, whole: valid for the forger's key, which
	// is the fingerprint shown; only the author's key refuses it.
	sig.Fingerprint = Fingerprint(forgerPub)
	ms[si].data, _ = json.Marshal(sig)
	forged = writeMembers(t, ms)
	if o, err := Verify(forged, nil, Limits{}); err != nil || o.KeyChecked || o.Signature.Fingerprint != Fingerprint(forgerPub) {
		t.Fatalf("unkeyed check of a re-signed forgery: %v", err)
	}
	_, err := Verify(forged, pub, Limits{})
	if err == nil || !strings.Contains(err.Error(), "member "+SignatureMember) || !strings.Contains(err.Error(), "does not verify") {
		t.Fatalf("keyed check: %v", err)
	}
	if _, err := Verify(committed, pub, Limits{}); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Fatalf("unsigned archive with a key: %v", err)
	}
}

// failingStore fails every write after the first n. Import writes from
// several goroutines, so the count is under a lock.
type failingStore struct {
	storage.Store
	mu sync.Mutex
	n  int
}

var errInjected = errors.New("injected write failure")

func (f *failingStore) take() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return errInjected
	}
	f.n--
	return nil
}

func (f *failingStore) PutIfAbsent(ctx context.Context, k string, d []byte) (bool, error) {
	if err := f.take(); err != nil {
		return false, err
	}
	return f.Store.PutIfAbsent(ctx, k, d)
}

func (f *failingStore) PutFile(ctx context.Context, k, p string) error {
	if err := f.take(); err != nil {
		return err
	}
	return f.Store.PutFile(ctx, k, p)
}

// TestImport loads the committed archive into a store (then readable as
// the campaign), a second time (nothing written), refuses a store where
// the campaign differs without writing anything, and rolls back a write
// failure half-way so that the store is as before.
//
// Complexity 22: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestImport(t *testing.T) {
	ctx := t.Context()
	x := extract(t, committed, nil)
	dst, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := Import(ctx, x, dst)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := x.Store.List(ctx, "")
	// Everything: the summary table (the small archive has no report),
	// which the importer rebuilds from the records, is not extracted.
	if _, err := x.Store.Stat(ctx, storage.SummaryKey(x.Format.Campaign)); !errors.Is(err, storage.ErrNotFound) || x.Derived != 1 {
		t.Fatalf("the summary table extracted (%v), %d derived objects counted", err, x.Derived)
	}
	if s.Written != len(all) || s.Present != 0 || s.Derived != 1 {
		t.Fatalf("first import %+v of %d objects", s, len(all))
	}
	a, err := archive.Load(ctx, dst, x.Format.Campaign, builtin.Catalog{})
	if err != nil || len(a.Records) != committedRecords || len(a.Modified) != 0 {
		t.Fatalf("load after import: %v", err)
	}
	// A store an import made has an identity, as one a run made (gc
	// refused it without).
	if _, err := storage.ReadID(ctx, dst); err != nil {
		t.Fatalf("the store an import made: %v", err)
	}
	if s, err = Import(ctx, x, dst); err != nil || s.Written != 0 || s.Present != len(all) {
		t.Fatalf("second import %+v, %v", s, err)
	}
	// A store whose copy of the campaign differs: refused, untouched.
	man := storage.ManifestKey(x.Format.Campaign)
	if err := dst.Put(ctx, man, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	res := all[len(all)-1]
	if err := dst.Delete(ctx, res); err != nil {
		t.Fatal(err)
	}
	_, err = Import(ctx, x, dst)
	if err == nil || !strings.Contains(err.Error(), "nothing imported") || !strings.Contains(err.Error(), man) {
		t.Fatalf("conflicting import: %v", err)
	}
	if _, err := dst.Stat(ctx, res); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused import wrote %s: %v", res, err)
	}
	// A write failing half-way: everything written is deleted again.
	empty, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(ctx, x, &failingStore{Store: empty, n: len(all) / 2})
	if err == nil || !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "nothing imported") {
		t.Fatalf("failing import: %v", err)
	}
	if left, _ := empty.List(ctx, ""); len(left) != 0 {
		t.Fatalf("a failed import left %d objects: %v", len(left), left)
	}
}

// TestMerkleRoot checks the tree against a hand computation: with three
// leaves a, b, c (sorted by path) the root is H(1 ‖ H(1 ‖ a ‖ b) ‖ c),
// each leaf H(0 ‖ path NUL size NUL sha256).
func TestMerkleRoot(t *testing.T) {
	es := []Entry{{"c", 3, "cc"}, {"a", 1, "aa"}, {"b", 2, "bb"}}
	leaf := func(s string) []byte { h := sha256.Sum256(append([]byte{0}, s...)); return h[:] }
	node := func(l, r []byte) []byte {
		h := sha256.Sum256(append(append([]byte{1}, l...), r...))
		return h[:]
	}
	want := hex.EncodeToString(node(node(leaf("a\x001\x00aa"), leaf("b\x002\x00bb")), leaf("c\x003\x00cc")))
	if got := MerkleRoot(es); got != want {
		t.Fatalf("root %s, want %s", got, want)
	}
}

// TestNotReproducibleHere: a built-in result of another engine version
// is not re-run but reported "not reproducible here", naming both
// engines and the msjfarm revision the archive's provenance records for
// that engine; without a recorded revision, how to find one.
func TestNotReproducibleHere(t *testing.T) {
	x := extract(t, committed, nil)
	a, err := archive.Load(t.Context(), x.Store, x.Format.Campaign, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	tid := a.Tasks[0].ID
	a.Records[tid].Result.Engine = "0.0.1"
	prov := Provenance{Exporter: Build{Module: "github.com/msjfarm/msjfarm", Revision: "abc123", Engine: "0.0.1"}}
	prov.finish()
	res := reproduce.RunWith(t.Context(), a, []string{tid}, 1, nil, prov.EngineHint)
	want := "engine 0.0.1 recorded, this msjfarm has engine " + sim.Version +
		"; msjfarm revision abc123 has engine 0.0.1: go install github.com/msjfarm/msjfarm/cmd/msjfarm@abc123"
	if res[0].Verdict != reproduce.NotHere || res[0].Detail != want {
		t.Fatalf("%s (%s), want %s (%s)", res[0].Verdict, res[0].Detail, reproduce.NotHere, want)
	}
	if h := prov.EngineHint("0.5.0"); h != "" {
		t.Fatalf("hint for an engine the archive has no revision of: %q", h)
	}
	if !strings.Contains(reproduce.DefaultHint("0.5.0"), `git log -S 'Version = "0.5.0"' -- sim/engine.go`) {
		t.Fatal(reproduce.DefaultHint("0.5.0"))
	}
	// A modified checkout's revision names no code: none is recorded.
	prov.Exporter.Modified = true
	prov.finish()
	if len(prov.MatchingRevisions) != 0 {
		t.Fatalf("matching revisions of a modified build: %v", prov.MatchingRevisions)
	}
}

// An archive imports its campaign and what that refers to, nothing else:
// each of these members (with the index rewritten to match, as a forger
// would) refuses the whole import, naming it, and nothing is written.
// Before, each was imported: results of another sweep, which a later run
// of that sweep reused as its own ("4 reused from other campaigns", mean
// response times a tenth of the true ones); a page in another campaign's
// report; a runs/ entry that made `msjfarm status` connect to a NATS
// address of the archive's choosing.
func TestImportOnlyTheCampaign(t *testing.T) {
	ctx := t.Context()
	id := extract(t, committed, nil).Format.Campaign
	other := strings.Repeat("ab", 8)
	for _, c := range []struct{ key, why string }{
		{"results/1a/1ab493c1ca38c44d132034661fda286d.json", "a result none of the campaign's tasks refers to"},
		{storage.CampaignPrefix(other) + "report/evil.html", "not part of the campaign"},
		{"runs/" + id + ".json", "not part of the campaign"},
		{"zzz/whatever", "not part of the campaign"},
		{storage.CounterInfoKey(strings.Repeat("0", 64)), "counter descriptions whose name is not the sha256 of their content"},
		{storage.ReportStagingPrefix(id) + "x.html", "a report being written"},
	} {
		t.Run(c.key, func(t *testing.T) {
			ms := readMembers(t, committed)
			at := find(ms, IndexMember)
			ms = append(ms[:at], append([]member{reg(StorePrefix+c.key, []byte(`{"planted":true}`))}, ms[at:]...)...)
			x := extract(t, writeMembers(t, reindex(t, ms)), nil)
			dst, err := storage.Open(ctx, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Import(ctx, x, dst)
			if err == nil || !strings.Contains(err.Error(), "nothing imported: the archive holds \""+c.key+"\", "+c.why) {
				t.Fatalf("want the import refused naming %s, got %v", c.key, err)
			}
			if left, _ := dst.List(ctx, ""); len(left) != 0 {
				t.Fatalf("a refused import wrote %v", left)
			}
		})
	}
}

// racingStore stores other content under the first stored result an
// import writes, just before the import does: a run of the same task on
// the same store, finishing while the import runs.
type racingStore struct {
	storage.Store
	once sync.Once
	key  string
}

func (r *racingStore) PutIfAbsent(ctx context.Context, k string, d []byte) (bool, error) {
	if _, ok := storage.StoredResultContentKey(k); ok {
		r.once.Do(func() {
			r.key = k
			_, _ = r.Store.PutIfAbsent(ctx, k, []byte(`{"computed":"here"}`))
		})
	}
	return r.Store.PutIfAbsent(ctx, k, d)
}

// TestImportRacingRun: a result stored by a run on the same store while
// the import writes is a conflict, as it is when found before the
// writes: nothing imported, the run's result left as it is, no mark. It
// was kept, marked imported, and counted as written, and the imported
// campaign then reproduced as different on those tasks.
func TestImportRacingRun(t *testing.T) {
	ctx := t.Context()
	x := extract(t, committed, nil)
	dst, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rs := &racingStore{Store: dst}
	_, err = Import(ctx, x, rs)
	if err == nil || !strings.Contains(err.Error(), "nothing imported") || !strings.Contains(err.Error(), rs.key+" was stored meanwhile with other content") {
		t.Fatalf("import racing a run: %v", err)
	}
	left, _ := dst.List(ctx, "")
	if len(left) != 1 || left[0] != rs.key {
		t.Fatalf("left %v, want only the run's %s", left, rs.key)
	}
}

// planHook runs hook once, before the first call after the import's plan
// (which states every one of the after objects once): a Stat or a write.
type planHook struct {
	storage.Store
	mu    sync.Mutex
	after int
	hook  func()
}

func (s *planHook) next(stat bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.after == 0 {
		s.hook()
	}
	if stat || s.after == 0 {
		s.after--
	}
}

func (s *planHook) Stat(ctx context.Context, k string) (storage.Info, error) {
	s.next(true)
	return s.Store.Stat(ctx, k)
}

func (s *planHook) PutIfAbsent(ctx context.Context, k string, d []byte) (bool, error) {
	s.next(false)
	return s.Store.PutIfAbsent(ctx, k, d)
}

// TestImportBesideARolledBackImport: the objects an import finds in the
// store as it plans may be another import's of the same archive, which
// that one deletes again when it fails (interrupted). They are checked
// again before the spec makes the campaign visible. Two imports of one
// archive into one store, the first interrupted: the second said "723
// objects written", exit 0, and 81 results were missing.
func TestImportBesideARolledBackImport(t *testing.T) {
	ctx := t.Context()
	x := extract(t, committed, nil)
	dst, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys, _, err := importKeys(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	// The first import wrote everything but the spec ...
	spec := storage.CampaignSpecKey(x.Format.Campaign)
	var written []string
	for _, k := range keys {
		if k == spec {
			continue
		}
		data, err := x.Store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.Put(ctx, k, data); err != nil {
			t.Fatal(err)
		}
		written = append(written, k)
	}
	// ... and deletes it again once the second has planned.
	hooked := &planHook{Store: dst, after: len(keys), hook: func() {
		for _, k := range written {
			if err := dst.Delete(ctx, k); err != nil {
				t.Error(err)
			}
		}
	}}
	if _, err := Import(ctx, x, hooked); err != nil {
		t.Fatal(err)
	}
	if gone, err := missing(ctx, dst, keys, ""); err != nil || len(gone) != 0 {
		t.Fatalf("after the import, the store lacks %v (%v)", gone, err)
	}
}

// rollbackStore plays another import of the same archive around one key:
// its first write of key finds the object there (the other import wrote
// it), and the other import's rollback deletes it before the Stat that
// follows.
type rollbackStore struct {
	storage.Store
	mu          sync.Mutex
	key         string
	wrote, gone bool
}

func (r *rollbackStore) PutIfAbsent(ctx context.Context, k string, d []byte) (bool, error) {
	r.mu.Lock()
	first := k == r.key && !r.wrote
	r.wrote = r.wrote || first
	r.mu.Unlock()
	if first {
		return false, r.Store.Put(ctx, k, d)
	}
	return r.Store.PutIfAbsent(ctx, k, d)
}

func (r *rollbackStore) Stat(ctx context.Context, k string) (storage.Info, error) {
	r.mu.Lock()
	rollback := k == r.key && r.wrote && !r.gone
	r.gone = r.gone || rollback
	r.mu.Unlock()
	if rollback {
		if err := r.Store.Delete(ctx, k); err != nil {
			return storage.Info{}, err
		}
	}
	return r.Store.Stat(ctx, k)
}

// TestImportObjectGoneMeanwhile: an object another import wrote and
// deleted again between this import's write ("already there") and its
// check of what is there is written again. The honest import failed:
// "stat …: not found; the 11 objects written were deleted again".
func TestImportObjectGoneMeanwhile(t *testing.T) {
	ctx := t.Context()
	x := extract(t, committed, nil)
	dst, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ms := readMembers(t, committed)
	key := strings.TrimPrefix(ms[storedResult(t, ms)].hdr.Name, StorePrefix)
	r := &rollbackStore{Store: dst, key: key}
	if _, err := Import(ctx, x, r); err != nil {
		t.Fatal(err)
	}
	if !r.gone {
		t.Fatal("the race was not played")
	}
	if _, err := dst.Stat(ctx, key); err != nil {
		t.Fatalf("%s after the import: %v", key, err)
	}
}

// TestHeld: the archive's descriptions name the report and the plugin
// binaries from its members. They named both in every archive, one
// exported with --no-report of built-in policies too.
func TestHeld(t *testing.T) {
	p := &Provenance{Campaign: "0123456789abcdef"}
	rep := Entry{Path: StorePrefix + storage.ReportPrefix(p.Campaign) + "index.html"}
	other := Entry{Path: StorePrefix + storage.ReportPrefix("fedcba9876543210") + "index.html"}
	bin := Entry{Path: StorePrefix + storage.PluginKey("msfq", strings.Repeat("a", 64))}
	res := Entry{Path: StorePrefix + "results/ab/abcdef0123456789abcdef0123456789.json"}
	for _, c := range []struct {
		entries []Entry
		want    string
	}{
		{[]Entry{res}, ""},
		{[]Entry{res, other}, ""}, // another campaign's report is not this one's
		{[]Entry{res, rep}, "the report, "},
		{[]Entry{bin, res}, "the plugin binaries, "},
		{[]Entry{rep, bin}, "the report, the plugin binaries, "},
	} {
		if got := held(p, c.entries); got != c.want {
			t.Errorf("held(%v) = %q, want %q", c.entries, got, c.want)
		}
	}
}
