// Command msjfarm-policy-noisy is a test plugin for spot verification
// (e2e/verify_test.go): first-come first-served, except that each
// replication draws from crypto/rand a threshold r in 0..7 and holds an
// arriving job in the queue while more than r servers are busy (the queue
// is served at the next completion). Every decision is valid, but two runs
// of the same task give different results, as a plugin seeded from the
// clock or the operating system would.
package main

import (
	"crypto/rand"

	"github.com/msjfarm/msjfarm/sdk"
)

func main() {
	sdk.Serve("noisy", "0.0.1", []sdk.Spec{{Name: "noisy-fcfs",
		Doc: "FCFS that holds arrivals while more than a random number of servers is busy (not deterministic)",
		New: func() sdk.Policy { return &noisy{} }}})
}

type noisy struct {
	q    sdk.ParkingFIFO
	hold int
}

func (p *noisy) Init(*sdk.System) error {
	var b [1]byte
	_, _ = rand.Read(b[:])
	p.hold = int(b[0] % 8)
	p.q.Reset()
	return nil
}

func (p *noisy) Arrive(s *sdk.System, j *sdk.Job) {
	if p.q.Len() == 0 && j.Need() <= s.Free() && (s.Busy() <= p.hold) {
		s.Start(j)
		return
	}
	p.q.Push(s, j)
	if s.Busy() == 0 {
		p.fill(s)
	}
}

func (p *noisy) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }

func (p *noisy) fill(s *sdk.System) {
	for {
		j := p.q.Front(s)
		if j == nil || j.Need() > s.Free() {
			return
		}
		p.q.Pop(s)
		s.Start(j)
	}
}
