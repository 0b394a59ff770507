package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"sync"
)

// The checksums of a finalisation name every result object: 2·10^6 of
// them for 10^6 results. Held as a sorted slice they took 96 MB (48 bytes
// an object), the largest thing a reader held at 10^6 tasks (420 MiB in
// all). So a large set is sorted on disk instead: the entries are spread
// over buckets by the first bits of their key's hash (uniform, so the
// buckets are even), each bucket is sorted in memory alone and appended
// to one file, and what stays in memory is the first key of every block
// of sumsBlock entries (16 bytes a block: 0.5 MB for 2·10^6 objects). A
// lookup reads one block (3 kB) at its offset. Memory no longer grows
// with the campaign beyond that index; the disk holds 48 bytes an object.

// sumsInMemory is the largest set of entries held in memory, sorted, as
// a slice (3 MB); a larger one is sorted on disk. A variable so that a
// test can take the disk path with a few entries.
var sumsInMemory = 1 << 16

// sumsBlock is the number of entries one lookup reads from disk.
const sumsBlock = 64

// sumEntrySize is an entry on disk: the key's 16 bytes, the sum's 32.
const sumEntrySize = 16 + 32

// Sums are the checksums of a finalisation, held for lookups by key: 16
// bytes of the key's sha256 and the object's 32-byte sha256, sorted by
// key, in memory when few (sumsInMemory) and on disk otherwise. A nil
// *Sums has none. Lookups may run concurrently.
type Sums struct {
	mem []sumEntry
	// f holds the entries sorted (an unlinked temporary file: removed
	// when closed, by Close or when the process ends); n entries, first
	// the first key of each block.
	f     *os.File
	n     int
	first [][16]byte
	pool  sync.Pool
}

type sumEntry struct {
	key [16]byte
	sum [32]byte
}

// Len is the number of objects s has a sum of.
func (s *Sums) Len() int {
	if s == nil {
		return 0
	}
	if s.f != nil {
		return s.n
	}
	return len(s.mem)
}

// Close releases the file the sums are held in (if any). A Sums not
// closed releases it when collected.
func (s *Sums) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f, s.first, s.n = nil, nil, 0
	return err
}

func compareSumKey(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }

// Lookup is the sha256 the checksums record for the object at key, and
// whether they list it.
func (s *Sums) Lookup(key string) ([32]byte, bool) { return s.lookup(key) }

// lookup returns the recorded sum of the object at key.
func (s *Sums) lookup(key string) ([32]byte, bool) {
	if s == nil {
		return [32]byte{}, false
	}
	k := sumsKey(key)
	if s.f == nil {
		i, ok := slices.BinarySearchFunc(s.mem, k, func(e sumEntry, k [16]byte) int { return compareSumKey(e.key, k) })
		if !ok {
			return [32]byte{}, false
		}
		return s.mem[i].sum, true
	}
	// The block whose first key is the last one ≤ k.
	b := sort.Search(len(s.first), func(i int) bool { return compareSumKey(s.first[i], k) > 0 }) - 1
	if b < 0 {
		return [32]byte{}, false
	}
	lo := b * sumsBlock
	cnt := min(sumsBlock, s.n-lo)
	bufp, _ := s.pool.Get().(*[]byte)
	if bufp == nil {
		buf := make([]byte, sumsBlock*sumEntrySize)
		bufp = &buf
	}
	defer s.pool.Put(bufp)
	buf := (*bufp)[:cnt*sumEntrySize]
	if _, err := s.f.ReadAt(buf, int64(lo)*sumEntrySize); err != nil {
		// The file is ours and was complete when built: a read error
		// is the machine's (a closed Sums, a failed disk).
		panic(fmt.Sprintf("checksums: reading the sorted sums: %v", err))
	}
	i, ok := sort.Find(cnt, func(i int) int { return compareSumKey(k, [16]byte(buf[i*sumEntrySize:])) })
	if !ok {
		return [32]byte{}, false
	}
	return [32]byte(buf[i*sumEntrySize+16 : (i+1)*sumEntrySize]), true
}

// sortedStable sorts es by key; of entries with the same key the last one
// read stays, as a map's assignment would keep it.
func sortedStable(es []sumEntry) []sumEntry {
	slices.SortStableFunc(es, func(a, b sumEntry) int { return compareSumKey(a.key, b.key) })
	out := es[:0]
	for i, e := range es {
		if i+1 < len(es) && es[i+1].key == e.key {
			continue
		}
		out = append(out, e)
	}
	return out
}

// sumsBuilder collects entries in the order read: in memory up to
// sumsInMemory, then spread over bucket files in dir.
type sumsBuilder struct {
	dir     string
	mem     []sumEntry
	buckets []*bufio.Writer
	files   []*os.File
	shift   uint
	err     error
	rec     [sumEntrySize]byte
}

// sumsBuckets is how many buckets a set of about n entries is spread
// over: a power of two (the bucket is the key's first bits), about
// sumsInMemory entries each, at most 256 (256 write buffers of 32 kB).
func sumsBuckets(n int) int {
	b := 2
	for b < 256 && n/b > sumsInMemory {
		b *= 2
	}
	return b
}

// add files one entry; expect is about how many the set will have.
func (sb *sumsBuilder) add(e sumEntry, expect int) {
	if sb.err != nil {
		return
	}
	if sb.buckets == nil {
		if len(sb.mem) < sumsInMemory {
			sb.mem = append(sb.mem, e)
			return
		}
		sb.spill(max(expect, 2*len(sb.mem)))
		if sb.err != nil {
			return
		}
	}
	copy(sb.rec[:16], e.key[:])
	copy(sb.rec[16:], e.sum[:])
	b := binary.BigEndian.Uint16(e.key[:2]) >> sb.shift
	if _, err := sb.buckets[b].Write(sb.rec[:]); err != nil {
		sb.err = err
	}
}

// spill opens the bucket files and moves the entries held so far there.
func (sb *sumsBuilder) spill(expect int) {
	nb := sumsBuckets(expect)
	sb.shift = uint(16 - bitsOf(nb))
	for i := range nb {
		f, err := os.Create(fmt.Sprintf("%s/bucket-%03d", sb.dir, i))
		if err != nil {
			sb.err = err
			return
		}
		sb.files = append(sb.files, f)
		sb.buckets = append(sb.buckets, bufio.NewWriterSize(f, 32<<10))
	}
	mem := sb.mem
	sb.mem = nil
	for _, e := range mem {
		sb.add(e, 0)
	}
}

// bitsOf is log2 of a power of two.
func bitsOf(n int) int {
	b := 0
	for n > 1 {
		n >>= 1
		b++
	}
	return b
}

// finish sorts what was added into a Sums: in memory, or bucket by bucket
// into one file (unlinked once open).
func (sb *sumsBuilder) finish() (*Sums, error) {
	if sb.err != nil {
		return nil, sb.err
	}
	if sb.buckets == nil {
		return &Sums{mem: slices.Clip(sortedStable(sb.mem))}, nil
	}
	defer sb.close()
	out, err := os.CreateTemp(sb.dir, "sorted-")
	if err != nil {
		return nil, err
	}
	// Unlinked: the file lives as long as it is open.
	if err := os.Remove(out.Name()); err != nil {
		out.Close()
		return nil, err
	}
	s := &Sums{f: out}
	w := bufio.NewWriterSize(out, 64<<10)
	var es []sumEntry
	for i, bw := range sb.buckets {
		if err := bw.Flush(); err != nil {
			out.Close()
			return nil, err
		}
		if es, err = readEntries(sb.files[i], es[:0]); err != nil {
			out.Close()
			return nil, err
		}
		for _, e := range sortedStable(es) {
			if s.n%sumsBlock == 0 {
				s.first = append(s.first, e.key)
			}
			copy(sb.rec[:16], e.key[:])
			copy(sb.rec[16:], e.sum[:])
			if _, err := w.Write(sb.rec[:]); err != nil {
				out.Close()
				return nil, err
			}
			s.n++
		}
	}
	if err := w.Flush(); err != nil {
		out.Close()
		return nil, err
	}
	s.first = slices.Clip(s.first)
	return s, nil
}

// close removes the bucket files.
func (sb *sumsBuilder) close() {
	for _, f := range sb.files {
		_ = f.Close()
		_ = os.Remove(f.Name())
	}
	sb.files, sb.buckets = nil, nil
}

// readEntries reads a bucket file's entries, appending them to es.
func readEntries(f *os.File, es []sumEntry) ([]sumEntry, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var rec [sumEntrySize]byte
	for {
		if _, err := io.ReadFull(r, rec[:]); err == io.EOF {
			return es, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		es = append(es, sumEntry{[16]byte(rec[:16]), [32]byte(rec[16:])})
	}
}

// sumsKey is what Sums files key under.
func sumsKey(key string) [16]byte {
	h := sha256.Sum256([]byte(key))
	return [16]byte(h[:16])
}
