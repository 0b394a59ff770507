package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestReadSmall checks the hand-written fixture against the expectations
// written in its header comment.
func TestReadSmall(t *testing.T) {
	tr, err := ReadFile("testdata/small.swf", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{Number: 3, Submit: 0, Run: 7, Procs: 8},
		{Number: 1, Submit: 10, Run: 30.5, Procs: 2},
		{Number: 2, Submit: 10, Run: 10, Procs: 1}, // tie with job 1: file order kept
		{Number: 4, Submit: 50, Run: 1, Procs: 4},  // field 5 = -1: field 8 used
		{Number: 9, Submit: 90, Run: 2.25, Procs: 3},
		{Number: 10, Submit: 100, Run: 4, Procs: 1},
		{Number: 11, Submit: 100, Run: 6, Procs: 4},
	}
	if !reflect.DeepEqual(tr.Jobs, want) {
		t.Errorf("jobs\n got %+v\nwant %+v", tr.Jobs, want)
	}
	wantSkip := SkipCounts{Submit: 1, RunTime: 2, Procs: 1, TooWide: 1}
	if tr.Skipped != wantSkip {
		t.Errorf("skipped %+v, want %+v", tr.Skipped, wantSkip)
	}
	if tr.Skipped.Total() != 5 || tr.Lines != 12 {
		t.Errorf("total skipped %d, lines %d; want 5, 12", tr.Skipped.Total(), tr.Lines)
	}
	if tr.MaxProcs != 8 || tr.MaxNodes != 4 || tr.K != 8 {
		t.Errorf("MaxProcs %d MaxNodes %d K %d; want 8 4 8", tr.MaxProcs, tr.MaxNodes, tr.K)
	}
	if tr.Origin != 100 || tr.FromRequested != 1 {
		t.Errorf("origin %v fromRequested %d; want 100, 1", tr.Origin, tr.FromRequested)
	}
}

// TestReadExplicitK: an explicit k overrides the header and drops more jobs.
func TestReadExplicitK(t *testing.T) {
	tr, err := ReadFile("testdata/small.swf", 4)
	if err != nil {
		t.Fatal(err)
	}
	// Job 3 (8 procs) and job 12 (16) are too wide for 4 servers, so the
	// first kept job is job 1 at 110.
	if tr.K != 4 || tr.Skipped.TooWide != 2 || len(tr.Jobs) != 6 || tr.Origin != 110 {
		t.Fatalf("K %d tooWide %d jobs %d origin %v; want 4 2 6 110", tr.K, tr.Skipped.TooWide, len(tr.Jobs), tr.Origin)
	}
	if tr.Jobs[0].Number != 1 || tr.Jobs[0].Submit != 0 {
		t.Errorf("first job %+v", tr.Jobs[0])
	}
}

func TestReadNoHeader(t *testing.T) {
	_, err := ReadFile("testdata/noheader.swf", 0)
	if !errors.Is(err, ErrNoServers) {
		t.Fatalf("err = %v, want ErrNoServers", err)
	}
	tr, err := ReadFile("testdata/noheader.swf", 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 1 || tr.Skipped.TooWide != 1 {
		t.Fatalf("jobs %d tooWide %d", len(tr.Jobs), tr.Skipped.TooWide)
	}
}

// TestMaxNodesFallback: with k <= 0 and only MaxNodes in the header (as in
// many archive traces), MaxNodes is the number of servers.
func TestMaxNodesFallback(t *testing.T) {
	in := "; MaxNodes: 2\n1 0 -1 5 2\n2 1 -1 5 3\n"
	tr, err := Read(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if tr.K != 2 || len(tr.Jobs) != 1 || tr.Skipped.TooWide != 1 {
		t.Fatalf("K %d jobs %d skipped %+v", tr.K, len(tr.Jobs), tr.Skipped)
	}
}

// TestHeaderAfterJobs: the header may come after job lines; the width filter
// still uses it.
func TestHeaderAfterJobs(t *testing.T) {
	in := "1 0 -1 5 2\n2 1 -1 5 3\n;MaxProcs:2\n"
	tr, err := Read(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if tr.K != 2 || len(tr.Jobs) != 1 || tr.Skipped.TooWide != 1 {
		t.Fatalf("K %d jobs %d skipped %+v", tr.K, len(tr.Jobs), tr.Skipped)
	}
}

// TestAllSkipped: an empty result is not an error.
func TestAllSkipped(t *testing.T) {
	tr, err := Read(strings.NewReader("; nothing usable\n1 0 -1 0 1\n"), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 0 || tr.Skipped.RunTime != 1 || tr.Origin != 0 {
		t.Fatalf("%+v", tr)
	}
}

// TestFallbackShortLine: field 5 unknown and no field 8 on the line means the
// width is unknown: skipped, not an error.
func TestFallbackShortLine(t *testing.T) {
	tr, err := Read(strings.NewReader("1 0 -1 5 -1 -1\n"), 4)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped.Procs != 1 || tr.FromRequested != 0 {
		t.Fatalf("%+v", tr)
	}
}

func TestMalformed(t *testing.T) {
	long := strings.Repeat("9", maxLine+10)
	cases := []struct {
		name, in string
		k        int
		want     string // exact error text
		line     int
		field    int
	}{
		{"few fields", "; c\n1 0 0 10\n", 4,
			`swf: line 2: 4 fields, need at least 5 (of 18)`, 2, 0},
		{"one field", "\n\n7\n", 4,
			`swf: line 3: 1 fields, need at least 5 (of 18)`, 3, 0},
		{"run time", "1 0 0 10 1\n1 0 0 abc 1\n", 4,
			`swf: line 2: field 4 (run time): "abc" is not a number`, 2, 4},
		{"submit", "1 x 0 10 1\n", 4,
			`swf: line 1: field 2 (submit time): "x" is not a number`, 1, 2},
		{"job number", "1a 0 0 10 1\n", 4,
			`swf: line 1: field 1 (job number): "1a" is not a number`, 1, 1},
		{"job number fraction", "1.5 0 0 10 1\n", 4,
			`swf: line 1: field 1 (job number): "1.5" is not an integer`, 1, 1},
		{"job number huge", "1e30 0 0 10 1\n", 4,
			`swf: line 1: field 1 (job number): "1e30" is out of range`, 1, 1},
		{"procs", "1 0 0 10 two\n", 4,
			`swf: line 1: field 5 (allocated processors): "two" is not a number`, 1, 5},
		{"procs fraction", "1 0 0 10 1.5\n", 4,
			`swf: line 1: field 5 (allocated processors): "1.5" is not an integer`, 1, 5},
		{"requested", "1 0 0 10 -1 -1 -1 ?\n", 4,
			`swf: line 1: field 8 (requested processors): "?" is not a number`, 1, 8},
		{"nan", "1 0 0 NaN 1\n", 4,
			`swf: line 1: field 4 (run time): "NaN" is not a finite number`, 1, 4},
		{"inf", "1 +Inf 0 1 1\n", 4,
			`swf: line 1: field 2 (submit time): "+Inf" is not a finite number`, 1, 2},
		{"overflow", "1 0 0 1e999 1\n", 4,
			`swf: line 1: field 4 (run time): "1e999" is out of range`, 1, 4},
		// A run time the engine would carry into an offered load of
		// 6·10^283, blamed on the plugin (MaxTime).
		{"run time past MaxTime", "1 0 0 1e300 1\n", 4,
			`swf: line 1: field 4 (run time): "1e300" is more than 10^12 seconds (31,700 years) in magnitude`, 1, 4},
		{"submit time past MaxTime", "1 -2e12 0 1 1\n", 4,
			`swf: line 1: field 2 (submit time): "-2e12" is more than 10^12 seconds (31,700 years) in magnitude`, 1, 2},
		{"header", "; MaxProcs: many\n", 0,
			`swf: line 1: header MaxProcs "many" is not an integer`, 1, 0},
		{"header empty", ";MaxNodes:\n", 0,
			`swf: line 1: header MaxNodes has no value`, 1, 0},
		{"too long", "1 0 0 1 1\n" + long + "\n", 4,
			`swf: line 2: line longer than 1048576 bytes`, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(c.in), c.k)
			if err == nil {
				t.Fatalf("no error; trace %+v", tr)
			}
			if tr != nil {
				t.Error("non-nil trace with error")
			}
			if err.Error() != c.want {
				t.Errorf("error\n got %s\nwant %s", err, c.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%T is not a *ParseError", err)
			}
			if pe.Line != c.line || pe.Field != c.field {
				t.Errorf("line %d field %d; want %d %d", pe.Line, pe.Field, c.line, c.field)
			}
		})
	}
}

// TestLongValueShortened: the offending text in an error is bounded.
func TestLongValueShortened(t *testing.T) {
	_, err := Read(strings.NewReader("1 0 0 "+strings.Repeat("x", 500)+" 1\n"), 4)
	if err == nil || len(err.Error()) > 120 {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFileGzipAndMissing(t *testing.T) {
	raw, err := os.ReadFile("testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	p := filepath.Join(t.TempDir(), "small.swf.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gz, err := ReadFile(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := ReadFile("testdata/small.swf", 0)
	if !reflect.DeepEqual(gz, plain) {
		t.Error("gzipped trace differs from plain")
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "absent.swf"), 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	// A malformed line inside a file: the error names the file and the line.
	bad := filepath.Join(t.TempDir(), "bad.swf")
	os.WriteFile(bad, []byte("1 0 0 abc 1\n"), 0o644)
	if _, err := ReadFile(bad, 4); err == nil || !strings.Contains(err.Error(), "bad.swf: swf: line 1: field 4") {
		t.Errorf("err = %v", err)
	}
}

// TestLublin reads the 10,000-job synthetic Lublin trace (lublin_256.swf,
// not copied into the repository) named by MSJFARM_LUBLIN_SWF. Its header says MaxJobs 10000 and
// MaxNodes 256 (no MaxProcs); every line is a complete job with positive run
// time and 1..256 allocated processors, sorted by submit time, the first at
// 5094 s. With k = 128, the 273 jobs wider than 128 are dropped.
func TestLublin(t *testing.T) {
	path := os.Getenv("MSJFARM_LUBLIN_SWF")
	if path == "" {
		t.Skip("set MSJFARM_LUBLIN_SWF to the path of lublin_256.swf")
	}
	tr, err := ReadFile(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tr.K != 256 || tr.MaxNodes != 256 || tr.MaxProcs != 0 {
		t.Errorf("K %d MaxNodes %d MaxProcs %d", tr.K, tr.MaxNodes, tr.MaxProcs)
	}
	if tr.Lines != 10000 || len(tr.Jobs) != 10000 || tr.Skipped.Total() != 0 || tr.FromRequested != 0 {
		t.Errorf("lines %d jobs %d skipped %+v fromRequested %d", tr.Lines, len(tr.Jobs), tr.Skipped, tr.FromRequested)
	}
	if tr.Origin != 5094 || tr.Jobs[0].Number != 1 || tr.Jobs[0].Submit != 0 {
		t.Errorf("origin %v first %+v", tr.Origin, tr.Jobs[0])
	}
	var sumRun float64
	for i, j := range tr.Jobs {
		if j.Run <= 0 || j.Procs < 1 || j.Procs > 256 || (i > 0 && j.Submit < tr.Jobs[i-1].Submit) {
			t.Fatalf("job %d implausible: %+v", i, j)
		}
		sumRun += j.Run
	}
	// Mean run time of the file is about 4862.8 s; trace spans about 89 days.
	if m := sumRun / 10000; m < 4800 || m > 4900 {
		t.Errorf("mean run time %v", m)
	}
	if span := tr.Jobs[len(tr.Jobs)-1].Submit; span < 7.7e6 || span > 7.71e6 {
		t.Errorf("span %v", span)
	}

	tr128, err := ReadFile(path, 128)
	if err != nil {
		t.Fatal(err)
	}
	if tr128.Skipped.TooWide != 273 || len(tr128.Jobs) != 10000-273 {
		t.Errorf("k=128: tooWide %d jobs %d, want 273 %d", tr128.Skipped.TooWide, len(tr128.Jobs), 10000-273)
	}
}

// FuzzRead: arbitrary input never panics, and a successful read satisfies
// the documented invariants.
func FuzzRead(f *testing.F) {
	if b, err := os.ReadFile("testdata/small.swf"); err == nil {
		f.Add(b, 0)
	}
	f.Add([]byte("1 0 0 10 -1 -1 -1 4\n"), 4)
	f.Add([]byte("; MaxProcs: 3\n1 0 0 1e308 3\n2 -1e308 0 1 1\n"), 0)
	f.Add([]byte("1 0x1p3 0 10 1\n\x00\xff"), 2)
	f.Fuzz(func(t *testing.T, data []byte, k int) {
		tr, err := Read(bytes.NewReader(data), k)
		if err != nil {
			if tr != nil {
				t.Fatal("trace with error")
			}
			return
		}
		if tr.K <= 0 || (k > 0 && tr.K != k) {
			t.Fatalf("K = %d for k = %d", tr.K, k)
		}
		if len(tr.Jobs)+tr.Skipped.Total() != tr.Lines {
			t.Fatalf("jobs %d + skipped %d != lines %d", len(tr.Jobs), tr.Skipped.Total(), tr.Lines)
		}
		for i, j := range tr.Jobs {
			if j.Run <= 0 || j.Procs < 1 || j.Procs > tr.K || j.Submit < 0 || (i > 0 && j.Submit < tr.Jobs[i-1].Submit) {
				t.Fatalf("job %d: %+v (K %d)", i, j, tr.K)
			}
		}
		if len(tr.Jobs) > 0 && tr.Jobs[0].Submit != 0 {
			t.Fatalf("first submit %v", tr.Jobs[0].Submit)
		}
	})
}

// TestRequestedTime: field 9 (requested time) is kept when positive and
// numeric, and otherwise read as unknown (0) without rejecting the line:
// the simulator does not need it to replay the job.
func TestRequestedTime(t *testing.T) {
	in := "; MaxProcs: 4\n" +
		"1 0 0 10 1 -1 -1 1 60 -1\n" + // requested 60 s
		"2 1 0 10 1 -1 -1 1 -1 -1\n" + // unknown
		"3 2 0 10 1 -1 -1 1 x -1\n" + // damaged: unknown
		"4 3 0 10 1 -1 -1 1\n" + // absent (8 fields)
		"5 4 0 10 1 -1 -1 1 0\n" // zero: unknown
	tr, err := Read(strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, j := range tr.Jobs {
		got = append(got, j.Requested)
	}
	if want := []float64{60, 0, 0, 0, 0}; !reflect.DeepEqual(got, want) {
		t.Errorf("requested = %v, want %v", got, want)
	}
}

// TestLimits: each limit fails with an error that names it, never a
// partial trace; an input exactly at a limit passes.
func TestLimits(t *testing.T) {
	in := "; MaxProcs: 4\n1 0 0 5 1\n2 1 0 5 1\n3 2 0 5 1\n"
	if _, err := ReadLimits(strings.NewReader(in), 0, Limits{MaxJobs: 3}); err != nil {
		t.Fatalf("3 jobs with MaxJobs 3: %v", err)
	}
	tr, err := ReadLimits(strings.NewReader(in), 0, Limits{MaxJobs: 2})
	var pe *ParseError
	if tr != nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "more than 2 job lines") || pe.Line != 4 {
		t.Fatalf("MaxJobs 2: %v, %v", tr, err)
	}
	if _, err := ReadLimits(strings.NewReader(in), 0, Limits{MaxBytes: int64(len(in))}); err != nil {
		t.Fatalf("MaxBytes = input size: %v", err)
	}
	tr, err = ReadLimits(strings.NewReader(in), 0, Limits{MaxBytes: int64(len(in)) - 1})
	if tr != nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "larger than the limit") {
		t.Fatalf("MaxBytes below the input: %v, %v", tr, err)
	}
	tr, err = ReadLimits(strings.NewReader("; MaxProcs: 4\n1 0 0 5 1 "+strings.Repeat("x", 100)+"\n"), 0, Limits{MaxLine: 64})
	if tr != nil || !errors.As(err, &pe) || !strings.Contains(err.Error(), "line longer than 64 bytes") || pe.Line != 2 {
		t.Fatalf("MaxLine: %v, %v", tr, err)
	}
}

// TestGzipBombBounded: a gzip member that inflates beyond MaxBytes fails
// with the limit's error after reading about MaxBytes, whatever it would
// inflate to (here 64 MiB of blank lines, compressed to 64 kB).
func TestGzipBombBounded(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	chunk := bytes.Repeat([]byte{'\n'}, 1<<20)
	for range 64 {
		zw.Write(chunk)
	}
	zw.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tr, err := ReadLimits(bytes.NewReader(buf.Bytes()), 4, Limits{MaxBytes: 8 << 20})
	runtime.ReadMemStats(&after)
	if tr != nil || err == nil || !strings.Contains(err.Error(), "larger than the limit of 8388608 bytes") {
		t.Fatalf("gzip bomb: %v, %v", tr, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("allocated %d bytes for an 8 MiB limit", grew)
	}
}

// TestByteOrderMark: a UTF-8 byte order mark before the header (an editor
// on Windows writes one) is not part of the first line, so the trace
// reads, and is stored, as the same trace without it.
func TestByteOrderMark(t *testing.T) {
	plain, err := os.ReadFile("testdata/small.swf")
	if err != nil {
		t.Fatal(err)
	}
	marked := append([]byte("\xef\xbb\xbf"), plain...)
	want, err := Read(bytes.NewReader(plain), 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(bytes.NewReader(marked), 0)
	if err != nil {
		t.Fatalf("with a byte order mark: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with a byte order mark\n got %+v\nwant %+v", got, want)
	}
	a, err := Canonical(bytes.NewReader(plain), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Canonical(bytes.NewReader(marked), Limits{})
	if err != nil || !bytes.Equal(a, b) {
		t.Errorf("canonical form with a byte order mark differs (%v)", err)
	}
}
