package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestRunOverhead is the farm's overhead benchmark (set
// MSJFARM_BENCH_OVERHEAD=1; about 80 s on 2 cores): `msjfarm run
// -workers 2` on a campaign of 200 short tasks (5e6 arrivals, ~0.3 s each,
// the task length the bound was set for; the engine got faster, so the
// arrivals went up from 3e6 to 4e6 and then 5e6 to keep it: 4e6 now gives
// 0.25-s tasks, measured at 1.037; MSJFARM_BENCH_ARRIVALS changes that: 1e6
// gives 0.06-s tasks, where the fixed costs weigh 5x more).
// The replications run in policy plugin processes (--runner plugin, the
// default path of `msjfarm run`); MSJFARM_BENCH_RUNNER=inprocess measures
// the farm without the plugin host.
//
// Criterion: wall ≤ 1.04 × (total task CPU time / 2) + start-up, with the
// task CPU time as the replications' thread CPU time (cpu_seconds in the
// result provenance), the wall time as the whole command's (sweep
// validation, NATS, tasks, summary, manifest and report, shut-down) and
// start-up as the command reports it. Meaningful only with the cores to
// ourselves, so asserted only when other processes took under 2% of the
// cores' time during the run (from /proc/stat).
//
// Also reported, and always asserted: the cores' occupancy by
// replications, ∫ min(replications running, 2) dt / (2 × (wall −
// start-up)), from each result's start time and wall time. Tasks overlap
// (a slot is handed on at 99% of a replication's arrivals), hence the cap.
// Descheduling by other tenants lengthens the replications and the wall
// alike, so this form is robust to load; what it misses is the farm's CPU
// taken from the replications, which the process CPU line reports.
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
		arrivals = "5e6"
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
	cpu0 := procStat()
	runner := os.Getenv("MSJFARM_BENCH_RUNNER")
	if runner == "" {
		runner = "plugin"
	}
	cmd := exec.Command(bin, "run", "--workers", "2", "-q", "--runner", runner, "--storage", filepath.Join(dir, "data"), path)
	t1 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t1)
	machine := procStat().sub(cpu0)
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
	var cpu time.Duration
	var spans [][2]time.Time
	for _, k := range keys {
		tid, _ := storage.ResultTaskID(camp.ID, k)
		r, _, err := record.Read(context.Background(), st, camp.ID, tid)
		if err != nil {
			t.Fatal(err)
		}
		pv := r.Provenance
		if pv.CPUSeconds <= 0 || pv.WallSeconds <= 0 || pv.Started.IsZero() {
			t.Fatalf("record %s: provenance without cpu_seconds, wall_seconds or started: %+v", k, pv)
		}
		cpu += time.Duration(pv.CPUSeconds * float64(time.Second))
		w, t0 := pv.WallSeconds, pv.Started
		spans = append(spans, [2]time.Time{t0, t0.Add(time.Duration(w * float64(time.Second)))})
	}
	farmCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	t.Logf("farm process CPU (user+sys of msjfarm run) %.3fs = task CPU %.3fs + %.3fs (%.2f%%, %.2f ms/task: NATS server, coordinator, worker, storage, GC, start-up); load average %.2f → %.2f on %d cores",
		farmCPU.Seconds(), cpu.Seconds(), (farmCPU - cpu).Seconds(), 100*(farmCPU-cpu).Seconds()/cpu.Seconds(),
		(farmCPU-cpu).Seconds()*1000/200, load0, loadAvg(), runtime.NumCPU())
	busy, first, last := occupancy(spans, 2)
	util := busy.Seconds() / (2 * (wall - startup).Seconds())
	t.Logf("occupancy: replications ran %.3f core-seconds of 2 × (wall − start-up) = %.3f: %.4f (first task %.3fs after exec, last ended %.3fs before exit)",
		busy.Seconds(), 2*(wall-startup).Seconds(), util, first.Sub(t1).Seconds(), t1.Add(wall).Sub(last).Seconds())
	if util < 1/overheadBound {
		t.Errorf("occupancy %.4f < 1/%.2f: the farm adds more than %.0f%% to the task time", util, overheadBound, 100*(overheadBound-1))
	}
	// The bounds need the cores to ourselves: other processes' CPU over the
	// run (the machine's user+system less this process's) must stay under
	// 2% of the cores' time.
	others := machine.user + machine.system - farmCPU
	idle := machine.user > 0 && others.Seconds() < 0.02*float64(runtime.NumCPU())*wall.Seconds()
	// With plugins the farm's CPU includes the plugin processes' (children
	// of msjfarm run, counted in its rusage once they have exited).
	if farmCPU.Seconds() > overheadBound*cpu.Seconds() && idle {
		t.Errorf("farm CPU %v > %.2f × task CPU %v", farmCPU, overheadBound, cpu)
	}
	bound := time.Duration(overheadBound*float64(cpu)/2) + startup
	t.Logf("runner %s, 200 tasks: task CPU time %.3fs (%.1f ms/task); ideal on 2 cores %.3fs; msjfarm run wall %.3fs (start-up %.3fs); "+
		"wall/ideal = %.4f; bound %.2f×ideal+start-up = %.3fs",
		runner, cpu.Seconds(), cpu.Seconds()*1000/200, cpu.Seconds()/2, wall.Seconds(), startup.Seconds(),
		(wall-startup).Seconds()/(cpu.Seconds()/2), overheadBound, bound.Seconds())
	// The machine's view (USER_HZ ticks, all cores): steal is time the
	// hypervisor ran something else on our virtual cores. No farm can use
	// it, so the wall is also reported with it taken out.
	t.Logf("machine during the run: user %.2fs system %.2fs (other processes %.2fs) idle %.2fs iowait %.2fs irq+softirq %.2fs steal %.2fs; "+
		"wall/ideal without steal = %.4f",
		machine.user.Seconds(), machine.system.Seconds(), others.Seconds(), machine.idle.Seconds(), machine.iowait.Seconds(),
		(machine.irq + machine.softirq).Seconds(), machine.steal.Seconds(),
		((wall-startup).Seconds()-machine.steal.Seconds()/2)/(cpu.Seconds()/2))
	// The machine's own floor: the same replications in a plain loop of two
	// goroutines (no NATS, storage or report), as wall / (their CPU / 2).
	floor := plainRatio(t, camp.Tasks)
	rel := ((wall - startup).Seconds() / (cpu.Seconds() / 2)) / floor
	t.Logf("the same 200 replications in a plain two-goroutine loop: wall/ideal = %.4f; the farm's wall/ideal relative to it = %.4f",
		floor, rel)
	// The wall-time criteria need the two cores to ourselves.
	if rel > overheadBound && idle {
		t.Errorf("the farm's wall/ideal is %.4f × a plain loop's", rel)
	}
	if wall > bound && idle {
		t.Fatalf("wall %v > bound %v", wall, bound)
	} else if !idle {
		t.Logf("bounds not asserted: other processes took %.2fs of the cores' %.2fs", others.Seconds(), float64(runtime.NumCPU())*wall.Seconds())
	}
}

// overheadBound is the farm's allowed wall time over the ideal (the
// replications' CPU time spread over the cores): 4% for dispatch, result
// writes, the plugin host's RPC and the summary.
const overheadBound = 1.04

// occupancy is ∫ min(n(t), slots) dt over the spans (n(t): spans covering
// t), with the first start and the last end.
func occupancy(spans [][2]time.Time, slots int) (busy time.Duration, first, last time.Time) {
	type edge struct {
		t time.Time
		d int
	}
	var es []edge
	for _, s := range spans {
		es = append(es, edge{s[0], 1}, edge{s[1], -1})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].t.Before(es[j].t) })
	n := 0
	for i, e := range es {
		if i > 0 {
			busy += time.Duration(min(n, slots)) * e.t.Sub(es[i-1].t)
		}
		n += e.d
	}
	return busy, es[0].t, es[len(es)-1].t
}

// plainRatio runs the tasks in this process, two at a time, with nothing
// around them, and returns wall / (Σ thread CPU / 2).
func plainRatio(t *testing.T, tasks []sweep.Task) float64 {
	next := make(chan int)
	var mu sync.Mutex
	var cpu time.Duration
	var wg sync.WaitGroup
	t0 := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out, err := worker.InProcess{}.Run(context.Background(), &tasks[i], nil)
				if err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				cpu += out.Provenance.CPU
				mu.Unlock()
			}
		}()
	}
	for i := range tasks {
		next <- i
	}
	close(next)
	wg.Wait()
	return time.Since(t0).Seconds() / (cpu.Seconds() / 2)
}

// cpuTimes are the machine's CPU times (all cores) by kind, from the cpu
// line of /proc/stat (zero elsewhere).
type cpuTimes struct{ user, system, idle, iowait, irq, softirq, steal time.Duration }

func procStat() cpuTimes {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	var c cpuTimes
	var user, nice, system, idle, iowait, irq, softirq, steal int64
	if _, err := fmt.Sscanf(string(data), "cpu %d %d %d %d %d %d %d %d", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal); err != nil {
		return cpuTimes{}
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / 100 } // USER_HZ
	c.user, c.system, c.idle, c.iowait = tick(user+nice), tick(system), tick(idle), tick(iowait)
	c.irq, c.softirq, c.steal = tick(irq), tick(softirq), tick(steal)
	return c
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	return cpuTimes{c.user - o.user, c.system - o.system, c.idle - o.idle, c.iowait - o.iowait,
		c.irq - o.irq, c.softirq - o.softirq, c.steal - o.steal}
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
