package pluginhost

import (
	"bytes"
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
	// A headline is looked for in p only, at a line's start (go-plugin
	// writes a line, then its newline): searching the whole kept buffer on
	// each write cost 16 KiB of copying per line, a minute for a plugin
	// that printed 64 MiB.
	atStart := len(t.buf) == 0 || t.buf[len(t.buf)-1] == '\n'
	for _, mark := range []string{"fatal error: ", "panic: "} {
		if i := bytes.LastIndex(p, []byte(mark)); i >= 0 && (i == 0 && atStart || i > 0 && p[i-1] == '\n') {
			line, _, _ := bytes.Cut(p[i:], []byte("\n"))
			t.headline = runtimeLines(t.buf, p[:i]) + string(line[:min(len(line), 512)])
			break
		}
	}
	t.buf = append(t.buf, p...)
	// Cut to the last max bytes when twice that is held, so that a cut
	// costs its copy once per max bytes written, not per write.
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// runtimeLines are the lines starting "runtime: " (at most three) just
// before a headline, which was written after before (the kept text, then
// the write's own start): the Go runtime says there what "fatal error:
// newosproc" or "out of memory" means ("runtime: failed to create new OS
// thread (have 4105 already; errno=11)", "runtime: may need to increase
// max user processes (ulimit -u)").
func runtimeLines(kept, before []byte) string {
	b := append(append([]byte(nil), kept[max(0, len(kept)-1024):]...), before...)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	n := 0
	for n < 3 && n < len(lines) && strings.HasPrefix(lines[len(lines)-1-n], "runtime: ") {
		n++
	}
	var s strings.Builder
	for _, l := range lines[len(lines)-n:] {
		s.WriteString(l[:min(len(l), 256)] + "\n")
	}
	return s.String()
}

// crashLine is the last Go crash headline's own line ("panic: ...",
// "fatal error: ..."), without the runtime's lines before it, which hold
// counts that differ from one crash to the next; "" if none was seen.
func (t *tail) crashLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := strings.TrimSuffix(t.headline, "\n")
	return h[strings.LastIndexByte(h, '\n')+1:]
}

// String returns the kept text, starting at a line boundary when the
// beginning was cut.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.buf[max(0, len(t.buf)-t.max):]
	s := string(kept)
	if len(kept) >= t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		if t.headline != "" && !strings.Contains(s, t.headline) {
			s = t.headline + "\n...\n" + s
		}
	}
	return strings.TrimRight(s, "\n")
}
