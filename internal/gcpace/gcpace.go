// Package gcpace sets the garbage collector's pace for the processes that
// run simulations: msjfarm itself and every policy plugin binary.
//
// Why: a replication's heap is almost all live until the replication ends —
// pooled jobs and the queues that hold them — and it allocates nothing in a
// steady state, so the collector has almost nothing to free. When a backlog
// grows (an unstable load, a run near saturation), the default GOGC=100
// nevertheless starts a cycle at every doubling of the heap, and each cycle
// scans every queued job pointer and sends every pointer store of the event
// loop through the write barrier while it marks. On FCFS over one-or-all at
// λ = 7 (a backlog of 750 000 jobs after 1.33·10^6 arrivals) that was ~25%
// of the CPU time; at GOGC=400 it is ~10%, and the peak memory is the same,
// because there is so little garbage to let accumulate.
package gcpace

import (
	"os"
	"runtime/debug"
)

// Percent is the GOGC value a simulation process runs with when the
// environment does not set GOGC.
const Percent = 400

// Apply sets the collector's target to Percent unless $GOGC is set (the
// user's choice wins, including GOGC=off). It returns the target now in
// force, as debug.SetGCPercent reports it (negative: off).
func Apply() int {
	if _, set := os.LookupEnv("GOGC"); set {
		v := debug.SetGCPercent(-1)
		debug.SetGCPercent(v)
		return v
	}
	debug.SetGCPercent(Percent)
	return Percent
}
