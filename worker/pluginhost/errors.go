package pluginhost

import (
	"errors"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/sim"
)

// Kind classifies a plugin failure. Every error the host returns from Run,
// Info or Validate is an *Error, and errors.Is(err, host.ErrCrash) (etc.)
// tests its kind.
type Kind string

// Error kinds.
const (
	// ErrStart: the binary is missing, is not a plugin, or exited or timed
	// out before the handshake. Stderr holds its output.
	ErrStart Kind = "start failed"
	// ErrChecksum: the binary's sha256 is not the one pinned.
	ErrChecksum Kind = "checksum mismatch"
	// ErrProtocol: the plugin speaks another protocol version.
	ErrProtocol Kind = "protocol version mismatch"
	// ErrEngine: the plugin links an engine whose job sequence this host's
	// engine does not draw (RunOptions.SameSequence), so its results could
	// not be checked against the seed's own jobs. Nothing ran. Not
	// retried: the binary declares the same engine on every worker of
	// this version.
	ErrEngine Kind = "engine not checkable"
	// ErrInvalid: the request was rejected before anything ran (unknown
	// policy, parameter outside the schema, invalid workload or run length).
	ErrInvalid Kind = "invalid request"
	// ErrPolicy: the replication ran and failed (a policy error or panic
	// that the engine caught). Deterministic: retrying gives the same.
	ErrPolicy Kind = "replication failed"
	// ErrCrash: the plugin process died (or its connection broke) during
	// the call. Stderr holds the tail of its output.
	ErrCrash Kind = "plugin crashed"
	// ErrDeadline: the replication exceeded its deadline. If the plugin did
	// not stop it within the grace period, its process was killed.
	ErrDeadline Kind = "deadline exceeded"
	// ErrStalled: the replication's engine loop stopped beating (or, for
	// a plugin that does not beat, its count of arrivals stopped) for
	// Config.Stall (policy code that does not return); its process was
	// killed.
	ErrStalled Kind = "stalled"
	// ErrCanceled: the caller's context ended the call.
	ErrCanceled Kind = "cancelled"
	// ErrQuota: the plugin wrote past its TMPDIR quota, and its process
	// was killed (Config.TmpQuota). Not retried: a policy that writes that
	// much will again, on every worker.
	ErrQuota Kind = "TMPDIR quota exceeded"
	// ErrThreads: the plugin ran more threads than a process may, and its
	// process was killed (Config.MaxThreads). Not retried, as ErrQuota.
	ErrThreads Kind = "too many threads"
	// ErrCPU: the plugin's process used CPU with no replication to run,
	// or more cores than its GOMAXPROCS, and was killed (cpuWatch). Not
	// retried, as ErrQuota.
	ErrCPU Kind = "CPU beyond its replications"
	// ErrWire: the plugin sent what a Run call may not carry (a trace
	// not asked for, an update after the result, progress far more often
	// than asked): the call is cut and the process retired. Not retried.
	ErrWire Kind = "protocol violation"
	// ErrTraceLimit: a requested decision trace exceeded its limit.
	ErrTraceLimit Kind = "trace too long"
	// ErrClosed: the host was closed.
	ErrClosed Kind = "host closed"
)

// Error implements error, so that a Kind can be an errors.Is target.
func (k Kind) Error() string { return string(k) }

// Error is a failure of a plugin call.
type Error struct {
	Kind   Kind
	Binary string // path of the plugin binary
	SHA256 string // its checksum (hex), when known
	Policy string // policy of the request, if any
	Msg    string
	// Stderr is the tail of the plugin process's stderr (for ErrStart,
	// ErrCrash and ErrDeadline with a killed process).
	Stderr string
	// Shared: the process was killed for crossing a bound (ErrQuota,
	// ErrThreads) while it ran other replications too, and which of them
	// crossed it is not known. Such an error is retried: on the farm, the
	// honest replications beside a thread bomb failed with it, for good.
	// For ErrCrash, the process that died ran other replications too:
	// which of them crashed it is not known either.
	Shared bool
	// Exit is how a crashed process ended (ErrCrash: "exit status 2",
	// "signal: segmentation fault"; "" when only the connection was seen
	// to break).
	Exit string
	// CrashLine is the Go crash's own line in its stderr ("panic: ...",
	// "fatal error: ..."), if any (ErrCrash).
	CrashLine string
}

// Crash is how a plugin process that crashed during a replication
// ended (CrashOf).
type Crash struct {
	// How is its exit and its Go crash line, if it wrote one ("exit
	// status 2: panic: index out of range [3] with length 3"). A crash
	// its seed reproduces ends the same way on every attempt; the crash
	// line tells it from a neighbour's thread bomb or the machine's memory
	// running out, which end a Go process with the same status.
	How string
	// Line: How holds a crash line.
	Line bool
	// Shared: the process ran other replications too (Error.Shared).
	Shared bool
}

// CrashOf is the crash err reports (ErrCrash with the process's exit
// known), if it is one.
func CrashOf(err error) (Crash, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrCrash || e.Exit == "" {
		return Crash{}, false
	}
	c := Crash{How: e.Exit, Line: e.CrashLine != "", Shared: e.Shared}
	if c.Line {
		c.How = termtext.Printable(e.Exit + ": " + e.CrashLine)
	}
	return c, true
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %s", e.Binary)
	if e.SHA256 != "" {
		fmt.Fprintf(&b, " (sha256 %.12s)", e.SHA256)
	}
	if e.Policy != "" {
		fmt.Fprintf(&b, ", policy %s", e.Policy)
	}
	// Msg and Stderr hold the plugin's own words: Printable.
	fmt.Fprintf(&b, ": %s: %s", e.Kind, termtext.Printable(e.Msg))
	if s := strings.TrimSpace(e.Stderr); s != "" {
		b.WriteString("\n--- plugin stderr (last lines) ---\n")
		b.WriteString(termtext.Printable(s))
	}
	return b.String()
}

// EngineRefusal says why a plugin that links engine is refused
// (RunOptions.SameSequence), after "the plugin": the host's error and
// msjfarm run's, which refuses the sweep before it runs, say the same.
func EngineRefusal(engine string) string {
	return fmt.Sprintf("links engine %q; this msjfarm (engine %s) checks a plugin's results against the seed's own jobs, which it draws again, only for engines %s to %s: rebuild the plugin against this msjfarm's SDK, or run with --plugin-any-engine to accept its results unchecked",
		engine, sim.Version, sim.SequenceSince, sim.Version)
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// Retryable reports whether running the same request again may succeed: a
// crash, a start failure, a deadline or a cancellation may be transient; a
// rejected request, a failed replication, a checksum or protocol mismatch
// will fail the same way.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrQuota, ErrThreads, ErrCPU:
		return e.Shared
	case ErrCrash, ErrStart, ErrDeadline, ErrStalled, ErrCanceled, ErrClosed:
		return true
	}
	return false
}
