package e2e_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestPinnedPluginAcrossMachines: `submit -pin-plugins` on a machine with
// the fcfs plugin uploads it to MinIO; a worker process without any plugin
// binary (-runner plugin, empty -plugin-path) fetches it into its cache,
// verifies it and runs every task with it.
func TestPinnedPluginAcrossMachines(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	f := newFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.Build(plugins, "./plugins/fcfs/cmd/msjfarm-policy-fcfs"); err != nil {
		t.Fatal(err)
	}
	sum, err := pluginhost.Checksum(filepath.Join(plugins, "msjfarm-policy-fcfs"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f.start("coordinator", "coordinator", "-ack-wait", "5s")
	cache := filepath.Join(f.dir, "cache")
	f.start("worker", "worker", "-workers", "2", "-runner", "plugin", "-plugin-path", t.TempDir(), "-plugin-cache", cache)
	out, err := f.run("submit", "-pin-plugins", "-plugin-path", plugins, f.writeSweep("pinned", 3, "2e4"))
	if err != nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	m := campaignRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("submit printed no campaign id:\n%s", out)
	}
	id := m[1]
	f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	t.Logf("6 tasks with a fetched plugin: %v (incl. start-up and upload)", time.Since(start).Round(time.Millisecond))
	recs := f.records(id)
	if len(recs) != 6 {
		t.Fatalf("%d results", len(recs))
	}
	for tid, r := range recs {
		if r.Failed() || r.Provenance.Runner != "plugin" || r.Provenance.PluginSHA256 != sum {
			t.Fatalf("task %s: error %q, provenance %v", tid, r.Error, r.Provenance)
		}
	}
	if got, err := pluginhost.Checksum(filepath.Join(cache, "fcfs", sum, "msjfarm-policy-fcfs")); err != nil || got != sum {
		t.Fatalf("cached binary: %v %s", err, got)
	}
	data, err := f.store.Get(context.Background(), storage.ManifestKey(id))
	if err != nil {
		t.Fatal(err)
	}
	var man archive.Manifest
	if err := json.Unmarshal(data, &man); err != nil || man.Plugins["fcfs"].SHA256 != sum {
		t.Fatalf("manifest plugins %+v (%v)", man.Plugins, err)
	}
}
