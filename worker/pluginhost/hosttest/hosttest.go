// Package hosttest builds plugin binaries for tests: the test harness of
// worker/pluginhost and sdk/check compiles real plugins (once per test
// binary, in TestMain) and runs them through the host.
package hosttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot returns the msjfarm module root, found from the working
// directory upward.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/msjfarm/msjfarm\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("msjfarm module root not found above the working directory")
		}
		dir = parent
	}
}

// Build compiles the main packages pkgs (paths relative to the module root,
// e.g. ./plugins/fcfs/cmd/msjfarm-policy-fcfs) into out, each binary named
// after its directory, with one `go build` (so the packages compile in
// parallel and share the build cache).
func Build(out string, pkgs ...string) error { return build(out, nil, pkgs) }

// BuildStatic is Build without cgo: statically linked binaries, as a
// hostile plugin's author may build them (the Go runtime then starts its
// threads itself, with small stacks, where through cgo each thread's
// 8 MiB stack counts against the sandbox's address-space limit).
func BuildStatic(out string, pkgs ...string) error {
	return build(out, []string{"CGO_ENABLED=0"}, pkgs)
}

// BuildEnv is Build with env added to the go command's environment (a
// cgo plugin's CGO_LDFLAGS).
func BuildEnv(out string, env []string, pkgs ...string) error { return build(out, env, pkgs) }

func build(out string, env, pkgs []string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	return run(root, env, append([]string{"build", "-o", out + string(os.PathSeparator)}, pkgs...)...)
}

// BuildExternal compiles the third-party plugin module in dir (relative to
// the module root; e.g. examples/thirdparty), main package pkg inside it,
// into out, as its author would: `go build` in its own module. The module
// is first copied to a scratch directory outside the repository with its
// replace directive pointed at this checkout, so that the build proves a
// policy written elsewhere works, and resolves modules from the local
// cache only (-mod=mod, GOPROXY=off, GOSUMDB=off: no network, and a go.sum
// behind the main module's requirements is completed from the cache rather
// than failing).
func BuildExternal(out, dir, pkg string) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "msjfarm-thirdparty-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := os.CopyFS(scratch, os.DirFS(filepath.Join(root, dir))); err != nil {
		return err
	}
	mod := filepath.Join(scratch, "go.mod")
	b, err := os.ReadFile(mod)
	if err != nil {
		return err
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "replace github.com/msjfarm/msjfarm") {
			l = "replace github.com/msjfarm/msjfarm => " + root
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(mod, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		return err
	}
	env := []string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off"}
	return run(scratch, env, "build", "-o", out+string(os.PathSeparator), pkg)
}

func run(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, b)
	}
	return nil
}

// FamilyPackages lists the plugin main packages of the policy families,
// ./plugins/<family>/cmd/<binary> relative to the module root (what
// `make plugins` builds), sorted.
func FamilyPackages() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	dirs, err := filepath.Glob(filepath.Join(root, "plugins", "*", "cmd", "*"))
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("no plugin main packages under %s/plugins/*/cmd", root)
	}
	return pkgs, nil
}

// Processes lists the pids of the processes whose environment holds the
// entry kv (e.g. a marker a test plugin gives the children it forks), so
// that a test can tell whether any outlived what should have ended them.
func Processes(kv string) []string {
	var pids []string
	ds, _ := os.ReadDir("/proc")
	for _, d := range ds {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, e := range strings.Split(string(b), "\x00") {
			if e == kv {
				pids = append(pids, d.Name())
				break
			}
		}
	}
	return pids
}
