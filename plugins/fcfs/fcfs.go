// Package fcfs is First-Come First-Served for the multiserver-job model
// (Quickswap paper §1.1; Balanced Splitting §2): jobs enter service strictly
// in arrival order; when the oldest waiting job does not fit in the idle
// servers, every job behind it waits too (head-of-line blocking).
package fcfs

import "github.com/msjfarm/msjfarm/sdk"

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "fcfs",
	Doc:  "First-Come First-Served: strict arrival order, head-of-line blocking.",
	New:  func() sdk.Policy { return &FCFS{} },
}}

// FCFS keeps one global arrival-order queue: a decision costs O(1) per job it
// starts, whatever the number of classes. It only ever takes the front job,
// so the queue parks the jobs deep in a backlog (sdk.ParkingFIFO): an
// overloaded FCFS run keeps 24 bytes per waiting job instead of a Job.
type FCFS struct {
	q sdk.ParkingFIFO
}

// Init empties the queue.
func (p *FCFS) Init(*sdk.System) error { p.q.Reset(); return nil }

// Arrive starts j if nothing waits and it fits, else queues it. (That is
// "queue j and start what fits": when jobs wait, the front one did not fit
// at the last decision and no server has been freed since, so nothing
// fits now either.)
func (p *FCFS) Arrive(s *sdk.System, j *sdk.Job) {
	if p.q.Len() == 0 && j.Need() <= s.Free() {
		s.Start(j)
		return
	}
	p.q.Push(s, j)
}

// Complete starts what fits in the freed servers.
func (p *FCFS) Complete(s *sdk.System, _ *sdk.Job) { p.fill(s) }

func (p *FCFS) fill(s *sdk.System) {
	for {
		j := p.q.Front(s)
		if j == nil || j.Need() > s.Free() {
			return
		}
		p.q.Pop(s)
		s.Start(j)
	}
}
