package pluginhost_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/worker/pluginhost/hosttest"
)

// bin is the directory of the plugin binaries built for this test run.
var bin string

// TestMain builds the real plugin binaries the tests run (once per test
// binary): the fcfs family's plugin, the test plugins under testdata/, and
// the third-party example in its own module.
func TestMain(m *testing.M) {
	if p := os.Getenv("HOSTTEST_ORPHAN_PLUGIN"); p != "" {
		orphanHelper(p)
		return
	}
	if p := os.Getenv("HOSTTEST_THREADS_PLUGIN"); p != "" {
		threadsHelper(p)
		return
	}
	if p := os.Getenv("HOSTTEST_ASLIMIT_PLUGIN"); p != "" {
		asLimitHelper(p)
		return
	}
	if p := os.Getenv("HOSTTEST_TTY_PLUGIN"); p != "" {
		terminalHelper(p)
		return
	}
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "msjfarm-host-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin = dir
		t0 := time.Now()
		errc := make(chan error, 2)
		go func() { errc <- hosttest.BuildExternal(dir, "examples/thirdparty", "./cmd/msjfarm-policy-randomfit") }()
		// The hostile plugin is built as its author would to do the most
		// harm: statically (see hosttest.BuildStatic).
		go func() { errc <- hosttest.BuildStatic(dir, "./worker/pluginhost/testdata/msjfarm-policy-hostile") }()
		if err := hosttest.Build(dir,
			"./plugins/fcfs/cmd/msjfarm-policy-fcfs",
			"./worker/pluginhost/testdata/msjfarm-policy-crashy",
			"./worker/pluginhost/testdata/msjfarm-policy-badproto",
		); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for range 2 {
			if err := <-errc; err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		fmt.Fprintf(os.Stderr, "built test plugins in %.1fs\n", time.Since(t0).Seconds())
		return m.Run()
	}())
}

func binary(name string) string { return filepath.Join(bin, "msjfarm-policy-"+name) }
