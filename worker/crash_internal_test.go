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
	} {
		var perm *PermanentError
		if got := errors.As(crashVerdict(c.attempt, crash, c.cur, c.prev), &perm); got != c.permanent {
			t.Errorf("%s: permanent %v, want %v", c.name, got, c.permanent)
		}
	}
}
