package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// TestSpotVerificationOnFarm runs spot verification on a real farm (a
// nats-server and a MinIO process, a coordinator and three worker
// processes running policies as confined plugin processes):
//
//   - an honest campaign submitted with --verify 1: every task is run a
//     second time on another worker process, all agree, and `msjfarm
//     status` says so;
//   - a campaign of a plugin that is not deterministic (it draws a
//     threshold from crypto/rand at every replication, built here): the
//     mismatches are found and run a third time, and the status names the
//     workers whose results were outvoted, or the code where the three
//     runs gave three results.
func TestSpotVerificationOnFarm(t *testing.T) {
	f := newFarm(t)
	plugins := filepath.Join(f.dir, "plugins")
	if err := hosttest.Build(plugins, "./e2e/testdata/msjfarm-policy-noisy"); err != nil {
		t.Fatal(err)
	}
	f.start("coordinator", "coordinator", "-ack-wait", "5s", "-verify-wait", "30s")
	for _, w := range []string{"w1", "w2", "w3"} {
		f.start(w, "worker", "-workers", "1", "-worker-name", w, "-runner", "plugin", "-plugin-path", t.TempDir(),
			"-plugin-cache", filepath.Join(f.dir, "cache-"+w))
	}

	id := f.submit("--verify", "1", f.writeSweep("verified", 3, "2e4")) // 6 tasks
	s := f.waitDone(id, 3*time.Minute)
	if v := s.Verify; s.Done != 6 || v == nil || v.Sampled != 6 || v.Verified != 6 {
		t.Fatalf("honest campaign: status %+v, verify %+v", s, s.Verify)
	}
	out, err := f.run("status", id)
	if err != nil || !strings.Contains(out, "6 of 6 sampled tasks verified, 0 mismatched") {
		t.Fatalf("status: %v\n%s", err, out)
	}

	sweep := filepath.Join(f.dir, "noisy.yaml")
	if err := os.WriteFile(sweep, []byte(`name: noisy
seed: 5
servers: 8
classes:
  - {need: 1, share: 0.7, service: {dist: exp, mean: 1}}
  - {need: 4, share: 0.3, service: {dist: exp, mean: 1}}
axes:
  arrival_rate: [2]
policies: [noisy-fcfs]
replications: 6
verify: 1
run: {arrivals: 5e3, warmup: 500, deadline: 2m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	id = f.submit("-plugin-path", plugins, sweep)
	s = f.waitDone(id, 3*time.Minute)
	v := s.Verify
	// Eight equally likely behaviours: the chance that all six pairs agree
	// is 8⁻⁶. A mismatch is run a third time: two of the three may agree
	// (one worker outvoted, named as disagreeing) or none (the code named
	// as not deterministic, no worker blamed); every mismatch is one or
	// the other.
	if s.Done != 6 || v == nil || v.Sampled != 6 || v.Mismatched == 0 || v.Pending != 0 ||
		tasksIn(t, v.Disagreeing)+tasksIn(t, v.Nondeterministic) != v.Mismatched {
		t.Fatalf("noisy campaign: status %+v, verify %+v", s, v)
	}
	for _, n := range v.Nondeterministic {
		if !strings.HasPrefix(n, "policy noisy-fcfs, engine ") {
			t.Fatalf("not deterministic: %q, want the noisy plugin named", n)
		}
	}
	out, err = f.run("status", id)
	if err != nil || !strings.Contains(out, "verify mismatch: ") ||
		strings.Contains(out, "verify: disagreeing workers: w") != (len(v.Disagreeing) > 0) ||
		strings.Contains(out, "verify: not deterministic") != (len(v.Nondeterministic) > 0) {
		t.Fatalf("status does not name the disagreeing workers or the code: %v\n%s", err, out)
	}
	t.Logf("noisy plugin: %d verified, %d mismatched, disagreeing %v, not deterministic %v", v.Verified, v.Mismatched, v.Disagreeing, v.Nondeterministic)
}

// tasksIn sums the task counts of verification lines ("w2 (3 tasks)").
func tasksIn(t *testing.T, lines []string) int {
	n := 0
	for _, l := range lines {
		var k int
		if _, err := fmt.Sscanf(l[strings.LastIndex(l, "(")+1:], "%d", &k); err != nil {
			t.Fatalf("no task count in %q", l)
		}
		n += k
	}
	return n
}
