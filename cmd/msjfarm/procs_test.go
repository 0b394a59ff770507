package main

import (
	"runtime"
	"testing"
)

// TestReserveFarmProc: replications that fill the cores get one P more;
// more replications than cores get the same, not one P each (--workers
// 100000 made the runtime exceed its 10 000 threads and crash); fewer
// change nothing.
func TestReserveFarmProc(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ cores, replications, want int }{
		{4, 4, 5},
		{4, 100000, 5},
		{4, 2, 4},
		{1, 1, 2},
	} {
		runtime.GOMAXPROCS(c.cores)
		reserveFarmProc(c.replications)
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("%d cores, %d replications: GOMAXPROCS %d, want %d", c.cores, c.replications, got, c.want)
		}
	}
}
