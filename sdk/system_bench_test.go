package sdk_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// The package documentation says why System and Job are the engine's
// concrete types rather than interfaces: these two benchmarks are the
// measurement. Both run FCFS (the cheapest policy, so the calls into the
// system are the largest share of its cost) on one-or-all at λ = 2.5, where
// FCFS is stable, 10⁵ measured arrivals per op. They differ only in how the
// policy's fill loop reaches the system: on *System (inlined calls) or
// through an interface holding it (dynamic calls, as an SDK of interfaces
// would make every policy). Both fill loops are kept out of line so that the
// call into them costs the same and the compiler cannot see through the
// interface to devirtualise it.
//
//	go test -run '^$' -bench System -benchtime 20x -count 6 ./sdk/ | benchstat -col /impl -
//
// On the 2-core development machine (shared, so noisy): concrete
// 23.0 ns/event, interface 24.3 ns/event (+5.6%).

func BenchmarkSystem(b *testing.B) {
	w := simtest.Named(b, "one-or-all", 2.5)
	b.Run("impl=concrete", func(b *testing.B) { simtest.Bench(b, w, &concreteFCFS{}, 100000) })
	b.Run("impl=interface", func(b *testing.B) { simtest.Bench(b, w, &ifaceFCFS{}, 100000) })
}

type concreteFCFS struct{ q sdk.FIFO }

func (p *concreteFCFS) Init(*sdk.System) error             { p.q.Reset(); return nil }
func (p *concreteFCFS) Arrive(s *sdk.System, j *sdk.Job)   { p.q.Push(j); p.fill(s) }
func (p *concreteFCFS) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }

//go:noinline
func (p *concreteFCFS) fill(s *sdk.System) {
	for {
		j := p.q.Front()
		if j == nil || j.Need() > s.Free() {
			return
		}
		p.q.Pop()
		s.Start(j)
	}
}

// system is the part of System FCFS uses, as an interface-based SDK would
// declare it.
type system interface {
	Free() int
	Start(j *sim.Job)
}

type ifaceFCFS struct{ q sdk.FIFO }

func (p *ifaceFCFS) Init(*sdk.System) error             { p.q.Reset(); return nil }
func (p *ifaceFCFS) Arrive(s *sdk.System, j *sdk.Job)   { p.q.Push(j); p.fill(s) }
func (p *ifaceFCFS) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }

//go:noinline
func (p *ifaceFCFS) fill(s system) {
	for {
		j := p.q.Front()
		if j == nil || j.Need() > s.Free() {
			return
		}
		p.q.Pop()
		s.Start(j)
	}
}
