package swf

import (
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// lines is an input generated as it is read: n lines (n < 0: without end),
// line i (from 1) appended to a buffer by line, after head. Big inputs are
// never held whole, and the lines are made without allocating, so that
// what is measured is the reader's own memory.
type lines struct {
	head  string
	n, i  int
	line  func(b []byte, i int) []byte
	buf   []byte // what is left to read of store
	store []byte
}

func (g *lines) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case g.head != "":
			g.buf, g.head = []byte(g.head), ""
		case g.n >= 0 && g.i >= g.n:
			return 0, io.EOF
		default:
			g.i++
			g.store = g.line(g.store[:0], g.i)
			g.buf = g.store
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	return n, nil
}

// repeat is an input of s repeated without end (one line that never ends,
// when s holds no newline), after head.
type repeat struct {
	head string
	s    byte
}

func (r *repeat) Read(p []byte) (int, error) {
	n := copy(p, r.head)
	r.head = r.head[n:]
	for i := n; i < len(p); i++ {
		p[i] = r.s
	}
	return len(p), nil
}

// allocated is the bytes f allocates (runtime.MemStats.TotalAlloc: every
// allocation counts, whether the collector freed it or not).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// jobLine is the i-th job line of a generated trace: 18 fields, widths 1
// to 64.
func jobLine(b []byte, i int) []byte {
	b = strconv.AppendInt(b, int64(i), 10)
	b = strconv.AppendInt(append(b, ' '), int64(i), 10)
	b = strconv.AppendInt(append(b, " 1 100 "...), int64(1+i%64), 10)
	return append(b, " 1 1 8 200 1 1 1 1 1 1 1 1 1\n"...)
}

// TestCanonicalRefusedAtTheLimit: Canonical with MaxCanonical stops at
// the line whose canonical form crosses the bound, from an input without
// end, having allocated about the bound: the form was built whole first,
// and its size checked by the caller (a 10⁷-line trace took 5 GB to be
// refused by a 512 MiB limit).
func TestCanonicalRefusedAtTheLimit(t *testing.T) {
	const per = len("1 0 -1 100 1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1\n")
	const bound = 1000*per + 5
	var err error
	n := allocated(func() {
		_, err = Canonical(&lines{head: "; MaxProcs: 4\n", n: -1, line: func(b []byte, _ int) []byte { return append(b, "1 0 0 100 1\n"...) }}, Limits{MaxCanonical: int64(bound)})
	})
	pe, ok := errors.AsType[*ParseError](err)
	if !ok || !errors.Is(err, ErrCanonicalTooLarge) || !errors.Is(err, ErrTooLarge) || pe.Line != 1002 ||
		!strings.Contains(err.Error(), "line 1002: the canonical form (the fields a replay reads) is larger than the limit of 52005 bytes") {
		t.Fatalf("err = %v, want the limit crossed at line 1002 (the 1001st job)", err)
	}
	t.Logf("refused at the limit: %d bytes allocated", n)
	if n > 1<<20 {
		t.Errorf("refusing a %d-byte canonical form allocated %d bytes", bound, n)
	}
	// At the bound exactly (header lines included), the form is kept.
	in := "; MaxProcs: 4\n1 0 0 100 1\n"
	c, err := Canonical(strings.NewReader(in), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Canonical(strings.NewReader(in), Limits{MaxCanonical: int64(len(c))}); err != nil || string(d) != string(c) {
		t.Errorf("at the bound: %v", err)
	}
	if _, err := Canonical(strings.NewReader(in), Limits{MaxCanonical: int64(len(c)) - 1}); !errors.Is(err, ErrCanonicalTooLarge) || !strings.Contains(err.Error(), "line 2:") {
		t.Errorf("one byte below the bound, its header lines past it: %v", err)
	}
}

// TestReadHoldsWhatItKeeps: reading a trace allocates about twice the 40
// bytes per job it keeps (the jobs as read, then exactly those kept),
// nothing per line beyond: each line was kept parsed (48 bytes, in a
// slice grown by copying), copied into Jobs (grown by copying too) and
// read as a string of its own, about 250 bytes a line in all.
func TestReadHoldsWhatItKeeps(t *testing.T) {
	const n = 200_000
	var tr *Trace
	var err error
	got := allocated(func() {
		tr, err = Read(&lines{head: "; MaxProcs: 64\n", n: n, line: jobLine}, 0)
	})
	if err != nil || len(tr.Jobs) != n || tr.Lines != n {
		t.Fatalf("read: %v, %d jobs", err, len(tr.Jobs))
	}
	t.Logf("%d job lines: %d bytes allocated, %d a line", n, got, got/n)
	if per := got / n; per > 100 {
		t.Errorf("reading %d job lines allocated %d bytes, %d a line; want at most 100 (2 × 40 for the jobs)", n, got, per)
	}
	// Half of them too wide for 32 servers: exactly the kept ones remain.
	if tr, err = Read(&lines{n: n, line: jobLine}, 32); err != nil || len(tr.Jobs) != n/2 || cap(tr.Jobs) != n/2 || tr.Skipped.TooWide != n/2 {
		t.Fatalf("k = 32: %v, %d jobs (cap %d), %+v", err, len(tr.Jobs), cap(tr.Jobs), tr.Skipped)
	}
}

// TestHostileShapesBounded: inputs that are large in one way only are
// refused at the line where they cross a limit, with the limit named and
// memory bounded by the limit, not by the input: a single line of 1 GB
// with no newline, 10⁷ comment lines (read to their end, 10⁷ strings
// allocated, to be found to hold no job), a header line of 10⁵ words
// (split whole at every such line) and a job line of as many fields.
func TestHostileShapesBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		in   io.Reader
		want string
	}{
		{"a line without end", &repeat{s: '1'}, "swf: line 1: line longer than 1048576 bytes"},
		{"a header line without end", &repeat{head: "; MaxProcs: 4\n; MaxNodes:", s: ' '}, "swf: line 2: line longer than 1048576 bytes"},
		{"10⁷ comment lines", &lines{n: 10_000_000, line: func(b []byte, i int) []byte {
			return append(strconv.AppendInt(append(b, "; comment "...), int64(i), 10), '\n')
		}},
			"swf: line 100001: more than 100000 comment lines (the comment limit; a trace's header has a few dozen)"},
	} {
		var err error
		n := allocated(func() { _, err = Read(c.in, 4) })
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s: err = %v, want %s", c.name, err, c.want)
		}
		t.Logf("%s: %d bytes allocated", c.name, n)
		if n > 4<<20 {
			t.Errorf("%s: refused after allocating %d bytes", c.name, n)
		}
	}
	// 100 header lines and 100 job lines of 10⁵ words each, within the
	// line limit: read, with the header's first word, and no more memory
	// than a short trace.
	words := strings.Repeat(" 64", 100_000)
	in := &lines{n: 200, store: make([]byte, 0, 2*len(words)), line: func(b []byte, i int) []byte {
		if i%2 == 1 {
			return append(append(append(b, "; MaxProcs:"...), words...), '\n')
		}
		b = strconv.AppendInt(b, int64(i), 10)
		b = strconv.AppendInt(append(b, ' '), int64(i), 10)
		return append(append(append(b, " 1 100"...), words...), '\n')
	}}
	var tr *Trace
	var err error
	n := allocated(func() { tr, err = Read(in, 0) })
	if err != nil || tr.MaxProcs != 64 || len(tr.Jobs) != 100 {
		t.Fatalf("wide lines: %v", err)
	}
	t.Logf("wide lines: %d bytes allocated", n)
	if n > 8<<20 {
		t.Errorf("100 header and 100 job lines of 10⁵ words allocated %d bytes", n)
	}
}
