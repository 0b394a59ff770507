package srpt

import (
	"fmt"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
)

// RunSRPT1 simulates SRPT-1 (S §3.1, §4.1, §6): the resource-pooled M/G/1
// under preemptive Shortest Remaining Processing Time. The k servers are
// pooled into one server of rate 1; a job of need n and duration d has size
// n·d/k there. SRPT minimises the number in system at every instant on a
// single server, and the pooled server can do anything the k servers can,
// so its mean response time is a lower bound for every multiserver-job
// policy (S §4.1).
//
// It is a reference model, not a policy of the k-server system, but it is
// simulated by the engine itself: the pooled server is a one-server
// workload whose classes have need 1 and durations n·d/k — the same
// arrival instants, classes and duration draws as w's job sequence for
// cfg.Seed (the same streams, each draw scaled by n/k; see sim.NewJobStream
// for the sequence), so E[T_policy]/E[T_SRPT-1] is estimated with common
// random numbers — run under GreedySRPT, which on one server is preemptive
// SRPT (ties to the earlier arrival). Every convention of sim.Run therefore
// holds as it is: the measured jobs are those with arrival index in
// [Warmup, Warmup+Arrivals), the run drains them, DrainLimit, MaxInSystem,
// MSER-5, the instability rules, SeriesInterval, Progress; the Observer sees
// the pooled server's events (need 1, 0 or 1 busy).
//
// The result is sim.Run's on the pooled server, with Servers and each
// class's Need set back to w's. Hence: response time T is departure −
// arrival; the waiting time is T minus the job's pooled service time n·d/k
// (time in system not being served) and PWait the fraction of jobs that ever
// waited or were preempted; Utilization is the busy fraction of the pooled
// server (ρ when stable); MeanInQueue excludes the job in service;
// Preemptions and PreemptedJobs count SRPT-1's own preemptions; SizeAware is
// true and Preemption "resume". MeanSize alone is scaled back by k/n to the
// mean duration d, as in every engine result on the same sequence. The run
// is deterministic.
func RunSRPT1(w *sim.Workload, cfg sim.Config) (*sim.Result, error) {
	return runPooled(w, func() sim.Policy { return &GreedySRPT{} }, cfg)
}

// runPooled runs a fresh single-server policy (one per pass) on w's
// resource-pooled server (pooledWorkload), with the same job sequence, and
// reports the result in w's terms: w's servers and needs, and each class's
// MeanSize scaled back by k/n to the mean duration. SRPT-1 and Gittins-1
// share it.
func runPooled(w *sim.Workload, newPolicy func() sim.Policy, cfg sim.Config) (*sim.Result, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	r, err := sim.RunFresh(pooledWorkload(w), func() (sim.Policy, error) { return newPolicy(), nil }, cfg)
	if err != nil {
		return nil, err
	}
	r.Servers = w.Servers
	var n, sum float64
	for i := range r.Classes {
		c := &r.Classes[i]
		c.Need = w.Classes[i].Need
		c.MeanSize *= float64(w.Servers) / float64(c.Need)
		n += float64(c.Count)
		sum += float64(c.Count) * c.MeanSize
	}
	if n > 0 {
		r.Overall.MeanSize = sum / n
	}
	return r, nil
}

// pooledWorkload is w's resource-pooled single server: one server, the same
// classes with need 1 and durations scaled by n/k, the same arrivals.
func pooledWorkload(w *sim.Workload) *sim.Workload {
	k := w.Servers
	p := &sim.Workload{Name: w.Name, Servers: 1, ArrivalRate: w.ArrivalRate, Interarrival: w.Interarrival}
	for _, c := range w.Classes {
		p.Classes = append(p.Classes, sim.Class{Name: c.Name, Need: 1, Share: c.Share,
			Service: pooledDist{d: c.Service, n: float64(c.Need), k: float64(k)}})
	}
	if w.Trace != nil {
		p.Trace = make([]sim.TraceJob, len(w.Trace))
		for i, j := range w.Trace {
			p.Trace[i] = sim.TraceJob{Arrival: j.Arrival, Size: pooledSize(float64(w.Classes[j.Class].Need), j.Size, float64(k)), Class: j.Class}
		}
	}
	return p
}

// pooledSize is the size n·d/k of a job of need n and duration d.
func pooledSize(n, d, k float64) float64 { return n * d / k }

// pooledDist is a class's duration distribution seen as pooled sizes: each
// draw (one draw of the underlying distribution, from the same stream) is
// scaled by n/k.
type pooledDist struct {
	d    dist.Dist
	n, k float64
}

func (p pooledDist) Sample(s *rng.Stream) float64 { return pooledSize(p.n, p.d.Sample(s), p.k) }
func (p pooledDist) Mean() float64                { return pooledSize(p.n, p.d.Mean(), p.k) }
func (p pooledDist) SCV() float64                 { return p.d.SCV() }
func (p pooledDist) String() string {
	return fmt.Sprintf("%g/%g × %s", p.n, p.k, p.d.String())
}
