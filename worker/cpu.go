package worker

import (
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
)

// threadCPU is the CPU time of the calling OS thread on the clock every
// runner uses (internal/cputime), so an in-process replication's
// cpu_seconds compares with a plugin's; the caller has locked its goroutine
// to the thread.
func threadCPU() (time.Duration, bool) { return cputime.Thread() }
