package main

import (
	"github.com/spf13/pflag"
	"slices"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

const runTestSweep = `name: run-cmd
seed: 5
workload: one-or-all
axes:
  arrival_rate: [1, 2]
policies: [fcfs]
replications: 3
run: {arrivals: 2e3, warmup: 1e2}
`

// TestRunCommand runs `msjfarm run` in-process: the command's flags reach
// package local (which has the tests of running, resuming and
// interrupting), and validation errors exit non-zero without writing
// anything.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if code := runRun([]string{"-workers", "2", "-q", "-runner", "inprocess", "-storage", data, sw}); code != 0 {
		t.Fatalf("run: exit %d", code)
	}
	camps, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "summary.csv"))
	res, _ := filepath.Glob(filepath.Join(data, "campaigns", "*", "results", "*.json"))
	if len(camps) != 1 || len(res) != 6 {
		t.Fatalf("summaries %v, %d results", camps, len(res))
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(runTestSweep, "[fcfs]", "[no-such-policy]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	nothing := filepath.Join(dir, "nothing")
	if code := runRun([]string{"-storage", nothing, bad}); code == 0 {
		t.Fatal("invalid sweep: exit 0")
	}
	if code := runRun([]string{"-storage", nothing, filepath.Join(dir, "missing.yaml")}); code == 0 {
		t.Fatal("missing sweep: exit 0")
	}
	if code := runRun([]string{"-storage", nothing, "-workers", "0", sw}); code == 0 {
		t.Fatal("-workers 0: exit 0")
	}
	if _, err := os.Stat(nothing); !os.IsNotExist(err) {
		t.Fatalf("validation error created %s (%v)", nothing, err)
	}
}

// TestFarmFlagsFromEnvAndConfig: flag > environment > config file.
func TestFarmFlagsFromEnvAndConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "farm.yaml")
	if err := os.WriteFile(cfg, []byte("nats-url: nats://from-file:4222\nstorage: /from/file\nnats-user: fileuser\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSJFARM_NATS_URL", "nats://from-env:4222")
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	ff := newFarmFlags(fs, true, "./default")
	if err := fs.Parse([]string{"--config", cfg, "--storage", "/from/flag"}); err != nil {
		t.Fatal(err)
	}
	if err := ff.parse(); err != nil {
		t.Fatal(err)
	}
	if *ff.natsURL != "nats://from-env:4222" || *ff.storage != "/from/flag" || *ff.user != "fileuser" {
		t.Fatalf("nats-url %q storage %q user %q", *ff.natsURL, *ff.storage, *ff.user)
	}
}

// TestSecurityFlags: --nats-token from the environment, the CAs from a
// config file (--ca shared, --nats-ca winning for NATS), the old --tls-*
// names still read, and the secrets registered for redaction.
func TestSecurityFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "farm.yaml")
	if err := os.WriteFile(cfg, []byte("ca: /etc/farm/ca.pem\nnats-password: pw-from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MSJFARM_NATS_TOKEN", "tok-from-env")
	t.Setenv("MSJFARM_S3_SECRET_KEY", "s3-secret-env")
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	ff := newFarmFlags(fs, true, "./default")
	if err := fs.Parse([]string{"--config", cfg, "--tls-cert", "/c.pem", "--nats-key", "/k.pem",
		"--nats-url", "nats://url-token-1@h:1,nats://u:url-pw-2@h:2"}); err != nil {
		t.Fatal(err)
	}
	if err := ff.parse(); err != nil {
		t.Fatal(err)
	}
	if *ff.token != "tok-from-env" || *ff.tlsCert != "/c.pem" || *ff.tlsKey != "/k.pem" || ff.natsCA() != "/etc/farm/ca.pem" {
		t.Fatalf("token %q cert %q key %q nats CA %q", *ff.token, *ff.tlsCert, *ff.tlsKey, ff.natsCA())
	}
	if o := ff.storageOptions(); len(o) != 1 {
		t.Fatalf("%d storage options, want the shared CA", len(o))
	}
	for _, want := range []string{"tok-from-env", "pw-from-file", "s3-secret-env", "url-token-1", "url-pw-2"} {
		if !slices.Contains(processSecrets, want) {
			t.Errorf("%q is not among the secrets to redact %v", want, processSecrets)
		}
	}
	if slices.Contains(processSecrets, "u") {
		t.Fatalf("the user name \"u\" (shorter than minSecret, and not a secret) is among the secrets to redact %v", processSecrets)
	}
	if err := fs.Parse([]string{"--nats-ca", "/n.pem"}); err != nil {
		t.Fatal(err)
	}
	if ff.natsCA() != "/n.pem" {
		t.Fatalf("--nats-ca %q does not win over --ca", ff.natsCA())
	}
}
