// Package procutil holds what the helpers that start real servers for tests
// (nats-server, MinIO, msjfarm processes) all need: a free loopback port and
// a buffer that a process's two output pipes may write concurrently.
package procutil

import (
	"bytes"
	"net"
	"sync"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Buffer is a bytes.Buffer safe for concurrent Write and String, for
// collecting a process's stdout and stderr together.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
