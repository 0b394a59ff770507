package pluginhost

import (
	"strings"
	"sync"
)

// tail keeps the last max bytes written to it: a plugin process's stderr,
// for error reports. It also keeps the headline of a Go crash ("fatal
// error: runtime: out of memory", "panic: ..."), which the goroutine dump
// after it pushes out of the tail: the cause matters more than the stacks.
type tail struct {
	mu       sync.Mutex
	max      int
	buf      []byte
	headline string
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for _, mark := range []string{"fatal error: ", "panic: "} {
		if i := strings.LastIndex(string(t.buf), mark); i >= 0 && (i == 0 || t.buf[i-1] == '\n') {
			line, _, _ := strings.Cut(string(t.buf[i:]), "\n")
			t.headline = line[:min(len(line), 512)]
			break
		}
	}
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept text, starting at a line boundary when the
// beginning was cut.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) >= t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		if t.headline != "" && !strings.Contains(s, t.headline) {
			s = t.headline + "\n...\n" + s
		}
	}
	return strings.TrimRight(s, "\n")
}
