package pluginhost

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/msjfarm/msjfarm/internal/termtext"
)

// A plugin process's share of the host's log. go-plugin re-logs each line
// a plugin writes to its stderr that reads as a warning or an error (and
// every line after one that begins "panic: ") at that level, in the
// host's log: a plugin that wrote 64 MiB of such lines put 101 MiB into
// the worker's log (a Slurm job's output file, on a shared file system)
// (and, under submit's trial, the terminal). Each process gets logBurst
// bytes (some 150 lines), then logRate bytes a second; what is dropped is
// counted and said when the process may log again, at most every
// noticeEvery (a flood at the refill rate would otherwise get a notice
// per line let through). The stderr's tail
// (tail) is kept apart, whole, for error reports.
const (
	logBurst    = 16 << 10
	logRate     = 1 << 10
	noticeEvery = 10 * time.Second
)

// logBudget is a token bucket shared by a process's loggers (go-plugin
// names one per stream).
type logBudget struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int // lines, since the last notice
	notice  time.Time
	now     func() time.Time
	// exitExpected: the host is stopping the process (a cancellation,
	// a bound crossed, the host closing), so go-plugin's "plugin process
	// exited" with "signal: killed" is no error of the plugin's: logged
	// at debug level, where every Ctrl-C of a run printed it as [ERROR].
	exitExpected atomic.Bool
}

func newLogBudget() *logBudget {
	return &logBudget{tokens: logBurst, last: time.Now(), now: time.Now}
}

// take reports whether a line of n bytes may be logged, and how many lines
// were dropped since the last notice when one is due with it (0 when none,
// when the last notice is under noticeEvery old, or when this line is
// dropped too).
func (b *logBudget) take(n int) (bool, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.tokens = min(logBurst, b.tokens+now.Sub(b.last).Seconds()*logRate)
	b.last = now
	if b.tokens < float64(n) {
		b.dropped++
		return false, 0
	}
	b.tokens -= float64(n)
	if b.dropped == 0 || now.Sub(b.notice) < noticeEvery {
		return true, 0
	}
	d := b.dropped
	b.dropped, b.notice = 0, now
	return true, d
}

// budgetLogger is an hclog.Logger whose lines are taken from a budget.
// Only the methods that log, and those that derive a logger, are its own.
type budgetLogger struct {
	hclog.Logger
	b *logBudget
	// stderr: the logger go-plugin re-logs the plugin's stderr lines
	// with (it names one per binary, Named), whose fields are the
	// plugin's own (an hclog JSON line's): each key is prefixed
	// "plugin.", so that none reads as the host's. A plugin logged
	// "plugin sandbox disabled by operator: … binary=/usr/lib/msjfarm/…
	// task=0000deadbeef worker=w9" at error level, fields the host's
	// lines carry.
	stderr bool
}

func (l budgetLogger) Log(level hclog.Level, msg string, args ...any) {
	if msg == "plugin process exited" && level > hclog.Debug && l.b.exitExpected.Load() {
		level = hclog.Debug
	}
	if level < l.GetLevel() && level != hclog.NoLevel {
		return // not logged: costs nothing
	}
	n := len(msg)
	for _, a := range args {
		n += len(fmt.Sprint(a)) + 2
	}
	ok, dropped := l.b.take(n)
	if !ok {
		return
	}
	if dropped > 0 {
		l.Logger.Warn(fmt.Sprintf("%d lines of this plugin's log dropped: more than %d KiB at once, or %d KiB a second after that (said at most every %s)", dropped, logBurst>>10, logRate>>10, noticeEvery))
	}
	if l.stderr {
		args = slices.Clone(args)
		for i := 0; i+1 < len(args); i += 2 {
			args[i] = "plugin." + termtext.OneLine(fmt.Sprint(args[i]))
		}
	}
	// A plugin's stderr line, re-logged: Printable (a log is read on a
	// terminal, with tail -f).
	l.Logger.Log(level, termtext.Printable(msg), args...)
}

func (l budgetLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l budgetLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l budgetLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l budgetLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l budgetLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l budgetLogger) With(args ...any) hclog.Logger {
	return budgetLogger{l.Logger.With(args...), l.b, l.stderr}
}

// Named is the logger of one stream of the plugin's (go-plugin's stderr
// reader): its fields are the plugin's.
func (l budgetLogger) Named(name string) hclog.Logger {
	return budgetLogger{l.Logger.Named(name), l.b, true}
}

func (l budgetLogger) ResetNamed(name string) hclog.Logger {
	return budgetLogger{l.Logger.ResetNamed(name), l.b, true}
}
