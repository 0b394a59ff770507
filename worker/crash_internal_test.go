package worker

import (
	"errors"
	"testing"
)

// crashVerdict fails a task for good only on a second (or later) attempt
// whose crash ended exactly as the previous attempt's did; a crash shared
// with other replications never reaches it (SoleCrash gives no exit).
func TestCrashVerdict(t *testing.T) {
	crash := errors.New("plugin crashed")
	for _, c := range []struct {
		name       string
		attempt    int
		exit, prev string
		permanent  bool
	}{
		{"first attempt", 1, "exit status 2", "exit status 2", false},
		{"same way twice", 2, "exit status 2", "exit status 2", true},
		{"same way on a later attempt", 4, "signal: killed", "signal: killed", true},
		{"another way", 2, "exit status 2", "signal: killed", false},
		{"previous attempt did not crash alone", 2, "exit status 2", "", false},
		{"exit not known", 2, "", "", false},
	} {
		var perm *PermanentError
		if got := errors.As(crashVerdict(c.attempt, crash, c.exit, c.prev), &perm); got != c.permanent {
			t.Errorf("%s: permanent %v, want %v", c.name, got, c.permanent)
		}
	}
}
