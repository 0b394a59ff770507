package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestComposeFile checks docker-compose.yml: with a compose client (the
// `docker compose` plugin or docker-compose) it must pass `config`; in any
// case the topology must be there and every MSJFARM_* setting it passes
// must be a flag of the command that reads it.
func TestComposeFile(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "docker-compose.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cf struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Deploy      struct {
				Replicas int `yaml:"replicas"`
			} `yaml:"deploy"`
			Build struct {
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"nats", "minio", "coordinator", "worker"} {
		if _, ok := cf.Services[s]; !ok {
			t.Fatalf("service %s missing", s)
		}
	}
	if !strings.Contains(strings.Join(cf.Services["nats"].Command, " "), "-js") {
		t.Fatalf("nats without JetStream: %v", cf.Services["nats"].Command)
	}
	if cf.Services["worker"].Deploy.Replicas < 2 {
		t.Fatalf("worker replicas %d", cf.Services["worker"].Deploy.Replicas)
	}
	df := filepath.Join(root, cf.Services["coordinator"].Build.Dockerfile)
	if b, err := os.ReadFile(df); err != nil || !strings.Contains(string(b), "./cmd/msjfarm") {
		t.Fatalf("Dockerfile %s: %v", df, err)
	}
	for _, svc := range []string{"coordinator", "worker"} {
		s := cf.Services[svc]
		var env []string
		for k := range s.Environment {
			env = append(env, k)
		}
		checkArgs(t, svc, s.Command, env)
		// The health check asks the command's own /readyz, with the
		// image's msjfarm (it has no curl).
		port := httpFlagPort(s.Command)
		want := []string{"CMD", "/usr/local/bin/msjfarm", "probe", "http://localhost:" + strconv.Itoa(port) + "/readyz"}
		if port == 0 || strings.Join(s.Healthcheck.Test, " ") != strings.Join(want, " ") {
			t.Errorf("%s: healthcheck %q, want %q", svc, s.Healthcheck.Test, want)
		}
	}
	// The compose client, if any.
	var cmd *exec.Cmd
	if exec.Command("docker", "compose", "version").Run() == nil {
		cmd = exec.Command("docker", "compose", "-f", path, "config", "-q")
	} else if p, err := exec.LookPath("docker-compose"); err == nil {
		cmd = exec.Command(p, "-f", path, "config", "-q")
	} else {
		t.Log("no compose client (docker compose / docker-compose): structural checks only")
		return
	}
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", cmd.Args, err, out)
	}
}

var flagRE = regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--?([a-z0-9-]+)`)

// checkArgs checks that args (`msjfarm` command and flags) are valid and
// that every MSJFARM_* variable of env names a flag of that command
// (MSJFARM_S3_* are the storage credentials, read by package storage).
func checkArgs(t *testing.T, what string, args, env []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no msjfarm command", what)
		return
	}
	help, _ := exec.Command(bin, args[0], "-h").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(string(help), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Errorf("%s: msjfarm %s lists no flags:\n%s", what, args[0], help)
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "-") && !flags[strings.TrimLeft(a, "-")] {
			t.Errorf("%s: %s is not a flag of msjfarm %s", what, a, args[0])
		}
	}
	for _, k := range env {
		name, ok := strings.CutPrefix(k, "MSJFARM_")
		if !ok || strings.HasPrefix(name, "S3_") {
			continue
		}
		f := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if !flags[f] {
			t.Errorf("%s: %s matches no flag -%s of msjfarm %s", what, k, f, args[0])
		}
	}
}
