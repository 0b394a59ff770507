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
// the environment wins. More replications than cores get one P more than
// the cores, not than the replications: Ps past the cores only add
// threads, and --workers 100000 made the runtime exceed its 10 000
// threads (a crash after 48 s and 2.4 GB, even under --dry-run).
func reserveFarmProc(replications int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if cores := runtime.GOMAXPROCS(0); cores <= replications {
		runtime.GOMAXPROCS(min(replications, cores) + 1)
	}
}
