package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// newcomerBase is a correct sweep file; each mistake below changes one line.
const newcomerBase = `name: first
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs, {name: msfq, threshold: 31}]
replications: 3
run: {arrivals: 1e4, warmup: 1e3, deadline: 1h}
`

// newcomerMistakes are the ten mistakes a newcomer most likely makes in a
// sweep file written by hand (from the first-contact walk and the
// examples' keys), each with the one-line error it must get: the file,
// line and column, the key path, the bad value and the fix (the nearest
// names for a misspelling, the expected form for a value).
var newcomerMistakes = []struct {
	name, from, to string
	want           string // after "<file>:"
}{
	{"misspelt top-level key", "replications: 3", "replicatons: 3",
		`6:1: replicatons: unknown key "replicatons" (did you mean "replications"?)`},
	{"misspelt policy", "[fcfs, {name", "[firstfit, {name",
		`5:12: policies[0]: unknown policy "firstfit" (msjfarm policies lists them) (did you mean "first-fit" or "firstfit-srpt"?)`},
	{"misspelt workload", "workload: one-or-all", "workload: one-or-al",
		`2:11: workload: unknown workload "one-or-al" (did you mean "one-or-all"`},
	{"misspelt parameter", "threshold: 31", "treshold: 31",
		`5:31: policies[1].treshold: unknown parameter "treshold" (did you mean "threshold"?)`},
	{"duration without a unit it knows", "deadline: 1h", "deadline: 1hour",
		`7:45: run.deadline: "1hour" is not a duration: write a number and a unit, like "90m"`},
	{"misspelt axis", "arrival_rate: [1, 2]", "arival_rate: [1, 2]",
		`4:3: axes.arival_rate: unknown axis "arival_rate" (use arrival_rate, load, servers`},
	{"parameter out of range for the workload", "threshold: 31", "threshold: 300",
		`5:42: policies[1].threshold: point arrival_rate=1: policy init: msfq: threshold 300 out of range [0, k−1] = [0, 31]`},
	{"count written as a word", "replications: 3", "replications: three",
		`6:15: replications: "three" is not a whole number`},
	{"misspelt key in the run block", "run: {arrivals", "run: {arivals",
		`7:7: run.arivals: unknown key "arivals" (did you mean "arrivals"?)`},
	{"absurd rate", "arrival_rate: [1, 2]", "arrival_rate: [1, 1e308]",
		`4:21: axes.arrival_rate: 1e+308 is outside [1e-12, 1e+12], the range of rates, means and times msjfarm accepts (choose another time unit`},
}

// TestNewcomerMistakes: each of the ten mistakes is refused by `msjfarm
// run` (dry run: nothing is written) and `msjfarm submit --dry-run` with
// exit 2 and a one-line error giving the position, the key path and the
// fix; the correct file passes. The error contains no Go type name.
func TestNewcomerMistakes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := captured(t, func() int {
		return dispatch([]string{"run", "--dry-run", "--storage", filepath.Join(dir, "data"), good})
	}); code != 0 {
		t.Fatalf("the correct file: exit %d: %s", code, errOut)
	}
	for i, m := range newcomerMistakes {
		t.Run(m.name, func(t *testing.T) {
			// A killed host's plugin TMPDIR, which run removes as it
			// starts: silently (it said so once, a second line).
			staleTmpDir(t)
			if !strings.Contains(newcomerBase, m.from) {
				t.Fatalf("%q not in the base file", m.from)
			}
			sw := filepath.Join(dir, "m"+string(rune('a'+i))+".yaml")
			if err := os.WriteFile(sw, []byte(strings.Replace(newcomerBase, m.from, m.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"run", "submit"} {
				code, _, errOut := captured(t, func() int {
					return dispatch([]string{cmd, "--dry-run", "--storage", filepath.Join(dir, "data"), sw})
				})
				var lines []string
				for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
					if !strings.Contains(l, "warning:") {
						lines = append(lines, l)
					}
				}
				if code != 2 || len(lines) != 1 {
					t.Fatalf("%s: exit %d, %d lines of error; want 2 and one line:\n%s", cmd, code, len(lines), errOut)
				}
				if want := sw + ":" + m.want; !strings.Contains(lines[0], want) {
					t.Errorf("%s:\n got %s\nwant …%s…", cmd, lines[0], want)
				}
				if goType.MatchString(lines[0]) {
					t.Errorf("%s: a Go type name in %q", cmd, lines[0])
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("a dry run created the store")
	}
}

// TestJointBoundPlacement: a policy's refusal is placed at a parameter
// the entry gives and the message names, else at the entry. Kill-Smart's
// joint bound (K−1)·ν ≤ k names K, left at its default here, and ν by its
// symbol: the error was placed at policies[0].k, a key the file does not
// have, for an entry that gives only nu.
func TestJointBoundPlacement(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"{name: killsmart, nu: 200000}", ":6:5: policies[0]: point arrival_rate=0.2: policy init: killsmart: (K−1)·ν = 20·200000"},
		{"{name: killsmart, K: 7, nu: 1000}", ":6:26: policies[0].k: point arrival_rate=0.2: policy init: killsmart: (K−1)·ν = 6·1000"},
	} {
		sw := filepath.Join(t.TempDir(), "ks.yaml")
		data := "name: ks\nworkload: killsmart-one-or-all\naxes:\n  arrival_rate: [0.2]\npolicies:\n  - " + c.entry +
			"\nreplications: 1\nrun: {arrivals: 1e3, warmup: 1e2}\n"
		if err := os.WriteFile(sw, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := captured(t, func() int { return dispatch([]string{"run", "--dry-run", sw}) })
		if code != 2 || !strings.Contains(errOut, sw+c.want) {
			t.Errorf("%s: exit %d, want 2 and …%s…:\n%s", c.entry, code, c.want, errOut)
		}
	}
}

// goType matches what Go type names look like in a message: a qualified
// type ('sweep.File', *dist.Spec, []interface {}, map[string]interface
// {}), or a bare Go kind in parentheses, as %T prints it.
var goType = regexp.MustCompile(`'?\*?\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b'?|\[\](any|interface|string|int|float64)|map\[string\]|\((string|int|int64|float64|bool|uint64)\)|interface \{\}`)

// TestNewcomerMistakeWithFamilyPlugin: after make build, the msjfarm
// binary finds bin/plugins, and msfq is served by its family's plugin
// binary; a threshold out of range for the workload is still refused when
// the sweep is read (exit 2, the same one-line error), since that binary
// is msjfarm's own build of the family: before, the dry run failed in its
// calibration (exit 1) and a real run failed each msfq task on a worker.
func TestNewcomerMistakeWithFamilyPlugin(t *testing.T) {
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := hosttest.Build(plugins, "./plugins/quickswap/cmd/msjfarm-policy-quickswap"); err != nil {
		t.Fatal(err)
	}
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(strings.Replace(newcomerBase, "threshold: 31", "threshold: 300", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	want := sw + `:5:42: policies[1].threshold: point arrival_rate=1: policy init: msfq: threshold 300 out of range [0, k−1] = [0, 31]`
	for _, cmd := range []string{"run", "submit"} {
		code, _, errs := captured(t, func() int {
			return dispatch([]string{cmd, "--dry-run", "--plugin-path", plugins, "--storage", filepath.Join(dir, "data"), sw})
		})
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s --dry-run: exit %d, want 2 and %q in\n%s", cmd, code, want, errs)
		}
	}
	// And the plugin binary is what serves msfq there.
	h := pluginhost.New(pluginhost.Config{MaxConcurrent: 1})
	defer h.Close()
	reg := registry.New(t.Context(), registry.Options{Dirs: []string{plugins}, Host: h})
	if e, err := reg.Lookup("msfq"); err != nil || e.Source == registry.BuiltIn || e.Plugin != "quickswap" {
		t.Fatalf("msfq is served by %+v (%v), want the quickswap plugin binary", e, err)
	}
}

// staleTmpDir leaves a private plugin TMPDIR of a host that is gone, as a
// killed worker does (sandbox.RemoveStale removes it).
func staleTmpDir(t *testing.T) {
	t.Helper()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(os.TempDir(), fmt.Sprintf("msjfarm-plugin-%d-newcomer", gone.Process.Pid))
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
}

// Flag values that were taken silently or refused as a failure (exit 1),
// some after the store's directory was made: each is a usage error (exit
// 2, one line naming the flag), before anything is created, dry run or
// not. Before: --max-deliver 0 became 5, --ack-wait -5s and --http-linger
// without --http were taken, a dry run passed --runner bogus and --http
// notanaddr, and --runner bogus left an empty store directory.
func TestRunFlagMistakes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "want one sweep file"},
		{[]string{"--workers", "0"}, "--workers must be >= 1, got 0"},
		{[]string{"--runner", "bogus"}, `--runner "bogus": want auto, plugin or inprocess`},
		{[]string{"--max-deliver", "0"}, "--max-deliver must be >= 1"},
		{[]string{"--ack-wait", "-5s"}, "--ack-wait must be positive, got -5s"},
		{[]string{"--http-linger", "2s"}, "there is no --http"},
		{[]string{"--http", "notanaddr"}, `--http "notanaddr": not a host:port address`},
		{[]string{"-q", "-v"}, "-q (quiet: no progress line) and -v (verbose"},
		// Files the run writes, found before the store is written (the
		// plugin binaries and pins were in it); a dry run writes none.
		{[]string{"--run-log", filepath.Join(dir, "no", "such", "dir")}, "--run-log: open "},
		{[]string{"--store-dir", good}, "--store-dir " + good + ": not a directory"},
		{[]string{"--cpuprofile", filepath.Join(dir, "no", "such", "dir")}, "--cpuprofile: open "},
	} {
		for _, dry := range []bool{true, false} {
			if dry && len(c.args) > 0 && slices.Contains([]string{"--run-log", "--store-dir"}, c.args[0]) {
				continue
			}
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"run", "--storage", data}, c.args...)
			if dry {
				args = append(args, "--dry-run")
			}
			if c.args != nil {
				args = append(args, good)
			}
			code, _, errOut := captured(t, func() int { return dispatch(args) })
			if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("%v: exit %d, want 2 and one line with %q:\n%s", args, code, c.want, errOut)
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("%v: the store directory was made", args)
			}
		}
	}
}

// TestDryRunProfiled: --cpuprofile covers reading and planning the
// sweep, so a dry run writes a profile too (it started after them, and a
// dry run of a 10⁶-point sweep, 50 s of planning, had none).
func TestDryRunProfiled(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "cpu.prof")
	if code, _, errOut := captured(t, func() int {
		return dispatch([]string{"run", "--storage", filepath.Join(dir, "data"), "--dry-run", "--cpuprofile", prof, good})
	}); code != 0 {
		t.Fatalf("dry run with --cpuprofile: exit %d\n%s", code, errOut)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Fatalf("dry run with --cpuprofile wrote no profile: %v", err)
	}
}

// TestRunQuietVerbose: `msjfarm run -q -v` (or -qv) is a usage error
// naming both flags, before anything is created; both were taken, and the
// run was as verbose as -v alone.
func TestRunQuietVerbose(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flags := range [][]string{{"-q", "-v"}, {"-qv"}, {"-v", "--dry-run", "-q"}} {
		data := filepath.Join(dir, "data")
		args := append(append([]string{"run", "--storage", data}, flags...), good)
		code, _, errOut := msjfarm(t, []string{"HOME=" + dir}, args...)
		if code != 2 || !strings.Contains(errOut, "msjfarm: run: -q (quiet") || !strings.Contains(errOut, "and -v (verbose") ||
			strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, want 2 and one line naming -q and -v:\n%s", args, code, errOut)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("%v: the store directory was made", args)
		}
	}
}

// submit's dry run takes --workers as run's does: a usage error, before
// the sweep is read (it was exit 1, after the whole plan).
func TestSubmitWorkersFlag(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.yaml")
	if err := os.WriteFile(good, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := captured(t, func() int {
		return dispatch([]string{"submit", "--dry-run", "--workers", "-5", "--nats-url", "nats://127.0.0.1:1", good})
	})
	if code != 2 || !strings.Contains(errOut, "--workers must be >= 1, got -5") {
		t.Errorf("exit %d, want 2: %s", code, errOut)
	}
}

// The farm commands' numbers and durations are checked before anything
// starts (exit 2, the flag named): each of these was taken, the worker
// announcing "0 slots" and idling for ever, the coordinator using its
// default wait for --verify-wait 0 or -1s.
func TestFarmFlagBounds(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--workers", "0"}, "worker: --workers must be >= 1, got 0"},
		{[]string{"worker", "--workers", "-1"}, "worker: --workers must be >= 1, got -1"},
		{[]string{"worker", "--grace", "-1s"}, "worker: --grace must be >= 0, got -1s"},
		{[]string{"worker", "--plugin-stall", "500ms"}, "worker: --plugin-stall 500ms: must be at least 1s (0 turns the check off)"},
		{[]string{"worker", "--plugin-stall", "-1s"}, "worker: --plugin-stall -1s: must be at least 1s"},
		{[]string{"worker", "extra"}, `worker: unexpected argument "extra"`},
		// No machine has this user, and none lets plugins run as root:
		// both exited 1, as a worker lacking the privilege to switch does.
		{[]string{"worker", "--plugin-user", "no-such-user-msjfarm"}, `worker: --plugin-user "no-such-user-msjfarm": user: unknown user no-such-user-msjfarm`},
		{[]string{"worker", "--plugin-user", "0:0"}, `--plugin-user "0:0": plugins must not run as root`},
		// The engine refused it at the first replication: exit 1.
		{[]string{"simulate", "--rate", "7", "--arrivals", "0"}, "simulate: --arrivals must be >= 1, got 0"},
		{[]string{"simulate", "--arrivals", "0"}, "simulate: --arrivals must be >= 1, got 0"},
		// Named run.max_in_system, the sweep file's key, and run.warmup,
		// at the first replication: exit 1.
		{[]string{"simulate", "--rate", "7", "--max-in-system", "1e18"}, "simulate: --max-in-system: must be at most 33554432"},
		{[]string{"simulate", "--rate", "7", "--max-in-system", "16"}, "simulate: --max-in-system: 16 is below the workload's 32 servers"},
		{[]string{"simulate", "--rate", "7", "--warmup", "1e16"}, "simulate: --warmup: must be at most 2^53"},
		// Ran for hours, holding 2.9 KB a replication, until memory ran out.
		{[]string{"simulate", "--rate", "7", "--reps", "100000000"}, "simulate: --reps 100000000 is more than 1000000"},
		{[]string{"worker", "--plugin-user", "65534:0"}, `--plugin-user "65534:0": plugins must not run as root or in its group`},
		// Replaced by the defaults without a word (0, −1), or failing a
		// correct plugin (NaN, 1.5: "flagged unstable at low load").
		{[]string{"plugin", "check", "fcfs", "--arrivals", "0"}, "plugin check: --arrivals must be >= 1, got 0"},
		{[]string{"plugin", "check", "fcfs", "--arrivals", "1e16"}, "plugin check: --arrivals: must be at most 2^53"},
		{[]string{"plugin", "check", "fcfs", "--load", "-1"}, "plugin check: --load must be in (0, 1)"},
		{[]string{"plugin", "check", "fcfs", "--load", "NaN"}, "plugin check: --load must be in (0, 1)"},
		{[]string{"plugin", "check", "fcfs", "--load", "1.5"}, "plugin check: --load must be in (0, 1): the checks run a stable system, got 1.5"},
		// A health check that never gave up (0 is no limit to http.Client).
		{[]string{"probe", "--timeout", "0", "http://127.0.0.1:1/readyz"}, "probe: --timeout must be > 0, got 0s"},
		{[]string{"probe", "ftp://x"}, "probe: want one http:// URL"},
		{[]string{"gc", "extra"}, "gc: takes no arguments"},
		// Ignored: the campaigns were listed, or the comparison printed.
		{[]string{"results", "--compare", "msf,fcfs", "--storage", "x"}, "results: --csv and --compare read one campaign: name it"},
		{[]string{"results", "q-fig3", "--csv", "--compare", "msf,fcfs", "--storage", "x"}, "results: --csv prints the stored summary, --compare a comparison: give one of them"},
		// Printed a table of 0% ± 0, "no difference", exit 0.
		{[]string{"results", "q-fig3", "--compare", "msf,MSF", "--storage", "x"}, `--compare "msf,MSF": a series compared with itself`},
		{[]string{"policies", "x"}, "policies: takes no arguments"},
		{[]string{"analyze", "msfq", "--k", "0"}, "analyze msfq: -k 0: need k >= 2"},
		{[]string{"analyze", "msfq", "--k", "1000000000000"}, "analyze msfq: -k 1000000000000: need k <= 1048576"},
		// A name is part of NATS subjects and reaches the operator's
		// terminal: an escape sequence cleared the screen and a newline
		// forged a status line; 5,000 characters closed the worker's
		// connection for good.
		{[]string{"worker", "--worker-name", "evil\x1b[2J\nforged line"}, `worker: --worker-name: worker name "evil\x1b[2J\nforged line": '\x1b' is not allowed`},
		{[]string{"worker", "--worker-name", "a*"}, `'*' is not allowed`},
		{[]string{"worker", "--worker-name", strings.Repeat("w", 5000)}, "worker: --worker-name: worker name: 5000 bytes; want 1 to 128"},
		{[]string{"coordinator", "--verify-wait", "0s"}, "coordinator: --verify-wait must be > 0, got 0s"},
		{[]string{"coordinator", "--verify-wait", "-1s"}, "coordinator: --verify-wait must be > 0, got -1s"},
		{[]string{"coordinator", "--lease-ttl", "0s"}, "coordinator: --lease-ttl must be > 0, got 0s"},
		{[]string{"coordinator", "--lease-ttl", "10ms"}, "coordinator: --lease-ttl 10ms: at least 100ms"},
		{[]string{"coordinator", "--reconcile", "0s"}, "coordinator: --reconcile must be > 0, got 0s"},
		// viper's words: Unsupported Config Type "conf".
		{[]string{"status", "--config", "newcomer_test.go"}, `config file newcomer_test.go: its extension ".go" does not name a format: name it .yaml, .yml, .toml or .json`},
		// The embedded server's flags were dropped without a word.
		{[]string{"coordinator", "--nats-url", "nats://farm:pw@127.0.0.1:1", "--listen", "0.0.0.0:4536"}, "coordinator: --listen and --store-dir set up the embedded NATS server, and --nats-url nats://farm:xxxxx@127.0.0.1:1"},
		{[]string{"coordinator", "--nats-url", "nats://127.0.0.1:1", "--store-dir", "x"}, "give one or the other"},
		{[]string{"run", "--storage", "127.0.0.1:9000", "x.yaml"}, `storage: a store "127.0.0.1:9000" reads as a server's host:port`},
		{[]string{"status", "--storage", "s3:/farm"}, `storage: a store starting "s3:" reads as a URL without its "//"`},
	} {
		code, _, errOut := captured(t, func() int { return dispatch(c.args) })
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, errOut)
		}
	}
	// A busy --http or --metrics address is a usage error, as run's is
	// (the coordinator and the worker exited 1).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, args := range [][]string{{"coordinator", "--http", l.Addr().String(), "--nats-url", "nats://127.0.0.1:1"},
		{"worker", "--metrics", l.Addr().String(), "--nats-url", "nats://127.0.0.1:1"}} {
		code, _, errOut := captured(t, func() int { return dispatch(args) })
		if code != 2 || !strings.Contains(errOut, "address already in use") {
			t.Errorf("%v: exit %d, want 2 and the busy address:\n%s", args, code, errOut)
		}
	}
}

// TestTooManySamples: an empirical distribution of more samples than a
// task can carry is refused at its key by the dry run and the run, with
// nothing written. Every task carries its workload: 2·10^5 samples passed
// every check, then each task was too large to publish, and a farm's
// campaign stayed "running" for ever.
func TestTooManySamples(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("name: emp\nservers: 4\nclasses:\n  - {name: a, need: 1, share: 1, service: {dist: empirical, samples: [")
	for i := 0; i < 6000; i++ {
		fmt.Fprintf(&b, "%d.5, ", i%7+1)
	}
	b.WriteString("1]}}\n  - {name: b, need: 4, share: 1, service: {dist: empirical, samples: [")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "%d.25, ", i%5+1)
	}
	b.WriteString("1]}}\naxes:\n  arrival_rate: [0.1]\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1000}\n")
	sw := filepath.Join(dir, "emp.yaml")
	if err := os.WriteFile(sw, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		data := filepath.Join(t.TempDir(), "data")
		args := []string{"run", "--storage", data, sw}
		if dry {
			args = append(args, "--dry-run")
		}
		// Class 0 has 6000 samples and a closing 1, class 1 5000 and a
		// closing 1: 6001 + 5001 = 11002 > 10000, at classes[1].
		code, _, errOut := captured(t, func() int { return dispatch(args) })
		if want := "classes[1].service.samples: 11002 samples in the classes up to this one; at most 10000 in all"; code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", args, code, want, errOut)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("%v: the store directory was made", args)
		}
	}
}

// A mistake in a profile the run does not select refuses the file before
// anything is made, naming the profile at its line (sweep's
// TestOtherProfilesChecked has the cases): a paper-size profile was
// checked only the day it was submitted.
func TestRunOtherProfileChecked(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "p.yaml")
	// Line 10, column 19: the 0 of "replications: 0" (newcomerBase has 7 lines).
	body := newcomerBase + "profiles:\n  paper:\n    replications: 0\n  quick: {}\n"
	if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"", "quick"} {
		data := filepath.Join(dir, "data")
		args := []string{"run", "--storage", data, sw}
		if profile != "" {
			args = append(args, "--profile", profile)
		}
		code, _, errOut := msjfarm(t, []string{"HOME=" + dir}, args...)
		want := sw + `:10:19: replications: must be >= 1, got 0 (in profile "paper", not selected`
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", args, code, want, errOut)
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("%v: the store directory was made", args)
		}
	}
}
