package sim

import "github.com/msjfarm/msjfarm/model/dist"

// WorkloadView is what a policy may know of the workload: the system, the
// classes (need, share, service distribution), the arrival process and the
// loads, which a size-blind policy may use as it may use a class's mean
// service time. The individual job sizes of a replayed trace are a different
// matter: knowing them in advance is size awareness, so Trace is a policy
// error for a policy that has not declared SizeAware, like System.Size.
//
// The view reads the engine's own workload without copying it: slices it
// returns must not be modified.
type WorkloadView struct{ s *System }

// Name is the workload's name.
func (v WorkloadView) Name() string { return v.s.w.Name }

// Servers is k.
func (v WorkloadView) Servers() int { return v.s.w.Servers }

// Classes returns the job classes (read-only), as System.Classes.
func (v WorkloadView) Classes() []Class { return v.s.w.Classes }

// Probabilities returns the class shares normalised to sum to 1.
func (v WorkloadView) Probabilities() []float64 { return v.s.w.Probabilities() }

// Replayed reports whether the arrivals are a replayed trace rather than a
// generated process.
func (v WorkloadView) Replayed() bool { return v.s.w.Trace != nil }

// ArrivalRate is the arrival rate λ. For a replayed trace it is the trace's
// empirical rate, (jobs − 1) over the span of its arrival instants (0 for
// fewer than two jobs or a zero span), since the workload's configured rate
// is ignored then.
func (v WorkloadView) ArrivalRate() float64 {
	tr := v.s.w.Trace
	if tr == nil {
		return v.s.w.ArrivalRate
	}
	if len(tr) < 2 {
		return 0
	}
	span := tr[len(tr)-1].Arrival - tr[0].Arrival
	if span <= 0 {
		return 0
	}
	return float64(len(tr)-1) / span
}

// Interarrival is the inter-arrival distribution of a renewal arrival
// process (rescaled to mean 1/ArrivalRate by the engine), nil for Poisson
// arrivals and for a trace.
func (v WorkloadView) Interarrival() dist.Dist {
	if v.s.w.Trace != nil {
		return nil
	}
	return v.s.w.Interarrival
}

// ClassLoads returns ρ_i = λ p_i n_i E[S_i] / k for each class; for a trace,
// the empirical loads (aggregates of the sizes, like a class's mean).
func (v WorkloadView) ClassLoads() []float64 { return v.s.w.ClassLoads() }

// Load returns the offered load ρ = Σ ρ_i.
func (v WorkloadView) Load() float64 { return v.s.w.Load() }

// Trace returns the replayed trace, nil for generated arrivals. It holds
// every job's size, so only a policy that declares SizeAware may read it;
// for any other it is a policy error, like System.Size.
func (v WorkloadView) Trace() []TraceJob {
	if !v.s.info.SizeAware {
		v.s.fail("the trace (job sizes) read by a policy that did not declare SizeAware")
	}
	return v.s.w.Trace
}
