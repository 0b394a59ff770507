package workload

import (
	"cmp"
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
	if err := checkTrace(name, len(tr.Jobs), tr.Lines, tr.Skipped, timeScale); err != nil {
		return nil, err
	}
	jobs := make([]sim.TraceJob, len(tr.Jobs))
	for i := range tr.Jobs {
		j := &tr.Jobs[i]
		jobs[i] = sim.TraceJob{Arrival: j.Submit, Size: j.Run, Class: j.Procs, Requested: j.Requested}
	}
	// tr.Jobs are sorted and start at 0: the origin is 0, and x-0 is x.
	return classify(name, tr.K, jobs, 0, timeScale)
}

// FromJobs is FromTrace for a trace given by its counts (swf.Shape.At)
// and its kept jobs streamed, in the file's order with the file's submit
// times (swf.EachKept): jobs calls its argument with each, and returns
// its error or one of its own. The workload is FromTrace's of the trace
// Read gives, bit for bit; the parsed trace is never held, only the
// workload being built (a sweep converts a trace at each servers value
// to try its policies on it, and the parsed trace was 40 to 80 bytes a
// job on top of the workload's 40).
func FromJobs(name string, c swf.Counts, jobs func(yield func(swf.Job) error) error, timeScale float64) (*sim.Workload, error) {
	if err := checkTrace(name, c.Kept, c.Lines, c.Skipped, timeScale); err != nil {
		return nil, err
	}
	trace := make([]sim.TraceJob, c.Kept)
	n, sorted := 0, true
	err := jobs(func(j swf.Job) error {
		if n == len(trace) {
			return fmt.Errorf("trace %q: more jobs than the %d counted on %d servers", name, c.Kept, c.K)
		}
		if n > 0 && j.Submit < trace[n-1].Arrival {
			sorted = false
		}
		trace[n] = sim.TraceJob{Arrival: j.Submit, Size: j.Run, Class: j.Procs, Requested: j.Requested}
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n != len(trace) {
		return nil, fmt.Errorf("trace %q: %d jobs, not the %d counted on %d servers", name, n, c.Kept, c.K)
	}
	if !sorted {
		// Read's order: stably by submit time (a stable sort's result
		// is unique, whatever it sorts).
		slices.SortStableFunc(trace, func(a, b sim.TraceJob) int { return cmp.Compare(a.Arrival, b.Arrival) })
	}
	return classify(name, c.K, trace, trace[0].Arrival, timeScale)
}

// checkTrace is FromTrace's check of its arguments, before anything is
// built: a trace of kept jobs out of lines job lines, skip of them dropped.
func checkTrace(name string, kept, lines int, skip swf.SkipCounts, timeScale float64) error {
	if !(timeScale > 0) || math.IsInf(timeScale, 0) {
		return fmt.Errorf("trace %q: time_scale must be finite and > 0, got %v", name, timeScale)
	}
	if kept == 0 {
		return fmt.Errorf("trace %q: no usable jobs (%d lines, %d skipped)", name, lines, skip.Total())
	}
	return nil
}

// classify makes the replay workload on k servers of jobs, sorted by
// submit time, as FromTrace and FromJobs gather them: each job's Class
// holds its width and its Arrival its submit time, which become its
// class's index and (submit − origin) × timeScale. jobs becomes the
// workload's Trace.
func classify(name string, k int, jobs []sim.TraceJob, origin, timeScale float64) (*sim.Workload, error) {
	// Exactly sized, in three passes over the jobs: the widths, then each
	// class's run times in one buffer (class by class, in trace order),
	// then the replay. The run times were gathered into a map of slices
	// grown by appending, 36 to 43 bytes a job of garbage on top of the 40 a
	// replay keeps (the 32 of its sim.TraceJob and the 8 of the run time
	// in its class's service distribution, which copies and sorts them;
	// the buffer is garbage once they are built).
	count := map[int]int{}
	for i := range jobs {
		count[jobs[i].Class]++
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
	sizes := make([]float64, len(jobs))
	next := slices.Clone(start[:len(needs)])
	for i := range jobs {
		j := &jobs[i]
		c := index[j.Class]
		sizes[next[c]] = j.Size
		next[c]++
		j.Class = c
		j.Arrival = (j.Arrival - origin) * timeScale
	}
	w := &sim.Workload{Name: name, Servers: k, Classes: make([]sim.Class, 0, len(needs))}
	for i, n := range needs {
		d, err := dist.NewEmpirical(sizes[start[i]:start[i+1]])
		if err != nil {
			return nil, fmt.Errorf("trace %q: class procs-%d: %w", name, n, err)
		}
		w.Classes = append(w.Classes, sim.Class{Name: fmt.Sprintf("procs-%d", n), Need: n, Share: float64(count[n]), Service: d})
	}
	w.Trace = jobs
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}
