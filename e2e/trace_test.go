package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

// synthTrace is a deterministic 300-job SWF trace on 16 processors
// (needs 1–8, load about 0.7 at time_scale 0.8).
func synthTrace() []byte {
	var b bytes.Buffer
	b.WriteString("; Version: 2\n; MaxProcs: 16\n")
	x := uint64(7)
	next := func() float64 {
		x = x*6364136223846793005 + 1442695040888963407
		return float64(x>>11) / (1 << 53)
	}
	t := 0.0
	for i := 1; i <= 300; i++ {
		t += 4 * next()
		need := 1 << int(4*next())
		run := 1 + 8*next()
		fmt.Fprintf(&b, "%d %.0f 0 %.2f %d -1 -1 %d %.0f -1 1 -1 -1 -1 0 -1 -1 -1\n", i, t, run, need, need, 2*run)
	}
	return b.Bytes()
}

// TestTraceCampaignAcrossProcesses: a trace campaign submitted through the
// CLI runs on two worker processes with their own trace caches (as on
// other machines) after the trace file was deleted from the submitting
// machine: the workers fetch it from MinIO by sha256. Its summary is
// byte-identical to `msjfarm run` of the same sweep on local storage.
func TestTraceCampaignAcrossProcesses(t *testing.T) {
	t.Parallel() // its own servers and processes; it mostly waits on them (docs/testing.md)
	f := newFarm(t)
	sub := filepath.Join(f.dir, "submitter")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "t.swf"), synthTrace(), 0o644); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(sub, "trace.yaml")
	if err := os.WriteFile(sw, []byte(`name: e2e-trace
seed: 2
trace: {file: t.swf, time_scale: 0.8}
policies: [fcfs, first-fit, serverfilling, {name: firstfit-srpt, order: duration}]
replications: 2
run: {arrivals: 250, warmup: 20, deadline: 5m}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	localStore := filepath.Join(f.dir, "local-data")
	out, err := f.run("run", sw, "--storage", localStore, "-q", "--workers", "2")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`campaigns/([0-9a-f]+)/summary.csv`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run printed no summary:\n%s", out)
	}
	want, err := os.ReadFile(filepath.Join(localStore, "campaigns", m[1], "summary.csv"))
	if err != nil {
		t.Fatal(err)
	}

	co := f.start("coordinator", "coordinator", "-ack-wait", "5s")
	f.start("worker1", "worker", "-workers", "2", "-worker-name", "w1", "--trace-cache", filepath.Join(f.dir, "cache1"))
	f.start("worker2", "worker", "-workers", "2", "-worker-name", "w2", "--trace-cache", filepath.Join(f.dir, "cache2"))
	out, err = f.run("submit", sw)
	if err != nil || !strings.Contains(out, "uploaded to s3://") {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	id := campaignRE.FindStringSubmatch(out)[1]
	if id != m[1] {
		t.Fatalf("submit: campaign %s, run: %s", id, m[1])
	}
	if err := os.Remove(filepath.Join(sub, "t.swf")); err != nil {
		t.Fatal(err)
	}
	s := f.waitDone(id, 5*time.Minute) // a ceiling for a loaded machine, not an expectation
	if s.Done != 8 || s.Failed != 0 {
		t.Fatalf("status %+v", s)
	}
	got, err := f.store.Get(context.Background(), storage.SummaryKey(id))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("farm summary differs from msjfarm run's:\n%s\nwant\n%s", got, want)
	}
	by := map[string]bool{}
	for _, r := range f.records(id) {
		by[r.Provenance.Worker] = true
	}
	for _, c := range []string{"cache1", "cache2"} {
		if !by["w"+c[len(c)-1:]] {
			continue // this worker ran no task
		}
		if ents, _ := os.ReadDir(filepath.Join(f.dir, c)); len(ents) != 1 {
			t.Errorf("%s holds %d entries, want the one trace", c, len(ents))
		}
	}
	t.Logf("workers that ran tasks: %v", by)
	co.stop(t, 10*time.Second)
}
