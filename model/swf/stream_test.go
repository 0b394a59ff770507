package swf

import (
	"bytes"
	"cmp"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// streamInputs are traces to read both whole and streamed: the canonical
// test input, the archive excerpts, one whose jobs are not in submit
// order (ties included, and a tie across the unordered part), one whose
// header follows its jobs, and one of a malformed line.
func streamInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{
		"canonicalInput": canonicalInput,
		"unordered": `; MaxProcs: 16
1 50 0 10 2
2 20 0 11 4 -1 -1 -1 30
3 50 0 12 1
4 10 0 13 -1 -1 -1 8
5 20 0 14 16
6 -1 0 15 1
7 10 0 16 32
8 20 0 0 2
9 5.5 0 17 2
`,
		"headerLast": "1 0 0 10 3\n2 5 0 10 9\n; MaxProcs: 4\n",
		"malformed":  "; MaxProcs: 4\n1 0 0 10 3\n2 5 0 ten 2\n",
	}
	for _, name := range []string{"small.swf", "noheader.swf"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		in[name] = string(b)
	}
	return in
}

// TestEachKeptYieldsReadsJobs: the jobs EachKept gives for k servers are
// those Read keeps, field for field: sorted stably by submit time, each
// less the first one's, they are Read's Jobs, and the first one's submit
// time is Read's Origin. Its errors are Read's, fn's error stops it, and
// k must be given (a header may follow the jobs).
func TestEachKeptYieldsReadsJobs(t *testing.T) {
	for name, in := range streamInputs(t) {
		for _, k := range []int{1, 2, 3, 4, 8, 16, 128, 1 << 20} {
			tr, rerr := Read(strings.NewReader(in), k)
			var got []Job
			err := EachKept(strings.NewReader(in), k, Limits{}, func(j Job) error { got = append(got, j); return nil })
			if rerr != nil || err != nil {
				if err == nil || rerr == nil || err.Error() != rerr.Error() {
					t.Fatalf("%s, k=%d: EachKept %v, Read %v", name, k, err, rerr)
				}
				continue
			}
			slices.SortStableFunc(got, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
			var origin float64
			if len(got) > 0 {
				origin = got[0].Submit
			}
			for i := range got {
				got[i].Submit -= origin
			}
			if len(got) != len(tr.Jobs) || (len(got) > 0 && !reflect.DeepEqual(got, tr.Jobs)) || origin != tr.Origin {
				t.Errorf("%s, k=%d: EachKept gives (sorted, origin %v)\n%+v\nRead (origin %v)\n%+v", name, k, origin, got, tr.Origin, tr.Jobs)
			}
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := EachKept(strings.NewReader(canonicalInput), 8, Limits{}, func(Job) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("fn's error: EachKept returned %v after %d jobs", err, n)
	}
	if err := EachKept(strings.NewReader(canonicalInput), 0, Limits{}, func(Job) error { return nil }); err == nil {
		t.Error("k = 0 accepted")
	}
}

// TestShapeOfCountsAsRead: ShapeOf says for every k what Read says of
// the same input besides its jobs (ErrNoServers included), as the shape
// CanonicalShape gathers does, and fails with Read's error where Read
// fails.
func TestShapeOfCountsAsRead(t *testing.T) {
	for name, in := range streamInputs(t) {
		sh, err := ShapeOf(strings.NewReader(in), Limits{})
		if err != nil {
			if _, rerr := Read(strings.NewReader(in), 0); rerr == nil || rerr.Error() != err.Error() {
				t.Fatalf("%s: ShapeOf %v, Read %v", name, err, rerr)
			}
			continue
		}
		_, csh, err := CanonicalShape(strings.NewReader(in), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []int{0, 1, 2, 3, 4, 8, 9, 16, 128} {
			tr, rerr := Read(strings.NewReader(in), k)
			got, serr := sh.At(k)
			cgot, _ := csh.At(k)
			if rerr != nil || serr != nil {
				if !errors.Is(rerr, ErrNoServers) || !errors.Is(serr, ErrNoServers) {
					t.Fatalf("%s, k=%d: Read %v, ShapeOf's At %v", name, k, rerr, serr)
				}
				continue
			}
			want := Counts{MaxProcs: tr.MaxProcs, MaxNodes: tr.MaxNodes, K: tr.K, Lines: tr.Lines, Kept: len(tr.Jobs), Skipped: tr.Skipped}
			if got != want || cgot != want {
				t.Errorf("%s, k=%d: ShapeOf %+v, CanonicalShape %+v, Read %+v", name, k, got, cgot, want)
			}
		}
	}
}

// TestCanonicalWrittenInChunks: building a canonical form of several MB
// allocates about twice its size (the chunks it is written in and the
// one copy that joins them) and the last chunk, not three or four times
// it: it was a buffer grown by doubling, every size of which was
// allocated, then copied into an exactly sized one. And the form is the
// one the doubling buffer gave (TestCanonicalPinned pins small ones).
func TestCanonicalWrittenInChunks(t *testing.T) {
	const n = 100_000 // 5.2 MB of form
	in := func() *lines { return &lines{head: "; MaxProcs: 64\n", n: n, line: jobLine} }
	var c []byte
	var err error
	got := allocated(func() { c, err = Canonical(in(), Limits{}) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("a canonical form of %d bytes: %d bytes allocated (%.2f times it)", len(c), got, float64(got)/float64(len(c)))
	if limit := 2*uint64(len(c)) + formChunk + 1<<20; got > limit {
		t.Errorf("building a canonical form of %d bytes allocated %d, more than twice it and a chunk (%d)", len(c), got, limit)
	}
	if cap(c) != len(c) {
		t.Errorf("a form of %d bytes in a buffer of %d", len(c), cap(c))
	}
	// Line by line, the form is the header and each job's line.
	var want bytes.Buffer
	want.WriteString("; msjfarm canonical SWF: the fields a replay reads, -1 elsewhere\n; MaxProcs: 64\n")
	err = scan(in(), Limits{}, &Trace{}, func(_ int, p parsed) error { want.Write(appendCanonical(nil, p)); return nil })
	if err != nil || !bytes.Equal(c, want.Bytes()) {
		t.Fatalf("the chunked form differs from its lines (err %v)", err)
	}
}
