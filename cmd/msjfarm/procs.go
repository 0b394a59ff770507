package main

import (
	"os"
	"runtime"
)

// reserveFarmProc gives the Go scheduler one P more than the replications a
// process runs at once. Replications are tight loops that never block: with
// GOMAXPROCS = cores = replications every P is held by one, and the farm's
// own goroutines (the NATS client and, under `run`, the embedded server and
// coordinator; result writes, acks, heartbeats) wait for the scheduler's
// 10 ms preemption, or behind a result's fsync holding the one P a finished
// replication freed. Measured under `run` on 2 cores: 1.4–2.1 ms median
// between one task's end and the next one's start, 1.0 ms with the extra
// P. With it, the kernel interleaves the farm's threads with the
// replications at its own, finer, grain. Replications in plugin processes
// leave the P idle, so it costs nothing there. An explicit GOMAXPROCS in
// the environment wins.
func reserveFarmProc(replications int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if runtime.GOMAXPROCS(0) <= replications {
		runtime.GOMAXPROCS(replications + 1)
	}
}
