package e2e_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
)

// startLogged starts cmd with its output collected in the returned buffer
// and stops it when the test ends: SIGTERM, then SIGKILL after grace (at
// once when grace is 0); if the test failed, the output is logged under
// name. The channel is closed when the process has exited, so a wait for
// it to become ready can fail at once when it dies instead.
func startLogged(t *testing.T, name string, cmd *exec.Cmd, grace time.Duration) (*procutil.Buffer, <-chan struct{}) {
	t.Helper()
	out := &procutil.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		if grace > 0 {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(grace):
			}
		}
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("--- %s output:\n%s", name, out.String())
		}
	})
	return out, exited
}

// natsServerBinary is the real nats-server binary; without one the test
// is skipped, or fails under MSJFARM_REQUIRE_SERVERS=1 (CI).
func natsServerBinary(t *testing.T) string {
	t.Helper()
	bin := natstest.Binary()
	if bin == "" {
		if os.Getenv(natstest.EnvRequireServers) == "1" {
			t.Fatal("nats-server binary not found")
		}
		t.Skip("nats-server binary not found: set " + natstest.EnvBinary)
	}
	return bin
}
