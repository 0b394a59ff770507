package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// TestUnknownEnv: a misspelt MSJFARM_ variable gets a warning naming the
// nearest variables msjfarm reads; those it reads (a farm flag's, a sweep
// override, the storage's credentials, the plugin path) and variables of
// other programs get none.
func TestUnknownEnv(t *testing.T) {
	var code int
	root := newRoot(&code)
	got := unknownEnv(root, []string{
		"MSJFARM_REPLICATONS=30", "MSJFARM_STORGE=s3://b", "MSJFARM_TRACE_TIME_SCALE=2", "MSJFARM_NATS_URLS=nats://x",
		"MSJFARM_NATS_URL=nats://x", "MSJFARM_WORKERS=4", "MSJFARM_STORAGE=/d", "MSJFARM_RUN_ARRIVALS=1e5",
		"MSJFARM_PROFILE=paper", "MSJFARM_S3_SECRET_KEY=x", "MSJFARM_PLUGIN_PATH=/p", "MSJFARM_CONFIG=/c.yaml",
		"PATH=/bin", "MSJFARMX=1", "=weird",
	})
	want := []string{
		"MSJFARM_NATS_URLS is set, but msjfarm reads no variable of that name (did you mean MSJFARM_NATS_URL?): it has no effect",
		"MSJFARM_REPLICATONS is set, but msjfarm reads no variable of that name (did you mean MSJFARM_REPLICATIONS?): it has no effect",
		"MSJFARM_STORGE is set, but msjfarm reads no variable of that name (did you mean MSJFARM_STORAGE or MSJFARM_STORE?): it has no effect",
		"MSJFARM_TRACE_TIME_SCALE is set, but msjfarm reads no variable of that name: it has no effect",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUnknownEnvWarnsAndRuns: msjfarm run with a misspelt override warns
// on stderr and runs the sweep as the file says (the variable has no
// effect: 3 replications, not 30).
func TestUnknownEnvWarnsAndRuns(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSJFARM_REPLICATONS", "30")
	code, out, errs := captured(t, func() int { return dispatch([]string{"run", "--dry-run", sw}) })
	if code != 0 || !strings.Contains(errs, "msjfarm: warning: MSJFARM_REPLICATONS is set, but msjfarm reads no variable of that name (did you mean MSJFARM_REPLICATIONS?)") ||
		!strings.Contains(out, "tasks            12\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// envName matches an MSJFARM_ variable's name in a file; a name followed
// by '_', '<' or '*' is a family (MSJFARM_S3_*, MSJFARM_<FLAG>), not a
// variable.
var envNameRE = regexp.MustCompile(`MSJFARM_[A-Z0-9_]*[A-Z0-9]([_<*]?)`)

// notEnv are MSJFARM_ names the repository uses that are not
// environment variables: the NATS streams, and the prefixes the sandbox
// test looks for in a plugin's environment.
var notEnv = []string{"MSJFARM_TASKS", "MSJFARM_ADVISORIES", "MSJFARM_S3", "MSJFARM_NATS",
	// docs/sweep.md's examples of what is warned of
	"MSJFARM_REPLICATONS", "MSJFARM_TRACE_TIME_SCALE"}

// TestEnvNamesKnown: every MSJFARM_ variable the repository's code,
// scripts, deployment files and documentation name is one msjfarm knows
// (knownEnv), so that a variable the repository itself sets, or tells a
// user to set, is never warned of as unknown.
func TestEnvNamesKnown(t *testing.T) {
	var code int
	known := knownEnv(newRoot(&code))
	names := map[string][]string{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") && n != ".ci" || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == "envcheck.go" || d.Name() == "envcheck_test.go" {
			return nil // the misspellings they warn of
		}
		switch filepath.Ext(p) {
		case ".go", ".sh", ".md", ".yml", ".yaml", ".sbatch", ".toml", "":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range envNameRE.FindAllStringSubmatch(string(data), -1) {
			name := strings.TrimRight(m[0], "_<*")
			if m[1] == "" && !slices.Contains(notEnv, name) && !known[name] {
				names[name] = append(names[name], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n, files := range names {
		t.Errorf("%s (in %s) is not a variable msjfarm knows: add it to otherEnv, or make it a flag", n, strings.Join(slices.Compact(files), ", "))
	}
}

// TestConfigFileKeys: a config file key that is no farm command's flag is
// refused (exit 2, every such key named with the nearest flags), before
// anything runs, and so is a key repeated in another case; a flag of
// another command is accepted (one file may
// serve a coordinator and its workers), and the file's values are used.
func TestConfigFileKeys(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := filepath.Join(dir, "data")
	bad := write("bad.yaml", "storge: "+data+"\nnats_url: nats://x\nworkers: 2\n")
	code, _, errs := captured(t, func() int { return dispatch([]string{"run", "--config", bad, "--dry-run", sw}) })
	want := `config file ` + bad + `: unknown key "nats_url" (did you mean "nats-url"?); unknown key "storge" (did you mean "storage" or "store"?)`
	if code != 2 || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, want 2 and %q in\n%s", code, want, errs)
	}
	// A key repeated in another case: viper folds keys and kept the last
	// one, silently.
	twice := write("twice.yaml", "storage: "+data+"\nworkers: 2\nStorage: /elsewhere\n")
	code, _, errs = captured(t, func() int { return dispatch([]string{"run", "--config", twice, "--dry-run", sw}) })
	want = `config file ` + twice + `: line 3, column 1: storage: key "Storage" repeats "storage" of line 1`
	if code != 2 || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, want 2 and %q in\n%s", code, want, errs)
	}
	// Another command's flag, with a value it does not take: store is
	// report's boolean --store. Accepted, and the run used ./msjfarm-data.
	other := write("other.yaml", "store: s3://bucket?endpoint=h:9000\nverify: 1%\nworkers: 2\nplugin-stall: 30s\n")
	code, _, errs = captured(t, func() int { return dispatch([]string{"run", "--config", other, "--dry-run", sw}) })
	for _, want := range []string{`store (--store): "s3://bucket?endpoint=h:9000" is not true or false (a flag of msjfarm report)`, `verify (--verify): "1%" is not a number`} {
		if code != 2 || !strings.Contains(errs, want) {
			t.Fatalf("exit %d, want 2 and %q in\n%s", code, want, errs)
		}
	}
	if strings.Contains(errs, "plugin-stall") || strings.Contains(errs, "workers") {
		t.Errorf("a good value refused:\n%s", errs)
	}
	// A sweep file's key, whose name contains the flag "ca": not that.
	sweepKey := write("sweepkey.yaml", "replications: 30\n")
	code, _, errs = captured(t, func() int { return dispatch([]string{"run", "--config", sweepKey, "--dry-run", sw}) })
	if code != 2 || !strings.Contains(errs, `unknown key "replications"`) || strings.Contains(errs, `"ca"`) {
		t.Fatalf("exit %d, want 2 and no \"ca\" suggested in\n%s", code, errs)
	}
	shared := write("shared.toml", "storage = \""+data+"\"\nlisten = \"0.0.0.0:4223\"\nworkers = 2\n")
	code, out, errs := captured(t, func() int { return dispatch([]string{"run", "--config", shared, "--dry-run", sw}) })
	if code != 0 || !strings.Contains(out, "storage          "+data+" (does not exist yet") {
		t.Fatalf("shared config: exit %d\n%s%s", code, out, errs)
	}
}

// A flag's value from the environment or the config file that its flag
// cannot take is named where it came from, in plain words: it was
// `--workers (from environment or config): invalid argument "many" for
// "--workers" flag: strconv.ParseInt: parsing "many": invalid syntax`.
func TestFlagValueFromEnvOrConfig(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("workers: many\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := captured(t, func() int { return dispatch([]string{"run", "--config", cfg, "--dry-run", sw}) })
	if want := `config file ` + cfg + `: workers (--workers): "many" is not a whole number`; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("config: exit %d, want 2 and %q:\n%s", code, want, errs)
	}
	t.Setenv("MSJFARM_ACK_WAIT", "30")
	code, _, errs = captured(t, func() int { return dispatch([]string{"run", "--dry-run", sw}) })
	if want := `MSJFARM_ACK_WAIT (--ack-wait): "30" is not a duration`; code != 2 || !strings.Contains(errs, want) || strings.Contains(errs, "strconv") {
		t.Errorf("env: exit %d, want 2 and %q:\n%s", code, want, errs)
	}
}

// TestConfigFileCredentials: the S3 credentials may be given in a config
// file (s3-access-key, s3-secret-key; no flag, which ps would show),
// where they were refused as unknown keys. A run against a real MinIO
// with them in the file and none in the environment stores its campaign,
// and the secret is printed nowhere; half a pair is an error naming the
// missing key; a file holding a credential that other users may read is
// warned of.
func TestConfigFileCredentials(t *testing.T) {
	ep, ak, sk := miniotest.Start(t)
	for _, env := range []string{"MSJFARM_S3_ACCESS_KEY", "MSJFARM_S3_SECRET_KEY", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"} {
		t.Setenv(env, "")
		os.Unsetenv(env)
	}
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	store := "s3://cfgcreds?endpoint=" + ep + "&secure=false"
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("farm.yaml", "storage: "+store+"\ns3-access-key: "+ak+"\ns3-secret-key: "+sk+"\n", 0o600)
	code, out, errs := captured(t, func() int { return dispatch([]string{"run", "--config", cfg, "-q", "--workers", "2", sw}) })
	if code != 0 {
		t.Fatalf("run with the credentials in the config file: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, sk) || strings.Contains(errs, "warning") {
		t.Fatalf("the secret key is printed, or a 0600 file is warned of:\n%s%s", out, errs)
	}
	code, out, errs = captured(t, func() int { return dispatch([]string{"results", "--config", cfg}) })
	if code != 0 || !strings.Contains(out, "first") {
		t.Fatalf("results with the config file's credentials: exit %d\n%s%s", code, out, errs)
	}

	half := write("half.yaml", "storage: "+store+"\ns3-secret-key: "+sk+"\n", 0o600)
	code, out, errs = captured(t, func() int { return dispatch([]string{"results", "--config", half}) })
	want := "config file " + half + ": s3-secret-key is given without s3-access-key (MSJFARM_S3_ACCESS_KEY): S3 needs both"
	if code != 2 || !strings.Contains(errs, want) || strings.Contains(out+errs, sk) {
		t.Fatalf("half a pair: exit %d, want 2 and %q, no secret:\n%s%s", code, want, out, errs)
	}

	open := write("open.yaml", "storage: "+store+"\ns3-access-key: "+ak+"\ns3-secret-key: "+sk+"\n", 0o644)
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = captured(t, func() int { return dispatch([]string{"results", "--config", open}) })
	want = "config file " + open + " holds credentials (s3-secret-key) and other users may read it (mode 0644): chmod 600 it"
	if code != 0 || !strings.Contains(errs, want) {
		t.Fatalf("a readable file of credentials: exit %d, want 0 and %q:\n%s%s", code, want, out, errs)
	}
}

// A credential variable with white space around it (a newline from echo,
// a Kubernetes secret made from a file) is warned of by name, never by
// value; the server answered only "SignatureDoesNotMatch".
func TestWarnPaddedCredentials(t *testing.T) {
	env := map[string]string{"MSJFARM_S3_SECRET_KEY": "s3cr3tvalue\n", "MSJFARM_NATS_TOKEN": "fine", "AWS_ACCESS_KEY_ID": " AKIA"}
	got := captureStderr(t, func() {
		warnPaddedCredentials(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	})
	for _, want := range []string{"warning: MSJFARM_S3_SECRET_KEY starts or ends with white space", "warning: AWS_ACCESS_KEY_ID starts or ends"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "MSJFARM_NATS_TOKEN") || strings.Contains(got, "s3cr3tvalue") || strings.Contains(got, "AKIA") {
		t.Errorf("warned of a clean variable, or printed a value:\n%s", got)
	}
}

// TestConfigFileTextValues: a config value for a text flag must be text.
// YAML read unquoted 1e3, 0x10 and 2026-01-01 as numbers and dates, and
// the flag got their Go form ("1000", "16", "2026-01-01 00:00:00 +0000
// UTC"): a password 1e3 failed authentication with no hint, a store was
// created under the date's text. A list for a one-value flag was taken as
// no value; a list for a repeatable flag (plugin-writable) was read as "",
// the current directory.
func TestConfigFileTextValues(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, want string }{
		{"nats-password: 1e3\n", `nats-password: the file gives the number 1000, not text: quote it`},
		{"storage: 2026-01-01\n", `storage: the file gives a date, not text: quote it`},
		{"storage: 0x10\n", `storage: the file gives the number 16, not text`},
		{"storage: [" + dir + "]\n", `storage: the file gives a list, not text: give one value`},
		{"plugin-writable: [" + dir + ", 3]\n", `plugin-writable: the file gives a list, not text: quote every item`},
		{"s3-secret-key: 12345678\ns3-access-key: ak\n", `s3-secret-key: the file gives the number 12345678, not text`},
	} {
		cfg := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(cfg, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errs := captured(t, func() int { return dispatch([]string{"run", "--config", cfg, "--dry-run", sw}) })
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, want 2 and %q:\n%s", c.body, code, c.want, errs)
		}
	}
	// A list of text for a repeatable flag gives each item.
	a, b := t.TempDir(), t.TempDir()
	ff := newFarmFlags(pflag.NewFlagSet("x", pflag.ContinueOnError), false, "")
	rf := addRunnerFlags(ff.fs)
	cfg := filepath.Join(dir, "list.yaml")
	if err := os.WriteFile(cfg, []byte("plugin-writable: ["+a+", "+b+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ff.fs.Parse([]string{"--config", cfg}); err != nil {
		t.Fatal(err)
	}
	if err := ff.parse(); err != nil {
		t.Fatal(err)
	}
	if got := *rf.writable; len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("plugin-writable from the file: %q, want [%s %s]", got, a, b)
	}
}
