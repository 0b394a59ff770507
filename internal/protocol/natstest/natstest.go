// Package natstest starts NATS servers for tests: an embedded JetStream
// server (always available) or a REAL nats-server binary in a child process.
//
// The binary is taken from $MSJFARM_NATS_SERVER or `nats-server` on PATH
// (/usr/sbin is searched too, where apt installs it); install it with
//
//	export MSJFARM_NATS_SERVER="$(bash .ci/install-nats.sh)"
//
// Without a binary, StartBinary skips the test, unless
// MSJFARM_REQUIRE_SERVERS=1, in which case it fails it (the convention of
// storage/miniotest).
package natstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/procutil"
	"github.com/msjfarm/msjfarm/internal/protocol"
)

// Environment variables.
const (
	EnvBinary         = "MSJFARM_NATS_SERVER"
	EnvRequireServers = "MSJFARM_REQUIRE_SERVERS"
)

// StartEmbedded starts an in-process JetStream server with its store in a
// t.TempDir() and returns its URL; it is shut down when the test ends.
func StartEmbedded(t testing.TB) string {
	t.Helper()
	s, url, err := protocol.StartEmbedded(protocol.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return url
}

// ConnectEmbedded is StartEmbedded plus a client connection, closed when
// the test ends (before the server).
func ConnectEmbedded(t testing.TB) (url string, nc *nats.Conn) {
	t.Helper()
	url = StartEmbedded(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return url, nc
}

// Binary returns the nats-server binary, or "". With
// MSJFARM_REQUIRE_SERVERS=1 (CI) and no binary found, it runs
// .ci/install-nats.sh once (a `go install` of the server version in go.mod,
// about a minute) so that a fresh machine needs no separate set-up step.
func Binary() string {
	if p := find(); p != "" {
		return p
	}
	if os.Getenv(EnvRequireServers) == "1" {
		installOnce.Do(func() { installed = install() })
		return installed
	}
	return ""
}

var (
	installOnce sync.Once
	installed   string
)

func find() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/nats-server", os.ExpandEnv("$HOME/.cache/msjfarm/bin/nats-server")} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

func install() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", ".ci", "install-nats.sh")
	out, err := exec.Command("bash", script).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "natstest: %s: %v\n", script, err)
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Server is a nats-server child process.
type Server struct {
	URL      string
	StoreDir string
	Port     int
	bin      string
	t        testing.TB
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan error
	logs     *procutil.Buffer
}

// StartBinary runs a real nats-server with JetStream on 127.0.0.1 and a
// free port, its store in a t.TempDir(), and stops it when the test ends.
func StartBinary(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "nats-server binary not found: run `bash .ci/install-nats.sh` and set " + EnvBinary + " to the printed path"
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatalf("%s (%s=1, so this is an error)", msg, EnvRequireServers)
		}
		t.Skip(msg)
	}
	s := &Server{bin: bin, t: t, StoreDir: t.TempDir(), logs: &procutil.Buffer{}}
	var err error
	for range 3 {
		if s.Port, err = procutil.FreePort(); err != nil {
			t.Fatal(err)
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	s.URL = fmt.Sprintf("nats://127.0.0.1:%d", s.Port)
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("nats-server log:\n%s", s.logs.String())
		}
	})
	return s
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "-js", "-sd", s.StoreDir, "-a", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-n", "msjfarm-test")
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	url := fmt.Sprintf("nats://127.0.0.1:%d", s.Port)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("nats-server exited during start-up: %v\n%s", err, s.logs.String())
		default:
		}
		if nc, err := nats.Connect(url, nats.Timeout(time.Second)); err == nil {
			js, _ := nc.JetStream()
			_, jerr := js.AccountInfo()
			nc.Close()
			if jerr == nil {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Stop()
	return fmt.Errorf("nats-server on port %d not ready after 20 s:\n%s", s.Port, s.logs.String())
}

// Restart stops the server and starts it again on its port and store
// directory, as an operator's restart does (clients reconnect).
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// PID is the server process's id (0 when stopped): benchmarks read its
// CPU time from /proc.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop terminates the server (SIGTERM, then SIGKILL after 5 s).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case err := <-exited:
		exited <- err
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}
