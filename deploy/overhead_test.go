package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/aggregate"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestRunOverhead is the farm's overhead benchmark (set
// MSJFARM_BENCH_OVERHEAD=1; about 10-20 s on 2 cores): `msjfarm run
// -workers 2` on a campaign of 200 short tasks (1e6 arrivals, ~0.1 s each).
//
// Criterion: wall ≤ 1.05 × (total task time / 2) + start-up. Two forms:
//   - with the task time as the replications' thread CPU time (cpu_seconds
//     in the result provenance): only meaningful on an idle machine, so
//     asserted only when the load average is below the core count;
//   - with the task time as the replications' wall time inside the worker
//     (wall_seconds): robust to other tenants, always asserted. It is the
//     farm's slot utilisation.
//
// The farm's CPU beyond the replications (NATS server, coordinator, worker,
// storage, GC caused by the replications, start-up) is reported as well.
func TestRunOverhead(t *testing.T) {
	if os.Getenv("MSJFARM_BENCH_OVERHEAD") != "1" {
		t.Skip("set MSJFARM_BENCH_OVERHEAD=1 to run the overhead benchmark")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 cores")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "overhead.yaml")
	arrivals := os.Getenv("MSJFARM_BENCH_ARRIVALS")
	if arrivals == "" {
		arrivals = "1e6"
	}
	spec := `name: overhead
seed: 11
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs]
replications: 100
run: {arrivals: ` + arrivals + `, warmup: 1e3}
`
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := sweep.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	if len(camp.Tasks) != 200 {
		t.Fatalf("%d tasks", len(camp.Tasks))
	}
	load0 := loadAvg()
	cmd := exec.Command(bin, "run", "-workers", "2", "-q", "-storage", filepath.Join(dir, "data"), path)
	t1 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t1)
	if err != nil {
		t.Fatalf("msjfarm run: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`start-up (\d+(?:\.\d+)?)(ms|s)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no start-up time in:\n%s", out)
	}
	x, _ := strconv.ParseFloat(string(m[1]), 64)
	startup := time.Duration(x * float64(time.Millisecond))
	if string(m[2]) == "s" {
		startup = time.Duration(x * float64(time.Second))
	}
	// Task CPU time: the sum of the replications' thread CPU times, which
	// the worker records in every result's provenance (cpu_seconds).
	st, err := storage.Open(context.Background(), filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := st.List(context.Background(), storage.ResultsPrefix(camp.ID))
	if err != nil || len(keys) != 200 {
		t.Fatalf("%d results, %v", len(keys), err)
	}
	var cpu, taskWall time.Duration
	for _, k := range keys {
		data, err := st.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		var r aggregate.Record
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		x, err := strconv.ParseFloat(r.Provenance["cpu_seconds"], 64)
		if err != nil {
			t.Fatalf("cpu_seconds: %v", err)
		}
		cpu += time.Duration(x * float64(time.Second))
		w, err := strconv.ParseFloat(r.Provenance["wall_seconds"], 64)
		if err != nil {
			t.Fatalf("wall_seconds: %v", err)
		}
		taskWall += time.Duration(w * float64(time.Second))
	}
	farmCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("farm process CPU (user+sys of msjfarm run) %.3fs = task CPU %.3fs + %.3fs (%.2f%%, %.2f ms/task: NATS server, coordinator, worker, storage, GC, start-up); load average %.2f → %.2f on %d cores",
		farmCPU.Seconds(), cpu.Seconds(), (farmCPU - cpu).Seconds(), 100*(farmCPU-cpu).Seconds()/cpu.Seconds(),
		(farmCPU-cpu).Seconds()*1000/200, load0, loadAvg(), runtime.NumCPU())
	// Load-independent form: the replications' own wall times (measured
	// inside the worker) against the two slots' time. Descheduling by other
	// tenants lengthens both alike; what remains is the farm's own cost
	// (fetch latency, result writes, acks, the tail).
	util := taskWall.Seconds() / (2 * (wall - startup).Seconds())
	t.Logf("slot utilisation Σ task wall %.3fs / (2 × (wall − start-up)) = %.4f, i.e. wall = %.4f × (Σ task wall / 2) + start-up",
		taskWall.Seconds(), util, 1/util)
	if util < 1/1.05 {
		t.Errorf("slot utilisation %.4f < 1/1.05: the farm adds more than 5%% to the task time", util)
	}
	idle := loadAvg() < float64(runtime.NumCPU())+0.5
	if farmCPU.Seconds() > 1.05*cpu.Seconds() && idle {
		t.Errorf("farm CPU %v > 1.05 × task CPU %v", farmCPU, cpu)
	}
	bound := time.Duration(1.05*float64(cpu)/2) + startup
	t.Logf("200 tasks: task CPU time %.3fs (%.1f ms/task); ideal on 2 cores %.3fs; msjfarm run wall %.3fs (start-up %.3fs); "+
		"wall/ideal = %.4f; bound 1.05×ideal+start-up = %.3fs",
		cpu.Seconds(), cpu.Seconds()*1000/200, cpu.Seconds()/2, wall.Seconds(), startup.Seconds(),
		(wall-startup).Seconds()/(cpu.Seconds()/2), bound.Seconds())
	// The wall-time criterion needs the two cores to ourselves.
	if wall > bound && idle {
		t.Fatalf("wall %v > bound %v", wall, bound)
	} else if !idle {
		t.Logf("bounds not asserted: the machine is loaded (load average %.2f on %d cores)", loadAvg(), runtime.NumCPU())
	}
}

func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	_, _ = fmt.Sscan(string(data), &l)
	return l
}
