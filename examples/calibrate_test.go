package examples

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sweep"
)

// cpuTime is the process's user+system CPU time: with one task at a time it
// measures the task's cost without counting other processes on a shared
// machine.
func cpuTime() time.Duration {
	d, _ := cputime.Process()
	return d
}

// TestExamplesCalibrate measures every example's cost per event, for the
// runtimes in README.md: one replication of every point at 1/div of the
// default run length (MSJFARM_EXAMPLES_CALIBRATE=div, e.g. 10), one task at
// a time, CPU time per task. It logs per example the tasks, simulated
// events, arrivals (warm-up included), CPU seconds and the costliest task.
//
//	MSJFARM_EXAMPLES_CALIBRATE=10 go test ./examples -run Calibrate -v -timeout 2h
func TestExamplesCalibrate(t *testing.T) {
	div, _ := strconv.Atoi(os.Getenv("MSJFARM_EXAMPLES_CALIBRATE"))
	if div < 1 {
		t.Skip("set MSJFARM_EXAMPLES_CALIBRATE=<divisor of the default run length>")
	}
	for _, path := range exampleFiles(t) {
		if only := os.Getenv("MSJFARM_EXAMPLES_ONLY"); only != "" && !strings.Contains(path, only) {
			continue
		}
		f, err := sweep.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Limit != nil {
			continue // a search: its rates are not known in advance
		}
		f.Replications = 1
		f.Run.Arrivals /= int64(div)
		f.Run.Warmup /= int64(div)
		camp, err := sweep.Expand(f, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		var events uint64
		var cpu, worst time.Duration
		unstable := 0
		for i := range camp.Tasks {
			c0 := cpuTime()
			res, err := runTask(&camp.Tasks[i])
			d := cpuTime() - c0
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			events += res.Events
			cpu += d
			worst = max(worst, d)
			if res.Unstable {
				unstable++
			}
		}
		line := fmt.Sprintf("CAL %s tasks %d arrivals %d warmup %d events %d cpu_s %.2f worst_s %.3f events_per_s %.3g unstable %d",
			path, len(camp.Tasks), f.Run.Arrivals, f.Run.Warmup, events, cpu.Seconds(), worst.Seconds(), float64(events)/cpu.Seconds(), unstable)
		t.Log(line)
		if out := os.Getenv("MSJFARM_EXAMPLES_CALIBRATE_OUT"); out != "" {
			fh, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err == nil {
				fmt.Fprintln(fh, line)
				fh.Close()
			}
		}
	}
}
