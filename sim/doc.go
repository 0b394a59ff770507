// Package sim is msjfarm's discrete-event simulator of the multiserver-job
// model (docs/design.md): k identical servers; jobs of several classes, each
// holding its class's number of servers for its whole service; a scheduling
// Policy that decides which waiting jobs start (and, if it declares so, which
// running jobs are preempted).
//
// # Events and their order
//
// Three kinds of event drive a replication: arrivals (the next one is kept
// aside, the job sequence being generated lazily), departures and policy
// timers (both on a binary heap, sim/heapq, keyed by time, ties first-in
// first-out). At equal times departures and timers are handled before the
// arrival, so that a job arriving exactly when another leaves sees the freed
// servers. The policy is called after the engine has updated the state:
// Arrive with the job already counted in the system, Complete with its
// servers already free.
//
// The event loop (replication.loop) is a short labelled loop in the style
// of SimPy's step(): each turn takes the earliest event and hands it to one
// small step — depart, fire a timer, or arrive (window accounting, the stop
// rules checked before admission, admission) — and it ends with a typed stop
// reason: drained (the normal end), trace ended, drain limit or
// max_in_system, the last three recorded as instability reasons.
//
// # Policy instances
//
// Run simulates one pass under the instance it is given. RunFresh takes a
// constructor instead and builds a fresh instance for every pass: MSER
// (Config.MSER) simulates the sample path twice, and the measured pass must
// not inherit the first pass's state, so Run refuses MSER. The SDK's
// Spec.Run uses RunFresh, so a policy's Init is called exactly once per
// instance and never has to undo an earlier run.
//
// # What a policy sees
//
// A policy reads the system through System (time, servers, running jobs,
// classes) and the workload through a read-only WorkloadView. Job sizes are
// size awareness: System.Size, System.Remaining and the replayed trace
// (WorkloadView.Trace) are policy errors for a policy that does not
// declare SizeAware.
//
// # Measurement
//
// With Config.Warmup = W and Config.Arrivals = N, the jobs with arrival index
// W..W+N−1 are measured ("tagged"). Time averages (jobs in system and in
// queue, utilisation, throughput) integrate over the window from the arrival
// of job W to the arrival of job W+N. The run then goes on — arrivals
// included, so the measured jobs see the same dynamics to the end — until
// every measured job has left, so per-job means carry no end-of-run bias
// against long jobs; Config.DrainLimit bounds that drain. With Config.MSER
// the warm-up is chosen by MSER-5 instead (see Config.MSER).
//
// # Invariants
//
// The engine enforces the model whatever the policy does: a start must fit in
// the idle servers, a job starts only while waiting, only declared preemptive
// policies preempt, only declared size-aware policies read sizes. A violation
// or a panic in the policy ends the run with an error (never a crash of the
// caller, never a silently wrong result).
//
// # Cost
//
// Steady state allocates nothing (jobs are pooled, queues are ring buffers,
// the heap is a slice), memory is O(jobs in system), and one event costs a
// few tens of nanoseconds plus the policy's decision. Per-class response
// times feed a Welford accumulator (sim/stats), a few flops per departure,
// whose variance keeps its precision on long runs where Σt² − n·mean² would
// cancel.
package sim
