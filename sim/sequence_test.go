package sim

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
)

// SameSequence takes the versions from SequenceSince to Version and
// nothing else: not a later one, whose sequence this engine cannot know,
// nor a string that is not a version.
func TestSameSequence(t *testing.T) {
	for _, c := range []struct {
		v    string
		same bool
	}{
		{SequenceSince, true},
		{Version, true},
		{"0.5.9", false},
		{"0.5.0", false},
		{"99.0.0", false},
		{"0.6", false},
		{"0.6.0.1", false},
		{"0.6.x", false},
		{"+0.6.0", false},
		{"0.6.-0", false},
		{"", false},
		{"0.6.0-rc1", false},
	} {
		if got := SameSequence(c.v); got != c.same {
			t.Errorf("SameSequence(%q) = %v, want %v", c.v, got, c.same)
		}
	}
}

// MeasuredJobs counts, sums and times exactly what the job sequence
// itself (JobStream, the jobs Run admits) gives over the window, bit for
// bit: on one class and on many, exponential and other sizes, Poisson and
// renewal arrivals, a replayed trace, and windows that start and end
// inside a block of the source and at its edges.
func TestMeasuredJobsIsTheSequence(t *testing.T) {
	for _, w := range sequenceWorkloads(t) {
		for _, win := range [][2]int64{{0, 1}, {0, 128}, {127, 2}, {128, 128}, {1000, 5000}, {3, 10000}} {
			m, err := MeasuredJobs(w, 11, win[0], win[1])
			if err != nil {
				t.Fatalf("%s %v: %v", w.Name, win, err)
			}
			js, err := NewJobStream(w, 11)
			if err != nil {
				t.Fatal(err)
			}
			want, wantSum := make([]int64, len(w.Classes)), make([]float64, len(w.Classes))
			var t0, window float64
			for i := int64(0); i <= win[0]+win[1]; i++ {
				arrival, size, class, ok := js.Next()
				if !ok {
					t.Fatalf("%s: the sequence ended at %d", w.Name, i)
				}
				switch {
				case i == win[0]+win[1]:
					window = arrival - t0
				case i >= win[0]:
					if i == win[0] {
						t0 = arrival
					}
					want[class]++
					wantSum[class] += size
				}
			}
			for c := range want {
				if m.Count[c] != want[c] || m.SizeSum[c] != wantSum[c] {
					t.Errorf("%s window %v class %d: %d jobs summing to %v, the sequence gives %d summing to %v", w.Name, win, c, m.Count[c], m.SizeSum[c], want[c], wantSum[c])
				}
			}
			if m.Window != window {
				t.Errorf("%s window %v: %v long, the sequence gives %v", w.Name, win, m.Window, window)
			}
		}
	}
	w := sequenceWorkloads(t)[0]
	if _, err := MeasuredJobs(w, 1, -1, 10); err == nil {
		t.Error("a negative warm-up was taken")
	}
	// A trace of exactly warmup+arrivals jobs has no job after the
	// window; one shorter ends inside it.
	tr := sequenceWorkloads(t)[3]
	if m, err := MeasuredJobs(tr, 1, 1000, 19000); err != nil || m.Window != 0 || m.Count[0]+m.Count[1] != 19000 {
		t.Errorf("a trace ending at the window's end: %+v, %v", m, err)
	}
	if _, err := MeasuredJobs(tr, 1, 1000, 19001); err == nil {
		t.Error("a trace shorter than the window was taken")
	}
}

// sequenceWorkloads: one class exponential, two classes exponential,
// three classes with uniform and hyperexponential sizes and renewal
// (Weibull) arrivals, and a replayed trace of 20 000 jobs.
func sequenceWorkloads(t *testing.T) []*Workload {
	t.Helper()
	exp := func(m float64) dist.Dist { return dist.Must(dist.NewExponential(m)) }
	wei, err := dist.NewWeibullMean(0.7, 1)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := dist.NewHyperExp(2, 10)
	if err != nil {
		t.Fatal(err)
	}
	uni, err := dist.NewUniform(0.5, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	tr := make([]TraceJob, 20000)
	for i := range tr {
		tr[i] = TraceJob{Arrival: float64(i), Size: float64(i%7 + 1), Class: i % 2}
	}
	return []*Workload{
		{Name: "one", Servers: 4, ArrivalRate: 1, Classes: []Class{{Name: "a", Need: 1, Share: 1, Service: exp(1)}}},
		{Name: "two", Servers: 32, ArrivalRate: 7, Classes: []Class{
			{Name: "light", Need: 1, Share: 0.9, Service: exp(1)}, {Name: "heavy", Need: 32, Share: 0.1, Service: exp(1)}}},
		{Name: "three", Servers: 8, ArrivalRate: 2, Interarrival: wei, Classes: []Class{
			{Name: "a", Need: 1, Share: 0.5, Service: uni}, {Name: "b", Need: 2, Share: 0.3, Service: h2}, {Name: "c", Need: 8, Share: 0.2, Service: uni}}},
		{Name: "trace", Servers: 4, Trace: tr, Classes: []Class{
			{Name: "a", Need: 1, Share: 0.5, Service: exp(1)}, {Name: "b", Need: 2, Share: 0.5, Service: exp(1)}}},
	}
}
