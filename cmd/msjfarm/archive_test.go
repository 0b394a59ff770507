package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mswf "github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/results/bundle"
	"github.com/msjfarm/msjfarm/storage"
)

// smallFig3 is examples/q-fig3.yaml (the README sweep: the same workload,
// policies and rates) with one replication of 2·10^3 arrivals, so that
// the journey below runs in seconds: 7 rates × 5 policies = 35 tasks.
const smallFig3 = `name: q-fig3-small
seed: 1
workload: one-or-all
axes:
  arrival_rate: [1, 2, 4, 6, 7, 7.5, 7.7]
policies:
  - fcfs
  - first-fit
  - msf
  - nmsr
  - {name: msfq, threshold: 31}
replications: 1
run: {arrivals: 2e3, warmup: 2e2, deadline: 1h}
`

// freshHome gives the process a new $HOME (and cache directory), as on
// another machine.
func freshHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
}

// TestArchiveJourney is the "done when" on a small README sweep:
// run, export (with the sweep as submitted), copy the file to another
// directory with a fresh $HOME and no store, verify, reproduce --all
// (bit-identical), report (the summary as the farm wrote it), import
// into a fresh store and run the sweep again there (nothing re-run, no
// result rewritten); then a signed export checked with the right and a
// wrong key, and a damaged archive refused naming its member.
//
// Complexity 36: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestArchiveJourney(t *testing.T) {
	dir, sw, data := runSmallFig3(t)
	file := filepath.Join(dir, "fig3.msjar")
	code, out := capture(t, func() int {
		return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data, "--sweep", sw, "-o", file})
	})
	if code != 0 || !strings.Contains(out, "merkle-root ") {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	root := strings.TrimSpace(out[strings.Index(out, "merkle-root ")+len("merkle-root "):])
	// -o inside the store: the archive listed its own temporary file as
	// a member of the campaign, and every later export the archive.
	inStore := filepath.Join(data, "campaigns", "x.msjar")
	if code, _, stderr := captured(t, func() int {
		return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data, "-o", inStore})
	}); code != 2 || !strings.Contains(stderr, "is inside the store") {
		t.Fatalf("export into the store: exit %d\n%s", code, stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "campaigns", "*msjar*")); len(left) != 0 {
		t.Fatalf("export into the store wrote %v", left)
	}

	// Another machine: only the file.
	other := t.TempDir()
	moved := filepath.Join(other, "fig3.msjar")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, b, 0o644); err != nil {
		t.Fatal(err)
	}
	freshHome(t)
	code, out = capture(t, func() int { return runCmd("archive", []string{"verify", moved}) })
	// 35 tasks: a campaign entry and a stored result each.
	if code != 0 || !strings.Contains(out, ": OK: format msjar version 1") || !strings.Contains(out, root) || !strings.Contains(out, "signature: none") ||
		!strings.Contains(out, "results: 70 result objects match the campaign's checksums") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	code, out = capture(t, func() int { return runReproduce([]string{moved, "--all", "--workers", "2"}) })
	if code != 0 || !strings.Contains(out, "35 tasks: 35 bit-identical, 0 different, 0 errors") {
		t.Fatalf("reproduce: exit %d\n%s", code, out)
	}
	rep := filepath.Join(other, "report")
	code, out = capture(t, func() int { return runReport([]string{moved, "--out", rep}) })
	if code != 0 || strings.TrimSpace(out) != filepath.Join(rep, "index.html") {
		t.Fatalf("report: exit %d\n%s", code, out)
	}
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*"))
	want, _ := os.ReadFile(filepath.Join(camps[0], "summary.csv"))
	if got, err := os.ReadFile(filepath.Join(rep, "summary.csv")); err != nil || !bytes.Equal(got, want) || len(want) == 0 {
		t.Fatalf("the report's summary.csv differs from the farm's (%v)", err)
	}
	// The report is rendered into a temporary directory beside --out
	// and moved in: none is left behind.
	if left, _ := filepath.Glob(filepath.Join(other, ".report.tmp-*")); len(left) != 0 {
		t.Errorf("temporary report directories left: %v", left)
	}
	if code, _ := capture(t, func() int { return runReport([]string{moved, "--store"}) }); code != 2 {
		t.Fatalf("report --store of an archive: exit %d, want 2", code)
	}
	// A directory where the report writes a file: refused before a file
	// is moved in. The move stopped at its name, --out holding the files
	// before it (48 of a probe's report) and not the rest.
	rep2 := filepath.Join(other, "report2")
	if err := os.MkdirAll(filepath.Join(rep2, "summary.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := captured(t, func() int { return runReport([]string{moved, "--out", rep2}) }); code != 1 ||
		!strings.Contains(stderr, "summary.csv is a directory, where the report writes a file: nothing was written to "+rep2) {
		t.Fatalf("report over a directory in the way: exit %d\n%s", code, stderr)
	}
	if left, _ := os.ReadDir(rep2); len(left) != 1 {
		t.Errorf("a refused report left %d entries in --out, want only the directory in the way", len(left))
	}

	// A refused archive makes no store: the store directory was made
	// before the archive was read.
	store2 := filepath.Join(other, "data")
	empty := filepath.Join(other, "empty.msjar")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := capture(t, func() int { return runCmd("archive", []string{"import", empty, "--storage", store2}) }); code != 1 {
		t.Fatalf("import of an empty file: exit %d", code)
	}
	if _, err := os.Stat(store2); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused import left %s (%v)", store2, err)
	}

	// Import into a fresh store, then run the sweep there: all reused.
	if code, out := capture(t, func() int { return runCmd("archive", []string{"import", moved, "--storage", store2}) }); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	ctx := context.Background()
	st2, err := storage.Open(ctx, store2)
	if err != nil {
		t.Fatal(err)
	}
	// The summary and the report are rebuilt from the records, not taken
	// from the archive (bundle.TestImport: it is left out), and are the
	// farm's.
	id := filepath.Base(camps[0])
	if got, err := os.ReadFile(filepath.Join(store2, "campaigns", id, "summary.csv")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the imported summary.csv differs from the farm's (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(store2, "campaigns", id, "report", "index.html")); err != nil {
		t.Fatalf("no report after import: %v", err)
	}
	before := snapshot(t, st2, storage.StoredResultsPrefix)
	if len(before) != 35 {
		t.Fatalf("%d stored results after import, want 35", len(before))
	}
	if code, out := capture(t, func() int { return runRun([]string{"--workers", "2", "-q", "--storage", store2, sw}) }); code != 0 {
		t.Fatalf("run after import: exit %d\n%s", code, out)
	}
	after := snapshot(t, st2, storage.StoredResultsPrefix)
	if len(after) != len(before) {
		t.Fatalf("the run after import stored %d results, had %d: it re-ran tasks", len(after), len(before))
	}
	for k, v := range before {
		if !bytes.Equal(after[k], v) {
			t.Fatalf("the run after import rewrote %s", k)
		}
	}

	// Signed: checked with the signer's key, refused with another.
	key := filepath.Join(dir, "k.pem")
	if code, out := capture(t, func() int { return runCmd("archive", []string{"keygen", "-o", key}) }); code != 0 {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}
	other2 := filepath.Join(dir, "k2.pem")
	if code, _ := capture(t, func() int { return runCmd("archive", []string{"keygen", "-o", other2}) }); code != 0 {
		t.Fatal("keygen")
	}
	signed := filepath.Join(dir, "signed.msjar")
	if code, out := capture(t, func() int {
		return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data, "--key", key, "-o", signed, "--compression", "gzip"})
	}); code != 0 {
		t.Fatalf("signed export: exit %d\n%s", code, out)
	}
	code, out = capture(t, func() int { return runCmd("archive", []string{"verify", signed, "--key", key + ".pub"}) })
	if code != 0 || !strings.Contains(out, "signature: ed25519, verified with the given key") {
		t.Fatalf("verify --key: exit %d\n%s", code, out)
	}
	if code, _ := capture(t, func() int { return runCmd("archive", []string{"verify", signed, "--key", other2 + ".pub"}) }); code != 1 {
		t.Fatalf("verify with another key: exit %d, want 1", code)
	}
	if code, _ := capture(t, func() int { return runCmd("archive", []string{"verify", signed, "--key", key}) }); code != 2 {
		t.Fatalf("verify with a private key as --key: exit %d, want 2", code)
	}

	// A damaged file is refused before anything runs.
	bad := filepath.Join(dir, "bad.msjar")
	if err := os.WriteFile(bad, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _ := capture(t, func() int { return runReproduce([]string{bad, "--all"}) }); code != 1 {
		t.Fatalf("reproduce of a truncated archive: exit %d, want 1", code)
	}
	if code, _ := capture(t, func() int { return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data}) }); code != 2 {
		t.Fatalf("export without -o: exit %d, want 2", code)
	}
}

// runSmallFig3 runs smallFig3 into a new store in a fresh home, and
// returns the test's directory, the sweep file and the store.
func runSmallFig3(t *testing.T) (dir, sw, data string) {
	t.Helper()
	dir = t.TempDir()
	freshHome(t)
	sw = filepath.Join(dir, "q-fig3-small.yaml")
	if err := os.WriteFile(sw, []byte(smallFig3), 0o644); err != nil {
		t.Fatal(err)
	}
	data = filepath.Join(dir, "data")
	if code, out := capture(t, func() int { return runRun([]string{"--workers", "2", "-q", "--storage", data, sw}) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	return dir, sw, data
}

// snapshot is every object under prefix with its bytes.
func snapshot(t *testing.T, st storage.Store, prefix string) map[string][]byte {
	t.Helper()
	keys, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, k := range keys {
		if out[k], err = st.Get(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestArchiveTrace: a campaign replaying an SWF trace carries the trace
// (traces/<sha256>) in its archive, and reproduces from the archive alone
// once the trace file and the store are gone.
func TestArchiveTrace(t *testing.T) {
	dir := t.TempDir()
	freshHome(t)
	// 300 jobs, 1–4 of 8 processors, a job every 3 s.
	var swf strings.Builder
	swf.WriteString("; MaxProcs: 8\n")
	for i := 1; i <= 300; i++ {
		p := 1 + i%4
		fmt.Fprintf(&swf, "%d %d 0 %d %d -1 -1 %d -1 -1 1 -1 -1 -1 0 -1 -1 -1\n", i, 3*i, 5*(1+i%7), p, p)
	}
	tracePath := filepath.Join(dir, "t.swf")
	if err := os.WriteFile(tracePath, []byte(swf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "trace.yaml")
	if err := os.WriteFile(sw, []byte("name: archived-trace\nseed: 4\ntrace: {file: t.swf}\npolicies: [fcfs, first-fit]\nreplications: 2\nrun: {arrivals: 200, warmup: 20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, out := capture(t, func() int { return runRun([]string{"-q", "--storage", data, sw}) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "trace.msjar")
	if code, out := capture(t, func() int {
		return runCmd("archive", []string{"export", "archived-trace", "--storage", data, "--sweep", sw, "-o", file})
	}); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	// The store holds the trace's canonical form (what submit uploads), by
	// its sha256.
	canon, err := mswf.Canonical(strings.NewReader(swf.String()), mswf.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	x, err := bundle.Verify(file, nil, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range x.Index.Members {
		found = found || e.Path == bundle.StorePrefix+storage.TraceKey(hex.EncodeToString(sum[:]))
	}
	if !found {
		t.Fatalf("no trace member in %v", x.Index.Members)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	freshHome(t)
	// Reproduce reads the trace within its --max-trace-size, as a worker.
	code, out := capture(t, func() int { return runReproduce([]string{file, "--all", "--max-trace-size", "100"}) })
	if code == 0 || !strings.Contains(out, "more than this worker's limit of 100 (--max-trace-size)") {
		t.Fatalf("reproduce --max-trace-size 100: exit %d\n%s", code, out)
	}
	if code, _, errs := msjfarm(t, nil, "reproduce", file, "--max-trace-size", "lots"); code != 2 || !strings.Contains(errs, "reproduce: --max-trace-size: \"lots\" is not a size") {
		t.Fatalf("reproduce --max-trace-size lots: exit %d, want 2 naming the flag\n%s", code, errs)
	}
	freshHome(t)
	code, out = capture(t, func() int { return runReproduce([]string{file, "--all"}) })
	if code != 0 || !strings.Contains(out, "4 tasks: 4 bit-identical, 0 different, 0 errors") {
		t.Fatalf("reproduce: exit %d\n%s", code, out)
	}
}

// TestArchiveExportReproducible: with SOURCE_DATE_EPOCH set, two exports
// of a campaign are byte-identical (same Merkle root), so a reader can
// export it again from the store and compare; the export time the
// archive records is that epoch. -o naming an existing file that is not
// an archive is refused and the file kept; an existing archive is
// replaced; a malformed SOURCE_DATE_EPOCH is a usage error.
func TestArchiveExportReproducible(t *testing.T) {
	dir := t.TempDir()
	freshHome(t)
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code, out := capture(t, func() int { return runRun([]string{"-q", "--runner", "inprocess", "--storage", data, sw}) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	export := func(out string) (int, string) {
		return capture(t, func() int { return runCmd("archive", []string{"export", "run-cmd", "--storage", data, "-o", out}) })
	}
	a, b := filepath.Join(dir, "a.msjar"), filepath.Join(dir, "b.msjar")
	for _, f := range []string{a, b, a} { // a twice: an archive is replaced
		if code, out := export(f); code != 0 {
			t.Fatalf("export %s: exit %d\n%s", f, code, out)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ab) == 0 || !bytes.Equal(ab, bb) {
		t.Fatalf("two exports with SOURCE_DATE_EPOCH differ (%d and %d bytes)", len(ab), len(bb))
	}
	x, err := bundle.Extract(t.Context(), a, nil, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	prov, err := os.ReadFile(filepath.Join(x.Dir, "provenance.json"))
	if err != nil || !strings.Contains(string(prov), `"exported": "2023-11-14T22:13:20Z"`) {
		t.Errorf("provenance.json does not record the epoch as the export time (%v):\n%.400s", err, prov)
	}

	// Export replaces an archive, never another file: a text file, nor a
	// compressed one that is not an archive (a gzipped CSV was replaced,
	// its magic number being an archive's).
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("a,b\n1,2\n"))
	zw.Close()
	for name, content := range map[string][]byte{"notes.txt": []byte("keep me\n"), "data.csv.gz": gz.Bytes()} {
		keep := filepath.Join(dir, name)
		if err := os.WriteFile(keep, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := captured(t, func() int { return runCmd("archive", []string{"export", "run-cmd", "--storage", data, "-o", keep}) }); code != 2 || !strings.Contains(errs, name+" exists and is not a msjfarm archive") {
			t.Fatalf("export over %s: exit %d\n%s", name, code, errs)
		}
		if got, _ := os.ReadFile(keep); !bytes.Equal(got, content) {
			t.Fatalf("%s was changed: %q", name, got)
		}
	}
	if code, _, errs := captured(t, func() int { return runCmd("archive", []string{"export", "run-cmd", "--storage", data, "-o", "-"}) }); code != 2 || !strings.Contains(errs, "not standard output") {
		t.Fatalf("export -o -: exit %d\n%s", code, errs)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	if code, _, errs := captured(t, func() int {
		return runCmd("archive", []string{"export", "run-cmd", "--storage", data, "-o", filepath.Join(dir, "c.msjar")})
	}); code != 2 || !strings.Contains(errs, `SOURCE_DATE_EPOCH="yesterday"`) {
		t.Fatalf("malformed SOURCE_DATE_EPOCH: exit %d\n%s", code, errs)
	}
}

// A campaign name resolves to the campaign of that name created last: an
// archive whose manifest says it was created in the future takes the name
// over from the store's own campaign, and import says so.
func TestArchiveImportFutureCreated(t *testing.T) {
	dir, _, data := runSmallFig3(t)
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*"))
	man := filepath.Join(camps[0], "manifest.json")
	b, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["created"] = "2099-01-01T00:00:00Z"
	b, _ = json.Marshal(m)
	if err := os.WriteFile(man, b, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "future.msjar")
	if code, out := capture(t, func() int {
		return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data, "-o", file})
	}); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	code, _, stderr := captured(t, func() int {
		return runCmd("archive", []string{"import", file, "--storage", filepath.Join(dir, "other")})
	})
	if code != 0 || !strings.Contains(stderr, "says it was created 2099-01-01T00:00:00Z, in the future: its name \"q-fig3-small\" now means it") {
		t.Fatalf("import: exit %d, stderr %s", code, stderr)
	}
}

// An archive argument may be a pipe (report <(curl …), /dev/stdin): it is
// read in one pass. A missing *.msjar or path, or a directory, is an
// error about that file: each was taken for a campaign name ("no results
// at ./msjfarm-data: it does not exist").
func TestArchiveArgument(t *testing.T) {
	freshHome(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "results", "bundle", "testdata", "small-v1.msjar"))
	dir := t.TempDir()
	t.Chdir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(b); w.Close() }()
	defer r.Close()
	rep := filepath.Join(dir, "rep")
	code, out := capture(t, func() int { return runReport([]string{fmt.Sprintf("/dev/fd/%d", r.Fd()), "--out", rep}) })
	if code != 0 || strings.TrimSpace(out) != filepath.Join(rep, "index.html") {
		t.Fatalf("report of a pipe: exit %d\n%s", code, out)
	}
	for arg, want := range map[string]string{
		"fig3.msjar": "archive fig3.msjar: stat fig3.msjar: no such file or directory",
		"sub/fig3":   "archive sub/fig3: stat sub/fig3: no such file or directory",
		os.TempDir(): "is a directory: want an archive file or a campaign",
	} {
		code, _, stderr := captured(t, func() int { return runReport([]string{arg}) })
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("report %s: exit %d, stderr %s; want %q", arg, code, stderr, want)
		}
	}
	// --key with a campaign name is a mistake of the command line: exit
	// 2, as docs/archive.md says (it was 1, a failed run's status).
	for _, run := range []func([]string) int{runReport, runReproduce} {
		code, _, stderr := captured(t, func() int { return run([]string{"q-fig3", "--key", "signing.pem.pub"}) })
		if code != 2 || !strings.Contains(stderr, "is not a file but a campaign of --storage, which is not signed") {
			t.Errorf("--key with a campaign: exit %d, stderr %s; want 2", code, stderr)
		}
	}
	// So is a farm command with no NATS server to talk to.
	t.Setenv("MSJFARM_NATS_URL", "")
	if code, _, stderr := captured(t, func() int { return dispatch([]string{"worker", "--storage", t.TempDir()}) }); code != 2 || !strings.Contains(stderr, "no NATS server: give --nats-url") {
		t.Errorf("worker without NATS: exit %d, stderr %s; want 2", code, stderr)
	}
}

// TestArchiveVerifyPartial: an archive of a campaign with no checksums
// (exported before it finalised) is intact but partial, and verify's
// first line says so: it said "OK", the line after that its results were
// not checked.
func TestArchiveVerifyPartial(t *testing.T) {
	dir, _, data := runSmallFig3(t)
	matches, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "checksums"))
	if len(matches) != 1 {
		t.Fatalf("checksums objects %v, want one", matches)
	}
	if err := os.Remove(matches[0]); err != nil {
		t.Fatal(err)
	}
	// The manifest as the submission wrote it: running, no checksums.
	mpath := filepath.Join(filepath.Dir(matches[0]), "manifest.json")
	mb, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(mb, &m); err != nil {
		t.Fatal(err)
	}
	m["state"] = "running"
	delete(m, "checksums_sha256")
	if mb, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mpath, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "partial.msjar")
	if code, out := capture(t, func() int {
		return runCmd("archive", []string{"export", "q-fig3-small", "--storage", data, "-o", file})
	}); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, out)
	}
	code, out := capture(t, func() int { return runCmd("archive", []string{"verify", file}) })
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || !strings.Contains(first, ": OK, PARTIAL (an unfinished campaign's; results not checked): format msjar") {
		t.Fatalf("verify: exit %d, first line %q\n%s", code, first, out)
	}
}
