package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// captureStderr runs f with os.Stderr redirected and returns what it wrote.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	defer func() { os.Stderr = old }()
	f()
	w.Close()
	os.Stderr = old
	return string(<-done)
}

// TestHTTPFlagBadAddress: an invalid or busy -http address fails at start,
// with an error naming the flag, before anything is created.
func TestHTTPFlagBadAddress(t *testing.T) {
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(runTestSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(dir, "data")
	for _, c := range []struct{ addr, want string }{
		{"not-an-address", `-http "not-an-address": not a host:port address`},
		{"127.0.0.1:99999", `-http "127.0.0.1:99999": cannot listen`},
		{busy.Addr().String(), "-http \"" + busy.Addr().String() + "\": cannot listen"},
	} {
		var code int
		out := captureStderr(t, func() {
			code = runRun([]string{"-q", "-runner", "inprocess", "-storage", data, "-http", c.addr, sw})
		})
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("-http %s: exit %d, stderr %q; want exit 2 and %q", c.addr, code, out, c.want)
		}
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("a bad -http address created %s (%v)", data, err)
	}
	out := captureStderr(t, func() {
		if code := runRun([]string{"-q", "-storage", data, "-log-format", "xml", sw}); code != 2 {
			t.Errorf("-log-format xml: exit %d", code)
		}
	})
	if !strings.Contains(out, `-log-format "xml": want text or json`) {
		t.Errorf("-log-format xml: %q", out)
	}
}

// TestProbe: exit 0 on 2xx only.
func TestProbe(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer srv.Close()
	if code := runProbe([]string{"-timeout", "2s", srv.URL + "/readyz"}); code != 1 {
		t.Errorf("503: exit %d", code)
	}
	status.Store(http.StatusOK)
	if code := runProbe([]string{"-timeout", "2s", srv.URL + "/readyz"}); code != 0 {
		t.Errorf("200: exit %d", code)
	}
	if code := runProbe([]string{"localhost:1"}); code == 0 {
		t.Error("no URL scheme: exit 0")
	}
}
