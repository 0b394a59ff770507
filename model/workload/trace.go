package workload

import (
	"fmt"
	"math"
	"slices"
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
	// Exactly sized, in three passes over the jobs: the widths, then each
	// class's run times in one buffer (class by class, in trace order),
	// then the replay. The run times were gathered into a map of slices
	// grown by appending, 36 to 43 bytes a job of garbage on top of the 40 a
	// replay keeps (the 32 of its sim.TraceJob and the 8 of the run time
	// in its class's service distribution, which copies and sorts them;
	// the buffer is garbage once they are built).
	count := map[int]int{}
	for i := range tr.Jobs {
		count[tr.Jobs[i].Procs]++
	}
	needs := make([]int, 0, len(count))
	for n := range count {
		needs = append(needs, n)
	}
	sort.Ints(needs)
	index := make(map[int]int, len(needs))
	start := make([]int, len(needs)+1) // class i's run times: sizes[start[i]:start[i+1]]
	for i, n := range needs {
		index[n] = i
		start[i+1] = start[i] + count[n]
	}
	sizes := make([]float64, len(tr.Jobs))
	next := slices.Clone(start[:len(needs)])
	for i := range tr.Jobs {
		c := index[tr.Jobs[i].Procs]
		sizes[next[c]] = tr.Jobs[i].Run
		next[c]++
	}
	w := &sim.Workload{Name: name, Servers: tr.K, Classes: make([]sim.Class, 0, len(needs))}
	for i, n := range needs {
		d, err := dist.NewEmpirical(sizes[start[i]:start[i+1]])
		if err != nil {
			return nil, fmt.Errorf("trace %q: class procs-%d: %w", name, n, err)
		}
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("procs-%d", n), Need: n, Share: float64(count[n]), Service: d})
	}
	w.Trace = make([]sim.TraceJob, len(tr.Jobs))
	for i := range tr.Jobs {
		j := &tr.Jobs[i]
		w.Trace[i] = sim.TraceJob{Arrival: j.Submit * timeScale, Size: j.Run, Class: index[j.Procs], Requested: j.Requested}
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}
