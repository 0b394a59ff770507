package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestThirdPartyArchiveElsewhere: a campaign of the third-party plugin
// (examples/thirdparty, built as its author would) runs on the farm path —
// a real nats-server and MinIO, submit --pin-plugins from the author's
// machine, a worker process — and is exported from MinIO to one file.
// On "another machine" (a fresh $HOME and cache, no plugin on any search
// path, no storage URL or credentials, another directory) the file is
// verified and every task re-run with the archived plugin binary,
// bit-identical. Imported into another MinIO bucket, it reads as the
// farm wrote it.
func TestThirdPartyArchiveElsewhere(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	f := newFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.BuildExternal(plugins, "examples/thirdparty", "./cmd/msjfarm-policy-randomfit"); err != nil {
		t.Fatal(err)
	}
	sum, err := pluginhost.Checksum(filepath.Join(plugins, "msjfarm-policy-randomfit"))
	if err != nil {
		t.Fatal(err)
	}
	f.start("coordinator", "coordinator", "--ack-wait", "5s")
	f.start("worker", "worker", "--workers", "2", "--runner", "plugin", "--plugin-path", plugins, "--plugin-cache", filepath.Join(f.dir, "cache"))
	sw := filepath.Join(f.dir, "tp.yaml")
	if err := os.WriteFile(sw, []byte(`name: thirdparty
seed: 5
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies:
  - {name: random-fit, greedy-oldest: 0.5}
replications: 2
run: {arrivals: 2e4, warmup: 1e3, deadline: 5m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := f.run("submit", "--pin-plugins", "--plugin-path", plugins, sw)
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	m := campaignRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("submit printed no campaign id:\n%s", out)
	}
	id := m[1]
	f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	file := filepath.Join(f.dir, "tp.msjar")
	start := time.Now()
	if out, err := f.run("archive", "export", id, "--sweep", sw, "-o", file); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	t.Logf("export from MinIO: %v", time.Since(start).Round(time.Millisecond))

	// Another machine: nothing but the file and the msjfarm binary.
	other := t.TempDir()
	home := filepath.Join(other, "home")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MSJFARM_") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_") &&
			!strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "MINIO_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, pluginhost.EnvPath+"=")
	moved := filepath.Join(other, "tp.msjar")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, other
		o, err := cmd.CombinedOutput()
		return string(o), err
	}
	if out, err := run("archive", "verify", "tp.msjar"); err != nil || !strings.Contains(out, ": OK: ") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	out, err = run("reproduce", "tp.msjar", "--all", "--workers", "2")
	if err != nil || !strings.Contains(out, "4 tasks: 4 bit-identical, 0 different, 0 errors") {
		t.Fatalf("reproduce: %v\n%s", err, out)
	}
	// The binary that ran is the archived one, fetched into the fresh
	// cache and verified by sha256.
	cached := filepath.Join(home, ".cache", "msjfarm", "plugins", "randomfit", sum, "msjfarm-policy-randomfit")
	if got, err := pluginhost.Checksum(cached); err != nil || got != sum {
		t.Fatalf("cached plugin %s: %v %s", cached, err, got)
	}
	if out, err := run("report", "tp.msjar", "--out", "rep"); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	// Imported into another bucket of MinIO, the campaign reads there
	// like one the farm wrote.
	bucket := strings.Replace(f.storeURL, "s3://msjfarm?", "s3://imported?", 1)
	if out, err := f.run("archive", "import", file, "--storage", bucket); err != nil || !strings.Contains(out, "objects written, 0 already there") {
		t.Fatalf("import into %s: %v\n%s", bucket, err, out)
	}
	if out, err := f.run("results", id, "--storage", bucket); err != nil || !strings.Contains(out, "random-fit") {
		t.Fatalf("results from the imported bucket: %v\n%s", err, out)
	}
}
