// Package examples holds one sweep file per paper figure (see README.md).
// This test runs every example at a tiny size, in process, so a file that
// no longer parses, names an unknown policy, parameter or workload, or makes
// a policy fail, is caught by `go test ./...`.
package examples

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/builtin"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
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
			if f.Limit != nil {
				runLimit(t, f)
				return
			}
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
			if f.Limit != nil {
				runLimit(t, f)
				return
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

// runLimit runs a limit example's search in process, as msjfarm run does
// on the farm: every round's probe file expanded into tasks (runTask), each
// rate's replications pooled; it logs each policy variant's bracket and
// checks the search ended with a verdict.
func runLimit(t *testing.T, f *sweep.File) {
	start := time.Now()
	plan, err := sweep.PlanLimit(f, builtin.Catalog{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range plan.Targets {
		eval := func(rates []float64) ([]limit.Point, error) {
			camp, err := sweep.Expand(sweep.ProbeFile(f, tg, rates), builtin.Catalog{})
			if err != nil {
				return nil, err
			}
			by := map[float64][]*sim.Result{}
			for i := range camp.Tasks {
				r, err := runTask(&camp.Tasks[i])
				if err != nil {
					return nil, err
				}
				by[camp.Tasks[i].ArrivalRate] = append(by[camp.Tasks[i].ArrivalRate], r)
			}
			out := make([]limit.Point, len(rates))
			for i, lam := range rates {
				if out[i], err = limit.PointOf(lam, by[lam]); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
		l, err := limit.SearchRounds(eval, limit.Options{Lo: plan.Lo, Hi: plan.Hi, Reps: f.Replications, RelTol: plan.RelTol}, plan.Probes)
		if err != nil {
			t.Fatalf("%s: %v", tg.Label, err)
		}
		if l.Outcome == "" || !(l.Lo <= l.Hi) {
			t.Errorf("%s: no verdict: %+v", tg.Label, l)
		}
		t.Logf("%s: %s [%.5g, %.5g] in %d rates, %d runs", tg.Label, l.Outcome, l.Lo, l.Hi, len(l.Points), l.Runs)
	}
	t.Logf("%s: limit search in %v", f.Name, time.Since(start).Round(time.Millisecond))
}

// expand is sweep.Expand, or for a limit file the expansion of its first
// round's probe campaign of every policy variant (the lowest rate), which
// is what the farm is given.
func expand(f *sweep.File) ([]*sweep.Campaign, error) {
	if f.Limit == nil {
		c, err := sweep.Expand(f, builtin.Catalog{})
		return []*sweep.Campaign{c}, err
	}
	plan, err := sweep.PlanLimit(f, builtin.Catalog{})
	if err != nil {
		return nil, err
	}
	var out []*sweep.Campaign
	for _, tg := range plan.Targets {
		c, err := sweep.Expand(sweep.ProbeFile(f, tg, []float64{plan.Lo}), builtin.Catalog{})
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
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
// the paper figure, and the command for the paper's size (its profile
// paper, checked by TestPaperProfiles).
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
		for _, want := range []string{"go run ./cmd/msjfarm run --profile paper examples/" + path, "# Paper size (--profile paper", "What it shows", "Read:"} {
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

// rawProfile is the paper profile of an example as written: which keys
// (and which run, axes and precision keys) it names.
func rawProfile(t *testing.T, path string) (file, profile map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	profiles, _ := file["profiles"].(map[string]any)
	profile, _ = profiles["paper"].(map[string]any)
	return file, profile
}

// parseProfile reads an example under the given profile, "" meaning none
// whatever MSJFARM_PROFILE says (sweep.Load would apply it).
func parseProfile(t *testing.T, path, profile string) (*sweep.File, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sweep.ParseProfile(data, "yaml", profile)
}

func jsonMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPaperProfiles: every example has a profile paper; it expands, and it
// changes exactly the keys it names (key by key inside run, axes and
// precision), each to the profile's value, and nothing else; it enlarges
// the run (more replications, no fewer arrivals).
func TestPaperProfiles(t *testing.T) {
	for _, path := range exampleFiles(t) {
		t.Run(strings.TrimSuffix(path, ".yaml"), func(t *testing.T) {
			_, named := rawProfile(t, path)
			if named == nil {
				t.Fatal("no profile paper")
			}
			def, err := parseProfile(t, path, "")
			if err != nil {
				t.Fatal(err)
			}
			paper, err := parseProfile(t, path, "paper")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := expand(paper); err != nil {
				t.Fatalf("under the paper profile: %v", err)
			}
			if paper.Replications <= def.Replications || paper.Run.Arrivals < def.Run.Arrivals {
				t.Errorf("paper size %d × %d arrivals is not above the default %d × %d",
					paper.Replications, paper.Run.Arrivals, def.Replications, def.Run.Arrivals)
			}
			j0, j1, jp := jsonMap(t, def), jsonMap(t, paper), jsonMap(t, paper.Profiles["paper"])
			keys := map[string]bool{}
			for k := range j0 {
				keys[k] = true
			}
			for k := range j1 {
				keys[k] = true
			}
			for k := range keys {
				sub, isMap := named[k].(map[string]any)
				if !isMap || (k != "run" && k != "axes" && k != "precision") {
					want := j0[k]
					if _, ok := named[k]; ok {
						want = jp[k]
					}
					if !reflect.DeepEqual(j1[k], want) {
						t.Errorf("%s = %v under the profile, want %v", k, j1[k], want)
					}
					continue
				}
				m0, _ := j0[k].(map[string]any)
				m1, _ := j1[k].(map[string]any)
				mp, _ := jp[k].(map[string]any)
				inner := map[string]bool{}
				for s := range m0 {
					inner[s] = true
				}
				for s := range m1 {
					inner[s] = true
				}
				for s := range inner {
					want := m0[s]
					if _, ok := sub[s]; ok {
						want = mp[s]
					}
					if !reflect.DeepEqual(m1[s], want) {
						t.Errorf("%s.%s = %v under the profile, want %v", k, s, m1[s], want)
					}
				}
			}
		})
	}
}

// TestProfilesKeepIDs: an example's campaign id without a selected profile
// is that of the same file with its profiles block removed, so adding
// profiles to the examples changed no stored campaign's id.
func TestProfilesKeepIDs(t *testing.T) {
	for _, path := range exampleFiles(t) {
		file, _ := rawProfile(t, path)
		delete(file, "profiles")
		stripped, err := yaml.Marshal(file)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := sweep.Parse(stripped, "yaml")
		if err != nil {
			t.Fatalf("%s without profiles: %v", path, err)
		}
		with, err := parseProfile(t, path, "")
		if err != nil {
			t.Fatal(err)
		}
		a, err := expand(plain)
		if err != nil {
			t.Fatal(err)
		}
		b, err := expand(with)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if a[i].ID != b[i].ID {
				t.Errorf("%s: id %s with the profiles block, %s without", path, b[i].ID, a[i].ID)
			}
		}
	}
}
