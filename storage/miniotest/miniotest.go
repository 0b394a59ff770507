// Package miniotest starts a real MinIO server for integration tests.
//
// The server binary is taken from $MSJFARM_MINIO or from `minio` on PATH;
// build it once with
//
//	bash .ci/install-minio.sh   # prints the path, e.g. ~/.cache/msjfarm/bin/minio
//	export MSJFARM_MINIO=$HOME/.cache/msjfarm/bin/minio
//
// Without a binary, Start skips the test, unless MSJFARM_REQUIRE_SERVERS=1
// (set in CI), in which case it fails it.
//
// Typical use with package storage:
//
//	ep, ak, sk := miniotest.Start(t)
//	s, err := storage.Open(ctx, "s3://bucket?secure=false&endpoint="+ep, storage.WithCredentials(ak, sk))
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/msjfarm/msjfarm/internal/procutil"
)

// Environment variables read by Start.
const (
	EnvBinary         = "MSJFARM_MINIO"           // path of the minio binary
	EnvRequireServers = "MSJFARM_REQUIRE_SERVERS" // "1": fail instead of skip without a binary
)

// StartTimeout bounds how long Start waits for the server to become live.
var StartTimeout = 60 * time.Second

// Binary returns the path of the MinIO server binary, or "" if there is none.
func Binary() string {
	if p := os.Getenv(EnvBinary); p != "" {
		return p
	}
	p, err := exec.LookPath("minio")
	if err != nil {
		return ""
	}
	return p
}

// Start runs a fresh MinIO server on 127.0.0.1 with its data in a
// t.TempDir(), waits until it is live, and stops it when the test ends. It
// returns the endpoint ("127.0.0.1:port", plain HTTP) and the root
// credentials, which are random per server.
func Start(t testing.TB) (endpoint, accessKey, secretKey string) {
	t.Helper()
	s := StartServer(t)
	return s.Endpoint, s.AccessKey, s.SecretKey
}

// Server is a running (or stopped) MinIO server of a test, for tests of
// storage outages: Stop takes it down, Restart brings it back on the same
// address with the same data.
type Server struct {
	Endpoint, AccessKey, SecretKey string

	t    testing.TB
	bin  string
	dir  string
	mu   sync.Mutex
	stop func() // of the running process; nil while stopped
	logs *procutil.Buffer
}

// StartServer is Start returning the Server.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		msg := "MinIO server binary not found: run `bash .ci/install-minio.sh` (builds it with `go install github.com/minio/minio@latest`, ~2-5 min) " +
			"and set " + EnvBinary + " to the printed path, or put `minio` on PATH"
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatalf("%s (%s=1, so this is an error)", msg, EnvRequireServers)
		}
		t.Skip(msg)
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		t.Fatalf("%s=%q: not a minio binary: %v", EnvBinary, bin, err)
	}
	s := &Server{t: t, bin: bin, AccessKey: "msjfarm-" + randHex(4), SecretKey: randHex(16), logs: &procutil.Buffer{}}
	// Cleanups run last-in first-out: the server stops before its
	// TempDir is removed.
	s.dir = t.TempDir()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("miniotest: server log (%s):\n%s", s.Endpoint, s.logs.String())
		}
	})
	// The port is chosen by closing a listener and letting MinIO bind it,
	// so another process may grab it in between; retry a few times.
	var lastErr error
	for range 3 {
		port, err := procutil.FreePort()
		if err != nil {
			t.Fatalf("miniotest: finding a free port: %v", err)
		}
		s.Endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		var ok bool
		if ok, lastErr = s.launch(); ok {
			return s
		}
	}
	t.Fatalf("miniotest: starting %s: %v", bin, lastErr)
	return nil
}

// Stop stops the server (SIGTERM, then SIGKILL after 5 s); its data stays.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Restart starts a stopped server again on the same address with the same
// data and credentials, and waits until it is ready.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var lastErr error
	// The address was just released: a start may find it briefly taken.
	for range 5 {
		ok, err := s.launch()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(500 * time.Millisecond)
	}
	s.t.Fatalf("miniotest: restarting %s on %s: %v", s.bin, s.Endpoint, lastErr)
}

// launch runs one server process on s.Endpoint. ok=false with a non-nil
// error means the process exited during start-up (e.g. port taken) and a
// retry may help.
func (s *Server) launch() (ok bool, err error) {
	t, bin, endpoint, dir, logs := s.t, s.bin, s.Endpoint, s.dir, s.logs
	t.Helper()
	cmd := exec.Command(bin, "server", "--quiet",
		"--address", endpoint,
		"--certs-dir", dir+"/certs", // never read ~/.minio
		dir+"/data")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", // no console listener on another port
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("miniotest: starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			select {
			case err := <-exited:
				exited <- err
				return
			default:
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				exited <- err
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				exited <- <-exited
			}
		})
	}
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	// until polls probe every 50 ms until it answers "" (ready), the
	// process exits (a retry may help) or StartTimeout passes (fatal).
	until := func(what string, probe func() string) (ok bool, err error) {
		for {
			last := probe()
			if last == "" {
				return true, nil
			}
			select {
			case err := <-exited:
				exited <- err // let stop() see it
				s.Stop()
				return false, fmt.Errorf("server exited during start-up (%v); log:\n%s", err, logs.String())
			case <-ctx.Done():
				s.Stop()
				t.Fatalf("miniotest: %s %s after %v (last: %s); log:\n%s", endpoint, what, StartTimeout, last, logs.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for _, path := range []string{"/minio/health/live", "/minio/health/ready"} {
		ok, err := until("not answering 200 on "+path, func() string {
			code, err := get(ctx, client, "http://"+endpoint+path)
			if err != nil {
				return err.Error()
			}
			if code != http.StatusOK {
				return http.StatusText(code)
			}
			return ""
		})
		if !ok {
			return false, err
		}
	}
	// Ready on the health endpoint is not yet ready for calls: for a
	// moment after it, above all after a restart on existing data, MinIO
	// answers every S3 call with XMinioServerNotInitialized (seen in CI: a
	// write right after Restart failed so). Wait until a signed call is
	// served.
	s3c, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, "")})
	if err != nil {
		s.Stop()
		t.Fatalf("miniotest: client for %s: %v", endpoint, err)
	}
	return until("still refusing S3 calls", func() string {
		if _, err := s3c.ListBuckets(ctx); err != nil {
			return err.Error()
		}
		return ""
	})
}

func get(ctx context.Context, c *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
