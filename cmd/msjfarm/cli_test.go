package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
)

var (
	binOnce sync.Once
	binDir  string // the binary's directory, which TestMain removes
	binPath string
	binErr  error
)

// msjfarmBinary builds the command once per test run: the command line is
// tested as shipped, exit status included. The binary (about 60 MB) is
// built into a directory of its own in $TMPDIR, removed by TestMain once
// every test has run.
func msjfarmBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "msjfarm-cli")
		if err != nil {
			binErr = err
			return
		}
		binDir, binPath = dir, filepath.Join(dir, "msjfarm")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = err
			t.Logf("%s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v", binErr)
	}
	return binPath
}

// msjfarm runs the binary and returns its exit status, stdout and stderr.
func msjfarm(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(msjfarmBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errs.String()
}

func TestCLIHelp(t *testing.T) {
	code, out, _ := msjfarm(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "reproduce") || !strings.Contains(out, "completion") {
		t.Fatalf("--help: exit %d\n%s", code, out)
	}
	code, _, errs := msjfarm(t, nil)
	if code != 2 || !strings.Contains(errs, "Available Commands:") {
		t.Fatalf("no command: exit %d\n%s", code, errs)
	}
	// help CMD prints that command's help, with synopsis, example and
	// flags; every command has a synopsis and an example.
	code, out, _ = msjfarm(t, nil, "help", "run")
	for _, want := range []string{"msjfarm run [flags] SWEEP.yaml", "Examples:", "msjfarm run examples/q-fig3.yaml", "--workers int", "MSJFARM_"} {
		if !strings.Contains(out, want) {
			t.Errorf("help run: no %q (exit %d)\n%s", want, code, out)
		}
	}
	var walk func(prefix []string, cs []command)
	walk = func(prefix []string, cs []command) {
		for _, c := range cs {
			path := append(append([]string{}, prefix...), strings.Fields(c.use)[0])
			if c.example == "" || !strings.Contains(c.example, "msjfarm "+strings.Join(path, " ")) {
				t.Errorf("%v: example %q does not show the command", path, c.example)
			}
			code, out, _ := msjfarm(t, nil, append(append([]string{"help"}, path...), "")[:len(path)+1]...)
			if code != 0 || !strings.Contains(out, "msjfarm "+strings.Join(path, " ")) || !strings.Contains(out, "Examples:") {
				t.Errorf("help %v: exit %d\n%s", path, code, out)
			}
			walk(path, c.subs)
		}
	}
	walk(nil, commands)
	if code, _, errs := msjfarm(t, nil, "plugin"); code != 2 || !strings.Contains(errs, "check") {
		t.Errorf("plugin without subcommand: exit %d\n%s", code, errs)
	}
}

func TestCLICompletionAndVersion(t *testing.T) {
	for sh, want := range map[string]string{"bash": "__start_msjfarm", "zsh": "#compdef msjfarm", "fish": "complete -c msjfarm"} {
		code, out, errs := msjfarm(t, nil, "completion", sh)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, no %q\n%s", sh, code, want, errs)
		}
	}
	code, out, _ := msjfarm(t, nil, "--version")
	// A test build has the module's (devel) version and the Go version.
	if code != 0 || !strings.HasPrefix(out, "msjfarm ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: exit %d: %q", code, out)
	}
	if _, out2, _ := msjfarm(t, nil, "-version"); out2 != out {
		t.Errorf("-version %q != --version %q", out2, out)
	}
}

// TestCLIFlags: flags before and after positional arguments, the single-
// dash spellings of the standard flag package, environment, and usage
// errors (exit 2) for unknown flags and commands.
func TestCLIFlags(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for _, args := range [][]string{
		{"run", "--dry-run", "--workers", "2", "--storage", data, sw},
		{"run", sw, "--dry-run", "--workers=2", "--storage", data},
		{"run", "-dry-run", sw, "-workers", "2", "-storage=" + data},
	} {
		code, out, errs := msjfarm(t, nil, args...)
		if code != 0 || !strings.Contains(out, "tasks            6\n") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	// Flags after the sweep file really run the campaign (not "want one
	// sweep file"); the table is printed.
	code, out, errs := msjfarm(t, nil, "run", sw, "-q", "--workers", "1", "--runner", "inprocess", "--storage", data)
	if code != 0 || !strings.Contains(out, "fcfs") || !strings.Contains(out, "E[T]") {
		t.Fatalf("run with trailing flags: exit %d\n%s%s", code, out, errs)
	}
	// The environment fills a flag not given; the command line wins.
	code, out, _ = msjfarm(t, []string{"MSJFARM_STORAGE=" + data}, "results", "run-cmd")
	if code != 0 || !strings.Contains(out, "fcfs") {
		t.Errorf("results with MSJFARM_STORAGE: exit %d\n%s", code, out)
	}
	if code, _, _ := msjfarm(t, []string{"MSJFARM_STORAGE=" + data}, "results", "run-cmd", "--storage", filepath.Join(dir, "none")); code == 0 {
		t.Errorf("--storage did not win over MSJFARM_STORAGE")
	}
	code, _, errs = msjfarm(t, nil, "run", "--bogus", sw)
	if code != 2 || !strings.Contains(errs, "unknown flag: --bogus") || !strings.Contains(errs, "msjfarm run --help") {
		t.Errorf("unknown flag: exit %d\n%s", code, errs)
	}
	code, _, errs = msjfarm(t, nil, "-bogus")
	if code != 2 || !strings.Contains(errs, "bogus") {
		t.Errorf("unknown single-dash flag: exit %d\n%s", code, errs)
	}
	code, _, errs = msjfarm(t, nil, "nonesuch")
	if code != 2 || !strings.Contains(errs, `unknown command "nonesuch"`) {
		t.Errorf("unknown command: exit %d\n%s", code, errs)
	}
	// A subcommand's: its path was printed after the prefix that already
	// names msjfarm ("msjfarm: msjfarm archive: …"), with no suggestion.
	code, _, errs = msjfarm(t, nil, "archive", "verfy", "x.msjar")
	if code != 2 || !strings.Contains(errs, `msjfarm: archive: unknown command "verfy" (did you mean "verify"?)`) {
		t.Errorf("unknown subcommand: exit %d\n%s", code, errs)
	}
	code, _, errs = msjfarm(t, nil, "worker", "-workers", "nope")
	if code != 2 || !strings.Contains(errs, "--workers") {
		t.Errorf("bad flag value: exit %d\n%s", code, errs)
	}
}

func TestSig(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{{4670.1, "4670"}, {424.66, "424.7"}, {0.012345, "0.01235"}, {7.7, "7.7"}, {123456, "123500"}, {1, "1"}, {-2.5, "-2.5"}, {0, "0"}, {3e-7, "3.000e-07"}} {
		if got := sig(c.x, 4); got != c.want {
			t.Errorf("sig(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-23T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := formatVersion(bi), "v1.2.3 revision 0123456789ab+dirty (2026-11-23T10:00:00Z), go1.26.0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi = &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}
	if got := formatVersion(bi); !strings.HasPrefix(got, "(devel) (no VCS revision") {
		t.Errorf("without VCS: %q", got)
	}
}

// The sandbox flags: a bad --plugin-sandbox or --plugin-memory is a usage
// error naming the flag; an unknown --plugin-user fails before anything
// runs, naming the flag; the default states what it applies.
func TestCLIPluginSandboxFlags(t *testing.T) {
	sweep := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(sweep, []byte("name: s\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: [fcfs]\nreplications: 1\nrun: {arrivals: 1e3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	cache := t.TempDir()
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(cfg, []byte("plugin-sandbox: auto\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--plugin-sandbox", "on"}, 2, `--plugin-sandbox "on": want require, best-effort, off or auto`},
		{[]string{"--plugin-memory", "lots"}, 2, "--plugin-memory"},
		{[]string{"--plugin-memory", "512MiB"}, 2, "--plugin-memory 512MiB: below 1 GiB a plugin (a Go program) cannot reserve its runtime's address space"},
		// A user no machine has is a usage error, as a bad value of the
		// other flags is (it exited 1, as a missing privilege does).
		{[]string{"--plugin-user", "no-such-user-here"}, 2, `--plugin-user "no-such-user-here"`},
		{[]string{"--plugin-env", "FLAKY_MODE,MSJFARM_S3_SECRET_KEY"}, 2, "--plugin-env MSJFARM_S3_SECRET_KEY"},
		{[]string{"--plugin-writable", "/no/such/dir"}, 2, `--plugin-writable "/no/such/dir"`}, // exited 1
		// Never the store, the plugin cache or what holds them: each of
		// these was taken, and a plugin could rewrite other campaigns'
		// results or the binaries they run.
		{[]string{"--plugin-writable", store}, 2, `--plugin-writable "` + store + `" is the result store`},
		{[]string{"--plugin-writable", filepath.Dir(store)}, 2, `holds the result store`},
		{[]string{"--plugin-writable", "/"}, 2, `--plugin-writable "/" holds `},
		{[]string{"--plugin-cache", cache, "--plugin-writable", filepath.Join(cache, "fcfs")}, 2, `is inside the plugin cache (` + cache + `)`},
		// Nor may they read the store, the cache or a home directory (other
		// campaigns' results and traces, other authors' binaries, keys).
		{[]string{"--plugin-readable", "/no/such/dir"}, 2, `--plugin-readable "/no/such/dir": stat /no/such/dir: no such file or directory`},
		{[]string{"--plugin-readable", store}, 2, `--plugin-readable "` + store + `" is the result store`},
		{[]string{"--plugin-readable", "/"}, 2, `--plugin-readable "/" holds `},
		{[]string{"--plugin-cache", cache, "--plugin-readable", filepath.Join(cache, "fcfs")}, 2, `is inside the plugin cache (` + cache + `)`},
		{[]string{"--plugin-cache", cache, "--plugin-readable", home}, 2, `--plugin-readable "` + home + `" is your home directory: a plugin could read keys and credentials`},
		{[]string{"--plugin-cache", cache, "--config", cfg, "--plugin-readable", filepath.Dir(cfg)}, 2, `--plugin-readable "` + filepath.Dir(cfg) + `" holds the --config file (` + cfg + `)`},
	} {
		code, _, errs := msjfarm(t, nil, append(append([]string{"run", "--storage", store}, c.args...), sweep)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("run %v: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, errs)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote its store: %v", err)
	}
	code, _, errs := msjfarm(t, nil, "run", "--storage", store, sweep)
	if code != 0 || !strings.Contains(errs, "plugin sandbox: ") {
		t.Errorf("run: exit %d, no statement of the plugin sandbox:\n%s", code, errs)
	}
	// A directory inside the home is the operator's to give, and the
	// start line names it.
	libs := filepath.Join(home, "env", "lib")
	if err := os.MkdirAll(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errs = msjfarm(t, nil, "run", "--storage", store, "--plugin-readable", libs, sweep)
	if code != 0 || !strings.Contains(errs, "also readable: "+libs+" (--plugin-readable)") {
		t.Errorf("run --plugin-readable %s: exit %d, the start line does not name it:\n%s", libs, code, errs)
	}
}

// TestSecretWherePathBelongs: a credential pasted where a path, a name or
// a bucket belongs is not echoed by the error that names it. Each of these
// printed the secret whole (the sweep path and the --config path through
// stat's error, the bucket name, a file URL's password= parameter), since
// the secrets were known only once a command had parsed its flags, and
// some errors were printed without the masking.
func TestSecretWherePathBelongs(t *testing.T) {
	const s3 = "S3cretKeyFromEnv99"
	const pw = "natsPw-on-argv-42"
	env := []string{"MSJFARM_S3_ACCESS_KEY=someuser", "MSJFARM_S3_SECRET_KEY=" + s3}
	cases := []struct {
		name   string
		env    []string
		args   []string
		secret string
	}{
		{"sweep path", env, []string{"run", "--dry-run", s3}, s3},
		{"config path", env, []string{"run", "--config", s3, "x.yaml"}, s3},
		{"bucket", env, []string{"results", "--storage", "s3://" + s3 + "?endpoint=127.0.0.1:9"}, s3},
		{"command", env, []string{s3}, s3},
		{"file URL parameter", nil, []string{"results", "--storage", "file:///tmp/x?password=" + pw}, pw},
		{"NATS password flag", nil, []string{"submit", "--nats-user", "u", "--nats-password", pw, "--nats-url", "nats://127.0.0.1:1", pw}, pw},
		{"NATS URL", []string{"MSJFARM_NATS_URL=nats://u:" + pw + "@127.0.0.1:1"}, []string{"submit", pw}, pw},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := msjfarm(t, c.env, c.args...)
			if code == 0 {
				t.Fatalf("exit 0\n%s%s", out, errs)
			}
			if strings.Contains(out+errs, c.secret) {
				t.Fatalf("exit %d: the secret is printed:\n%s%s", code, out, errs)
			}
			if !strings.Contains(errs, "xxxxx") {
				t.Fatalf("exit %d: no masked value where the secret was:\n%s", code, errs)
			}
		})
	}
}

// TestEnvOverridesSaid: a sweep key overridden by the environment is said
// by run, even with -q; and a stored campaign is read as it ran, whatever
// the environment of the reader: with MSJFARM_REPLICATIONS set in the
// shell, report expanded the stored spec into another campaign and failed
// ("the stored spec expands to campaign … (different msjfarm version?)").
func TestEnvOverridesSaid(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte("name: envsaid\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [2]}\npolicies: [fcfs]\nreplications: 3\nrun: {arrivals: 2000, warmup: 200}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "st")
	code, _, errs := msjfarm(t, []string{"MSJFARM_REPLICATIONS=2"}, "run", "-q", "--storage", st, sw)
	if code != 0 || !strings.Contains(errs, "the environment changes "+sw+": MSJFARM_REPLICATIONS=2 (replications)") {
		t.Fatalf("run: exit %d, the override not said:\n%s", code, errs)
	}
	// The note comes before the value is validated: a terminal escape in
	// it is printed escaped (it reached the terminal raw).
	_, _, errs = msjfarm(t, []string{"MSJFARM_DESCRIPTION=\x1b]0;pwned\a"}, "run", "--dry-run", sw)
	if !strings.Contains(errs, "the environment changes "+sw+": MSJFARM_DESCRIPTION=") || strings.ContainsAny(errs, "\x1b\a") {
		t.Fatalf("an escape sequence in an override: %q", errs)
	}
	code, out, errs := msjfarm(t, []string{"MSJFARM_REPLICATIONS=5", "MSJFARM_RUN_ARRIVALS=999"}, "report", "--storage", st, "envsaid", "--out", filepath.Join(dir, "rep"))
	if code != 0 {
		t.Fatalf("report under other overrides: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = msjfarm(t, []string{"MSJFARM_REPLICATIONS=5"}, "results", "--storage", st, "envsaid", "--csv")
	if code != 0 || strings.Count(strings.TrimSpace(out), "\n") != 1 || !strings.Contains(out, ",2,") {
		t.Fatalf("results under another override: exit %d (want one row of 2 replications)\n%s%s", code, out, errs)
	}
}

// TestReportOutReused: a report into a directory that holds another
// campaign's report removes the files only the first wrote (its MSFQ
// phase figures stayed beside the second's, without a word); --out inside
// the store is refused (145 files landed in campaigns/<id>/, and the next
// archive export carried them).
func TestReportOutReused(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "st")
	for name, pols := range map[string]string{"withmsfq": "[fcfs, {name: msfq, threshold: 31}]", "plain": "[fcfs]"} {
		sw := filepath.Join(dir, name+".yaml")
		body := "name: " + name + "\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [2, 4]}\npolicies: " + pols + "\nreplications: 2\nrun: {arrivals: 2000, warmup: 200}\n"
		if err := os.WriteFile(sw, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := msjfarm(t, nil, "run", "-q", "--storage", st, sw); code != 0 {
			t.Fatalf("run %s: exit %d\n%s", name, code, errs)
		}
	}
	out := filepath.Join(dir, "paper")
	if code, _, errs := msjfarm(t, nil, "report", "--storage", st, "withmsfq", "--out", out); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	phases, _ := filepath.Glob(filepath.Join(out, "msfq_phases*"))
	if len(phases) == 0 {
		t.Fatal("the MSFQ campaign's report has no msfq_phases files: the test shows nothing")
	}
	code, _, errs := msjfarm(t, nil, "report", "--storage", st, "plain", "--out", out)
	if code != 0 || !strings.Contains(errs, "removed ") {
		t.Fatalf("second report: exit %d, no removal said\n%s", code, errs)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "msfq_phases*")); len(left) > 0 {
		t.Fatalf("the first report's %v left beside the second's", left)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Fatal(err)
	}
	code, _, errs = msjfarm(t, nil, "report", "--storage", st, "plain", "--out", filepath.Join(st, "campaigns", "x"))
	if code != 2 || !strings.Contains(errs, "is inside the store") {
		t.Fatalf("--out inside the store: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(st, "campaigns", "x")); err == nil {
		t.Fatal("a directory was made inside the store")
	}
}
