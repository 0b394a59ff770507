package simtest_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// TestFCFSTrace: k = 4, classes need 1 and 4.
//
//	job 0: t=0, need 1, size 2  → starts 0 (4 idle)
//	job 1: t=1, need 4, size 1  → waits for job 0: starts 2
//	job 2: t=1.5, need 1, size 1 → behind job 1 (FCFS): starts 3
//	job 3: t=1.5, need 1, size 5 → starts 3 with job 2
func TestFCFSTrace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 1, Size: 1, Class: 1}, {At: 1.5, Size: 1, Class: 0}, {At: 1.5, Size: 5, Class: 0},
	})
	p := &fcfs.FCFS{}
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	want := map[int64]float64{0: 0, 1: 2, 2: 3, 3: 3}
	got := simtest.Starts(evs)
	for id, at := range want {
		if len(got[id]) != 1 || got[id][0] != at {
			t.Errorf("job %d started at %v, want [%v]", id, got[id], at)
		}
	}
}
