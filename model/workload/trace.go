package workload

import (
	"fmt"
	"math"
	"sort"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/swf"
	"github.com/msjfarm/msjfarm/sim"
)

// FromTrace turns an SWF trace into a replay workload on tr.K servers. Each
// distinct processor count becomes a class (named "procs-N", sorted by need),
// whose service distribution — what a class-aware policy may know of it — is
// the empirical distribution of that class's run times, and whose share is
// its frequency. Submit times are multiplied by timeScale (< 1 compresses the
// trace, raising the load by 1/timeScale; 1 replays it as recorded). Each
// job's requested time (SWF field 9) is carried as TraceJob.Requested,
// unscaled: it estimates the run time, which timeScale does not change.
func FromTrace(name string, tr *swf.Trace, timeScale float64) (*sim.Workload, error) {
	if !(timeScale > 0) || math.IsInf(timeScale, 0) {
		return nil, fmt.Errorf("trace %q: time_scale must be finite and > 0, got %v", name, timeScale)
	}
	if len(tr.Jobs) == 0 {
		return nil, fmt.Errorf("trace %q: no usable jobs (%d lines, %d skipped)", name, tr.Lines, tr.Skipped.Total())
	}
	sizes := map[int][]float64{}
	for _, j := range tr.Jobs {
		sizes[j.Procs] = append(sizes[j.Procs], j.Run)
	}
	needs := make([]int, 0, len(sizes))
	for n := range sizes {
		needs = append(needs, n)
	}
	sort.Ints(needs)
	index := make(map[int]int, len(needs))
	w := &sim.Workload{Name: name, Servers: tr.K}
	for i, n := range needs {
		index[n] = i
		d, err := dist.NewEmpirical(sizes[n])
		if err != nil {
			return nil, fmt.Errorf("trace %q: class procs-%d: %w", name, n, err)
		}
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("procs-%d", n), Need: n, Share: float64(len(sizes[n])), Service: d})
	}
	w.Trace = make([]sim.TraceJob, len(tr.Jobs))
	for i, j := range tr.Jobs {
		w.Trace[i] = sim.TraceJob{Arrival: j.Submit * timeScale, Size: j.Run, Class: index[j.Procs], Requested: j.Requested}
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}
