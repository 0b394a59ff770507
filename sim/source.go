package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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
//
// It generates jobs a block at a time (srcBlock of them) into buf and hands
// them out one by one. Each of the three streams is consumed in exactly the
// order a job-at-a-time generator would consume it, so the sequence is the
// same bit for bit; what changes is that the logarithms of a block's
// exponential draws are computed back to back, where the processor overlaps
// them (about 6 ns each measured in a loop, against about 24 ns when each
// waits for the event that needs it), and that every job is ready long
// before the event loop compares its arrival with the next departure.
type source struct {
	w         *Workload
	arr, cls  *rng.Stream
	sizes     *rng.Stream
	iaScale   float64 // inter-arrival sample scale (renewal)
	meanIA    float64 // Poisson: mean inter-arrival time
	ia        dist.Dist
	alias     aliasTable
	service   []dist.Dist
	expMean   []float64 // every class's service is exponential: its mean (else nil)
	needs     []int32
	t         float64
	traceNext int

	buf        [srcBlock]genJob
	bufI, bufN int
}

// srcBlock is the number of jobs generated at a time: large enough for the
// draws of a block to overlap, small enough to stay in the L1 cache
// (srcBlock × 24 bytes).
const srcBlock = 128

// genJob is a generated job, before it is admitted.
type genJob struct {
	arrival, size float64
	class, need   int32
}

func newSource(w *Workload, seed uint64) *source {
	s := &source{
		w:     w,
		arr:   rng.Derive(seed, StreamArrivals),
		cls:   rng.Derive(seed, StreamClasses),
		sizes: rng.Derive(seed, StreamSizes),
	}
	exp := true
	for _, c := range w.Classes {
		s.service = append(s.service, c.Service)
		s.needs = append(s.needs, int32(c.Need))
		if e, ok := c.Service.(*dist.Exponential); ok {
			s.expMean = append(s.expMean, e.Mean())
		} else {
			exp = false
		}
	}
	if !exp {
		s.expMean = nil
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
	if s.bufI == s.bufN {
		if s.fill(); s.bufN == 0 {
			return false // a replayed trace has no more jobs
		}
	}
	g := &s.buf[s.bufI]
	s.bufI++
	j.arrival, j.size, j.class, j.need = g.arrival, g.size, g.class, g.need
	return true
}

// fill generates the next block of jobs into buf. The formulas are those of
// a job-at-a-time generator (dist.Exponential.Sample is mean × Exp(), the
// Poisson clock adds meanIA × Exp()), evaluated in the same order on each
// stream, so every number is the same.
func (s *source) fill() {
	s.bufI, s.bufN = 0, 0
	b := &s.buf
	if s.w.Trace != nil {
		n := min(srcBlock, len(s.w.Trace)-s.traceNext)
		for i, tj := range s.w.Trace[s.traceNext : s.traceNext+n] {
			b[i] = genJob{arrival: tj.Arrival, size: tj.Size, class: int32(tj.Class), need: s.needs[tj.Class]}
		}
		s.traceNext += n
		s.bufN = n
		return
	}
	var x [srcBlock]float64
	if s.ia != nil {
		for i := range b {
			s.t += s.ia.Sample(s.arr) * s.iaScale
			b[i].arrival = s.t
		}
	} else {
		s.arr.ExpFill(x[:])
		t, m := s.t, s.meanIA
		for i := range b {
			t += m * x[i]
			b[i].arrival = t
		}
		s.t = t
	}
	if len(s.needs) == 1 {
		for i := range b {
			b[i].class, b[i].need = 0, s.needs[0]
		}
	} else {
		s.cls.Float64Fill(x[:])
		for i := range b {
			c := s.alias.pickU(x[i])
			b[i].class, b[i].need = int32(c), s.needs[c]
		}
	}
	if s.expMean != nil {
		s.sizes.ExpFill(x[:])
		for i := range b {
			b[i].size = s.expMean[b[i].class] * x[i]
		}
	} else {
		for i := range b {
			b[i].size = s.service[b[i].class].Sample(s.sizes)
		}
	}
	s.bufN = srcBlock
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

// pickU draws a class from its uniform variate u (the source draws one
// per job when there is more than one class, none otherwise).
func (a *aliasTable) pickU(u float64) int {
	i, f := a.column(u)
	// Branch-free: which of the two the uniform picks is a coin toss the
	// processor cannot predict (it follows the class probabilities, not
	// a pattern), and the mispredicted branch was half the time
	// of generating a job; the compiler keeps a branch for an if here,
	// float or integer. So the test f < prob[i] is read off the sign
	// of d = prob[i] − f, which in IEEE arithmetic is +0 or −0 only
	// for equal operands and otherwise has the exact difference's sign:
	// with b its bits as an int64, f < prob[i] exactly when b > 0, that
	// is when both −b and ^b are negative, and mask is then all ones.
	b := int64(math.Float64bits(a.prob[i] - f))
	mask := (-b & ^b) >> 63
	alt := a.alias[i]
	return alt ^ ((alt ^ i) & int(mask))
}

// column is the alias table's column i that uniform u falls in, and f the
// fractional part of u·n that picks between its class and its alias.
func (a *aliasTable) column(u float64) (i int, f float64) {
	n := len(a.prob)
	u *= float64(n)
	i = int(u)
	if i >= n {
		i = n - 1
	}
	return i, u - float64(i)
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

// Measured is what the job sequence of a (workload, seed) says of a
// run's measurement window [warmup, warmup+arrivals), whatever the policy
// (MeasuredJobs).
type Measured struct {
	// Count is each class's number of jobs in the window.
	Count []int64
	// SizeSum is the sum of their sizes, per class, in arrival order (the
	// engine sums the departed ones in departure order).
	SizeSum []float64
	// Window is the arrival instant of the first job after the window
	// less that of the window's first job: Result.Window of a run that
	// reached it (0 if the sequence, a replayed trace, has no such job).
	Window float64
}

// MeasuredJobs draws the job sequence of (w, seed) as Run does, without
// running a policy, up to the first job after the window [warmup,
// warmup+arrivals), and returns what it says of the window. A result's
// class counts, mean sizes and window are these: worker/resultcheck
// checks a plugin's against them.
func MeasuredJobs(w *Workload, seed uint64, warmup, arrivals int64) (*Measured, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if warmup < 0 || arrivals < 1 || warmup > MaxArrivals || arrivals > MaxArrivals {
		return nil, fmt.Errorf("measured jobs: warmup %d must be in [0, 2^53] and arrivals %d in [1, 2^53]", warmup, arrivals)
	}
	s := newSource(w, seed)
	m := &Measured{Count: make([]int64, len(w.Classes)), SizeSum: make([]float64, len(w.Classes))}
	end := warmup + arrivals
	var t0 float64
	for id := int64(0); id <= end; {
		if s.fill(); s.bufN == 0 {
			if id == end {
				return m, nil // a trace of exactly warmup+arrivals jobs
			}
			return nil, fmt.Errorf("measured jobs: the replayed trace ends after %d jobs, before the window's end %d", id, end)
		}
		b := s.buf[:s.bufN]
		if id <= warmup && warmup < id+int64(len(b)) {
			t0 = b[warmup-id].arrival
		}
		if id <= end && end < id+int64(len(b)) {
			m.Window = b[end-id].arrival - t0
		}
		lo, hi := max(warmup-id, 0), min(end-id, int64(len(b)))
		for i := lo; i < hi; i++ {
			m.Count[b[i].class]++
			m.SizeSum[b[i].class] += b[i].size
		}
		id += int64(len(b))
	}
	return m, nil
}

// SequenceSince is the first engine version (Version) whose job sequence
// for a (workload, seed) is this engine's: 0.6.0 drew standard
// exponentials by a ziggurat, and every later version kept every draw.
// Raise it to the current Version with any change to the source, a
// sampler or the streams that changes a job's arrival, class or size.
// worker/resultcheck regenerates the measured jobs of a plugin's result
// from the task's seed (a plugin reports their sizes and class counts,
// and could report others) when the plugin's engine is between it and
// Version.
const SequenceSince = "0.6.0"

// SameSequence reports whether engine, a version "x.y.z", draws this
// engine's job sequence: from SequenceSince to Version, both included.
// A later version may have changed it, which this engine cannot know.
func SameSequence(engine string) bool {
	v, ok := parseVersion(engine)
	if !ok {
		return false
	}
	lo, _ := parseVersion(SequenceSince)
	hi, _ := parseVersion(Version)
	return !lessVersion(v, lo) && !lessVersion(hi, v)
}

// parseVersion reads "x.y.z" (decimal, no sign, no suffix).
func parseVersion(s string) ([3]int, bool) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || strings.TrimLeft(p, "0123456789") != "" {
			return v, false
		}
		v[i], _ = strconv.Atoi(p)
	}
	return v, true
}

func lessVersion(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
