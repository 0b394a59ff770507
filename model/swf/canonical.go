package swf

import (
	"io"
	"math"
	"strconv"
)

// Canonical parses an SWF input (gzipped or not, within lim) and writes
// back only what a replay reads: the MaxProcs and MaxNodes header lines
// and, for every job line, the fields Read uses — job number (1), submit
// time (2), run time (4), processors (5, or 8 when field 5 was unknown),
// requested time (9) — with -1 in the other fields of the 18. Comments,
// unused columns and anything else in the file are dropped.
//
// Reading the result gives exactly the trace the input gives, for every k
// (the same jobs, skip counts, FromRequested and header values): a job
// line that Read skips is kept, so a replay still reports it. It is a
// fixed point (Canonical of its own output is the same bytes) and is plain
// text whatever the input was, so its sha256 depends only on the parsed
// content, never on a gzip library's output.
//
// The submitting client uploads this form instead of the file it read, so
// that what reaches shared storage is, provably, a trace: a file that
// does not parse as SWF (a secrets file named by mistake or by malice) is
// refused before anything is uploaded.
//
// The form is written as the input is read, each job line when it is
// parsed, and lim.MaxCanonical, if set, refuses it at the line that
// takes it past that many bytes (an error wrapping ErrCanonicalTooLarge):
// the form was built whole, and measured by the caller.
func Canonical(r io.Reader, lim Limits) ([]byte, error) {
	out, _, err := CanonicalShape(r, lim)
	return out, err
}

// CanonicalShape is Canonical that also returns the trace's shape: what
// Read of the canonical form reports besides the jobs themselves, for
// any k (Shape.At), gathered from the lines as they are parsed. A caller
// that only needs to know how many jobs a system keeps (msjfarm run and
// submit check that a trace leaves one) learns it without parsing the
// form again: the second parse of a 5·10⁶-job trace held 80 bytes a job
// for nothing.
func CanonicalShape(r io.Reader, lim Limits) ([]byte, *Shape, error) {
	// The form is written into chunks (formChunk bytes at most, each
	// full before the next is made) and copied once, exactly sized, when
	// its size is known. It was a buffer grown by doubling, which held
	// the old buffer and the new one at each step and then was copied
	// into an exact one: up to three times the form at once, where the
	// chunks and the copy are twice it.
	var (
		w           formWriter
		line        []byte // one job's canonical line, written to w
		bound, last = lim.MaxCanonical, 0
	)
	tr := &Trace{}
	sh := newShape()
	err := scan(r, lim, tr, func(n int, p parsed) error {
		last = n
		sh.add(p)
		line = appendCanonical(line[:0], p)
		w.write(line, bound)
		if bound > 0 && w.size > bound {
			return canonicalTooLarge(n, bound)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sh.maxProcs, sh.maxNodes = tr.MaxProcs, tr.MaxNodes
	// The header lines come first but may be read last (a header line
	// may follow the jobs): they are written ahead of the chunks when the
	// form is put together.
	h := []byte("; msjfarm canonical SWF: the fields a replay reads, -1 elsewhere\n")
	if tr.MaxProcs != 0 {
		h = append(strconv.AppendInt(append(h, "; MaxProcs: "...), int64(tr.MaxProcs), 10), '\n')
	}
	if tr.MaxNodes != 0 {
		h = append(strconv.AppendInt(append(h, "; MaxNodes: "...), int64(tr.MaxNodes), 10), '\n')
	}
	if bound > 0 && int64(len(h))+w.size > bound {
		return nil, nil, canonicalTooLarge(last, bound)
	}
	return w.join(h), sh, nil
}

// formChunk is the largest chunk a canonical form is written in.
const formChunk = 4 << 20

// formWriter gathers a canonical form's job lines in chunks: the first
// small (a trace of a few lines, or one refused at a small bound, takes
// little), each next one as large as all before it, up to formChunk.
type formWriter struct {
	chunks [][]byte
	size   int64 // bytes written
}

// write appends b, filling the last chunk before making the next. A
// chunk is never larger than what the bound (if > 0) leaves room for,
// plus a line.
func (w *formWriter) write(b []byte, bound int64) {
	w.size += int64(len(b))
	for len(b) > 0 {
		if len(w.chunks) == 0 || len(w.chunks[len(w.chunks)-1]) == cap(w.chunks[len(w.chunks)-1]) {
			n := int64(min(formChunk, max(64<<10, w.size-int64(len(b)))))
			if bound > 0 {
				n = max(min(n, bound-(w.size-int64(len(b)))+canonicalLine), canonicalLine)
			}
			w.chunks = append(w.chunks, make([]byte, 0, n))
		}
		c := &w.chunks[len(w.chunks)-1]
		k := min(len(b), cap(*c)-len(*c))
		*c = append(*c, b[:k]...)
		b = b[k:]
	}
}

// join is head followed by the chunks, in one exactly sized buffer; the
// chunks are dropped as they are copied.
func (w *formWriter) join(head []byte) []byte {
	out := make([]byte, 0, int64(len(head))+w.size)
	out = append(out, head...)
	for i, c := range w.chunks {
		out = append(out, c...)
		w.chunks[i] = nil
	}
	w.chunks = nil
	return out
}

// Shape is what Read reports of a trace for k servers besides its jobs
// (Shape.At), for every k at once: the job lines by the reason Read
// drops them, but for their width, and the others counted by width.
type Shape struct {
	maxProcs, maxNodes int
	lines              int
	skipped            SkipCounts  // Submit, RunTime and Procs
	widths             map[int]int // the jobs Read keeps on enough servers, by width
}

func newShape() *Shape { return &Shape{widths: map[int]int{}} }

// ShapeOf reads an SWF input (gzipped or not, within lim) for its shape
// alone: what CanonicalShape gathers, without writing the form, and
// nothing of the jobs kept. A caller that holds a trace's canonical bytes
// without their shape (a trace named by sha256, read from storage) learns
// what Read would report of them for any k in one parse that keeps
// nothing of a line.
func ShapeOf(r io.Reader, lim Limits) (*Shape, error) {
	tr := &Trace{}
	sh := newShape()
	if err := scan(r, lim, tr, func(_ int, p parsed) error { sh.add(p); return nil }); err != nil {
		return nil, err
	}
	sh.maxProcs, sh.maxNodes = tr.MaxProcs, tr.MaxNodes
	return sh, nil
}

// add counts job line p as Read sorts it (ReadLimits' skip reasons, in
// their order: the same fields, the same comparisons).
func (s *Shape) add(p parsed) {
	s.lines++
	j := p.job()
	if s.skipped.keeps(&j, math.MaxInt) { // too wide or not: At's k decides
		s.widths[j.Procs]++
	}
}

// Counts is what Read reports of a trace besides its jobs: Kept is
// len(Trace.Jobs), the other fields are the Trace's.
type Counts struct {
	MaxProcs, MaxNodes, K, Lines, Kept int
	Skipped                            SkipCounts
}

// At is what Read of the canonical form reports for a system of k
// servers (k <= 0: the header's MaxProcs, else its MaxNodes, else
// ErrNoServers, as Read), without its jobs.
func (s *Shape) At(k int) (Counts, error) {
	k, err := servers(k, s.maxProcs, s.maxNodes)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{MaxProcs: s.maxProcs, MaxNodes: s.maxNodes, K: k, Lines: s.lines, Skipped: s.skipped}
	for w, n := range s.widths {
		if w <= k {
			c.Kept += n
		} else {
			c.Skipped.TooWide += n
		}
	}
	return c, nil
}

// canonicalLine is room for a canonical job line of five numbers of up
// to 24 bytes and 13 "-1" (a longer one, a time of 1e-300 written out,
// grows the form by appending).
const canonicalLine = 5*24 + 13*3 + 18

// appendCanonical appends p's canonical line to b.
func appendCanonical(b []byte, p parsed) []byte {
	num := func(b []byte, x float64) []byte { return strconv.AppendFloat(b, x, 'f', -1, 64) }
	b = strconv.AppendInt(b, p.number, 10)
	b = num(append(b, ' '), p.submit)
	b = append(b, " -1 "...)
	b = num(b, p.run)
	if p.fromRequested {
		b = append(b, " -1 -1 -1 "...)
		b = num(b, p.procs)
	} else {
		b = num(append(b, ' '), p.procs)
		b = append(b, " -1 -1 -1"...)
	}
	if p.requested > 0 {
		b = num(append(b, ' '), p.requested)
	} else {
		b = append(b, " -1"...)
	}
	return append(b, " -1 -1 -1 -1 -1 -1 -1 -1 -1\n"...)
}
