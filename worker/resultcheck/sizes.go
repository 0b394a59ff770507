package resultcheck

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/sim"
)

// sizes: the measured jobs are the task's seed's. The job sequence is a
// pure function of the workload and the seed (the source's streams are
// not the policy's: sim.JobStream), so how many measured jobs of each
// class arrived, and their sizes, can be drawn again here without
// trusting whoever ran the policy. A plugin that halved its response
// and waiting times, its mean in system and its mean sizes alike kept
// every other check true (response = wait + size, Little's law, the
// class-weighted overall means); its sizes are now the seed's or the
// result is refused.
//
// Checked on a plugin's result (an in-process result is this engine's
// own) whose engine draws this engine's sequence (sim.SameSequence), on
// the task's workload (a replayed trace only the worker runs), unless
// the run was truncated at max_in_system, which stops the arrivals at an
// instant the result does not give. Per class: departed + undeparted is
// the seed's count of measured arrivals, exactly; with none undeparted
// the mean size is the seed's mean, to the float sums' rounding (the
// engine sums in departure order, this in arrival order: RoundingTol);
// with some undeparted the departed jobs' sizes sum to at most all of
// theirs. Drawing the classes and sizes again (sim.MeasuredJobs) costs
// a few nanoseconds a job, a small share of any policy's run over the
// same jobs (BenchmarkMeasuredJobs).
func (c *checker) sizes() error {
	r := c.r
	if !c.plugin || c.t.Trace != nil || r.Truncated || !sim.SameSequence(r.Engine) {
		return nil
	}
	w, err := c.t.SimWorkload()
	if err != nil {
		return nil // the workload checks of Expand refused it long before
	}
	count, sum, err := sim.MeasuredJobs(w, r.Seed, r.Warmup, r.Arrivals)
	if err != nil {
		return nil
	}
	for i, cs := range r.Classes {
		field := fmt.Sprintf("classes[%d]", i)
		switch {
		case cs.Count+cs.Undeparted != count[i]:
			return c.fail(field+".count", "%d departed + %d undeparted, but the task's seed gives %d measured arrivals of class %s", cs.Count, cs.Undeparted, count[i], cs.Name)
		case cs.Count == 0:
		case cs.Undeparted == 0 && math.Abs(cs.MeanSize-sum[i]/float64(count[i])) > RoundingTol*sum[i]/float64(count[i]):
			return c.fail(field+".mean_size", "%g, but the sizes of class %s's measured jobs, which the task's seed gives, average %g", cs.MeanSize, cs.Name, sum[i]/float64(count[i]))
		case cs.MeanSize*float64(cs.Count) > sum[i]*(1+RoundingTol):
			return c.fail(field+".mean_size", "%g over %d departed jobs, but the sizes of all %d of class %s's measured jobs, which the task's seed gives, sum to %g", cs.MeanSize, cs.Count, count[i], cs.Name, sum[i])
		}
	}
	return nil
}
