package pluginhost_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// A plugin linking a shared library of its own, outside the system's
// library directories (a C or C++ policy library under /opt, a conda
// environment, /nix/store): msjfarm-policy-cgolib, built here with gcc and
// cgo, its library in a directory of the test's named by its RUNPATH.
//
//   - Confined, it cannot start: its root holds the system's libraries
//     only. The error is the loader's, read: "its dynamic loader found no
//     libmsjfarmtest.so …", naming the directories its RUNPATH gives and
//     the flag, without looking into them (before, it read "the plugin wrote no handshake line … a plugin
//     serves with the SDK's Serve", which sent its author to the SDK).
//   - Confined with that directory readable (--plugin-readable), it runs a
//     replication, as the plugin user of a root worker (nobody) too.
//   - Unconfined, it runs (the binary itself is sound).
func TestPluginLibraryOutside(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc here to build a plugin with a shared library of its own")
	}
	dir, err := os.MkdirTemp("", "msjfarm-cgolib-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	lib, bin := filepath.Join(dir, "lib"), filepath.Join(dir, "bin")
	for _, d := range []string{dir, lib, bin} {
		// Readable by the plugin user of a root worker.
		if err := os.MkdirAll(d, 0o755); err != nil || os.Chmod(d, 0o755) != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(lib, "msjfarmtest.c")
	if err := os.WriteFile(src, []byte("int msjfarmtest_answer(void) { return 42; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(lib, "libmsjfarmtest.so"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := hosttest.BuildEnv(bin, []string{"CGO_ENABLED=1", "CGO_LDFLAGS=-L" + lib + " -Wl,-rpath=" + lib},
		"./worker/pluginhost/testdata/msjfarm-policy-cgolib"); err != nil {
		t.Fatal(err)
	}
	b := pluginhost.Binary{Path: filepath.Join(bin, "msjfarm-policy-cgolib")}

	t.Run("confined", func(t *testing.T) {
		h := newHost(t, pluginhost.Config{Sandbox: requireSandbox(t, "self", 0)})
		_, err := h.Info(context.Background(), b)
		var pe *pluginhost.Error
		if !errors.Is(err, pluginhost.ErrStart) || !errors.As(err, &pe) {
			t.Fatalf("want the start refused, got %v", err)
		}
		for _, want := range []string{"its dynamic loader found no libmsjfarmtest.so where a confined plugin may read",
			"the binary's RUNPATH names " + lib + ": where it is, --plugin-readable DIR lets every confined plugin read that directory"} {
			if !strings.Contains(pe.Msg, want) {
				t.Errorf("the error does not say %q:\n%v", want, err)
			}
		}
		if strings.Contains(pe.Msg, "handshake") {
			t.Errorf("the error speaks of the handshake, not of the library:\n%v", err)
		}
	})
	for _, user := range []string{"self", "nobody"} {
		t.Run("readable/"+user, func(t *testing.T) {
			if user == "nobody" && os.Geteuid() != 0 {
				t.Skip("running plugins as nobody needs root")
			}
			sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: user, Readable: []string{lib}})
			if err != nil {
				t.Skipf("no full sandbox here: %v", err)
			}
			if d := sb.Describe(); !strings.Contains(d, "also readable: "+lib+" (--plugin-readable)") {
				t.Errorf("the start line does not name the directory: %s", d)
			}
			h := newHost(t, pluginhost.Config{Sandbox: sb, MaxConcurrent: 1})
			if _, err := h.Run(context.Background(), b, request(t, "fcfs", 2000, 1), pluginhost.RunOptions{}); err != nil {
				t.Fatalf("with %s readable: %v", lib, err)
			}
		})
	}
	t.Run("unconfined", func(t *testing.T) {
		h := newHost(t, pluginhost.Config{Sandbox: sandboxOff(t), MaxConcurrent: 1})
		if _, err := h.Run(context.Background(), b, request(t, "fcfs", 2000, 1), pluginhost.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// A --plugin-readable directory is read, never written: the hostile
// plugin lists it (what the operator gave) and its write there fails;
// the directory is unchanged. Without the flag the listing fails too.
func TestReadableIsReadOnly(t *testing.T) {
	dir, err := os.MkdirTemp("", "msjfarm-readable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // writable by anyone: only the sandbox stops the write
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOSTILE_STORE=" + dir}
	b := pluginhost.Binary{Path: binary("hostile")}
	for _, c := range []struct {
		name     string
		readable []string
	}{{"readable", []string{dir}}, {"not given", nil}} {
		t.Run(c.name, func(t *testing.T) {
			sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self", Readable: c.readable})
			if err != nil {
				t.Skipf("no full sandbox here: %v", err)
			}
			h := newHost(t, pluginhost.Config{Sandbox: sb, MaxConcurrent: 1, Env: env})
			_, err = h.Run(context.Background(), b, request(t, "hostile-store", 100, 1), pluginhost.RunOptions{})
			listed := err != nil && strings.Contains(err.Error(), "attack store SUCCEEDED: ") && strings.Contains(err.Error(), "shared.txt")
			if listed != (c.readable != nil) {
				t.Errorf("listing the directory: %v", err)
			}
			_, err = h.Run(context.Background(), b, request(t, "hostile-write-store", 100, 1), pluginhost.RunOptions{})
			if err == nil || strings.Contains(err.Error(), "SUCCEEDED") {
				t.Errorf("writing the directory: %v", err)
			}
			t.Logf("write: %.400s", err)
			if es, _ := os.ReadDir(dir); len(es) != 1 {
				t.Errorf("the directory holds %d entries, want shared.txt alone", len(es))
			}
		})
	}
}
