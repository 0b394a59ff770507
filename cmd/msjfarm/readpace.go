package main

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/msjfarm/msjfarm/internal/gcpace"
)

// readerMemoryLimit is the soft limit on the Go runtime's memory while a
// command reads a campaign (results, report, reproduce): 192 MiB, so that
// with the executable's own pages (about 45 MiB resident) the process
// stays under 256 MiB. What a reader keeps is O(points) (a point's
// summary is about 5 kB: 55 MB at 10^4 points); at the default pace
// (GOGC=100) the heap grows to twice that between collections (197 MiB
// resident for `results --compare` on 10^6 tasks in 10^4 points), under
// the limit the collector runs more often instead. Soft: a campaign
// whose summaries need more runs slower, never fails. GOMEMLIMIT
// overrides it.
const readerMemoryLimit = 192 << 20

// paceReader sets the collector for reading a campaign: its default pace
// (gcpace.Stop: at the simulation pace the discarded records pile up to
// five times what is live) and readerMemoryLimit.
func paceReader() {
	gcpace.Stop()
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(readerMemoryLimit)
	}
}

// paceSimulation undoes paceReader before simulations run again (msjfarm
// reproduce): the simulation pace, and no limit a simulation's live heap
// could exceed.
func paceSimulation() {
	gcpace.Resume()
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
