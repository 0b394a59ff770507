// Package firstfit is First-Fit backfilling for the multiserver-job model
// (Quickswap paper §1.1; Balanced Splitting §2).
package firstfit

import "github.com/msjfarm/msjfarm/sdk"

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "first-fit",
	Doc:  "First-Fit backfilling (Q §1.1, B §2): scan waiting jobs in arrival order and start every one that fits in the idle servers.",
	New:  func() sdk.Policy { return &FirstFit{} },
}}

// FirstFit is FCFS without head-of-line blocking: "if there are idle servers
// and jobs waiting in the queue that can be executed, then the first arrived
// job that fits the idle servers is processed" (B §2), repeatedly, so a
// scan in arrival order starts every job that fits (Q §1.1: it continues
// examining jobs in arrival order after one that does not fit). It knows
// nothing of sizes (no reservation as in EASY backfilling).
//
// A scan in arrival order never needs a second pass: idle servers only
// decrease during it, so a job skipped once stays too big. The oldest
// waiting job that fits is the head of some class's FIFO (jobs of a class
// all need the same), so the scan is: repeatedly start the oldest class head
// that fits (ClassQueues.Oldest), O(#classes) per start, never a walk of the
// whole queue. After every decision no waiting job fits, so an arrival only
// checks the new job (O(1)).
type FirstFit struct {
	q       sdk.ClassQueues
	minNeed int
}

// Init sizes one FIFO per class.
func (p *FirstFit) Init(s *sdk.System) error {
	p.q.Reset(len(s.Classes()))
	p.minNeed = s.Servers()
	for _, c := range s.Classes() {
		p.minNeed = min(p.minNeed, c.Need)
	}
	return nil
}

// Arrive starts j if it fits (no older waiting job does), else queues it.
func (p *FirstFit) Arrive(s *sdk.System, j *sdk.Job) {
	if j.Need() <= s.Free() {
		s.Start(j)
		return
	}
	p.q.Push(j)
}

// Complete starts, in arrival order, every waiting job that fits.
func (p *FirstFit) Complete(s *sdk.System, _ *sdk.Job) {
	for p.q.Len() > 0 && s.Free() >= p.minNeed {
		c := p.q.Oldest(s.Free())
		if c < 0 {
			return
		}
		s.Start(p.q.Pop(c))
	}
}
