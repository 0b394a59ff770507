package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
	"github.com/msjfarm/msjfarm/sweep"
)

// overlapSweep has rates lo..lo+2: two of them overlap lo+1's.
func overlapSweep(t *testing.T, dir, name string, lo int) (string, *sweep.Campaign) {
	t.Helper()
	spec := fmt.Sprintf(`name: %s
seed: 3
workload: one-or-all
axes:
  arrival_rate: [%d, %d, %d]
policies: [fcfs, msf]
replications: 4
run: {arrivals: 3e4, warmup: 1e3}
`, name, lo, lo+1, lo+2)
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Parse([]byte(spec), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// checkOverlap runs two `msjfarm run` processes at once, on one storage,
// with sweeps that share 16 of their 24 tasks each, and checks that each
// result is stored once, every second completion of a shared task was
// noticed (a "duplicate" line for each extra "done"), and both campaigns
// are complete and consistent.
func checkOverlap(t *testing.T, st storage.Store, storeArg string, env []string) {
	dir := t.TempDir()
	pa, ca := overlapSweep(t, dir, "overlap-a", 1)
	pb, cb := overlapSweep(t, dir, "overlap-b", 2)
	runLog := filepath.Join(dir, "runs.log")
	type res struct {
		out []byte
		err error
	}
	done := make(chan res, 2)
	for _, p := range []string{pa, pb} {
		cmd := exec.Command(bin, "run", "-q", "-workers", "2", "-runner", "inprocess", "-storage", storeArg, "-run-log", runLog, p)
		cmd.Env = env
		go func() {
			out, err := cmd.CombinedOutput()
			done <- res{out, err}
		}()
	}
	for range 2 {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("msjfarm run: %v\n%s", r.err, r.out)
			}
			t.Logf("%s", r.out[:min(len(r.out), 400)])
		case <-time.After(5 * time.Minute):
			t.Fatal("the runs did not finish in 5 minutes")
		}
	}
	union := map[string]bool{}
	shared := 0
	inA := map[string]bool{}
	for _, tk := range ca.Tasks {
		union[tk.ID], inA[tk.ID] = true, true
	}
	for _, tk := range cb.Tasks {
		if inA[tk.ID] {
			shared++
		}
		union[tk.ID] = true
	}
	if shared != 16 {
		t.Fatalf("%d shared tasks, want 16", shared)
	}
	ctx := context.Background()
	keys, err := st.List(ctx, storage.StoredResultsPrefix)
	if err != nil || len(keys) != len(union) {
		t.Fatalf("%d stored results, want %d, one per distinct task (%v)", len(keys), len(union), err)
	}
	rl := readRunLog(t, runLog)
	twice := 0
	for id := range union {
		d, dup := len(rl["done"][id]), len(rl["duplicate"][id])
		if d < 1 || dup != d-1 {
			t.Fatalf("task %s: completed %d times, %d noticed as duplicates; want every extra completion noticed", id, d, dup)
		}
		if d > 1 {
			twice++
		}
	}
	t.Logf("%d of %d shared tasks ran in both processes (each extra run noticed, its result discarded)", twice, shared)
	for _, c := range []*sweep.Campaign{ca, cb} {
		a, err := archive.Load(ctx, st, c.ID, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Manifest == nil || a.Manifest.State != "done" || len(a.Records) != len(c.Tasks) {
			t.Fatalf("campaign %s: manifest %v, %d records of %d", c.ID, a.Manifest, len(a.Records), len(c.Tasks))
		}
		for _, tk := range c.Tasks {
			rec, _, err := record.Read(ctx, st, c.ID, tk.ID)
			if err != nil || rec.Failed() || rec.Task.ID != tk.ID {
				t.Fatalf("campaign %s task %s: %v %+v", c.ID, tk.ID, err, rec)
			}
		}
		if _, err := st.Stat(ctx, storage.SummaryKey(c.ID)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOverlappingRunsLocal(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	st, err := storage.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	checkOverlap(t, st, data, os.Environ())
}

func TestOverlappingRunsMinIO(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	url := "s3://overlap?secure=false&endpoint=" + ep
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var st storage.Store
	var err error
	for {
		if st, err = storage.Open(ctx, url, storage.WithCredentials(ak, sk)); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	checkOverlap(t, st, url, append(os.Environ(), "MSJFARM_S3_ACCESS_KEY="+ak, "MSJFARM_S3_SECRET_KEY="+sk))
}

// TestCampaignsByNameOnFarm: status and cancel of a farm take a campaign's
// name (its latest campaign), an unknown one lists the candidates, and
// results/report/reproduce find it by name in storage.
func TestCampaignsByNameOnFarm(t *testing.T) {
	f := newFarm(t)
	co := f.start("coordinator", "coordinator")
	// No worker: the campaign stays running until cancelled.
	id := f.submit(f.writeSweep("by-name", 2, "1e4"))
	out, err := f.run("status", "by-name")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "running") {
		t.Fatalf("status by name: %v\n%s", err, out)
	}
	out, err = f.run("status", "no-such-campaign")
	if err == nil || !strings.Contains(out, "by-name ("+id) {
		t.Fatalf("unknown name: %v\n%s", err, out)
	}
	out, err = f.run("cancel", "by-name")
	if err != nil || !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel by name: %v\n%s", err, out)
	}
	out, err = f.run("results")
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "by-name") {
		t.Fatalf("results list: %v\n%s", err, out)
	}
	co.stop(t, 10*time.Second)
}
