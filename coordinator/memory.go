package coordinator

import (
	"os"
	"runtime/debug"
)

// MemoryLimit is the soft memory limit of a coordinator process
// (LimitMemory). The msjfarm binary paces its collector for simulations
// (internal/gcpace: GOGC=400, right for a replication whose heap is all
// live), which would let a coordinator's heap — mostly the garbage of
// decoded messages and of tasks generated a window at a time — grow to
// five times what is live: 800 MB for the 160 MB of a 10^7-task
// campaign's ids. Under this limit the collector runs as often as it must
// to stay below it (an embedded NATS server, in the same process, counts
// too). The coordinator's bounds (docs/design.md, "Memory bounds") keep
// what is live under it for campaigns of 10^7 tasks.
const MemoryLimit = 448 << 20

// LimitMemory sets the process's soft memory limit to MemoryLimit, unless
// $GOMEMLIMIT sets one (the user's choice wins). msjfarm coordinator calls
// it; a process that also runs simulations (msjfarm run) does not.
func LimitMemory() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	debug.SetMemoryLimit(MemoryLimit)
}
