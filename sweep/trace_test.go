package sweep_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// traceSweep replays %s; one arrival, since noheader.swf has one job that
// fits on 8 servers (Plan refuses a run longer than the trace).
const traceSweep = `name: tr
seed: 1
trace: {file: %s, time_scale: 0.5}
policies: [fcfs, first-fit]
replications: 2
run: {arrivals: 1}
`

// writeSweep writes a trace sweep naming trace in dir and loads it.
func loadTraceSweep(t *testing.T, dir, trace string) *sweep.File {
	t.Helper()
	p := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(traceSweep, "%s", trace, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTracePinnedByContent: ReadTraceFile pins the trace by sha256 and
// size; tasks name only those; the campaign id and the tasks depend on the
// content, not on the path (the same trace at two paths is one campaign,
// another trace at the same path another).
func TestTracePinnedByContent(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	copyFile(t, "../model/swf/testdata/small.swf", filepath.Join(a, "x.swf"))
	copyFile(t, "../model/swf/testdata/small.swf", filepath.Join(b, "other-name.swf"))
	expand := func(f *sweep.File) *sweep.Campaign {
		t.Helper()
		data, err := sweep.ReadTraceFile(f, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != f.Trace.Size || len(f.Trace.SHA256) != 64 {
			t.Fatalf("pinned %d bytes as %+v", len(data), f.Trace)
		}
		c, err := sweep.Expand(f, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca := expand(loadTraceSweep(t, a, "x.swf"))
	cb := expand(loadTraceSweep(t, b, "other-name.swf"))
	if ca.ID != cb.ID || ca.Tasks[0].ID != cb.Tasks[0].ID {
		t.Fatalf("same trace at two paths: campaigns %s and %s", ca.ID, cb.ID)
	}
	tr := ca.Tasks[0].Trace
	if tr == nil || tr.SHA256 != ca.File.Trace.SHA256 || tr.Size != ca.File.Trace.Size || tr.TimeScale != 0.5 {
		t.Fatalf("task trace %+v", tr)
	}
	for _, tk := range ca.Tasks {
		if data, _ := jsonOf(tk); strings.Contains(data, a) || strings.Contains(data, "x.swf") {
			t.Fatalf("a task names the path: %s", data)
		}
	}
	if s, _ := jsonOf(ca.File); strings.Contains(s, "x.swf") {
		t.Fatalf("the campaign spec names the path: %s", s)
	}
	// Other content at the same path: another campaign.
	copyFile(t, "../model/swf/testdata/noheader.swf", filepath.Join(a, "x.swf"))
	f := loadTraceSweep(t, a, "x.swf")
	f.Servers = 8
	if cc := expand(f); cc.ID == ca.ID {
		t.Fatal("other content, same campaign id")
	}
}

// TestTraceWithoutContentRefused: a sweep whose trace has no uploaded
// content (a path only, as a forged submit request would send) is refused
// by Expand, naming trace.sha256, without opening the path: here a FIFO,
// which would block an open for reading until a writer comes.
func TestTraceWithoutContentRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	f := loadTraceSweep(t, t.TempDir(), fifo)
	done := make(chan error, 1)
	go func() { _, err := sweep.Expand(f, builtin.Catalog{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "trace.sha256: missing") {
			t.Fatalf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Expand blocked: it opened the FIFO")
	}
	f.Trace.SHA256, f.Trace.Size = "../../etc/passwd", 10
	if _, err := sweep.Expand(f, builtin.Catalog{}); err == nil || !strings.Contains(err.Error(), "trace.sha256") {
		t.Fatalf("a sha256 that is a path: %v", err)
	}
}

// TestReadTraceFileRefusesSpecialFiles: /dev/zero, a FIFO and a directory
// are refused at once, naming trace.file, without being read (memory stays
// flat, a FIFO does not block); a file over the limit is refused; a
// sha256 in the sweep must match the file.
func TestReadTraceFileRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	paths := []string{"/dev/zero", dir}
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		paths = append(paths, fifo)
	}
	for _, p := range paths {
		f := loadTraceSweep(t, dir, p)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan error, 1)
		go func() { _, err := sweep.ReadTraceFile(f, 512<<20); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadTraceFile blocked", p)
		}
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "trace.file") || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("%s: err %v", p, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Fatalf("%s: allocated %d bytes", p, grew)
		}
		t.Logf("%s: %v", p, err)
	}
	big := filepath.Join(dir, "big.swf")
	copyFile(t, "../model/swf/testdata/small.swf", big)
	f := loadTraceSweep(t, dir, big)
	if _, err := sweep.ReadTraceFile(f, 100); err == nil || !strings.Contains(err.Error(), "trace.file") || !strings.Contains(err.Error(), "more than the limit of 100") {
		t.Fatalf("over the limit: %v", err)
	}
	f.Trace.SHA256 = strings.Repeat("0", 64)
	if _, err := sweep.ReadTraceFile(f, 1<<20); err == nil || !strings.Contains(err.Error(), "trace.sha256: the sweep says 000") {
		t.Fatalf("mismatching sha256: %v", err)
	}
}

// TestMissingFileSaidPlainly: a trace file, or a sweep file, that does
// not exist is said so, with its path's control characters escaped. It
// was the system's "trace.file: stat <path>: no such file or directory",
// the path raw: a trace named "\e]0;pwn\a.swf" retitled the terminal.
func TestMissingFileSaidPlainly(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, trace, want string }{
		{"plain", "none.swf", "s.yaml:3:15: trace.file: " + filepath.Join(dir, "none.swf") + " does not exist"},
		{"control characters", `"\e]0;pwn\a.swf"`, "s.yaml:3:15: trace.file: " + filepath.Join(dir, `\x1b]0;pwn\x07.swf`) + " does not exist"},
	} {
		f := loadTraceSweep(t, dir, c.trace)
		_, err := sweep.ReadTraceFile(f, 1<<20)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: got %v, want it to end %q (and be fs.ErrNotExist)", c.name, err, c.want)
		}
	}
	missing := filepath.Join(dir, "gone\x1b[2J.yaml")
	if _, err := sweep.Load(missing); err == nil || err.Error() != "sweep file: "+filepath.Join(dir, `gone\x1b[2J.yaml`)+" does not exist" {
		t.Errorf("a missing sweep file: %v", err)
	}
}

// TestSweepFileSizeLimit: a sweep file over its limit is refused before
// it is read, by Load (MaxFileSize) and LoadProfileLimit (submit's
// --max-spec-size). Parse has no size limit: content past 4 MiB, the old
// limit that refused the normalised spec.yaml of a 3.9 MB file (6.4 MB),
// is read.
func TestSweepFileSizeLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	valid := "name: x\nworkload: one-or-all\naxes: {load: [0.5]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 100}\n"
	data := []byte(valid + strings.Repeat("# padding\n", 5<<20/10))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sweep.LoadProfileLimit(p, "", 4<<20); err == nil || !strings.Contains(err.Error(), "sweep file") || !strings.Contains(err.Error(), "more than the limit") {
		t.Fatalf("LoadProfileLimit: %v", err)
	}
	if _, err := sweep.Load(p); err != nil {
		t.Fatalf("Load of %d bytes: %v", len(data), err)
	}
	if _, err := sweep.Parse(data, "yaml"); err != nil {
		t.Fatalf("Parse of %d bytes: %v", len(data), err)
	}
	if _, err := sweep.Load("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Load(/dev/zero): %v", err)
	}
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// TestStoredTraceWithoutHeader: a trace named by sha256 alone whose SWF
// has no MaxProcs header is attached from storage when the sweep gives the
// servers (an axis here), as trace.file is, and Plan tries its policies on
// it per servers value: first-fit is accepted on 8 and 16 servers. The
// first cut of AttachStoredTrace parsed the bytes at the sweep's servers
// (none: an axis) and refused it ("no positive MaxProcs").
func TestStoredTraceWithoutHeader(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "../model/swf/testdata/noheader.swf", filepath.Join(dir, "n.swf"))
	p := filepath.Join(dir, "s.yaml")
	body := strings.Replace(strings.Replace(traceSweep, "%s", filepath.Join(dir, "n.swf"), 1), "replications: 2", "axes: {servers: [8, 16]}\nreplications: 2", 1)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	byFile, err := sweep.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := sweep.ReadTraceFile(byFile, 0)
	if err != nil {
		t.Fatal(err)
	}
	bySHA, err := sweep.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	bySHA.Trace.File, bySHA.Trace.SHA256, bySHA.Trace.Size = "", byFile.Trace.SHA256, byFile.Trace.Size
	fetch := func(sum string, size int64) ([]byte, error) { return data, nil }
	if err := sweep.AttachStoredTrace(bySHA, fetch); err != nil {
		t.Fatalf("AttachStoredTrace: %v", err)
	}
	if _, err := sweep.Plan(bySHA, builtin.Catalog{}); err != nil {
		t.Fatalf("Plan: %v", err)
	}
}

// A replayed trace is the same arrivals in every replication: more than
// one is a warning saying what their ±0 intervals and p = 0 comparisons
// mean (a reader took them for a sampling interval); one is not.
func TestTraceReplicationsWarning(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "../model/swf/testdata/small.swf", filepath.Join(dir, "x.swf"))
	for _, reps := range []int{2, 1} {
		f := loadTraceSweep(t, dir, "x.swf")
		f.Replications = reps
		if _, err := sweep.ReadTraceFile(f, 1<<20); err != nil {
			t.Fatal(err)
		}
		c, err := sweep.Expand(f, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(c.Warnings, func(w string) bool {
			return strings.Contains(w, "a replayed trace has the same arrivals and sizes in every replication") && strings.Contains(w, "not a sampling distribution")
		})
		if warned != (reps > 1) {
			t.Errorf("%d replications: warnings %q", reps, c.Warnings)
		}
	}
}

// TestTraceHeaderPastMaxServers: a trace whose header gives more servers
// than the engine simulates is refused when read, naming servers: with
// "MaxProcs: 1000000000" a worker allocated 4 GB in a policy's set-up and
// died, and 9999999999999 spun there for ever.
func TestTraceHeaderPastMaxServers(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "big.swf")
	if err := os.WriteFile(tr, []byte("; MaxProcs: 1000000000\n1 0 0 10 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n2 5 0 10 64 -1 -1 64 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := loadTraceSweep(t, dir, tr)
	_, err := sweep.ReadTraceFile(f, 0)
	if err == nil || !strings.Contains(err.Error(), "servers: trace.file "+tr+" gives 1000000000 servers in its header, more than the 1048576 msjfarm simulates: give servers") {
		t.Fatalf("err = %v", err)
	}
	// Given servers within the bound, the trace replays on them.
	f.Servers = 64
	if _, err := sweep.ReadTraceFile(f, 0); err != nil {
		t.Fatalf("servers 64: %v", err)
	}
}

// TestTraceCanonicalLimitAtTheLine: a gzipped trace within the file limit
// whose canonical form is far past it is refused at the line that
// crosses the limit, having read little more than the limit: the file was
// read whole, its canonical form built whole and then measured (a
// 10⁷-line trace took 5 GB to be refused by a 512 MiB limit).
func TestTraceCanonicalLimitAtTheLine(t *testing.T) {
	const limit = 1 << 20
	dir := t.TempDir()
	p := filepath.Join(dir, "big.swf.gz")
	fd, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(fd)
	w := bufio.NewWriter(zw)
	w.WriteString("; MaxProcs: 64\n")
	for range 500_000 { // 27 MB of canonical form
		w.WriteString("1 0 1 100 4 1 1 8 200 1 1 1 1 1 1 1 1 1\n")
	}
	if err := errors.Join(w.Flush(), zw.Close(), fd.Close()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() > limit {
		t.Fatalf("the gzipped trace is not within the limit: %v", err)
	}
	f := loadTraceSweep(t, dir, "big.swf.gz")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = sweep.ReadTraceFile(f, limit)
	runtime.ReadMemStats(&after)
	// The job lines' canonical form: job n+1 crosses the limit, on line n+2.
	n := limit / len("1 0 -1 100 4 -1 -1 -1 200 -1 -1 -1 -1 -1 -1 -1 -1 -1\n")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("trace.file: %s is larger than the limit of 1048576 bytes (--max-trace-size) once decompressed and parsed: its canonical form crosses it at line %d; nothing was uploaded", p, n+2)) {
		t.Fatalf("err = %v, want the limit crossed at a line", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("refusing the trace allocated %d MB for a 1 MB limit", alloc>>20)
	}
}

// TestReadTraceFileParsesOnce: reading a trace file allocates what
// building its canonical form does (swf.Canonical) and little more: the
// checks that it has servers and a usable job read the counts gathered
// while the form was written. The form was parsed a second time for
// them, at least 80 bytes a job (5·10⁶ jobs: 400 MB) besides the form.
func TestReadTraceFileParsesOnce(t *testing.T) {
	const n = 100_000
	dir := t.TempDir()
	p := filepath.Join(dir, "t.swf")
	var b strings.Builder
	b.WriteString("; MaxProcs: 64\n")
	for i := range n {
		fmt.Fprintf(&b, "%d %d -1 %d %d -1 -1 -1 %d\n", i+1, i*3, 1+i%97, []int{1, 2, 4, 8, 16, 32, 64, 128}[i%8], 200)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	alloc := func(read func() error) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := read(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	canonical := alloc(func() error {
		fd, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fd.Close()
		_, err = swf.Canonical(fd, swf.Limits{})
		return err
	})
	f := loadTraceSweep(t, dir, "t.swf")
	read := alloc(func() error { _, err := sweep.ReadTraceFile(f, 0); return err })
	if extra := (float64(read) - float64(canonical)) / n; extra > 8 {
		t.Fatalf("ReadTraceFile allocated %.1f bytes a job more than building the canonical form; at most 8 (the trace is parsed once)", extra)
	}
}
