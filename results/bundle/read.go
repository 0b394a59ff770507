package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// Limits bound what a reader accepts, so that a hostile archive (a
// "bomb" declaring or decompressing to terabytes, millions of members)
// fails with an error naming the limit instead of filling the disk or
// the memory. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	// MaxMember is the largest member (a plugin binary, a trace).
	MaxMember int64
	// MaxTotal is the most bytes the archive may decompress to.
	MaxTotal int64
	// MaxMembers is the most members.
	MaxMembers int
	// MaxIndex is the largest index member (read into memory).
	MaxIndex int64
}

// DefaultLimits: a member may be a trace as large as the farm accepts
// (storage.DefaultMaxTraceSize, 512 MiB) or a plugin binary; an index
// of 4·10^6 members is ~600 MB, so 10^6-task campaigns fit.
var DefaultLimits = Limits{MaxMember: 1 << 30, MaxTotal: 64 << 30, MaxMembers: 4_000_000, MaxIndex: 1 << 30}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxMember > 0 {
		d.MaxMember = l.MaxMember
	}
	if l.MaxTotal > 0 {
		d.MaxTotal = l.MaxTotal
	}
	if l.MaxMembers > 0 {
		d.MaxMembers = l.MaxMembers
	}
	if l.MaxIndex > 0 {
		d.MaxIndex = l.MaxIndex
	}
	return d
}

// maxFormat bounds msjar/format.json and msjar/signature.json.
const maxFormat = 64 << 10

// maxDescription bounds provenance.json, ro-crate-metadata.json and
// CITATION.cff. Export writes them a few kilobytes long: they grow with the
// plugins, hosts and non-store members, not the results (RO-Crate lists
// those by directory). A forged archive carried each at the 1 GiB member
// limit, extracted to disk by every reader.
const maxDescription = 16 << 20

// Error is a bad archive: which member (empty for the archive as a
// whole) and why.
type Error struct {
	Archive string
	Member  string
	Reason  string
	Err     error // the underlying error, if any
}

func (e *Error) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("archive %s: %s", e.Archive, e.Reason)
	}
	return fmt.Sprintf("archive %s: member %s: %s", e.Archive, memberName(e.Member), e.Reason)
}

// memberName is a member's name as an error shows it: quoted if it holds
// anything a terminal acts on (checkPath refuses such a name, and the
// error says so): raw, a name holding a carriage return and an escape
// sequence printed a line of its own, "...: OK: format msjar version 1",
// over the refusal, and set the terminal's title.
func memberName(s string) string {
	if unshowable(s) {
		return strconv.Quote(s)
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Mismatch is one member that does not match the index.
type Mismatch struct {
	Member string
	Reason string
}

// MismatchError lists every member that does not match the index: the
// answer to "which member was modified".
type MismatchError struct {
	Archive    string
	Mismatches []Mismatch
}

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "archive %s: %d member(s) do not match the index", e.Archive, len(e.Mismatches))
	for i, m := range e.Mismatches {
		if i == 50 {
			fmt.Fprintf(&b, "; and %d more", len(e.Mismatches)-50)
			break
		}
		fmt.Fprintf(&b, "; member %s: %s", memberName(m.Member), m.Reason)
	}
	return b.String()
}

// Opened is a read archive: its format, index and signature.
type Opened struct {
	Path        string
	Compression string
	Format      Format
	Index       Index
	// Signature is the archive's signature (nil: unsigned); KeyChecked
	// says whether it was verified against a key the caller gave.
	Signature  *Signature
	KeyChecked bool
	// Bytes is the total size of the members the index lists (itself and
	// the signature not counted), as Export's Summary counts it.
	Bytes int64
	// Finalised says the campaign's checksums (written at its
	// finalisation) were there and checked; ResultsChecked is how many of
	// the archive's result objects were found in them, with the sha256
	// they record. Verify and Import set them; a campaign exported before
	// it finalised (or while resubmitted) has nothing to check its results
	// against.
	Finalised      bool
	ResultsChecked int
}

// sink receives each member's content (already checked: path, type,
// size) while it is hashed; it must read r to the end or return an error.
type sink func(name string, mode int64, r io.Reader) error

// Verify reads the archive at path and checks every member against the
// index and the index's Merkle root; with pub, the signature too (an
// unsigned archive is then an error). Then it checks that the spec
// expands to the archive's campaign and the manifest names it
// (checkCampaign), and the campaign's result objects against the
// campaign's own checksums, as import does: a result edited in the
// archive with the index rewritten to match is a file intact member for
// member, and verify said OK to it where import refused it. Only the
// spec, the manifest, the plugin pins and the checksums are kept while the
// archive streams past (in a temporary directory: the checksums grow with
// the campaign); nothing else is written anywhere.
func Verify(path string, pub ed25519.PublicKey, lim Limits) (*Opened, error) {
	dir, err := scratch.MkdirTemp("msjar-verify-")
	if err != nil {
		return nil, err
	}
	return VerifyIn(context.Background(), dir, path, pub, lim)
}

// VerifyIn is Verify keeping what it keeps in dir, a new empty directory
// of the caller's, which it removes (a command that must remove it when
// interrupted knows its name before the archive is read); it stops at
// the next member once ctx ends.
func VerifyIn(ctx context.Context, dir, path string, pub ed25519.PublicKey, lim Limits) (*Opened, error) {
	defer os.RemoveAll(dir)
	pack, err := newPack(filepath.Join(dir, "store.pack"), path, time.Time{})
	if err != nil {
		return nil, err
	}
	defer pack.close()
	// The campaign is format.json's, the first member (readArchive
	// refuses an archive that does not begin with it).
	var campaign string
	o, err := readArchive(ctx, path, pub, lim, func(name string, _ int64, r io.Reader) error {
		if name == FormatMember {
			data, err := io.ReadAll(r)
			var f Format
			if err == nil && json.Unmarshal(data, &f) == nil {
				campaign = f.Campaign
			}
			return err
		}
		key, ok := strings.CutPrefix(name, StorePrefix)
		if ok && campaign != "" && (key == storage.ManifestKey(campaign) || key == storage.ChecksumsKey(campaign) ||
			key == storage.CampaignSpecKey(campaign) || key == protocol.PinsKey(campaign)) {
			return pack.add(key, r)
		}
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	pack.seal()
	if err := checkCampaign(ctx, pack, o); err != nil {
		return nil, err
	}
	if err := consistent(ctx, pack, o); err != nil {
		return nil, err
	}
	return o, nil
}

// Extracted is an archive verified and extracted into a temporary
// directory: Store holds its store members (read-only), the other
// members (provenance.json, CITATION.cff, ...) are files under Dir.
type Extracted struct {
	*Opened
	Dir   string
	Store storage.Store
	// Derived counts the campaign's summary, precision table and report
	// files the archive holds: checked against the index, not extracted
	// (readers rebuild them from the records).
	Derived int
	pack    *packStore
}

// Close removes the extraction directory.
func (x *Extracted) Close() error { return errors.Join(x.pack.close(), os.RemoveAll(x.Dir)) }

// Extract verifies the archive at file (as Verify) while extracting it
// into a new temporary directory: the store members into one pack file
// (packStore), the others as files through an os.Root, so that no
// member can be written outside it. On any error the directory is
// removed: a caller sees an extracted archive only when every member
// matched.
func Extract(ctx context.Context, file string, pub ed25519.PublicKey, lim Limits) (*Extracted, error) {
	dir, err := scratch.MkdirTemp("msjar-")
	if err != nil {
		return nil, err
	}
	return ExtractInto(ctx, dir, file, pub, lim)
}

// ExtractInto is Extract into dir, a new empty directory of the caller's,
// which it removes on an error and Close removes: a command that must
// remove it when interrupted knows its name before the extraction starts.
func ExtractInto(ctx context.Context, dir, file string, pub ed25519.PublicKey, lim Limits) (*Extracted, error) {
	fi, err := os.Stat(file)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer root.Close()
	pack, err := newPack(filepath.Join(dir, "store.pack"), file, fi.ModTime().UTC())
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	fail := func(err error) (*Extracted, error) {
		pack.close()
		os.RemoveAll(dir)
		return nil, err
	}
	var campaign string
	derived := 0
	o, err := readArchive(ctx, file, pub, lim, func(name string, mode int64, r io.Reader) error {
		if name == FormatMember {
			// Read first (admit bounds it), for the campaign whose
			// derived objects are not extracted.
			data, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			var f Format
			if json.Unmarshal(data, &f) == nil {
				campaign = f.Campaign
			}
			r = bytes.NewReader(data)
		} else if key, ok := strings.CutPrefix(name, StorePrefix); ok {
			if campaign != "" && isDerived(campaign, key) {
				// Rebuilt from the records by every reader (import,
				// report): hashed and dropped. Extracted, four 1 GiB
				// report plots of zeros (a 159 KB archive) filled
				// $TMPDIR with 4 GB.
				derived++
				_, err := io.Copy(io.Discard, r)
				return err
			}
			return pack.add(key, r)
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		return errors.Join(err, f.Close())
	})
	if err != nil {
		return fail(err)
	}
	pack.seal()
	if err := checkCampaign(ctx, pack, o); err != nil {
		return fail(err)
	}
	return &Extracted{Opened: o, Dir: dir, Store: pack, pack: pack, Derived: derived}, nil
}

// countingReader fails once more than max bytes were read through it.
type countingReader struct {
	r   io.Reader
	n   int64
	max int64
}

var errTooBig = errors.New("decompressed size over the limit")

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		return n, errTooBig
	}
	return n, err
}

// Compression is the compression an archive starting with head (its
// first four bytes, or fewer) has by its magic number: "zstd", "gzip", or
// "" for neither (not an archive).
func Compression(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return "zstd"
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return "gzip"
	}
	return ""
}

// decompressor detects zstd or gzip by their magic numbers (Compression).
func decompressor(br *bufio.Reader) (io.Reader, string, func(), error) {
	magic, _ := br.Peek(4)
	switch Compression(magic) {
	case "zstd":
		// Streaming with a bounded window: a frame asking for a larger
		// window is refused rather than allocated.
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20), zstd.WithDecoderMaxMemory(256<<20))
		if err != nil {
			return nil, "", nil, err
		}
		return z, "zstd", z.Close, nil
	case "gzip":
		g, err := gzip.NewReader(br)
		if err != nil {
			return nil, "", nil, err
		}
		return g, "gzip", func() { g.Close() }, nil
	}
	return nil, "", nil, errors.New("not a msjfarm archive: neither zstd nor gzip compressed")
}

// readArchive is the one reader behind Verify and Extract (see there).
// It streams the archive once: each member is admitted (its header
// checked), read through put while hashed, and noted; the index, the
// Merkle root and the signature are checked at the end, against what was
// read rather than what the archive declares.
//
// It stops at the next member once ctx ends: Extract took a context and
// never looked at it, and reproduce went on extracting for 11 s after
// Ctrl-C.
func readArchive(ctx context.Context, file string, pub ed25519.PublicKey, lim Limits, put sink) (*Opened, error) {
	lim = lim.withDefaults()
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec, comp, closeDec, err := decompressor(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		return nil, &Error{Archive: file, Reason: err.Error(), Err: err}
	}
	defer closeDec()
	ar := &archiveReader{file: file, lim: lim, put: put, got: map[string]Entry{}, prev: "(start of the archive)",
		o: &Opened{Path: file, Compression: comp}}
	cr := &countingReader{r: dec, max: lim.MaxTotal}
	tr := tar.NewReader(cr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			if err := ar.checkEnd(cr); err != nil {
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, ar.streamErr("after "+ar.prev, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		metaMax, err := ar.admit(h)
		if err != nil {
			return nil, err
		}
		if err := ar.read(tr, h, metaMax); err != nil {
			return nil, err
		}
	}
	return ar.finish(pub)
}

// maxEndPadding is how many zero bytes may follow the tar stream's end
// marker: tar writers pad an archive to their record size (GNU tar's is
// 10 KiB).
const maxEndPadding = 1 << 20

// checkEnd reads what follows the tar stream's end marker to the end of
// the file: zero padding may, nothing else may. The tar reader stops at
// the marker, so bytes appended to an archive (or a second compressed
// frame, which the decompressor joins to the first) were never read, and
// verify said OK over them.
func (ar *archiveReader) checkEnd(r io.Reader) error {
	const where = "(after the last member)"
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		for _, b := range buf[:k] {
			if b != 0 {
				return ar.bad(where, "data after the end of the archive's tar stream, which only zero padding may follow (appended to the archive?)")
			}
		}
		if n += int64(k); n > maxEndPadding {
			return ar.bad(where, "more than %d bytes of padding after the end of the archive's tar stream", maxEndPadding)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &Error{Archive: ar.file, Member: where, Reason: "after the end of the archive's tar stream: " + err.Error() + " (bytes appended to the archive?)", Err: err}
		}
	}
}

// archiveReader is readArchive's state while it streams the members.
type archiveReader struct {
	file string
	lim  Limits
	put  sink
	o    *Opened
	// got is every member read, by name, and order their order.
	got   map[string]Entry
	order []string
	// indexData and sigData are the index and signature members, once
	// read; prev is the last member read, for messages.
	indexData, sigData []byte
	prev               string
	// pathBytes is the length of the paths of the members read.
	pathBytes int64
	// bounds are the limits of the members whose honest size depends on
	// the campaign, from its manifest once read.
	bounds campaignBounds
}

// bad is an archive error at member.
func (ar *archiveReader) bad(member, format string, a ...any) error {
	return &Error{Archive: ar.file, Member: member, Reason: fmt.Sprintf(format, a...)}
}

// streamErr names a failure of the compressed stream or the tar
// framing at the member being read.
func (ar *archiveReader) streamErr(member string, err error) error {
	switch {
	case errors.Is(err, errTooBig):
		return &Error{Archive: ar.file, Member: member, Reason: fmt.Sprintf("the archive decompresses to more than %d bytes (the limit; a decompression bomb?)", ar.lim.MaxTotal), Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Archive: ar.file, Member: member, Reason: "truncated: the archive ends inside this member", Err: err}
	}
	return &Error{Archive: ar.file, Member: member, Reason: "corrupt: " + err.Error() + " (the compressed stream or the tar framing is damaged; detected while reading this member)", Err: err}
}

// admit checks a member's header before any of its bytes are read: a
// regular file at a clean path, in its place in the archive (format
// first; only the signature after the index), within the limits. It
// returns the size limit of a metadata member kept in memory (0: not
// one).
func (ar *archiveReader) admit(h *tar.Header) (metaMax int64, err error) {
	name := h.Name
	if err := ar.regular(h); err != nil {
		return 0, err
	}
	if why := checkPath(name); why != "" {
		return 0, ar.bad(name, "%s", why)
	}
	if err := ar.inPlace(name); err != nil {
		return 0, err
	}
	if h.Size < 0 || h.Size > ar.lim.MaxMember {
		return 0, ar.bad(name, "declares %d bytes, more than the limit of %d for one member (a decompression bomb?)", h.Size, ar.lim.MaxMember)
	}
	if max, what := memberLimit(name); max > 0 && h.Size > max {
		return 0, ar.bad(name, "declares %d bytes, more than the limit of %d for %s: padded?", h.Size, max, what)
	}
	if key, ok := strings.CutPrefix(name, StorePrefix); ok {
		ar.bounds.id = ar.o.Format.Campaign
		max, what, refuse := ar.bounds.limit(key)
		if refuse != "" {
			return 0, ar.bad(name, "declares %d bytes, but %s", h.Size, refuse)
		}
		if max > 0 && h.Size > max {
			return 0, ar.bad(name, "declares %d bytes, more than the limit of %d for %s: padded?", h.Size, max, what)
		}
	}
	switch name {
	case FormatMember, SignatureMember:
		metaMax = maxFormat
	case IndexMember:
		metaMax = min(ar.lim.MaxIndex, ar.indexBound())
	}
	if metaMax > 0 && h.Size > metaMax {
		if name == IndexMember && metaMax < ar.lim.MaxIndex {
			return 0, ar.bad(name, "declares %d bytes, more than an index of the %d members before it can take (%d): padded?", h.Size, len(ar.order), metaMax)
		}
		return 0, ar.bad(name, "declares %d bytes, more than the limit of %d for this member", h.Size, metaMax)
	}
	return metaMax, nil
}

// indexBound is the most bytes an index of the members read so far can
// take as export writes it: per member its path (six bytes a character if
// every one were escaped), size, hash and indented JSON, well within 256
// bytes besides the path, and 64 KiB for the rest. An index padded with
// spaces to the 1 GiB limit, 34 KB compressed, made verify hold 3.5 GB.
func (ar *archiveReader) indexBound() int64 {
	return 64<<10 + int64(len(ar.order))*256 + 6*ar.pathBytes
}

// regular refuses every tar entry but a regular file: a link or a
// directory could point an extraction outside its directory.
func (ar *archiveReader) regular(h *tar.Header) error {
	switch h.Typeflag {
	case tar.TypeReg:
		// A GNU sparse file in PAX form is a regular entry whose holes
		// the tar reader expands: a 1 MB archive of such members read as
		// 75 GB, past the limits, which count the stream.
		for k := range h.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				return ar.bad(h.Name, "a sparse file (PAX record %s): archives hold plain regular files only", k)
			}
		}
		return nil
	case tar.TypeSymlink:
		return ar.bad(h.Name, "a symbolic link (to %q): archives hold regular files only", h.Linkname)
	case tar.TypeLink:
		return ar.bad(h.Name, "a hard link (to %q): archives hold regular files only", h.Linkname)
	case tar.TypeDir:
		return ar.bad(h.Name, "a directory entry: archives hold regular files only")
	}
	return ar.bad(h.Name, "tar entry type %q: archives hold regular files only", h.Typeflag)
}

// inPlace checks the member's place: not seen before, the format first,
// only the signature after the index and nothing after the signature
// (what was appended to a signed archive is refused, not ignored), and
// within the member count.
func (ar *archiveReader) inPlace(name string) error {
	switch _, dup := ar.got[name]; {
	case dup:
		return ar.bad(name, "appears twice")
	case len(ar.order) == 0 && name != FormatMember:
		return ar.bad(name, "the first member must be %s", FormatMember)
	case ar.indexData != nil && name != SignatureMember:
		return ar.bad(name, "after the index: only %s may follow %s (appended to the archive?)", SignatureMember, IndexMember)
	case ar.sigData != nil:
		return ar.bad(name, "after the signature, which is the last member")
	case len(ar.order) >= ar.lim.MaxMembers:
		return ar.bad(name, "more than %d members (the limit)", ar.lim.MaxMembers)
	}
	return nil
}

// read streams the member's bytes through put while hashing them (and
// keeping them, for a metadata member), then notes it.
func (ar *archiveReader) read(tr io.Reader, h *tar.Header, metaMax int64) error {
	name := h.Name
	hash := sha256.New()
	var meta bytes.Buffer
	var r io.Reader = io.TeeReader(tr, hash)
	if metaMax > 0 {
		meta.Grow(int(h.Size)) // its declared size, bounded by admit: no doubling
		r = io.TeeReader(r, &meta)
	}
	// The campaign's manifest: its sweep bounds the members after it.
	var sweepOf *sweepCatcher
	if id := ar.o.Format.Campaign; id != "" && name == StorePrefix+storage.ManifestKey(id) {
		sweepOf = &sweepCatcher{}
		r = io.TeeReader(r, sweepOf)
	}
	if err := ar.put(name, h.Mode, r); err != nil {
		if errors.Is(err, errTooBig) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return ar.streamErr(name, err)
		}
		var fe *os.PathError
		if errors.As(err, &fe) {
			return &Error{Archive: ar.file, Member: name, Reason: "extracting: " + err.Error(), Err: err}
		}
		return ar.streamErr(name, err)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return ar.streamErr(name, err)
	}
	if sweepOf != nil {
		ar.bounds.known = true
		ar.bounds.sweep, ar.bounds.noSweep = sweepOf.sweep()
	}
	sum := hex.EncodeToString(hash.Sum(nil))
	ar.prev = name
	ar.order = append(ar.order, name)
	ar.pathBytes += int64(len(name))
	ar.got[name] = Entry{Path: name, Size: h.Size, SHA256: sum}
	ar.o.Bytes += h.Size
	if err := ar.keepMeta(name, meta.Bytes()); err != nil {
		return err
	}
	return ar.checkContent(name, sum)
}

// keepMeta decodes the format member at once (a reader of another
// format or version stops there) and keeps the index and the signature
// for the end.
func (ar *archiveReader) keepMeta(name string, meta []byte) error {
	switch name {
	case FormatMember:
		o := ar.o
		if err := json.Unmarshal(meta, &o.Format); err != nil {
			return ar.bad(name, "%v", err)
		}
		if o.Format.Format != FormatName {
			return ar.bad(name, "format %q, want %q", o.Format.Format, FormatName)
		}
		if o.Format.Version < 1 || o.Format.Version > FormatVersion {
			return ar.bad(name, "format version %d: this msjfarm reads versions 1 to %d (a newer msjfarm wrote it: upgrade)", o.Format.Version, FormatVersion)
		}
		// The campaign id names the store prefix every member must be
		// under. Unchecked, "<another campaign>/results" made an archive
		// whose "own" objects were another campaign's entries: import
		// wrote a forged result into it, and a later run of that sweep
		// took it as done.
		if !archive.IsCampaignID(o.Format.Campaign) {
			return ar.bad(name, "campaign %q is not a campaign id (16 lower-case hex digits)", o.Format.Campaign)
		}
		// Printed by verify and import: raw, escapes in them rewrote the
		// terminal. No msjfarm writes such a name or version.
		if unshowable(o.Format.Name) || unshowable(o.Format.Msjfarm) {
			return ar.bad(name, "name %q or version %q holds control characters, which no campaign name or msjfarm version has", o.Format.Name, o.Format.Msjfarm)
		}
	case IndexMember:
		ar.indexData = meta // a buffer of its own (read): not copied
	case SignatureMember:
		if ar.indexData == nil {
			return ar.bad(name, "before the index")
		}
		ar.sigData = meta
	}
	return nil
}

// checkContent refuses a content-addressed object (a trace, a plugin
// binary) that is not the content its name pins.
func (ar *archiveReader) checkContent(name, sum string) error {
	k, ok := strings.CutPrefix(name, StorePrefix)
	if !ok {
		return nil
	}
	if want := contentName(k); want != "" && want != sum {
		what := "the trace's"
		if strings.HasPrefix(k, "plugins/") {
			what = "the plugin binary's"
		}
		return ar.bad(name, "%s sha256 is %s, not the %s its name pins (tampered with: refusing it)", what, sum, want)
	}
	return nil
}

// finish checks what was read as a whole: an index that agrees with the
// format member, whose Merkle root is the root of its members, and that
// lists exactly the members read; then the signature, which a given key
// requires.
func (ar *archiveReader) finish(pub ed25519.PublicKey) (*Opened, error) {
	file, o := ar.file, ar.o
	if len(ar.order) == 0 {
		return nil, &Error{Archive: file, Reason: "empty archive"}
	}
	if ar.indexData == nil {
		return nil, &Error{Archive: file, Member: IndexMember, Reason: fmt.Sprintf("missing: the archive ends after member %s (truncated?)", ar.prev)}
	}
	if err := json.Unmarshal(ar.indexData, &o.Index); err != nil {
		return nil, ar.bad(IndexMember, "%v", err)
	}
	if o.Index.Format != FormatName || o.Index.Version != o.Format.Version || o.Index.Campaign != o.Format.Campaign {
		return nil, ar.bad(IndexMember, "is of %s version %d campaign %s, the archive's format.json says %s version %d campaign %s",
			o.Index.Format, o.Index.Version, o.Index.Campaign, o.Format.Format, o.Format.Version, o.Format.Campaign)
	}
	if root := MerkleRoot(o.Index.Members); root != o.Index.Root {
		return nil, ar.bad(IndexMember, "its Merkle root %s is not the root of its members (%s): the index was edited", o.Index.Root, root)
	}
	if ms := compare(o.Index.Members, ar.got, ar.order); len(ms) > 0 {
		return nil, &MismatchError{Archive: file, Mismatches: ms}
	}
	if ar.sigData != nil {
		s, err := checkSignature(ar.sigData, o.Format.Campaign, o.Index.Root, pub)
		if err != nil {
			return nil, &Error{Archive: file, Member: SignatureMember, Reason: strings.TrimPrefix(err.Error(), "member "+SignatureMember+": "), Err: err}
		}
		o.Signature, o.KeyChecked = s, pub != nil
	} else if pub != nil {
		return nil, &Error{Archive: file, Member: SignatureMember, Reason: "missing: the archive is not signed, and a key was given to check its signature"}
	}
	// Every reader but verify needs the campaign's spec and manifest, and
	// verify said OK to an archive without them (or whose store members
	// are another campaign's than format.json names) that the others all
	// refused.
	id := o.Format.Campaign
	spec, man := StorePrefix+storage.CampaignSpecKey(id), StorePrefix+storage.ManifestKey(id)
	var haveSpec, haveMan bool
	o.Bytes = 0
	for _, e := range o.Index.Members {
		haveSpec, haveMan = haveSpec || e.Path == spec, haveMan || e.Path == man
		o.Bytes += e.Size // as export counts: the members the index lists
	}
	missing := ""
	switch {
	case !haveSpec:
		missing = spec
	case !haveMan:
		missing = man
	default:
		return o, nil
	}
	return nil, &Error{Archive: file, Member: missing, Reason: "missing: the campaign's spec and manifest are required"}
}

// compare lists the members that differ from the index: modified
// (sha256 or size), missing, or not in the index (added).
func compare(index []Entry, got map[string]Entry, order []string) []Mismatch {
	var out []Mismatch
	listed := map[string]bool{}
	for _, e := range index {
		if listed[e.Path] {
			out = append(out, Mismatch{e.Path, "listed twice in the index"})
			continue
		}
		listed[e.Path] = true
		g, ok := got[e.Path]
		switch {
		case !ok:
			out = append(out, Mismatch{e.Path, "listed in the index but not in the archive (removed)"})
		case g.Size != e.Size:
			out = append(out, Mismatch{e.Path, fmt.Sprintf("%d bytes, the index records %d (modified)", g.Size, e.Size)})
		case g.SHA256 != e.SHA256:
			out = append(out, Mismatch{e.Path, fmt.Sprintf("sha256 %s, the index records %s (modified)", g.SHA256, e.SHA256)})
		}
	}
	for _, n := range order {
		if n != IndexMember && n != SignatureMember && !listed[n] {
			out = append(out, Mismatch{n, "not in the index (added)"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Member < out[j].Member })
	return out
}

// IsArchive reports whether the file at path begins as an archive does:
// compressed (zstd or gzip) with msjar/format.json as its first member.
// Export replaces such a file; the compression alone let `-o data.csv.gz`
// replace a user's gzipped CSV.
func IsArchive(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	r, _, closeDec, err := decompressor(bufio.NewReader(f))
	if err != nil {
		return false
	}
	defer closeDec()
	h, err := tar.NewReader(r).Next()
	return err == nil && h.Name == FormatMember
}
