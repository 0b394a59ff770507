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
	"syscall"
	"testing"
	"time"

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

	accessKey = "msjfarm-" + randHex(4)
	secretKey = randHex(16)
	// The port is chosen by closing a listener and letting MinIO bind it,
	// so another process may grab it in between; retry a few times.
	var lastErr error
	for range 3 {
		var ok bool
		endpoint, ok, lastErr = start(t, bin, accessKey, secretKey)
		if ok {
			return endpoint, accessKey, secretKey
		}
	}
	t.Fatalf("miniotest: starting %s: %v", bin, lastErr)
	return "", "", ""
}

// start launches one server. ok=false with a non-nil error means the
// process exited during start-up (e.g. port taken) and a retry may help.
func start(t testing.TB, bin, accessKey, secretKey string) (endpoint string, ok bool, err error) {
	t.Helper()
	port, err := procutil.FreePort()
	if err != nil {
		t.Fatalf("miniotest: finding a free port: %v", err)
	}
	endpoint = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	dir := t.TempDir()

	logs := &procutil.Buffer{}
	cmd := exec.Command(bin, "server", "--quiet",
		"--address", endpoint,
		"--certs-dir", dir+"/certs", // never read ~/.minio
		dir+"/data")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+accessKey,
		"MINIO_ROOT_PASSWORD="+secretKey,
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
	stop := func() {
		select {
		case <-exited:
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
	// Cleanups run last-in first-out: the server stops before its
	// TempDir is removed.
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("miniotest: server log (%s):\n%s", endpoint, logs.String())
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for _, path := range []string{"/minio/health/live", "/minio/health/ready"} {
		for {
			if code, err := get(ctx, client, "http://"+endpoint+path); err == nil && code == http.StatusOK {
				break
			}
			select {
			case err := <-exited:
				exited <- err // let stop() see it
				return "", false, fmt.Errorf("server exited during start-up (%v); log:\n%s", err, logs.String())
			case <-ctx.Done():
				stop()
				t.Fatalf("miniotest: %s not answering 200 on %s after %v; log:\n%s", endpoint, path, StartTimeout, logs.String())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return endpoint, true, nil
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
