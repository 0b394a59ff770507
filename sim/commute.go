package sim

// PreemptionsCommute reports whether the order of the jobs in one
// PreemptJobs or PreemptJobsIn call can change anything but the error of
// a list the engine refuses: it is true when the policy preempts with
// resume, no observer records a trace, and the engine keeps no list of the
// running jobs (System.Running has not been called). Then a preemption
// only marks its job's departure stale and updates counters, each job's
// own fields and sums that do not depend on the order, so any permutation
// of a list leaves the engine in the same state. A policy whose decision
// finds its preemptions in another order than the one its one-call-each
// equivalent would make (ServerFilling's SRPT and Gittins orders find them
// bucket by bucket and merge the buckets' runs, ~0.2 G instructions of a
// Borg cell B replication) may skip that merge when this is true. Starts
// never commute: each departure's sequence number, which breaks ties in
// time, is its place in the list. The answer can change during a run (at
// a policy's first Running call), so ask it at each decision.
func (s *System) PreemptionsCommute() bool {
	return s.info.Preemption == PreemptResume && s.obs == nil && !s.listRunning
}
