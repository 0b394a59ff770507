package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// hostileSweep is a campaign of the hostile test plugin's attacks (see
// worker/pluginhost/testdata/msjfarm-policy-hostile), the TCP one aimed at
// the farm's NATS and MinIO ports, and one honest policy.
func hostileSweep(t *testing.T, dir string, natsPort, minioPort string) string {
	t.Helper()
	p := filepath.Join(dir, "hostile.yaml")
	spec := fmt.Sprintf(`name: hostile
seed: 3
workload: one-or-all
axes:
  arrival_rate: [1]
policies:
  - hostile-honest
  - hostile-env
  - hostile-procenv
  - {name: hostile-tcp, port: %s, port2: %s}
  - hostile-bind
  - hostile-setsid
  - hostile-fork
  - hostile-signal
  - hostile-ptrace
replications: 1
run: {arrivals: 2e4, warmup: 1e3, deadline: 5m}
`, natsPort, minioPort)
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostilePluginOnFarm: a hostile plugin pinned by a campaign runs on a
// worker of a real farm (nats-server, MinIO, the worker configured with
// its S3 keys in its environment, --plugin-sandbox require). Every attack
// fails its task with the kernel's refusal and the plugin's sha256; no
// task's error holds a credential or a variable beyond the allow-list;
// nothing reached NATS or MinIO (the stored objects are exactly the
// campaign's); nothing the plugin started survives; the honest task and
// the worker go on.
func TestHostilePluginOnFarm(t *testing.T) {
	f := newFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.Build(plugins, "./worker/pluginhost/testdata/msjfarm-policy-hostile"); err != nil {
		t.Fatal(err)
	}
	sum, err := pluginhost.Checksum(filepath.Join(plugins, "msjfarm-policy-hostile"))
	if err != nil {
		t.Fatal(err)
	}
	nu, err := url.Parse(f.nats.URL)
	if err != nil {
		t.Fatal(err)
	}
	su, err := url.Parse(f.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	_, minioPort, _ := strings.Cut(su.Query().Get("endpoint"), ":")
	var secrets []string
	for _, kv := range f.env {
		if strings.HasPrefix(kv, "MSJFARM_S3_") {
			_, v, _ := strings.Cut(kv, "=")
			secrets = append(secrets, v)
		}
	}
	f.start("coordinator", "coordinator", "-ack-wait", "5s")
	w := f.start("worker", "worker", "-workers", "2", "-runner", "plugin", "-plugin-path", t.TempDir(),
		"-plugin-cache", filepath.Join(f.dir, "cache"), "-plugin-sandbox", "require")
	// -plugin-trial=false: submit's trial would refuse the
	// sweep (each attack fails its policy's Init); the workers' sandbox is
	// what this test is about (cmd/msjfarm's TestPluginTrial covers the
	// trial).
	id := f.submit("-plugin-trial=false", "-plugin-path", plugins, hostileSweep(t, f.dir, nu.Port(), minioPort))
	f.waitDone(id, 120*time.Second)
	recs := f.records(id)
	if len(recs) != 9 {
		t.Fatalf("%d results, want 9", len(recs))
	}
	for tid, r := range recs {
		policy := r.Task.Policy
		for _, s := range secrets {
			if strings.Contains(r.Error, s) {
				t.Errorf("task %s (%s): a credential reached the plugin: %s", tid, policy, r.Error)
			}
		}
		switch policy {
		case "hostile-honest":
			if r.Failed() {
				t.Errorf("the honest task failed: %s", r.Error)
			}
		case "hostile-env":
			_, env, ok := strings.Cut(r.Error, "attack env SUCCEEDED: ")
			if !ok {
				t.Errorf("hostile-env: %s", r.Error)
			}
			env, _, _ = strings.Cut(env, "\n")
			for _, kv := range strings.Fields(env) {
				name, _, _ := strings.Cut(kv, "=")
				if name != "MSJFARM_PLUGIN_MAX_CONCURRENT" && name != "GOGC" && name != "GOMAXPROCS" && name != "TMPDIR" &&
					name != "MSJFARM_POLICY_PLUGIN" && !strings.HasPrefix(name, "PLUGIN_") {
					t.Errorf("the plugin's environment on the worker holds %s", kv)
				}
			}
		default:
			attack := strings.TrimPrefix(policy, "hostile-")
			if !r.Failed() || !strings.Contains(r.Error, "attack "+attack+" refused") || !strings.Contains(r.Error, sum[:12]) ||
				!(strings.Contains(r.Error, "permission denied") || strings.Contains(r.Error, "operation not permitted") ||
					strings.Contains(r.Error, "no such file or directory")) { // a file outside its private root
				t.Errorf("%s: want a refusal with the plugin's sha256, got %q", policy, r.Error)
			}
		}
	}
	// No object of the plugin's making, and no credential, in the bucket
	// (the plugin could not reach MinIO: its TCP attack is refused above).
	ctx := context.Background()
	keys, err := f.store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		b, err := f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		// (The pinned plugin binary itself holds the word, under plugins/.)
		if strings.Contains(k, "forged") || !strings.HasPrefix(k, "plugins/") && strings.Contains(string(b), "forged") {
			t.Errorf("an object of the plugin's making in the store: %s", k)
		}
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("a credential in stored object %s", k)
			}
		}
	}
	select {
	case <-w.done:
		t.Fatalf("the worker exited: %v", w.err)
	default:
	}
	w.stop(t, 30*time.Second)
	if pids := hosttest.Processes("HOSTILE_SLEEPER=1"); len(pids) > 0 {
		t.Errorf("processes the plugin started survived the worker: %v", pids)
	}
}

// TestHostilePluginLocalRun: the same attacks through `msjfarm run` with
// the plugin on its search path and a local store directory: refused,
// the store holds only the campaign's files, the run goes on.
func TestHostilePluginLocalRun(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := hosttest.Build(plugins, "./worker/pluginhost/testdata/msjfarm-policy-hostile"); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	secret := "local-secret-" + t.Name()
	cmd := exec.Command(bin, "run", "-plugin-trial=false", "-plugin-path", plugins, "-storage", store, "-plugin-sandbox", "require",
		hostileSweep(t, dir, "4222", "9000"))
	cmd.Env = append(os.Environ(), "MSJFARM_S3_SECRET_KEY="+secret, "MSJFARM_NATS_PASSWORD="+secret)
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), secret) {
		t.Errorf("a secret appears in run's output:\n%s", out)
	}
	if !strings.Contains(string(out), "plugin sandbox: require") {
		t.Errorf("run did not state its sandbox:\n%s", out)
	}
	st, err := storage.Open(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var results int
	for _, k := range keys {
		if strings.Contains(k, "forged") {
			t.Errorf("the plugin wrote into the store: %s", k)
		}
		if strings.Contains(k, "/results/") {
			results++
		}
	}
	if results != 9 {
		t.Errorf("%d result objects, want 9 (one per task, failed or not):\n%s", results, out)
	}
	for _, want := range []string{"attack procenv refused", "attack tcp refused", "attack fork refused", "attack setsid refused"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("run's output does not report %q:\n%s", want, out)
		}
	}
	if pids := hosttest.Processes("HOSTILE_SLEEPER=1"); len(pids) > 0 {
		t.Errorf("processes the plugin started survived the run: %v", pids)
	}
}
