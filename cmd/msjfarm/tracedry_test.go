package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// dryTraceSWF is a 6-job trace on 8 processors whose jobs need 2, 4 or 8:
// not one-or-all (MSFQ refuses it), and without a job that fits on one
// server.
const dryTraceSWF = `; Version: 2
; MaxProcs: 8
1 0 0 3 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2 1 0 5 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3 2 0 2 8 -1 -1 8 -1 -1 1 -1 -1 -1 0 -1 -1 -1
4 4 0 4 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
5 5 0 1 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
6 7 0 6 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
`

const dryTraceSweep = `name: trace-dry
seed: 4
trace: {TRACE}
policies: [fcfs, serverfilling]
replications: 2
run: {arrivals: 5}
`

// TestTraceSweepDryRun: a sweep that replays a trace is planned by run
// --dry-run and submit --dry-run (its calibrations replay the trace read
// here, or, named by sha256 alone, the copy in storage, read before
// planning; nothing is left in TMPDIR); a policy the trace's widths rule
// out, or a servers value that leaves the trace no job, is refused before
// anything runs, with exit 2 and the entry and point named, also when the
// policy's family is served by a plugin binary (the trace is replayed by
// the built-in policy) and for a policy only a plugin serves (which
// cannot replay a trace), and also for a trace named by sha256 alone; a
// trace that storage lacks, or holds with another size, is refused at
// trace.sha256.
func TestTraceSweepDryRun(t *testing.T) {
	dir := t.TempDir()
	tmpdir := os.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if err := os.WriteFile(filepath.Join(dir, "t.swf"), []byte(dryTraceSWF), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, trace, from, to string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		s := strings.Replace(strings.Replace(dryTraceSweep, "{TRACE}", trace, 1), from, to, 1)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	byFile := "{file: " + filepath.Join(dir, "t.swf") + "}"
	good := write("good.yaml", byFile, "", "")
	data := filepath.Join(dir, "data")
	for _, cmd := range []string{"run", "submit"} {
		code, out, errs := captured(t, func() int { return dispatch([]string{cmd, "--dry-run", "--storage", data, good}) })
		if code != 0 || !strings.Contains(out, "to run           4\n") || !strings.Contains(out, "calibration      2 cost classes, 2 replays of the trace") {
			t.Fatalf("%s --dry-run of a trace sweep: exit %d\n%s%s", cmd, code, out, errs)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("a dry run created %s", data)
	}

	for _, tc := range []struct{ name, from, to, want string }{
		{"msfq", "[fcfs, serverfilling]", "[fcfs, msfq]",
			`policies[1]: point (no axes): policy init: msfq: defined for one-or-all workloads only`},
		{"no job fits", "replications: 2", "axes: {servers: [8, 1]}\nreplications: 2",
			`point servers=1: trace has no usable job on 1 servers (of 6 job lines: 0 without a submit time, 0 without a run time, 0 without processors, 6 wider than the servers)`},
		{"longer than the trace", "run: {arrivals: 5}", "run: {arrivals: 500}",
			`6:17: run.arrivals: warmup+arrivals = 500, but the trace has 6 usable jobs on 8 servers: a replication replays at most that many (point (no axes))`},
	} {
		sw := write(tc.name+".yaml", byFile, tc.from, tc.to)
		for _, cmd := range []string{"run", "submit"} {
			for _, dry := range []bool{true, false} {
				args := []string{cmd, "--storage", data, sw}
				if dry {
					args = append([]string{cmd, "--dry-run"}, args[1:]...)
				}
				if cmd == "submit" && !dry {
					continue // needs a farm; its validation is the dry run's
				}
				code, _, errs := captured(t, func() int { return dispatch(args) })
				if code != 2 || !strings.Contains(errs, tc.want) {
					t.Errorf("%s: %v: exit %d, want 2 and …%s… in\n%s", tc.name, args, code, tc.want, errs)
				}
			}
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("a refused sweep created %s", data)
	}

	// The trace in storage, then named by its sha256 alone.
	if code, _, errs := captured(t, func() int { return dispatch([]string{"run", "-q", "--runner", "inprocess", "--storage", data, good}) }); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	traces, _ := os.ReadDir(filepath.Join(data, "traces"))
	if len(traces) != 1 {
		t.Fatalf("stored traces: %v", traces)
	}
	info, err := traces[0].Info()
	if err != nil {
		t.Fatal(err)
	}
	bySHA := "{sha256: " + traces[0].Name() + ", size: " + strconv.FormatInt(info.Size(), 10) + "}"
	sha := write("sha.yaml", bySHA, "seed: 4", "seed: 5")
	if code, out, errs := captured(t, func() int { return dispatch([]string{"run", "--dry-run", "--storage", data, sha}) }); code != 0 || !strings.Contains(out, "to run           4\n") {
		t.Fatalf("dry run of a trace named by sha256: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := captured(t, func() int { return dispatch([]string{"run", "--dry-run", sha}) }); code != 1 || !strings.Contains(errs, "named by sha256 alone and no storage is given") {
		t.Fatalf("dry run of a trace named by sha256 without storage: exit %d\n%s", code, errs)
	}
	if left := scratch.Left(tmp); len(left) != 0 {
		t.Errorf("the dry runs left %v in TMPDIR", left)
	}
	// Named by sha256 alone, the trace is read from the storage given, so
	// its policies are tried on it before anything runs, as for
	// trace.file; a trace that storage lacks, or holds with another size,
	// is refused at trace.sha256.
	bad := write("shamsfq.yaml", bySHA, "[fcfs, serverfilling]", "[fcfs, msfq]")
	missing := write("shamissing.yaml", "{sha256: "+strings.Repeat("ab", 32)+", size: 100}", "", "")
	wrongSize := write("shasize.yaml", "{sha256: "+traces[0].Name()+", size: 7}", "", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--runner", "inprocess", "--storage", data, bad}, "policies[1]: point (no axes): policy init: msfq: defined for one-or-all workloads only"},
		{[]string{"run", "--dry-run", "--storage", data, bad}, "policies[1]: point (no axes): policy init: msfq: defined for one-or-all workloads only"},
		{[]string{"submit", "--dry-run", "--storage", data, bad}, "policies[1]: point (no axes): policy init: msfq: defined for one-or-all workloads only"},
		{[]string{"submit", "--nats-url", "nats://127.0.0.1:1", "--storage", data, bad}, "policies[1]: point (no axes): policy init: msfq"},
		{[]string{"run", "--storage", data, missing}, "shamissing.yaml:3:17: trace.sha256: trace not in storage"},
		{[]string{"submit", "--dry-run", "--storage", data, wrongSize}, "shasize.yaml:3:17: trace.sha256: traces/" + traces[0].Name() + " in file://" + data + " has " + strconv.FormatInt(info.Size(), 10) + " bytes, the sweep says 7"},
	} {
		code, _, errs := captured(t, func() int { return dispatch(tc.args) })
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want 2 and …%s… in\n%s", tc.args, code, tc.want, errs)
		}
	}
	if left := scratch.Left(tmp); len(left) != 0 {
		t.Errorf("the runs left %v in TMPDIR", left)
	}

	// With plugin binaries on the search path (make build's bin/plugins):
	// msfq is then served by its family's binary, but a trace is replayed
	// in-process, by the built-in policy, which is what is tried; a policy
	// only a plugin serves cannot replay a trace at all.
	// (The sandboxed plugin, user nobody, makes its socket under TMPDIR:
	// the system's, not the test's private one.)
	t.Setenv("TMPDIR", tmpdir)
	plugins := filepath.Join(dir, "plugins")
	if err := hosttest.Build(plugins, "./plugins/quickswap/cmd/msjfarm-policy-quickswap",
		"./worker/pluginhost/testdata/msjfarm-policy-hostile"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, policy, want string }{
		{"msfq by its plugin", "msfq", "policies[1]: point (no axes): policy init: msfq: defined for one-or-all workloads only"},
		{"a plugin-only policy", "hostile-honest", "policy hostile-honest is served only by a plugin binary"},
	} {
		sw := write("p-"+tc.policy+".yaml", byFile, "[fcfs, serverfilling]", "[fcfs, "+tc.policy+"]")
		for _, cmd := range []string{"run", "submit"} {
			code, _, errs := captured(t, func() int {
				return dispatch([]string{cmd, "--dry-run", "--plugin-path", plugins, "--storage", data, sw})
			})
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("%s: %s --dry-run: exit %d, want 2 and …%s… in\n%s", tc.name, cmd, code, tc.want, errs)
			}
		}
	}
}
