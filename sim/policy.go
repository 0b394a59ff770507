package sim

// Policy is a scheduling policy. It is the whole of what a policy must
// implement; everything else is an optional capability, discovered by type
// assertion, in the style of the Kubernetes scheduler framework.
//
// The engine calls Init once per replication, then Arrive for every arrival and
// Complete for every departure, always from one goroutine. Inside those calls
// the policy acts on the system only through System.Start (and, if it declares
// preemption, System.Preempt; StartJobs and PreemptJobs, or StartJobsIn and
// PreemptJobsIn on a table of jobs, make many of them in one call), and may
// read the system's state. The engine owns
// the jobs: a policy keeps *Job pointers only while the job is in the system,
// and must drop a job when Complete reports it.
//
// A policy instance serves one replication pass: the SDK (sdk.Spec.Run) and
// RunFresh construct a fresh instance for every replication and for each of
// MSER's two passes, so Init need not undo an earlier run. (A caller that
// hands the same instance to Run twice takes on that reset itself; the
// built-in policies' Init does reset.)
type Policy interface {
	// Init prepares the policy for a replication of the given system (servers,
	// classes). It returns an error if the policy cannot run on this workload
	// (e.g. a parameter out of range for this k).
	Init(s *System) error
	// Arrive is called when job j has arrived and is waiting.
	Arrive(s *System, j *Job)
	// Complete is called after job j has finished and released its servers.
	Complete(s *System, j *Job)
}

// Preemption says whether and how a policy may interrupt running jobs.
type Preemption uint8

const (
	// NoPreemption: a started job runs to completion (the default).
	NoPreemption Preemption = iota
	// PreemptResume: a preempted job keeps its progress and later continues.
	PreemptResume
	// PreemptRestart: a preempted job loses its progress and later restarts
	// with its original size (the Kill-Smart model, K §3); the lost server-time
	// is counted as wasted work.
	PreemptRestart
)

func (p Preemption) String() string {
	switch p {
	case PreemptResume:
		return "resume"
	case PreemptRestart:
		return "restart"
	default:
		return "none"
	}
}

// Preemptor is implemented by policies that preempt. Without it,
// System.Preempt is a policy error.
type Preemptor interface {
	Preemption() Preemption
}

// SizeAware is implemented by policies that read job sizes (System.Size,
// System.Remaining). Without it those calls are policy errors; with it the
// result records that the policy was size-aware.
type SizeAware interface {
	SizeAware() bool
}

// TimerHandler is implemented by policies that request timers with
// System.SetTimer; the engine calls Timer when one fires.
type TimerHandler interface {
	Timer(s *System, tag int)
}

// Measurer is implemented by policies with counters that must cover only the
// measurement window: the engine calls StartMeasuring when the warm-up ends.
type Measurer interface {
	StartMeasuring(s *System)
}

// Counter is one policy-specific statistic exported into the result (e.g. the
// mean duration of an MSFQ phase, the fraction of arrivals sent to helpers).
type Counter struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// CounterReporter is implemented by policies that export counters. The engine
// calls Counters once, at the end of the replication.
type CounterReporter interface {
	Counters() []Counter
}

// Configurable is implemented by policies with parameters. Params is the
// schema, available on a freshly constructed instance, so that a sweep can be
// validated before it runs; Configure receives the resolved values (defaults
// filled in, types and ranges checked by Resolve) before Init.
type Configurable interface {
	Params() []Param
	Configure(v Values) error
}

// PolicyInfo summarises what a policy declares, for results and conformance
// checks.
type PolicyInfo struct {
	Preemption Preemption
	SizeAware  bool
	Timers     bool
	Counters   bool
	Params     []Param
	// CounterInfo is the policy's description of its counters
	// (CounterDescriber; nil without it).
	CounterInfo CounterInfos
}

// Describe reads a policy's optional capabilities.
func Describe(p Policy) PolicyInfo {
	var in PolicyInfo
	if pr, ok := p.(Preemptor); ok {
		in.Preemption = pr.Preemption()
	}
	if sa, ok := p.(SizeAware); ok {
		in.SizeAware = sa.SizeAware()
	}
	_, in.Timers = p.(TimerHandler)
	_, in.Counters = p.(CounterReporter)
	if d, ok := p.(CounterDescriber); ok {
		in.CounterInfo = d.DescribeCounters()
	}
	if c, ok := p.(Configurable); ok {
		in.Params = c.Params()
	}
	return in
}
