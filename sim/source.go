package sim

import (
	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim/rng"
)

// Stream ids for rng.Derive. The job sequence uses the first three, each its
// own stream, so that (1) no policy randomness can shift it (common random
// numbers across policies) and (2) changing only the arrival rate rescales
// the same inter-arrival draws while classes and sizes stay identical
// (coupled sample paths across a load sweep).
const (
	StreamArrivals uint64 = 1
	StreamClasses  uint64 = 2
	StreamSizes    uint64 = 3
	StreamPolicy   uint64 = 4
)

// source generates the job sequence: a pure function of (workload, seed).
type source struct {
	w         *Workload
	arr, cls  *rng.Stream
	sizes     *rng.Stream
	iaScale   float64 // inter-arrival sample scale (renewal)
	meanIA    float64 // Poisson: mean inter-arrival time
	ia        dist.Dist
	alias     aliasTable
	service   []dist.Dist
	needs     []int32
	t         float64
	traceNext int
}

func newSource(w *Workload, seed uint64) *source {
	s := &source{
		w:     w,
		arr:   rng.Derive(seed, StreamArrivals),
		cls:   rng.Derive(seed, StreamClasses),
		sizes: rng.Derive(seed, StreamSizes),
	}
	for _, c := range w.Classes {
		s.service = append(s.service, c.Service)
		s.needs = append(s.needs, int32(c.Need))
	}
	if w.Trace == nil {
		s.alias = newAlias(w.Probabilities())
		s.meanIA = 1 / w.ArrivalRate
		if w.Interarrival != nil {
			s.ia = w.Interarrival
			s.iaScale = 1 / (w.ArrivalRate * w.Interarrival.Mean())
		}
	}
	return s
}

// next fills j with the next job and returns false when a trace is exhausted.
func (s *source) next(j *Job) bool {
	if s.w.Trace != nil {
		if s.traceNext >= len(s.w.Trace) {
			return false
		}
		tj := s.w.Trace[s.traceNext]
		s.traceNext++
		j.arrival, j.size, j.class = tj.Arrival, tj.Size, int32(tj.Class)
		j.need = s.needs[tj.Class]
		return true
	}
	if s.ia != nil {
		s.t += s.ia.Sample(s.arr) * s.iaScale
	} else {
		s.t += s.meanIA * s.arr.Exp()
	}
	c := s.alias.pick(s.cls)
	j.arrival = s.t
	j.class = int32(c)
	j.need = s.needs[c]
	j.size = s.service[c].Sample(s.sizes)
	return true
}

// aliasTable draws a class in O(1) from one uniform (Walker/Vose alias method).
type aliasTable struct {
	prob  []float64
	alias []int
}

func newAlias(p []float64) aliasTable {
	n := len(p)
	a := aliasTable{prob: make([]float64, n), alias: make([]int, n)}
	scaled := make([]float64, n)
	var small, large []int
	for i, x := range p {
		scaled[i] = x * float64(n)
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large {
		a.prob[i], a.alias[i] = 1, i
	}
	for _, i := range small { // rounding leftovers
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *aliasTable) pick(s *rng.Stream) int {
	n := len(a.prob)
	if n == 1 {
		return 0
	}
	u := s.Float64() * float64(n)
	i := int(u)
	if i >= n {
		i = n - 1
	}
	if u-float64(i) < a.prob[i] {
		return i
	}
	return a.alias[i]
}

// JobStream yields the job sequence of (workload, seed): exactly the jobs Run
// feeds every policy. Reference models that are not engine policies (SRPT-1
// on the resource-pooled single server) read it to share common random
// numbers with the policies they are compared to.
type JobStream struct {
	src *source
	j   Job
	n   int64
}

// NewJobStream validates w and returns its job sequence for seed.
func NewJobStream(w *Workload, seed uint64) (*JobStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &JobStream{src: newSource(w, seed)}, nil
}

// Next returns the next job (its arrival index is the number of previous
// calls); ok is false when a replayed trace is exhausted.
func (js *JobStream) Next() (arrival, size float64, class int, ok bool) {
	if !js.src.next(&js.j) {
		return 0, 0, 0, false
	}
	js.n++
	return js.j.arrival, js.j.size, int(js.j.class), true
}
