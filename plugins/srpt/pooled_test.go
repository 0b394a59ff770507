package srpt

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sim"
)

// TestPooledJobStream: the pooled workload's job sequence (sim.NewJobStream)
// is the original's, job for job, with each duration d of a need-n job
// replaced by n·d/k — for Poisson arrivals, renewal arrivals and a trace.
func TestPooledJobStream(t *testing.T) {
	spec, err := workload.Named("borg-b")
	if err != nil {
		t.Fatal(err)
	}
	borg, err := spec.Build(2)
	if err != nil {
		t.Fatal(err)
	}
	renewal, err := spec.Build(3)
	if err != nil {
		t.Fatal(err)
	}
	renewal.Interarrival = dist.Must(dist.NewUniform(0, 2))
	trace := &sim.Workload{Name: "trace", Servers: 4, Classes: []sim.Class{
		{Need: 1, Share: 1, Service: dist.Must(dist.NewExponential(1))},
		{Need: 3, Share: 1, Service: dist.Must(dist.NewExponential(1))},
	}, Trace: []sim.TraceJob{{Arrival: 0, Size: 2, Class: 1}, {Arrival: 1, Size: 5, Class: 0}, {Arrival: 1, Size: 0.5, Class: 1}}}
	for _, w := range []*sim.Workload{borg, renewal, trace} {
		a, err := sim.NewJobStream(w, 11)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sim.NewJobStream(pooledWorkload(w), 11)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			at, d, c, ok := a.Next()
			pat, ps, pc, pok := b.Next()
			if ok != pok {
				t.Fatalf("%s job %d: streams end differently", w.Name, i)
			}
			if !ok || i == 100000 {
				break
			}
			want := float64(w.Classes[c].Need) * d / float64(w.Servers)
			if pat != at || pc != c || ps != want {
				t.Fatalf("%s job %d: pooled (%v, %v, %d), want (%v, %v, %d)", w.Name, i, pat, ps, pc, at, want, c)
			}
		}
	}
}
