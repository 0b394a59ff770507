package sdk

import (
	"math/rand/v2"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
)

// TestFIFOModel drives a FIFO through random pushes, pops and resets,
// growing it through many doublings with its contents wrapped round the
// ring, and checks it against a slice at every step: length, front, every
// position by At, the order of pops, and that no ring slot outside the
// queued jobs still points at a job (a stale pointer would keep a finished
// replication's jobs alive).
func TestFIFOModel(t *testing.T) {
	jobs := make([]Job, 5000)
	rng := rand.New(rand.NewPCG(1, 2))
	var q FIFO
	var model []*Job
	next := 0
	for step := 0; step < 200000; step++ {
		switch r := rng.IntN(100); {
		case r < 1 && step%1000 == 0:
			q.Reset()
			model = model[:0]
		case r < 55 && len(model) < len(jobs)-1:
			j := &jobs[next%len(jobs)]
			next++
			q.Push(j)
			model = append(model, j)
		default:
			got := q.Pop()
			var want *Job
			if len(model) > 0 {
				want, model = model[0], model[1:]
			}
			if got != want {
				t.Fatalf("step %d: Pop = %p, want %p", step, got, want)
			}
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: Len = %d, want %d", step, q.Len(), len(model))
		}
		if f := q.Front(); (len(model) == 0 && f != nil) || (len(model) > 0 && f != model[0]) {
			t.Fatalf("step %d: Front wrong", step)
		}
		if step%97 == 0 || len(q.buf) > 0 && q.n == len(q.buf) {
			for i, j := range model {
				if q.At(i) != j {
					t.Fatalf("step %d: At(%d) wrong", step, i)
				}
			}
			live := 0
			for _, j := range q.buf {
				if j != nil {
					live++
				}
			}
			if live != len(model) {
				t.Fatalf("step %d: %d non-nil ring slots for %d queued jobs", step, live, len(model))
			}
		}
	}
	if len(q.buf) < 1024 {
		t.Fatalf("the ring never grew past %d slots: the test did not exercise growth", len(q.buf))
	}
}

// fifoChecker is a policy that drives a ParkingFIFO through fill-and-drain
// cycles and checks it against a slice of job IDs at every step. It starts
// nothing until the queue holds hold jobs, then starts jobs from the front
// until the queue is empty, and so on; every seventh arrival it also pops
// the front job and pushes it back (a job unparked and parked again).
type fifoChecker struct {
	t        *testing.T
	q        ParkingFIFO
	model    []int64
	hold     int
	draining bool
	arrivals int
	cycles   int // drains completed
	most     int // the most blocks the parked part held
}

func (c *fifoChecker) Init(*System) error {
	c.q.Reset()
	c.model, c.draining = c.model[:0], false
	c.check(nil)
	return nil
}

func (c *fifoChecker) Arrive(s *System, j *Job) {
	c.arrivals++
	c.model = append(c.model, j.ID()) // before Push: a parked j is not to be read
	c.q.Push(s, j)
	c.check(s)
	if c.arrivals%7 == 0 {
		f := c.q.Pop(s)
		if f.ID() != c.model[0] {
			c.t.Fatalf("Pop = job %d, want %d", f.ID(), c.model[0])
		}
		c.q.Push(s, f)
		c.model = append(c.model[1:], c.model[0])
		c.check(s)
	}
	if c.q.Len() >= c.hold {
		c.draining = true
	}
	c.fill(s)
}

func (c *fifoChecker) Complete(s *System, _ *Job) { c.fill(s) }

func (c *fifoChecker) fill(s *System) {
	for c.draining {
		f := c.q.Front(s)
		if f == nil {
			c.draining = false
			c.cycles++
			return
		}
		if f.Need() > s.Free() {
			return
		}
		if j := c.q.Pop(s); j != f || j.ID() != c.model[0] {
			c.t.Fatalf("Pop = job %d, want the front, job %d", j.ID(), c.model[0])
		}
		c.model = c.model[1:]
		s.Start(f)
		c.check(s)
	}
}

func (c *fifoChecker) check(s *System) {
	c.t.Helper()
	q := &c.q
	if q.Len() != len(c.model) {
		c.t.Fatalf("Len = %d, want %d", q.Len(), len(c.model))
	}
	if s != nil && len(c.model) > 0 {
		if f := q.Front(s); f == nil || f.ID() != c.model[0] || !f.Waiting() {
			c.t.Fatalf("Front = %v, want waiting job %d", f, c.model[0])
		}
	}
	live := 0
	for _, j := range q.near {
		if j != nil {
			live++
		}
	}
	if live != q.n {
		c.t.Fatalf("%d non-nil ring slots for %d jobs held as Jobs", live, q.n)
	}
	if nb := len(q.far.blocks); nb > q.far.n/parkedBlock+2 {
		c.t.Fatalf("%d blocks for %d parked jobs", nb, q.far.n)
	}
	c.most = max(c.most, len(q.far.blocks))
}

// TestParkingFIFOModel runs fifoChecker on four servers (need 1, mean
// service 1, λ = 2: a queue fills at 2 jobs per unit of time and drains at
// 2 when all four servers work) through several fill-and-drain cycles of
// 12 000 jobs — the ring and five parked blocks — and then again with the
// same policy, which Init must reset mid-backlog.
func TestParkingFIFOModel(t *testing.T) {
	w := &sim.Workload{Name: "m", Servers: 4, ArrivalRate: 2, Classes: []sim.Class{
		{Name: "one", Need: 1, Share: 1, Service: dist.Must(dist.NewExponential(1))},
	}}
	c := &fifoChecker{t: t, hold: 12000}
	for run := range 2 {
		c.cycles, c.most = 0, 0
		if _, err := sim.Run(w, c, sim.Config{Seed: uint64(run + 1), Arrivals: 70000}); err != nil {
			t.Fatal(err)
		}
		if c.cycles < 2 || c.most < 5 {
			t.Fatalf("run %d: %d drains, at most %d parked blocks: the test did not exercise parking", run, c.cycles, c.most)
		}
	}
}
