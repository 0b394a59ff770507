package worker

import (
	"errors"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// crashVerdict fails a task for good only on a second (or later) attempt
// whose crash ended exactly as the previous attempt's did, the
// replication alone in its process both times, or at least once when a Go
// crash line names the crash.
func TestCrashVerdict(t *testing.T) {
	const panicked = "exit status 2: panic: runtime error: index out of range [3] with length 3"
	alone := pluginhost.Crash{How: panicked, Line: true}
	shared := pluginhost.Crash{How: panicked, Line: true, Shared: true}
	killed := pluginhost.Crash{How: "signal: killed"}
	killedShared := pluginhost.Crash{How: "signal: killed", Shared: true}
	crash := errors.New("plugin crashed")
	for _, c := range []struct {
		name      string
		attempt   int
		cur       pluginhost.Crash
		prev      protocol.TaskState
		permanent bool
	}{
		{"first attempt", 1, alone, protocol.TaskState{Crash: panicked}, false},
		{"same way twice alone", 2, alone, protocol.TaskState{Crash: panicked}, true},
		{"same way on a later attempt", 4, killed, protocol.TaskState{Crash: "signal: killed"}, true},
		{"alone after the same crash shared", 2, alone, protocol.TaskState{Crash: panicked, CrashShared: true}, true},
		{"shared after the same crash alone", 2, shared, protocol.TaskState{Crash: panicked}, true},
		{"shared twice: maybe a neighbour's each time", 3, shared, protocol.TaskState{Crash: panicked, CrashShared: true}, false},
		{"killed alone after killed shared: no line to compare", 2, killed, protocol.TaskState{Crash: "signal: killed", CrashShared: true}, false},
		{"killed shared after killed alone", 2, killedShared, protocol.TaskState{Crash: "signal: killed"}, false},
		{"another way", 2, alone, protocol.TaskState{Crash: "signal: killed"}, false},
		{"previous attempt did not crash", 2, alone, protocol.TaskState{Error: "writing result: timeout"}, false},
		{"exit not known", 2, pluginhost.Crash{}, protocol.TaskState{}, false},
		{"the same pointer panic at another address", 2, pluginhost.Crash{How: "exit status 2: panic: (*policy.state) 0xc000a1c030", Line: true},
			protocol.TaskState{Crash: "exit status 2: panic: (*policy.state) 0xc00001e0f0"}, true},
		{"a pointer panic of another type", 2, pluginhost.Crash{How: "exit status 2: panic: (*policy.state) 0xc000a1c030", Line: true},
			protocol.TaskState{Crash: "exit status 2: panic: (*policy.queue) 0xc000a1c030"}, false},
	} {
		var perm *PermanentError
		if got := errors.As(crashVerdict(c.attempt, crash, c.cur, c.prev), &perm); got != c.permanent {
			t.Errorf("%s: permanent %v, want %v", c.name, got, c.permanent)
		}
	}
}

// sameCrash reads every hexadecimal number as one and compares the rest,
// decimal numbers included.
func TestSameCrash(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"panic: x", "panic: x", true},
		{"panic: x", "panic: y", false},
		{"panic: (*main.T) 0xc00001c030", "panic: (*main.T) 0xc000a00000", true},
		{"panic: (*main.T) 0xc00001c030", "panic: (*main.T) 0xc00001c030 again", false},
		{"addr=0x0 pc=0x4a1b2c", "addr=0x0 pc=0x4a1b00", true},
		{"index out of range [3] with length 3", "index out of range [4] with length 4", false},
		{"panic: 0x1f", "panic: 0x", false},             // "0x" alone is text
		{"panic: box0x1f", "panic: box0x2f", false},     // inside a word: text
		{"panic: 0x1fg", "panic: 0x2fg", true},          // the hex digits end at g
		{"panic: 0xABCDEF end", "panic: 0X1 end", true}, // either case
	} {
		if got := sameCrash(c.a, c.b); got != c.same {
			t.Errorf("sameCrash(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := sameCrash(c.b, c.a); got != c.same {
			t.Errorf("sameCrash(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
		}
	}
}
