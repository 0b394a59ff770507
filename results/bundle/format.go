// Package bundle writes and reads a campaign as one portable, verifiable
// file (.msjar): the campaign's objects as stored (spec, manifest, result
// entries, the results they refer to, summary, report, checksums), the
// plugin binaries and traces it pinned, a provenance record, RO-Crate
// metadata and a CITATION.cff, in a tar compressed with zstd or gzip,
// closed by an index of every member with its sha256 and a Merkle root
// over them, optionally signed with ed25519 (docs/archive.md).
//
// A campaign is otherwise reproducible only while its store lives; a
// bundle is what a paper's readers download and check years later, on a
// machine with no farm. Reading is written for hostile input: every
// member's path, type and size is checked before a byte is written,
// extraction goes only into a fresh temporary directory (through os.Root),
// and nothing is handed to a caller until every member matched the index.
package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/storage"
)

// FormatVersion is the version of the archives this code writes. Readers
// accept every version from 1 to FormatVersion (docs/archive.md lists what
// each added); an archive of a later version is refused, naming it.
const FormatVersion = 1

// FormatName is format.json's "format".
const FormatName = "msjar"

// Member paths of the fixed members. Every other member is a store
// object under StorePrefix (its storage key after the prefix) or a file
// of the sweep under SweepPrefix.
const (
	FormatMember     = "msjar/format.json"
	IndexMember      = "msjar/index.json"
	SignatureMember  = "msjar/signature.json"
	ProvenanceMember = "provenance.json"
	ROCrateMember    = "ro-crate-metadata.json"
	CitationMember   = "CITATION.cff"
	SubmittedMember  = "sweep/submitted.yaml"
	StorePrefix      = "store/"
)

// Format is the first member, msjar/format.json: enough to refuse an
// archive of an unknown version before reading anything else.
type Format struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Campaign string `json:"campaign"`
	Name     string `json:"name,omitempty"`
	// Msjfarm is the exporting binary's module version and revision.
	Msjfarm string `json:"msjfarm,omitempty"`
}

// Entry is one member in the index.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Index is the member msjar/index.json, written after every member it
// lists: each member's size and sha256 (in archive order) and the Merkle
// root over them (MerkleRoot).
type Index struct {
	Format   string  `json:"format"`
	Version  int     `json:"version"`
	Campaign string  `json:"campaign"`
	Tree     string  `json:"tree"`
	Members  []Entry `json:"members"`
	Root     string  `json:"merkle_root"`
}

// TreeName names the Merkle tree construction in the index.
const TreeName = "rfc6962-sha256 over members sorted by path; leaf = path NUL size NUL sha256"

// MerkleRoot is the root of the RFC 6962 Merkle tree (a leaf hashed with
// a 0x00 prefix, an interior node with 0x01, the left subtree the largest
// power of two below n) whose leaves are the members sorted by path, each
// leaf "path\x00size\x00sha256hex". A tree, rather than one hash of the
// index, lets a member's inclusion be proved with log n hashes; sorting
// makes the root independent of the order members were written in.
func MerkleRoot(members []Entry) string {
	es := append([]Entry(nil), members...)
	sort.Slice(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	leaves := make([][]byte, len(es))
	for i, e := range es {
		h := sha256.New()
		h.Write([]byte{0})
		fmt.Fprintf(h, "%s\x00%d\x00%s", e.Path, e.Size, e.SHA256)
		leaves[i] = h.Sum(nil)
	}
	if len(leaves) == 0 {
		s := sha256.Sum256(nil)
		return hex.EncodeToString(s[:])
	}
	return hex.EncodeToString(mth(leaves))
}

func mth(l [][]byte) []byte {
	if len(l) == 1 {
		return l[0]
	}
	k := 1
	for k*2 < len(l) {
		k *= 2
	}
	h := sha256.New()
	h.Write([]byte{1})
	h.Write(mth(l[:k]))
	h.Write(mth(l[k:]))
	return h.Sum(nil)
}

// checkPath reports why p may not be a member path ("" if it may): a
// fixed member, a valid storage key under StorePrefix, or SubmittedMember.
// The storage key rules (storage.ValidateKey) already refuse "..", empty
// and "." components, absolute paths, backslashes and NUL bytes.
func checkPath(p string) string {
	switch p {
	case FormatMember, IndexMember, SignatureMember, ProvenanceMember, ROCrateMember, CitationMember, SubmittedMember:
		return ""
	}
	if unshowable(p) {
		return "name holds control characters or bytes that are not UTF-8, which no store key msjfarm writes does"
	}
	key, ok := strings.CutPrefix(p, StorePrefix)
	if !ok {
		return "not a member of the format (want store/<key>, " + strings.Join([]string{FormatMember, IndexMember, SignatureMember,
			ProvenanceMember, ROCrateMember, CitationMember, SubmittedMember}, ", ") + ")"
	}
	if err := storage.ValidateKey(key); err != nil {
		return "path escapes or is not a storage key: " + err.Error()
	}
	if path.Clean(p) != p {
		return "path is not clean"
	}
	return ""
}

// contentName is the sha256 a content-addressed store key names
// (plugins/<name>/<sha256>, traces/<sha256>), "" for other keys.
func contentName(key string) string {
	parts := strings.Split(key, "/")
	switch {
	case len(parts) == 3 && parts[0] == "plugins":
		return parts[2]
	case len(parts) == 2 && parts[0] == "traces":
		return parts[1]
	}
	return ""
}

// unshowable: s holds a character a terminal acts on or a byte that is
// not UTF-8 (checkPath refuses such a member name, memberName quotes it).
func unshowable(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, termtext.Control)
}
