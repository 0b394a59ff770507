package check_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/msjfarm/msjfarm/sdk/check"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

var bin string

// TestMain builds the plugins checked: fcfs, the third-party example (in
// its own module) and a plugin of deliberately non-conforming policies.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "msjfarm-check-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = dir
		errc := make(chan error, 1)
		go func() { errc <- hosttest.BuildExternal(dir, "examples/thirdparty", "./cmd/msjfarm-policy-randomfit") }()
		if err := hosttest.Build(dir, "./plugins/fcfs/cmd/msjfarm-policy-fcfs", "./sdk/check/testdata/msjfarm-policy-bad"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := <-errc; err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

func runCheck(t *testing.T, name string) *check.Report {
	t.Helper()
	h := pluginhost.New(pluginhost.Config{Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})})
	t.Cleanup(func() { h.Close() })
	r, err := check.Run(context.Background(), h, pluginhost.Binary{Path: filepath.Join(bin, "msjfarm-policy-"+name)}, check.Options{Arrivals: 5000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConformingPlugins(t *testing.T) {
	for _, name := range []string{"fcfs", "randomfit"} {
		t.Run(name, func(t *testing.T) {
			r := runCheck(t, name)
			checks := map[string]int{}
			for _, it := range r.Items {
				if it.Status == check.Fail || it.Status == check.Warn {
					t.Errorf("%s %s %s: %s", it.Policy, it.Workload, it.Check, it.Detail)
				}
				if it.Status == check.Pass {
					checks[it.Check]++
				}
			}
			// info + 2 per policy + 7 per policy and workload.
			for _, c := range []string{"capacity", "lifecycle", "preemption", "served", "progress", "determinism"} {
				if checks[c] != len(check.Workloads) {
					t.Errorf("check %s passed %d times, want once per workload (%d)", c, checks[c], len(check.Workloads))
				}
			}
			if checks["schema"] != 1 || checks["rejects-bad-params"] != 1 || checks["info"] != 1 {
				t.Errorf("passes %v", checks)
			}
		})
	}
}

func TestNonConformingPlugin(t *testing.T) {
	r := runCheck(t, "bad")
	got := map[string]check.Item{}
	for _, it := range r.Items {
		key := it.Policy + "/" + it.Workload + "/" + it.Check
		got[key] = it
	}
	want := []struct {
		key    string
		status check.Status
		detail string
	}{
		{"//info", check.Fail, `"Bad_Name" is not lower-case-hyphenated`},
		{"fcfs/four-class/determinism", check.Pass, ""},
		{"nondeterministic/four-class/determinism", check.Fail, "different result bytes"},
		{"nondeterministic/four-class/capacity", check.Pass, ""},
		{"bad-schema//schema", check.Fail, `"depth"`},
		{"starver/four-class/served", check.Fail, "never completed"},
		{"starver/one-or-all/served", check.Fail, "unstable"},
		{"one-or-all-only/four-class/runs", check.Skip, "defined for one-or-all only"},
		{"one-or-all-only/one-or-all/served", check.Pass, ""},
		{"half-described/four-class/counters", check.Fail, "counter forgotten is reported but not described"},
	}
	for _, w := range want {
		it, ok := got[w.key]
		if !ok {
			t.Errorf("no item %s", w.key)
			continue
		}
		if it.Status != w.status || !strings.Contains(it.Detail, w.detail) {
			t.Errorf("%s: %s %q, want %s containing %q", w.key, it.Status, it.Detail, w.status, w.detail)
		}
	}
	if r.Failed() == 0 {
		t.Fatal("no failures reported")
	}
}

// The trace checker itself, on hand-built traces of k = 4 servers.
func TestCheckTrace(t *testing.T) {
	ev := func(kind sim.TraceKind, job int64, need, busy int) sim.TraceRecord {
		return sim.TraceRecord{Kind: kind, Job: job, Need: need, Busy: busy}
	}
	good := []sim.TraceRecord{
		ev(sim.TraceArrive, 0, 3, 0), ev(sim.TraceStart, 0, 3, 3),
		ev(sim.TraceArrive, 1, 2, 3), // waits: 3 + 2 > 4
		ev(sim.TraceComplete, 0, 3, 0), ev(sim.TraceStart, 1, 2, 2), ev(sim.TraceComplete, 1, 2, 0),
	}
	if tc := check.CheckTrace(good, 4, false, 2); len(tc.Capacity)+len(tc.Lifecycle)+len(tc.Preemption)+len(tc.Served) > 0 || tc.MaxBusy != 3 {
		t.Fatalf("good trace: %+v", tc)
	}
	cases := []struct {
		name  string
		evs   []sim.TraceRecord
		field func(check.TraceCheck) []string
		want  string
	}{
		{"over capacity", []sim.TraceRecord{ev(sim.TraceArrive, 0, 3, 0), ev(sim.TraceStart, 0, 3, 3), ev(sim.TraceArrive, 1, 2, 3), ev(sim.TraceStart, 1, 2, 5)},
			func(tc check.TraceCheck) []string { return tc.Capacity }, "5 of 4 servers busy"},
		{"busy misreported", []sim.TraceRecord{ev(sim.TraceArrive, 0, 3, 0), ev(sim.TraceStart, 0, 3, 2)},
			func(tc check.TraceCheck) []string { return tc.Capacity }, "reports 2 busy"},
		{"undeclared preemption", []sim.TraceRecord{ev(sim.TraceArrive, 0, 1, 0), ev(sim.TraceStart, 0, 1, 1), ev(sim.TracePreempt, 0, 1, 0)},
			func(tc check.TraceCheck) []string { return tc.Preemption }, "declared no preemption"},
		{"double start", []sim.TraceRecord{ev(sim.TraceArrive, 0, 1, 0), ev(sim.TraceStart, 0, 1, 1), ev(sim.TraceStart, 0, 1, 2)},
			func(tc check.TraceCheck) []string { return tc.Lifecycle }, "started while running"},
		{"never served", []sim.TraceRecord{ev(sim.TraceArrive, 0, 1, 0), ev(sim.TraceArrive, 1, 1, 0), ev(sim.TraceStart, 1, 1, 1), ev(sim.TraceComplete, 1, 1, 0)},
			func(tc check.TraceCheck) []string { return tc.Served }, "1 of 2 jobs never completed (first: job 0, waiting)"},
	}
	for _, c := range cases {
		got := strings.Join(c.field(check.CheckTrace(c.evs, 4, false, 2)), "; ")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCheckProgress(t *testing.T) {
	for _, c := range []struct {
		done  []int64
		total int64
		want  string
	}{
		{[]int64{10, 50, 100}, 100, ""},
		{nil, 0, "no progress"},
		{[]int64{50, 40, 100}, 100, "backwards"},
		{[]int64{10, 50}, 100, "ended at 50 of 100"},
	} {
		got := strings.Join(check.CheckProgress(c.done, c.total, 100), "; ")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("CheckProgress(%v): %q, want %q", c.done, got, c.want)
		}
	}
}
