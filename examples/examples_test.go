// Package examples holds one sweep file per paper figure (see README.md).
// This test runs every example at a tiny size, in process, so a file that
// no longer parses, names an unknown policy, parameter or workload, or makes
// a policy fail, is caught by `go test ./...`.
package examples

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

func exampleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example files")
	}
	return files
}

// Tiny run size: every task runs, but the whole suite stays within seconds.
const (
	tinyArrivals = 5000
	tinyWarmup   = 500
)

// TestExamples expands every example with sweep.Expand against the family
// catalogue and runs each task (one replication, 5000 arrivals) with
// sdk.Spec.Run on task.SimWorkload() and task.Config(), as a worker would.
func TestExamples(t *testing.T) {
	for _, path := range exampleFiles(t) {
		t.Run(strings.TrimSuffix(path, ".yaml"), func(t *testing.T) {
			t.Parallel()
			f, err := sweep.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != strings.TrimSuffix(path, ".yaml") {
				t.Errorf("name %q should be the file name %q", f.Name, strings.TrimSuffix(path, ".yaml"))
			}
			if f.Run.Arrivals > 1e6 || f.Replications > 5 {
				t.Errorf("default size %v arrivals × %d replications: keep the defaults small and document the paper size", f.Run.Arrivals, f.Replications)
			}
			f.Replications = 1
			f.Run.Arrivals, f.Run.Warmup, f.Run.MSER = tinyArrivals, tinyWarmup, false
			runCampaign(t, f, 1)
		})
	}
}

// TestExamplesDefaultSize runs every example at its own default size, two
// tasks at a time, and logs the mean over replications of each point's mean
// and weighted mean response time: it measures how long the defaults take
// and shows the papers' orderings. Opt-in (minutes):
//
//	MSJFARM_EXAMPLES_DEFAULT=1 go test ./examples -run DefaultSize -v -timeout 1h
func TestExamplesDefaultSize(t *testing.T) {
	if os.Getenv("MSJFARM_EXAMPLES_DEFAULT") == "" {
		t.Skip("set MSJFARM_EXAMPLES_DEFAULT=1 to run the examples at their default size")
	}
	for _, path := range exampleFiles(t) {
		if only := os.Getenv("MSJFARM_EXAMPLES_ONLY"); only != "" && !strings.Contains(path, only) {
			continue
		}
		t.Run(strings.TrimSuffix(path, ".yaml"), func(t *testing.T) {
			f, err := sweep.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			runCampaign(t, f, 2)
		})
	}
}

// runCampaign expands f and runs every task, par at a time; with more than
// one replication it logs a per-point summary.
func runCampaign(t *testing.T, f *sweep.File, par int) {
	start := time.Now()
	camp, err := sweep.Expand(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range camp.Warnings {
		t.Errorf("warning: %s", w)
	}
	results := make([]*sim.Result, len(camp.Tasks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for i := range camp.Tasks {
		task := &camp.Tasks[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := runTask(task)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("task %s (policy %s %v, axes %v): %v", task.ID, task.Policy, task.Params, task.Axes, err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	t.Logf("%s: %d tasks in %v", f.Name, len(camp.Tasks), time.Since(start).Round(time.Millisecond))
	if f.Replications < 2 {
		return
	}
	type acc struct {
		label            string
		t, tw            float64
		n, unstable, ord int
	}
	points := map[string]*acc{}
	for i, task := range camp.Tasks {
		r := results[i]
		if r == nil {
			continue
		}
		a, ok := points[task.Point]
		if !ok {
			a = &acc{label: fmt.Sprintf("%v %s %v", task.Axes, task.Policy, task.Params), ord: len(points)}
			points[task.Point] = a
		}
		a.t += r.Overall.MeanResponse
		a.tw += r.WeightedMeanResponse
		a.n++
		if r.Unstable {
			a.unstable++
		}
	}
	list := make([]*acc, 0, len(points))
	for _, a := range points {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ord < list[j].ord })
	for _, a := range list {
		t.Logf("  %-70s E[T] %10.4g  E[T^w] %10.4g  unstable %d/%d", a.label, a.t/float64(a.n), a.tw/float64(a.n), a.unstable, a.n)
	}
}

func runTask(task *sweep.Task) (*sim.Result, error) {
	w, err := task.SimWorkload()
	if err != nil {
		return nil, err
	}
	spec, err := builtin.Lookup(task.Policy)
	if err != nil {
		return nil, err
	}
	res, err := spec.Run(w, task.Params, task.Config())
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errNoResult
	}
	return res, nil
}

var errNoResult = errors.New("no result")

// TestHeaders checks each example documents itself: a comment header naming
// the paper figure, and the paper-size override through the environment.
func TestHeaders(t *testing.T) {
	fig := regexp.MustCompile(`^# .*(paper|Fig)`)
	for _, path := range exampleFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(data)
		if !fig.MatchString(s) || !strings.Contains(s, "Fig. ") {
			t.Errorf("%s: the header should start by naming the paper and figure", path)
		}
		for _, want := range []string{"MSJFARM_REPLICATIONS=", "MSJFARM_RUN_ARRIVALS=", "go run ./cmd/msjfarm run examples/" + path, "What it shows", "Read:"} {
			if !strings.Contains(s, want) {
				t.Errorf("%s: header lacks %q", path, want)
			}
		}
	}
}

// TestReadme checks the README's table lists every example file.
func TestReadme(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range exampleFiles(t) {
		if !strings.Contains(string(data), "("+path+")") {
			t.Errorf("README.md does not link %s", path)
		}
	}
}

// TestEnvOverride checks the documented paper-size override: environment
// variables replace the file's replications and run length.
func TestEnvOverride(t *testing.T) {
	t.Setenv("MSJFARM_REPLICATIONS", "30")
	t.Setenv("MSJFARM_RUN_ARRIVALS", "1e7")
	t.Setenv("MSJFARM_RUN_WARMUP", "1e6")
	f, err := sweep.Load("q-fig3.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Replications != 30 || f.Run.Arrivals != 1e7 || f.Run.Warmup != 1e6 {
		t.Errorf("override: replications %d, arrivals %v, warmup %v", f.Replications, f.Run.Arrivals, f.Run.Warmup)
	}
}

// TestHalfinWhittPoints checks the hand-written zipped points of the B
// figures: at every point the needs are those of workload.HalfinWhitt(k),
// and in b-fig1.yaml the load is B §1.1's ρ(k) = 1 − 0.7·f_k/√k (written
// with six decimals, so within 1e-6).
func TestHalfinWhittPoints(t *testing.T) {
	for _, path := range []string{"b-fig1.yaml", "b-fig2b.yaml"} {
		f, err := sweep.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Replications = 1
		camp, err := sweep.Expand(f, builtin.Catalog{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, task := range camp.Tasks {
			k := task.Workload.Servers
			seen[k] = true
			want, err := workload.HalfinWhitt(k)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range task.Workload.Classes {
				if c.Need != want.Classes[i].Need {
					t.Errorf("%s k=%d class %d: need %d, want %d", path, k, i, c.Need, want.Classes[i].Need)
				}
			}
			wantLoad := 0.8
			if path == "b-fig1.yaml" {
				wantLoad = workload.HalfinWhittLoad(k, 0.7)
			}
			if math.Abs(task.Load-wantLoad) > 1e-6 {
				t.Errorf("%s k=%d: load %v, want %v", path, k, task.Load, wantLoad)
			}
		}
		if len(seen) != 4 {
			t.Errorf("%s: %d server counts, want 4", path, len(seen))
		}
	}
}
