// Package sdk is what a scheduling-policy author imports, and all of it: the
// policy interfaces, the types a policy reads, the helper queues, the
// parameter schema, Spec and Serve.
//
// A policy is a type with three methods (Init, Arrive, Complete; see
// [Policy]) that starts waiting jobs with [System].Start. Optional capability
// interfaces add preemption ([Preemptor]), size awareness ([SizeAware]),
// timers ([TimerHandler]), counters ([CounterReporter], [Measurer],
// [CounterDescriber]) and
// parameters ([Configurable]). The engine enforces the model's invariants
// whatever a policy does: starting a job that does not fit, preempting
// without declaring it or reading a size without declaring size awareness
// ends the replication with a policy error.
//
// A plugin binary lists its policies as [Spec]s and serves them:
//
//	var Policies = []sdk.Spec{{Name: "fcfs", Doc: "…", New: func() sdk.Policy { return &FCFS{} }}}
//	func main() { sdk.Serve("fcfs", "1.0.0", Policies) }
//
// The interfaces are declared here with the same method sets as the
// engine's (package sim), so a policy written against sdk is a sim.Policy
// and its capabilities are found by the engine's type assertions.
//
// # System and Job are the engine's own types
//
// [System] and [Job] are aliases of sim.System and sim.Job, not interfaces,
// because the engine calls the policy on every event and the policy calls
// back into them several times per call (Free, Need, Start). On a concrete
// type those calls are inlined; through an interface each is a dynamic call
// the compiler can neither inline nor devirtualise. Measured with
// BenchmarkSystem in this package (FCFS on one-or-all at λ = 2.5, 10⁵
// arrivals per op, the thread's CPU time per event, which other load on a
// shared machine distorts far less than wall time), alternating the two
// versions:
//
//	for i in 1 2 3 4 5 6; do for impl in concrete interface; do
//	  go test -run '^$' -bench "System/impl=$impl\$" -benchtime 20x ./sdk/
//	done; done
//
// concrete 49.1 cpu-ns/event, System behind an interface 50.3 (+2.5%,
// slower in 6 of 6 pairs) — with only System's Free and Start made dynamic;
// an SDK of interfaces would also make every Job accessor dynamic, and
// policies richer than FCFS call the system more per event. The same
// aliases make Class, Counter, Preemption, Param and Values the engine's
// types, since they appear in the signatures the engine calls.
//
// # Inlining
//
// The compiler inlines the small methods of System and Job (Free, Now,
// Need, Measuring, ...) into a package only if it has loaded the export
// data of the package that declares them, sim, which it does for a direct
// import; through sdk alone each such call stays a real call. A policy
// package on a hot path should therefore also import the engine for its
// export data only:
//
//	import _ "github.com/msjfarm/msjfarm/sim"
//
// Every built-in family does (plugins/<family>/inline.go). Measured with
// callgrind: 1.35% of the instructions of FCFS over one-or-all at ρ = 0.5,
// 4.6% of Adaptive Quickswap's over Borg cell B at λ = 4.5.
//
// What a policy may call:
//
//   - on *System, reads: Now, Servers, Free, Busy, InSystem, Classes,
//     Workload, Running (the engine's slice: read it, do not keep or modify
//     it), Rand (the policy's own random stream), Measuring; actions: Start,
//     Preempt (with [Preemptor]), SetTimer (with [TimerHandler]); sizes:
//     Size and Remaining (with [SizeAware]).
//   - on *Job: ID (arrival index, increasing in arrival order), Class, Need,
//     Arrival, Running, Waiting, Preemptions; and the scratch fields Idx,
//     Tag and Key, which are the policy's own (the engine clears them on
//     arrival and never reads them). A job's size is not on Job: it is read
//     through System.Size, which requires SizeAware.
//
// The engine owns the jobs: a policy keeps *Job pointers only while the job
// is in the system and drops a job when Complete reports it (the engine
// recycles it).
package sdk

import (
	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/sim"
)

// Policy is a scheduling policy: the three methods every policy has.
//
// The engine calls Init once at the start of a replication, then Arrive for
// every arrival and Complete for every departure, always from one goroutine.
// Inside those calls the policy acts only through System.Start (and, if it
// declares preemption, System.Preempt and, with timers, System.SetTimer)
// and may read the rest of the system's state.
//
// Init must leave the policy as if newly made by Spec.New: one instance may
// run several replications in turn (a benchmark does), and state carried
// over from one would change the next.
type Policy interface {
	// Init prepares the policy for a replication of s (servers, classes).
	// An error (e.g. a parameter out of range for this k) fails the run.
	Init(s *System) error
	// Arrive is called when job j has arrived; it is waiting.
	Arrive(s *System, j *Job)
	// Complete is called after job j has finished and released its
	// servers; the policy must drop every reference to j.
	Complete(s *System, j *Job)
}

// Preemptor declares that a policy interrupts running jobs, and how: a
// preempted job keeps its progress (PreemptResume) or loses it
// (PreemptRestart, the Kill-Smart model; the lost server-time is counted as
// wasted work). Without it System.Preempt is a policy error.
type Preemptor interface {
	Preemption() Preemption
}

// SizeAware declares that a policy reads job sizes (System.Size,
// System.Remaining) by returning true. Without it those calls are policy
// errors; with it the result records that the policy was size-aware, so a
// size-blind policy is never compared with one that secretly knew.
type SizeAware interface {
	SizeAware() bool
}

// TimerHandler is implemented by a policy that sets timers with
// System.SetTimer; the engine calls Timer with the tag when one fires.
type TimerHandler interface {
	Timer(s *System, tag int)
}

// Measurer is implemented by a policy whose counters must cover only the
// measurement window: the engine calls StartMeasuring when the warm-up ends,
// and the policy resets them there.
type Measurer interface {
	StartMeasuring(s *System)
}

// CounterReporter is implemented by a policy that exports its own
// statistics into the result (e.g. the mean length of an MSFQ phase). The
// engine calls Counters once, at the end of the replication.
type CounterReporter interface {
	Counters() []Counter
}

// CounterDescriber is implemented by a policy that describes its counters
// for people: per counter a label ("mean duration of phase 1"), a unit
// ("time") and a kind (KindFraction, KindCount, KindTime, KindRate), which
// figures, tables and summary_long show instead of the raw name. Like
// Params it must answer on a fresh instance, and describe every counter
// the policy may report under any parameters; a per-class counter
// "name/class" is described by the entry of name (that form is what marks
// a counter per class: outputs draw it a panel per class and name its
// class in summary_long). It is optional: without
// it (a plugin built against an SDK before it existed, too) the counters
// show their raw names. The worker refuses a plugin whose descriptions are
// not short plain text (see CounterInfo), and Serve does first.
type CounterDescriber interface {
	DescribeCounters() []CounterInfo
}

// CycleReporter is implemented by a policy whose behaviour runs in long
// cycles (phases, kill cycles, helper use): Cycles names a cycle and counts
// those completed in the measurement window (reset them in StartMeasuring).
// The count is evidence of the result's converged verdict: a window with
// fewer than sim.MinCycles cycles has not averaged over the policy's cycle.
type CycleReporter interface {
	Cycles() (name string, n int64)
}

// Configurable is implemented by a policy with parameters. Params is the
// schema and must be available on a fresh instance from Spec.New, so that a
// sweep is validated before anything runs; Configure receives the resolved
// values (defaults filled in, types and ranges checked against the schema)
// before Init. Bounds that depend on the workload (a threshold at most k−1)
// are checked in Init, which knows k.
type Configurable interface {
	Params() []Param
	Configure(v Values) error
}

// The engine's types a policy reads (see the package documentation for why
// they are the engine's own and what a policy may call on them).
type (
	// System is one replication's state as the policy sees it.
	System = sim.System
	// Job is a job in the system, owned by the engine.
	Job = sim.Job
	// Parked is a waiting job handed back to the engine (System.Park).
	Parked = sim.Parked
	// Class is a job class of the workload (System.Classes): name, server
	// need, share of arrivals and service distribution.
	Class = sim.Class
	// Counter is one policy statistic in the result (CounterReporter).
	Counter = sim.Counter
	// CounterInfo describes a counter (CounterDescriber): Name, Label (at
	// most 32 characters: letters, digits, single spaces and the
	// punctuation -_()/.%·:²³⁻¹×[]§; with its unit it is a figure's
	// axis label, which shows about 36 in full), Unit (at most 16, the
	// same characters; empty for a dimensionless number), Kind and Doc
	// (a phrase of at most 100 characters, commas allowed, for captions).
	CounterInfo = sim.CounterInfo
	// CounterInfos is a policy's descriptions; Lookup names a reported
	// counter from them as outputs do.
	CounterInfos = sim.CounterInfos
	// CounterKind is what sort of number a counter is: KindOther (""),
	// KindCount, KindFraction (in [0, 1]: its intervals are clipped
	// there), KindTime (in the workload's time unit) or KindRate.
	CounterKind = sim.CounterKind
	// Preemption is a Preemptor's mode: NoPreemption, PreemptResume or
	// PreemptRestart.
	Preemption = sim.Preemption
	// Param is one entry of a Configurable's schema: Name, Type, Default,
	// optional Min and Max (inclusive, for numbers; see Bound) or Enum (for
	// strings), and Doc, shown by `msjfarm plugin info`.
	Param = sim.Param
	// ParamType is a Param's type: Int, Float, Bool or String. Numbers from
	// sweep files may arrive as float or int; an Int accepts a float only if
	// it is whole.
	ParamType = sim.ParamType
	// Values are a Configurable's resolved parameters: every schema entry
	// present with the Go type of its ParamType (int, float64, bool,
	// string), read with Values.Int, Float, Bool and String.
	Values = sim.Values
)

// Preemption modes.
const (
	NoPreemption   = sim.NoPreemption
	PreemptResume  = sim.PreemptResume
	PreemptRestart = sim.PreemptRestart
)

// Counter kinds (CounterInfo.Kind).
const (
	KindOther    = sim.KindOther
	KindCount    = sim.KindCount
	KindFraction = sim.KindFraction
	KindTime     = sim.KindTime
	KindRate     = sim.KindRate
)

// Parameter types.
const (
	Int    = sim.Int
	Float  = sim.Float
	Bool   = sim.Bool
	String = sim.String
)

// Bound returns a pointer to v, for Param.Min and Param.Max literals.
func Bound(v float64) *float64 { return &v }

// Spec names one policy a plugin serves and makes fresh instances of it.
type Spec struct {
	// Name is what sweep files write (case-insensitive); unique across the
	// farm's plugins.
	Name string
	// Doc is one or two sentences citing the policy's source, shown by
	// `msjfarm plugin info`.
	Doc string
	// New returns a fresh, unconfigured instance; if it is Configurable its
	// Params is the schema. Every replication gets its own instance.
	New func() Policy
}

// Params returns the policy's parameter schema (nil for none), read from a
// fresh instance.
func (s Spec) Params() []Param { return s.entry().Params() }

// Run simulates one replication of the policy on w as a worker would: a
// fresh instance, configured with params (checked against the schema, an
// error naming the parameter), run by the engine under cfg. It is what a
// policy's own tests call.
func (s Spec) Run(w *sim.Workload, params map[string]any, cfg sim.Config) (*sim.Result, error) {
	return s.entry().Run(w, params, cfg)
}

// entry is the spec as the wire server and the catalogue serve it.
func (s Spec) entry() wire.Entry {
	e := wire.Entry{Name: s.Name, Doc: s.Doc}
	if s.New != nil { // a nil New stays nil, for the server to report
		e.New = func() sim.Policy { return s.New() }
	}
	return e
}

// Reference names a reference model: something a sweep compares policies
// against that is not a policy of the k-server system (SRPT-1 on the
// resource-pooled single server, S §3.1). Run replaces the engine's run of a
// policy: it must simulate the same job sequence as the engine would for
// cfg.Seed (sim.NewJobStream) so that ratios to it use common random
// numbers, honour cfg's run length, limits, Context and Progress, and return
// a result in the engine's units. A reference model takes no parameters.
type Reference struct {
	Name string
	Doc  string
	Run  func(w *sim.Workload, cfg sim.Config) (*sim.Result, error)
}

// Serve is all a policy plugin's main does:
//
//	func main() { sdk.Serve("fcfs", "1.0.0", fcfs.Policies) }
//
// name is the plugin's name (by convention its family; the binary is named
// msjfarm-policy-<name>), version its own version; policies and any
// reference models are what it serves. Serve answers the worker's go-plugin
// handshake on stdout and serves gRPC until the worker closes it; it does
// not return. Run by hand, the binary says it is a plugin and exits with
// status 1; duplicate or empty names are reported on stderr, status 1.
//
// The plugin runs up to $MSJFARM_PLUGIN_MAX_CONCURRENT replications at once
// (the worker sets it), each on its own locked OS thread so that its CPU
// time is measured; it exits by itself if the worker dies without stopping
// it; it logs to stderr at $MSJFARM_PLUGIN_LOG_LEVEL (default warn), which
// the worker re-logs.
//
// It sets the garbage collector's target to GOGC=400 unless $GOGC is set, as
// msjfarm does: a replication's heap is nearly all live, so the default
// target only makes the collector rescan a growing queue.
func Serve(name, version string, policies []Spec, references ...Reference) {
	wire.Serve(name, version, entries(policies, references))
}

// entries are what the wire server serves.
func entries(policies []Spec, references []Reference) []wire.Entry {
	out := make([]wire.Entry, 0, len(policies)+len(references))
	for _, s := range policies {
		out = append(out, s.entry())
	}
	for _, r := range references {
		out = append(out, wire.Entry{Name: r.Name, Doc: r.Doc, Reference: r.Run})
	}
	return out
}
