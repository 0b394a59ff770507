package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// docBlock is a block of docs/plugins.md the test acts on: a file to write
// (<!-- file: NAME -->) or shell commands to run (<!-- step -->).
type docBlock struct {
	file string // "" for a step
	body string
}

var docMarker = regexp.MustCompile("(?s)<!-- (file: ([^ ]+)|step) -->\\s*```[a-z]*\\n(.*?)```")

func readDoc(t *testing.T, root string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	for _, m := range docMarker.FindAllStringSubmatch(string(b), -1) {
		out = append(out, docBlock{file: m[2], body: m[3]})
	}
	if len(out) < 6 {
		t.Fatalf("docs/plugins.md: %d marked blocks, want the module, policy, main, build, check, sweep and run", len(out))
	}
	return out
}

// TestPluginAuthorJourney walks docs/plugins.md on a plugin written by the
// test from the document's own blocks: a new module with a replace
// directive, the policy and its main, plugin check and list, run and
// simulate with it; then the farm part with a real nats-server and MinIO:
// submit from the author's machine pins the binary (with its schema), the
// coordinator validates against the pin, and of two worker processes the
// one with no plugins at all fetches the binary from storage, verifies and
// runs it. A sweep outside the plugin's schema is refused before anything
// is queued.
func TestPluginAuthorJourney(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	root, err := hosttest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks := readDoc(t, root)
	work := t.TempDir()
	cwd := work
	cwdFile := filepath.Join(work, ".cwd")
	// msjfarm is the binary under test; go runs offline (the module cache
	// only), so `go mod tidy` is given -e: offline it cannot look up the
	// test-only dependencies of msjfarm's dependencies, which a build does
	// not need.
	prelude := `set -e
msjfarm() { "$MSJFARM_BIN" "$@"; }
go() { if [ "$1" = mod ] && [ "$2" = tidy ]; then command go mod tidy -e; else command go "$@"; fi; }
`
	env := append(os.Environ(), "MSJFARM_BIN="+bin, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off",
		pluginhost.EnvPath+"=")
	var runOut string
	for i, b := range blocks {
		if b.file != "" {
			p := filepath.Join(cwd, b.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		script := prelude + strings.ReplaceAll(b.body, "/path/to/msjfarm", root) + "\npwd > " + cwdFile + "\n"
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir, cmd.Env = cwd, env
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docs/plugins.md block %d:\n%s\nfailed: %v\n%s", i, b.body, err, out)
		}
		t.Logf("block %d (%v): %s", i, time.Since(t0).Round(time.Millisecond), strings.SplitN(b.body, "\n", 2)[0])
		if d, err := os.ReadFile(cwdFile); err == nil {
			cwd = strings.TrimSpace(string(d))
		}
		if strings.Contains(b.body, "msjfarm run ") {
			runOut = string(out)
		}
	}
	plugin := filepath.Join(cwd, "bin", "msjfarm-policy-lcfsfit")
	sum, err := pluginhost.Checksum(plugin)
	if err != nil {
		t.Fatalf("the document's steps built no plugin: %v", err)
	}
	// run went through plugins: the author's for lcfs-fit, msjfarm's own
	// for fcfs.
	if !strings.Contains(runOut, "runner plugin") || !strings.Contains(runOut, "lcfs-fit=lcfsfit@"+sum[:12]) ||
		!strings.Contains(runOut, "fcfs=msjfarm(fcfs)") {
		t.Fatalf("run output:\n%s", runOut)
	}

	// The farm: submit from the author's machine.
	f := newFarm(t)
	f.start("coordinator", "coordinator", "-ack-wait", "10s")
	cacheA := filepath.Join(f.dir, "cache-a")
	f.start("worker-a", "worker", "-workers", "1", "-worker-name", "bare", "-plugin-path", t.TempDir(), "-plugin-cache", cacheA)
	sweep := filepath.Join(cwd, "lcfs.yaml")

	// Outside the schema: refused by submit, nothing pinned or queued.
	bad := filepath.Join(f.dir, "bad.yaml")
	spec, _ := os.ReadFile(sweep)
	if err := os.WriteFile(bad, []byte(strings.Replace(string(spec), "depth: [10, 1000]", "depth: [0]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := f.run("submit", "-plugin-path", filepath.Join(cwd, "bin"), bad); err == nil ||
		!strings.Contains(out, `bad.yaml:8:29: policies[1].depth: policy lcfs-fit: parameter "depth": must be >= 1`) {
		t.Fatalf("submit outside the schema: %v\n%s", err, out)
	}
	if keys, err := f.store.List(context.Background(), "plugins/"); err != nil || len(keys) != 0 {
		t.Fatalf("a refused submit uploaded %v (%v)", keys, err)
	}

	out, err := f.run("submit", "-plugin-path", filepath.Join(cwd, "bin"), sweep)
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	m := campaignRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("submit printed no campaign id:\n%s", out)
	}
	id := m[1]
	pins, err := protocol.ReadPins(context.Background(), f.store, id)
	if err != nil || pins == nil || pins.Policies["lcfs-fit"].SHA256 != sum || len(pins.Policies["lcfs-fit"].Params) != 1 {
		t.Fatalf("pins %+v (%v)", pins, err)
	}
	if _, pinned := pins.Policies["fcfs"]; pinned {
		t.Fatal("the built-in fcfs was pinned without -pin-plugins")
	}
	// The bare worker is alone until it has fetched the binary (so it
	// certainly runs the plugin); then the author's worker joins.
	fetched := filepath.Join(cacheA, "lcfsfit", sum, "msjfarm-policy-lcfsfit")
	waitFor(t, "the bare worker to fetch the plugin", 60*time.Second, func() bool {
		_, err := os.Stat(fetched)
		return err == nil
	})
	f.start("worker-b", "worker", "-workers", "1", "-worker-name", "author", "-plugin-path", filepath.Join(cwd, "bin"),
		"-plugin-cache", filepath.Join(f.dir, "cache-b"))
	f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	recs := f.records(id)
	if len(recs) != 12 {
		t.Fatalf("%d results, want 12", len(recs))
	}
	ranBy := map[string]int{}
	for tid, r := range recs {
		if r.Failed() || r.Provenance.Runner != "plugin" {
			t.Fatalf("task %s: error %q, provenance %+v", tid, r.Error, r.Provenance)
		}
		if r.Task.Policy == "lcfs-fit" {
			if r.Provenance.Plugin != "lcfsfit" || r.Provenance.PluginSHA256 != sum {
				t.Fatalf("task %s: provenance %+v", tid, r.Provenance)
			}
			ranBy[r.Provenance.Worker]++
		}
	}
	t.Logf("lcfs-fit tasks by worker: %v", ranBy)
	// The bare worker ran the plugin with the binary it fetched and
	// verified.
	if got, err := pluginhost.Checksum(fetched); err != nil || got != sum || ranBy["bare"] == 0 {
		t.Fatalf("the worker without plugins: fetched copy %v %s, ran %d lcfs-fit tasks", err, got, ranBy["bare"])
	}
}
