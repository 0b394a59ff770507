package resultcheck

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/sim"
)

// seedJobs: the measured jobs are the task's seed's. The job sequence is a
// pure function of the workload and the seed (the source's streams are
// not the policy's: sim.JobStream), so how many measured jobs of each
// class arrived, their sizes and the window's length can be drawn again
// here without trusting whoever ran the policy. A plugin that halved its
// response and waiting times, its mean in system and its mean sizes
// alike kept every other check true (response = wait + size, Little's
// law, the class-weighted overall means), and so did one that ran the
// task at a lower arrival rate and wrote the task's offered load back;
// its sizes and window are now the seed's or the result is refused.
//
// Checked on a plugin's result (an in-process result is this engine's
// own) whose engine draws this engine's sequence (sim.SameSequence), on
// the task's workload (a replayed trace only the worker runs), unless
// the run was truncated at max_in_system, which stops the arrivals at an
// instant the result does not give. The window is the seed's (relative
// 10⁻⁹: the arrival instants are running sums, which a platform that
// fuses a multiply and an add rounds otherwise). Per class: departed +
// undeparted is the seed's count of measured arrivals, exactly; with none undeparted
// the mean size is the seed's mean, to the float sums' rounding (the
// engine sums in departure order, this in arrival order: RoundingTol);
// with some undeparted the departed jobs' sizes sum to at most all of
// theirs. Drawing the sequence again (sim.MeasuredJobs) costs the
// source's few nanoseconds a job, a small share of any policy's run over
// the same jobs (BenchmarkMeasuredJobs).
func (c *checker) seedJobs() error {
	r := c.r
	if !c.plugin || c.t.Trace != nil || r.Truncated || !sim.SameSequence(r.Engine) {
		return nil
	}
	w, err := c.t.SimWorkload()
	if err != nil {
		return nil // the workload checks of Expand refused it long before
	}
	m, err := sim.MeasuredJobs(w, r.Seed, r.Warmup, r.Arrivals)
	if err != nil {
		return nil
	}
	if m.Window > 0 && math.Abs(r.Window-m.Window) > 1e-9*m.Window {
		return c.fail("window", "%g, but the task's seed puts the window's first and last arrivals %g apart: the run was not the task's (another arrival rate?)", r.Window, m.Window)
	}
	for i, cs := range r.Classes {
		field := fmt.Sprintf("classes[%d]", i)
		n, sum := m.Count[i], m.SizeSum[i]
		mean := sum / float64(max(n, 1))
		switch {
		case cs.Count+cs.Undeparted != n:
			return c.fail(field+".count", "%d departed + %d undeparted, but the task's seed gives %d measured arrivals of class %s", cs.Count, cs.Undeparted, n, cs.Name)
		case cs.Count == 0:
		case cs.Undeparted == 0 && math.Abs(cs.MeanSize-mean) > RoundingTol*mean:
			return c.fail(field+".mean_size", "%g, but the sizes of class %s's measured jobs, which the task's seed gives, average %g", cs.MeanSize, cs.Name, mean)
		case cs.MeanSize*float64(cs.Count) > sum*(1+RoundingTol):
			return c.fail(field+".mean_size", "%g over %d departed jobs, but the sizes of all %d of class %s's measured jobs, which the task's seed gives, sum to %g", cs.MeanSize, cs.Count, n, cs.Name, sum)
		}
	}
	return nil
}
