package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/storage/miniotest"
)

// TestStorageFailsFast: run, submit and worker given an S3 store that
// refuses connections, one that never answers, or wrong credentials exit
// non-zero within 10 s with an error naming the endpoint and the cause,
// and write nothing.
func TestStorageFailsFast(t *testing.T) {
	msjfarmBinary(t) // build once, before the parallel subtests
	natsURL := natstest.StartEmbedded(t)
	srv := miniotest.StartServer(t)
	// A port bound but not listening refuses connections, and stays this
	// test's: a port listened on and closed again was taken by the next
	// listener (the hole below, once in CI), which answered nothing.
	closed := func() string {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := syscall.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	}()
	hole, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hole.Close() })
	dir := t.TempDir()
	sweepFile := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sweepFile, []byte("name: ff\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [1]}\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 1e3, warmup: 1e2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, endpoint, cause, access, secret string
	}{
		{"refused", closed, "connection refused", "k", "secret-key-1"},
		{"blackhole", hole.Addr().String(), "timed out", "k", "secret-key-1"},
		{"credentials", srv.Endpoint, "access denied", srv.AccessKey, "wrong-secret-key"},
	}
	for _, c := range cases {
		for _, cmd := range [][]string{
			{"run", sweepFile},
			{"submit", sweepFile, "--nats-url", natsURL},
			{"worker", "--nats-url", natsURL},
		} {
			t.Run(c.name+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				store := "s3://failfast?secure=false&endpoint=" + c.endpoint
				env := []string{"MSJFARM_S3_ACCESS_KEY=" + c.access, "MSJFARM_S3_SECRET_KEY=" + c.secret}
				start := time.Now()
				code, _, stderr := msjfarm(t, env, append(cmd, "--storage", store)...)
				took := time.Since(start)
				if code == 0 {
					t.Fatalf("exit 0; stderr:\n%s", stderr)
				}
				if took > 10*time.Second {
					t.Errorf("took %v, want under 10 s", took)
				}
				if !strings.Contains(stderr, c.endpoint) || !strings.Contains(stderr, c.cause) {
					t.Errorf("stderr does not name %s and %q:\n%s", c.endpoint, c.cause, stderr)
				}
				if strings.Contains(stderr, c.secret) {
					t.Errorf("stderr shows the secret:\n%s", stderr)
				}
				t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			})
		}
	}
	t.Cleanup(func() {
		// Nothing was written: the bucket the commands named was never
		// created on the server they reached with wrong credentials.
		_, err := storage.Open(context.Background(), "s3://failfast?secure=false&endpoint="+srv.Endpoint,
			storage.WithCredentials(srv.AccessKey, srv.SecretKey), storage.NoCreate())
		if err == nil || !strings.Contains(err.Error(), "bucket missing") {
			t.Errorf("after the failed commands: %v (want the bucket missing)", err)
		}
	})
}
