//go:build faults

package faults_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestRelay checks the latency relay that stands in for netem: bytes
// arrive intact and in order, and a round trip through it takes at least
// twice the per-direction delay (a lower bound the relay guarantees by
// construction, so the check cannot flake on a loaded machine).
func TestRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	const delay = 50 * time.Millisecond
	r, err := startRelay("127.0.0.1:0", ln.Addr().String(), delay)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	c, err := net.Dial("tcp", r.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16) // larger than one read
	for range 3 {
		t0 := time.Now()
		go func() { _, _ = c.Write(msg) }()
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(t0); rtt < 2*delay {
			t.Fatalf("round trip %v through a relay of %v each way", rtt, delay)
		}
		if !bytes.Equal(got, msg) {
			t.Fatal("the relay changed or reordered the bytes")
		}
	}
}
