package sim

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/model/dist"
)

// Class is one job class of the multiserver-job model: every job of the class
// holds Need servers for its whole service, arrives with probability
// proportional to Share, and has a service duration drawn from Service.
type Class struct {
	Name    string
	Need    int
	Share   float64
	Service dist.Dist
}

// TraceJob is one job of a replayed trace: arrival instant, service duration
// and class index into Workload.Classes. Requested is the user's run-time
// estimate where the trace records one (SWF field 9, requested time), 0 if
// unknown; the engine ignores it, and a policy that schedules on user
// estimates (backfilling) reads it as Workload().Trace[job.ID()] — a trace
// job's ID is its index in Trace.
type TraceJob struct {
	Arrival   float64
	Size      float64
	Class     int
	Requested float64 `json:"Requested,omitempty"`
}

// Workload is the system and arrival process of one scenario.
//
// Arrivals are Poisson with rate ArrivalRate unless Interarrival is set, in
// which case inter-arrival times are Interarrival samples rescaled to mean
// 1/ArrivalRate (so a sweep over the rate keeps the distribution's shape), or
// unless Trace is set, in which case the trace is replayed as it is and
// ArrivalRate is ignored.
type Workload struct {
	Name         string
	Servers      int
	Classes      []Class
	ArrivalRate  float64
	Interarrival dist.Dist
	Trace        []TraceJob
}

// MaxServers is the most servers a workload may have. Policies keep state
// per server or per need up to k (ServerFilling's packing tables, the
// divisor paths' levels), so k sizes memory and start-up: a trace header
// "MaxProcs: 1000000000" had a worker allocate 4 GB and die, and
// 9999999999999 spun in a policy's set-up for ever, deaf to signals. The
// papers' largest system has 16,384 servers; 2^20 leaves room for far
// larger ones at a few MiB of state.
const MaxServers = 1 << 20

// Validate checks the workload and names the offending class or field.
func (w *Workload) Validate() error {
	if w.Servers < 1 {
		return fmt.Errorf("workload %q: servers must be >= 1, got %d", w.Name, w.Servers)
	}
	if w.Servers > MaxServers {
		return fmt.Errorf("workload %q: servers must be at most %d, got %d", w.Name, MaxServers, w.Servers)
	}
	if len(w.Classes) == 0 {
		return fmt.Errorf("workload %q: no job classes", w.Name)
	}
	var total float64
	for i, c := range w.Classes {
		name := classLabel(i, c)
		switch {
		case c.Need < 1:
			return fmt.Errorf("workload %q: %s: need must be >= 1, got %d", w.Name, name, c.Need)
		case c.Need > w.Servers:
			return fmt.Errorf("workload %q: %s: need %d exceeds the %d servers", w.Name, name, c.Need, w.Servers)
		case math.IsNaN(c.Share) || math.IsInf(c.Share, 0) || c.Share < 0:
			return fmt.Errorf("workload %q: %s: share must be a finite number >= 0, got %v", w.Name, name, c.Share)
		case c.Service == nil:
			return fmt.Errorf("workload %q: %s: no service distribution", w.Name, name)
		}
		if m := c.Service.Mean(); !(m > 0) || math.IsInf(m, 0) {
			return fmt.Errorf("workload %q: %s: service mean must be finite and > 0, got %v", w.Name, name, m)
		}
		total += c.Share
	}
	if w.Trace != nil {
		for i, j := range w.Trace {
			switch {
			case j.Class < 0 || j.Class >= len(w.Classes):
				return fmt.Errorf("workload %q: trace job %d: class %d out of range", w.Name, i, j.Class)
			case !(j.Size > 0) || math.IsInf(j.Size, 0):
				return fmt.Errorf("workload %q: trace job %d: size must be finite and > 0, got %v", w.Name, i, j.Size)
			case i > 0 && j.Arrival < w.Trace[i-1].Arrival:
				return fmt.Errorf("workload %q: trace job %d: arrival %v before the previous job's %v", w.Name, i, j.Arrival, w.Trace[i-1].Arrival)
			}
		}
		return nil
	}
	if !(total > 0) {
		return fmt.Errorf("workload %q: class shares must sum to a positive total, got %v", w.Name, total)
	}
	if !(w.ArrivalRate > 0) || math.IsInf(w.ArrivalRate, 0) {
		return fmt.Errorf("workload %q: arrival rate must be finite and > 0, got %v", w.Name, w.ArrivalRate)
	}
	if w.Interarrival != nil {
		if m := w.Interarrival.Mean(); !(m > 0) || math.IsInf(m, 0) {
			return fmt.Errorf("workload %q: inter-arrival mean must be finite and > 0, got %v", w.Name, m)
		}
	}
	return nil
}

func classLabel(i int, c Class) string {
	if c.Name != "" {
		return fmt.Sprintf("class %d (%q)", i, c.Name)
	}
	return fmt.Sprintf("class %d", i)
}

// Probabilities returns the class shares normalised to sum to 1.
func (w *Workload) Probabilities() []float64 {
	p := make([]float64, len(w.Classes))
	var total float64
	for _, c := range w.Classes {
		total += c.Share
	}
	for i, c := range w.Classes {
		p[i] = c.Share / total
	}
	return p
}

// ClassLoads returns ρ_i = λ p_i n_i E[S_i] / k for each class (docs/design.md).
// For a trace the rate and mix are the trace's own empirical ones.
func (w *Workload) ClassLoads() []float64 {
	rho := make([]float64, len(w.Classes))
	if w.Trace != nil {
		if len(w.Trace) < 2 {
			return rho
		}
		span := w.Trace[len(w.Trace)-1].Arrival - w.Trace[0].Arrival
		if span <= 0 {
			return rho
		}
		for _, j := range w.Trace {
			rho[j.Class] += float64(w.Classes[j.Class].Need) * j.Size
		}
		for i := range rho {
			rho[i] /= span * float64(w.Servers)
		}
		return rho
	}
	for i, p := range w.Probabilities() {
		c := w.Classes[i]
		rho[i] = w.ArrivalRate * p * float64(c.Need) * c.Service.Mean() / float64(w.Servers)
	}
	return rho
}

// Load returns the offered load ρ = Σ ρ_i.
func (w *Workload) Load() float64 {
	var s float64
	for _, r := range w.ClassLoads() {
		s += r
	}
	return s
}
