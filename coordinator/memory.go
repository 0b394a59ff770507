package coordinator

import (
	"os"
	"runtime/debug"

	"github.com/msjfarm/msjfarm/internal/gcpace"
)

// MemoryLimit is the soft memory limit of a coordinator process
// (LimitMemory). The msjfarm binary paces its collector for simulations
// (internal/gcpace: GOGC=400, right for a replication whose heap is all
// live), which lets a coordinator's heap — mostly the garbage of decoded
// messages and of tasks generated a window at a time — grow to five times
// what is live: a 10^7-task submission, 118 MB live, reached 484 MiB
// resident under this limit alone. So the coordinator also goes back to
// GOGC=100. Under the limit the collector runs as often as it must to stay
// below it (an embedded NATS server, in the same process, counts too).
const MemoryLimit = 448 << 20

// LimitMemory gives the collector back its default pace (GOGC=100, or
// $GOGC: gcpace.Stop) and sets the process's soft memory limit to
// MemoryLimit, unless $GOMEMLIMIT sets one (the user's choice wins).
// msjfarm coordinator calls it; a process that also runs simulations
// (msjfarm run) does not.
func LimitMemory() {
	gcpace.Stop()
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	debug.SetMemoryLimit(MemoryLimit)
}
