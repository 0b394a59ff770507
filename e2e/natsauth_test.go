package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.yaml.in/yaml/v3"

	"github.com/msjfarm/msjfarm/internal/procutil"
)

// natsAuthScript is the script docker-compose.yml and deploy/k8s start
// nats-server with, and where both mount it.
const (
	natsAuthScript = "deploy/k8s/nats-auth.sh"
	natsAuthMount  = "/etc/msjfarm/nats-auth.sh"
)

// TestNATSPasswordNotOnArgv checks that the compose file and the
// Kubernetes manifests start nats-server without its password on the
// command line, where any user of the host reads it (ps), and that the way
// they do it works: the script they mount, run with their own arguments
// and a real nats-server, takes passwords that nats-server's config syntax
// would misread unquoted (digits only, a boolean, quotes, backslashes, a
// dollar sign, braces), accepts exactly that password with JetStream on,
// and never puts it in nats-server's argv.
func TestNATSPasswordNotOnArgv(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	argsets := map[string][]string{
		"docker-compose.yml": composeNATS(t, root),
		"deploy/k8s":         k8sNATS(t, root),
	}
	bin := natsServerBinary(t)
	// The script runs `nats-server` from PATH, as in the image.
	pathDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(pathDir, "nats-server")); err != nil {
		t.Fatal(err)
	}
	passwords := []string{`12345678`, `true`, `a b#c"d\e$HOME}{'`}
	n := 0
	for from, args := range argsets {
		for _, pw := range passwords {
			n++
			t.Run(fmt.Sprintf("%s/%d", strings.ReplaceAll(from, "/", "_"), n), func(t *testing.T) {
				runNATSAuth(t, root, pathDir, args, "msjfarm", pw)
			})
		}
	}
	t.Run("empty password refused", func(t *testing.T) {
		cmd := exec.Command("sh", filepath.Join(root, natsAuthScript), "-js")
		cmd.Env = append(os.Environ(), "PATH="+pathDir+":"+os.Getenv("PATH"), "NATS_USER=msjfarm", "NATS_PASSWORD=")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "NATS_PASSWORD must both be set") {
			t.Fatalf("exit %d (want 2), output %q", code, out)
		}
	})
}

// runNATSAuth runs the script with the deployment's nats-server arguments
// (its store and monitoring port moved to a temporary directory and a free
// port, a free client port on 127.0.0.1 added) and checks the server.
func runNATSAuth(t *testing.T, root, pathDir string, deployArgs []string, user, pw string) {
	dir := t.TempDir()
	port, err := procutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	mon, err := procutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(deployArgs)
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-sd":
			args[i+1] = filepath.Join(dir, "js")
		case "-m":
			args[i+1] = strconv.Itoa(mon)
		}
	}
	args = append(args, "-a", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd := exec.Command("sh", append([]string{filepath.Join(root, natsAuthScript)}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+pathDir+":"+os.Getenv("PATH"), "TMPDIR="+dir,
		"NATS_USER="+user, "NATS_PASSWORD="+pw)
	logs, exited := startLogged(t, "nats-server", cmd, 5*time.Second)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	waitFor(t, "nats-server with the password", 30*time.Second, func() bool {
		select {
		case <-exited:
			t.Fatalf("nats-server exited:\n%s", logs.String())
		default:
		}
		nc, err := nats.Connect(url, nats.UserInfo(user, pw), nats.Timeout(time.Second))
		if err != nil {
			return false
		}
		defer nc.Close()
		js, err := nc.JetStream()
		if err != nil {
			t.Fatal(err)
		}
		_, err = js.AccountInfo()
		return err == nil
	})
	// The script exec'd nats-server: the process started is the server.
	argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(argv, []byte("nats-server")) || bytes.Contains(argv, []byte(pw)) {
		t.Fatalf("nats-server's argv %q: want nats-server without the password", bytes.ReplaceAll(argv, []byte{0}, []byte{' '}))
	}
	for _, wrong := range []string{pw + "x", ""} {
		if nc, err := nats.Connect(url, nats.UserInfo(user, wrong), nats.Timeout(2*time.Second)); err == nil {
			nc.Close()
			t.Fatalf("password %q accepted", wrong)
		}
	}
	// The config file, the only place the password is written: the
	// container's own, mode 0600.
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "js" {
			continue
		}
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", e.Name(), st.Mode().Perm())
		}
	}
}

// composeNATS checks the compose file's nats service: the script as its
// entrypoint, mounted from the repository, its credentials in the
// environment, none on the command line. It returns the script's arguments.
func composeNATS(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf struct {
		Services map[string]struct {
			Entrypoint  []string          `yaml:"entrypoint"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	s := cf.Services["nats"]
	if want := []string{"/bin/sh", natsAuthMount}; !slices.Equal(s.Entrypoint, want) {
		t.Fatalf("compose nats entrypoint %q, want %q", s.Entrypoint, want)
	}
	if !slices.Contains(s.Volumes, "./"+natsAuthScript+":"+natsAuthMount+":ro") {
		t.Fatalf("compose nats volumes %q: %s not mounted at %s", s.Volumes, natsAuthScript, natsAuthMount)
	}
	noSecretArgs(t, "compose nats command", s.Command)
	for _, k := range []string{"NATS_USER", "NATS_PASSWORD"} {
		if s.Environment[k] == "" {
			t.Fatalf("compose nats: %s not in its environment", k)
		}
	}
	return s.Command
}

// k8sNATS checks the same of deploy/k8s: the StatefulSet runs the script
// from the ConfigMap the kustomization generates from it, with the
// credentials from the Secret.
func k8sNATS(t *testing.T, root string) []string {
	t.Helper()
	dir := filepath.Join(root, "deploy", "k8s")
	kb, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var kust struct {
		ConfigMapGenerator []struct {
			Name  string   `yaml:"name"`
			Files []string `yaml:"files"`
		} `yaml:"configMapGenerator"`
	}
	if err := yaml.Unmarshal(kb, &kust); err != nil {
		t.Fatal(err)
	}
	cm := ""
	for _, g := range kust.ConfigMapGenerator {
		if slices.Contains(g.Files, filepath.Base(natsAuthScript)) {
			cm = g.Name
		}
	}
	if cm == "" {
		t.Fatalf("kustomization: no configMapGenerator with %s", filepath.Base(natsAuthScript))
	}
	nb, err := os.ReadFile(filepath.Join(dir, "nats.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ss struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Command []string `yaml:"command"`
						Args    []string `yaml:"args"`
						Env     []struct {
							Name      string `yaml:"name"`
							ValueFrom struct {
								SecretKeyRef *struct{} `yaml:"secretKeyRef"`
							} `yaml:"valueFrom"`
						} `yaml:"env"`
						VolumeMounts []struct {
							Name      string `yaml:"name"`
							MountPath string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
					Volumes []struct {
						Name      string `yaml:"name"`
						ConfigMap *struct {
							Name string `yaml:"name"`
						} `yaml:"configMap"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(nb))
	for dec.Decode(&ss) == nil && ss.Kind != "StatefulSet" {
	}
	if ss.Kind != "StatefulSet" || len(ss.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("deploy/k8s/nats.yaml: no StatefulSet with one container")
	}
	c := ss.Spec.Template.Spec.Containers[0]
	if want := []string{"/bin/sh", natsAuthMount}; !slices.Equal(c.Command, want) {
		t.Fatalf("k8s nats command %q, want %q", c.Command, want)
	}
	vol := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == filepath.Dir(natsAuthMount) {
			vol = m.Name
		}
	}
	mounted := false
	for _, v := range ss.Spec.Template.Spec.Volumes {
		mounted = mounted || v.Name == vol && v.ConfigMap != nil && v.ConfigMap.Name == cm
	}
	if !mounted {
		t.Fatalf("k8s nats: ConfigMap %s not mounted at %s", cm, filepath.Dir(natsAuthMount))
	}
	noSecretArgs(t, "k8s nats args", c.Args)
	fromSecret := 0
	for _, e := range c.Env {
		if (e.Name == "NATS_USER" || e.Name == "NATS_PASSWORD") && e.ValueFrom.SecretKeyRef != nil {
			fromSecret++
		}
	}
	if fromSecret != 2 {
		t.Fatal("k8s nats: NATS_USER and NATS_PASSWORD not both from the Secret")
	}
	return c.Args
}

// noSecretArgs fails if args give nats-server a credential or a variable
// that would expand into one.
func noSecretArgs(t *testing.T, what string, args []string) {
	t.Helper()
	for _, a := range args {
		if strings.Contains(a, "PASSWORD") || slices.Contains([]string{"--pass", "--user", "--auth", "-c", "--config"}, a) {
			t.Fatalf("%s %q: a credential on nats-server's command line", what, args)
		}
	}
}
