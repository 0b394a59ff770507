package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/msjfarm/msjfarm/storage/miniotest"
)

func TestReasonClassifiesUnavailability(t *testing.T) {
	wrap := func(err error) error { return keyErr("put", "k", "file:///x", err) }
	unavailable := map[string]error{
		"disk full":          &fs.PathError{Op: "write", Path: "/x/k", Err: syscall.ENOSPC},
		"disk quota":         &fs.PathError{Op: "write", Path: "/x/k", Err: syscall.EDQUOT},
		"read-only":          &fs.PathError{Op: "open", Path: "/x/k", Err: syscall.EROFS},
		"I/O error":          &fs.PathError{Op: "write", Path: "/x/k", Err: syscall.EIO},
		"connection refused": &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)},
		"connection reset":   &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		"timed out":          fmt.Errorf("head: %w", context.DeadlineExceeded),
		"server not ready":   minio.ErrorResponse{StatusCode: http.StatusServiceUnavailable, Code: "XMinioServerNotInitialized"},
		"server error":       minio.ErrorResponse{StatusCode: http.StatusBadGateway, Code: "BadGateway"},
		"disks are full":     minio.ErrorResponse{StatusCode: http.StatusInsufficientStorage, Code: "XMinioStorageFull"},
		"access denied":      minio.ErrorResponse{StatusCode: http.StatusForbidden, Code: minio.AccessDenied},
		"bucket missing":     minio.ErrorResponse{StatusCode: http.StatusNotFound, Code: minio.NoSuchBucket},
	}
	for want, cause := range unavailable {
		err := wrap(cause)
		if !IsUnavailable(err) {
			t.Errorf("%v: IsUnavailable = false, want true", err)
		}
		if r := Reason(err); !strings.Contains(r, want) {
			t.Errorf("%v: Reason = %q, want it to mention %q", err, r, want)
		}
	}
	for _, cause := range []error{
		ErrNotFound, fmt.Errorf("%w: key is empty", ErrInvalidKey), context.Canceled,
		errors.New("short download: got 3 of 4 bytes"), &json.SyntaxError{Offset: 1},
		minio.ErrorResponse{StatusCode: http.StatusBadRequest, Code: "InvalidArgument"},
	} {
		if err := wrap(cause); IsUnavailable(err) {
			t.Errorf("%v: IsUnavailable = true, want false (reason %q)", err, Reason(err))
		}
	}
	// The same errno outside a Store operation (a plugin's broken pipe)
	// says nothing about storage.
	if IsUnavailable(&net.OpError{Op: "write", Net: "unix", Err: os.NewSyscallError("write", syscall.EPIPE)}) {
		t.Error("an EPIPE that did not come from a Store is classified as storage unavailability")
	}
	if IsUnavailable(nil) || Reason(nil) != "" {
		t.Error("nil is unavailable")
	}
}

// mountTmpfs mounts a size-limited tmpfs on a new directory and unmounts
// it when the test ends; it skips the test where mounting is not
// permitted (not root, no CAP_SYS_ADMIN, no mount binary).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root or CAP_SYS_ADMIN): mount: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// remount remounts the tmpfs dir with opts ("ro" or "rw").
func remount(t *testing.T, dir, opts string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount -o remount,%s %s: %v: %s", opts, dir, err, out)
	}
}

// fill writes a file into dir until the file system is full and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	// Fill the last partial block too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	return p
}

// TestLocalStoreFullAndReadOnlyDisk: on a real full, then read-only, file
// system the local store's errors are unavailability, name the path and
// the cause, and the store works again once the disk is fixed.
func TestLocalStoreFullAndReadOnlyDisk(t *testing.T) {
	dir := mountTmpfs(t, "1m")
	ctx := context.Background()
	st, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)
	_, err = st.PutIfAbsent(ctx, "campaigns/c/results/t.json", make([]byte, 8<<10))
	if err == nil {
		t.Fatal("PutIfAbsent on a full disk succeeded")
	}
	if !IsUnavailable(err) || !strings.Contains(Reason(err), "disk full") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("full disk: %v (unavailable %v, reason %q): want an unavailability naming %s and the disk being full", err, IsUnavailable(err), Reason(err), dir)
	}
	cerr := CheckWritable(ctx, st)
	if cerr == nil || !strings.Contains(cerr.Error(), "disk full") || !strings.Contains(cerr.Error(), dir) {
		t.Fatalf("CheckWritable on a full disk: %v", cerr)
	}
	// Nothing half-written is left behind as an object.
	if keys, err := st.List(ctx, ""); err != nil || len(keys) != 1 || keys[0] != "filler" {
		t.Fatalf("objects after the failed write: %v, %v", keys, err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if created, err := st.PutIfAbsent(ctx, "campaigns/c/results/t.json", []byte("{}")); err != nil || !created {
		t.Fatalf("after freeing space: %v, %v", created, err)
	}

	remount(t, dir, "ro")
	defer remount(t, dir, "rw") // so that the unmount and TempDir clean-up work
	err = st.Put(ctx, "campaigns/c/results/u.json", []byte("{}"))
	if err == nil {
		t.Fatal("Put on a read-only disk succeeded")
	}
	if !IsUnavailable(err) || !strings.Contains(Reason(err), "read-only") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("read-only disk: %v (reason %q)", err, Reason(err))
	}
	// Reads still work.
	if _, err := st.Get(ctx, "campaigns/c/results/t.json"); err != nil {
		t.Fatalf("Get on a read-only disk: %v", err)
	}
	remount(t, dir, "rw")
	if err := st.Put(ctx, "campaigns/c/results/u.json", []byte("{}")); err != nil {
		t.Fatalf("after remounting read-write: %v", err)
	}
}

// TestOpenS3FailsFast: a closed port, a server that accepts connections
// but never answers, are reported by Open within 10 s, naming the endpoint
// and the cause.
func TestOpenS3FailsFast(t *testing.T) {
	t.Setenv("MSJFARM_S3_ACCESS_KEY", "k")
	t.Setenv("MSJFARM_S3_SECRET_KEY", "secret-key")
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	// A black hole: connections are accepted (by the kernel backlog) and
	// never answered.
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	for _, c := range []struct{ endpoint, cause string }{
		{closed, "connection refused"},
		{hole.Addr().String(), "timed out"},
	} {
		start := time.Now()
		_, err := Open(context.Background(), "s3://bucket?secure=false&endpoint="+c.endpoint)
		took := time.Since(start)
		if err == nil {
			t.Fatalf("%s: Open succeeded", c.endpoint)
		}
		if took > 10*time.Second {
			t.Errorf("%s: Open took %v, want under 10 s", c.endpoint, took)
		}
		if !strings.Contains(err.Error(), c.endpoint) || !strings.Contains(err.Error(), c.cause) {
			t.Errorf("%s: %v: want the endpoint and %q", c.endpoint, err, c.cause)
		}
		if strings.Contains(err.Error(), "secret-key") {
			t.Errorf("the error shows the secret: %v", err)
		}
		t.Logf("%s after %v: %v", c.cause, took.Round(time.Millisecond), err)
	}
}

// TestOpenS3WrongCredentialsAndMissingBucket against a real MinIO: wrong
// credentials and a missing bucket are clear errors at once, and an
// outage of the server (stopped, then restarted on the same address and
// data) is unavailability while it lasts, then heals by itself.
func TestOpenS3WrongCredentialsAndMissingBucket(t *testing.T) {
	srv := miniotest.StartServer(t)
	ctx := context.Background()
	url := "s3://bucket?secure=false&endpoint=" + srv.Endpoint

	start := time.Now()
	_, err := Open(ctx, url, WithCredentials(srv.AccessKey, "wrong-secret"))
	if err == nil || !strings.Contains(err.Error(), "access denied") || !strings.Contains(err.Error(), srv.Endpoint) ||
		strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("wrong credentials: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("wrong credentials reported after %v", took)
	}
	_, err = Open(ctx, "s3://missing?secure=false&endpoint="+srv.Endpoint, WithCredentials(srv.AccessKey, srv.SecretKey), NoCreate())
	if err == nil || !strings.Contains(err.Error(), "bucket missing") || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing bucket: %v", err)
	}

	st, err := Open(ctx, url, WithCredentials(srv.AccessKey, srv.SecretKey))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = st.PutIfAbsent(octx, "k", []byte("v"))
	cancel()
	if !IsUnavailable(err) {
		t.Fatalf("write with the server stopped: %v (reason %q): want unavailability", err, Reason(err))
	}
	octx, cancel = context.WithTimeout(ctx, 5*time.Second)
	_, err = st.Stat(octx, "k")
	cancel()
	if !IsUnavailable(err) || errors.Is(err, ErrNotFound) {
		t.Fatalf("stat with the server stopped: %v: want unavailability, not a missing key", err)
	}
	srv.Restart()
	if created, err := st.PutIfAbsent(ctx, "k", []byte("v")); err != nil || !created {
		t.Fatalf("after the restart: %v, %v", created, err)
	}
}
