package sdk

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time (user + system) of the calling OS thread; the
// caller locks the goroutine to its thread around the measured span.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
