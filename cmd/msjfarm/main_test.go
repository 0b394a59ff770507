package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/scratch"
)

// TestMain lets the test binary stand in for msjfarm when the plugin host
// re-executes it to serve a built-in family (registry.Self is the running
// executable), so that run's default plugin path is tested as shipped.
//
// Once the tests have run, it removes the directory msjfarmBinary built
// the binary in (keeping m.Run's status): it was never removed, and 65 of
// them (4 GB) piled up in /tmp. So does the test process's own scratch
// directory, which the commands called in process (a run's NATS store)
// make and msjfarm's main removes as it exits; the next msjfarm to start
// removed it (TestNothingLeftInTmpdir).
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "__serve-family" {
		os.Exit(dispatch(os.Args[1:]))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	scratch.Close()
	os.Exit(code)
}

// TestNothingLeftInTmpdir runs this test binary again on tests that use
// the built msjfarm (msjfarmBinary) and that call commands in process (a
// run among them),
// with $TMPDIR an empty directory: once it has passed, the directory is
// empty. The binary's build directory stayed there for good.
func TestNothingLeftInTmpdir(t *testing.T) {
	if os.Getenv("NOTHING_LEFT_CHILD") != "" {
		t.Skip("in the child run") // (an MSJFARM_ variable would be warned of as unknown)
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^(TestCLIHelp|TestRunQuietVerbose|TestRunFlagMistakes|TestRunCommand)$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "NOTHING_LEFT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child test run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child test run did not pass:\n%s", out)
	}
	var left []string
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) != 0 {
		t.Errorf("left in $TMPDIR by a passing test run: %v", left)
	}
}
