package msf

import (
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// PreemptiveMSF is Most Servers First as the Balanced Splitting paper
// defines it (B §2): "At all times, jobs with the highest server need are
// processed first among all jobs that can be served, with preemption."
//
// Our reading, taken literally: at every instant the set of jobs in service
// is the greedy packing of ALL jobs in the system (running or waiting), in
// decreasing need order, FIFO (arrival order) within a need, where a job
// that does not fit in the servers left over is skipped and the scan goes
// on to smaller needs ("among all jobs that can be served", the same
// non-blocking scan as Q §4.1's non-preemptive MSF). A running job outside
// that set is preempted (preempt-resume: it keeps its progress) and a
// waiting job inside it is started. Since nothing but arrivals and
// completions changes the set (sizes are not read), it is recomputed at
// those events only. Workload classes sharing a need are one priority
// level, as in MSF.
//
// Within a need the set in service is always a prefix of the need's jobs in
// arrival order: every decision serves the first m of them, and a
// completion removes a job from inside the prefix, which leaves a prefix.
// So a decision only moves each need's boundary: it preempts the youngest
// running jobs of the need (which go back to the front of its waiting
// queue, in arrival order) or starts the oldest waiting ones.
//
// Cost: an arrival that fits in the idle servers starts at once, O(1): a
// packing that leaves f ≥ n idle servers serves every job of need ≤ f, in
// particular of every need after the new job's, so adding it changes
// nothing else. A completion with no job waiting changes nothing either
// (every job is in service, so the packing is all of them). Every other
// event recomputes the packing over the distinct needs, O(#needs + jobs
// started or preempted).
type PreemptiveMSF struct {
	groups  []pgroup // one per distinct need, decreasing need
	ofCls   []int    // class → group
	waiting int      // jobs waiting, over all groups
}

// pgroup is one need level: the jobs in service (by arrival order, with nil
// holes left by completions) and the waiting ones (arrival order).
type pgroup struct {
	need   int
	run    []*sdk.Job
	nrun   int
	wait   deque
	target int
}

// Preemption declares preempt-resume (B §2).
func (p *PreemptiveMSF) Preemption() sdk.Preemption { return sdk.PreemptResume }

// Init builds one group per distinct need, in decreasing need order.
func (p *PreemptiveMSF) Init(s *sdk.System) error {
	var needs []int
	for _, c := range s.Classes() {
		if !slices.Contains(needs, c.Need) {
			needs = append(needs, c.Need)
		}
	}
	slices.Sort(needs)
	slices.Reverse(needs)
	p.groups = make([]pgroup, len(needs))
	for i, n := range needs {
		p.groups[i].need = n
	}
	p.waiting = 0
	p.ofCls = make([]int, len(s.Classes()))
	for c, cl := range s.Classes() {
		p.ofCls[c] = slices.Index(needs, cl.Need)
	}
	return nil
}

// Arrive starts j at once if it fits (see the cost note), else queues it
// and repacks: a larger need may now preempt smaller ones.
func (p *PreemptiveMSF) Arrive(s *sdk.System, j *sdk.Job) {
	g := &p.groups[p.ofCls[j.Class()]]
	j.Tag = p.ofCls[j.Class()]
	if j.Need() <= s.Free() {
		g.startRun(s, j)
		return
	}
	g.wait.pushBack(j)
	p.waiting++
	p.repack(s)
}

// Complete drops j from its group and repacks.
func (p *PreemptiveMSF) Complete(s *sdk.System, j *sdk.Job) {
	g := &p.groups[j.Tag]
	g.run[j.Idx] = nil
	g.nrun--
	if len(g.run) > 16 && len(g.run) > 2*g.nrun {
		g.compact()
	}
	if p.waiting == 0 { // every job is in service: the packing is all of them
		return
	}
	p.repack(s)
}

// repack computes the greedy packing's count per need, then preempts (all
// preemptions first, so that the starts find their servers idle) and
// starts.
func (p *PreemptiveMSF) repack(s *sdk.System) {
	free := s.Servers()
	for i := range p.groups {
		g := &p.groups[i]
		g.target = min(g.nrun+g.wait.len(), free/g.need)
		free -= g.target * g.need
	}
	for i := range p.groups {
		g := &p.groups[i]
		for g.nrun > g.target {
			j := g.popYoungest()
			s.Preempt(j)
			g.wait.pushFront(j)
			p.waiting++
		}
	}
	for i := range p.groups {
		g := &p.groups[i]
		for g.nrun < g.target {
			g.startRun(s, g.wait.popFront())
			p.waiting--
		}
	}
}

func (g *pgroup) startRun(s *sdk.System, j *sdk.Job) {
	j.Idx = len(g.run)
	g.run = append(g.run, j)
	g.nrun++
	s.Start(j)
}

// popYoungest removes and returns the running job of the group that arrived
// last (the end of the prefix).
func (g *pgroup) popYoungest() *sdk.Job {
	for {
		j := g.run[len(g.run)-1]
		g.run = g.run[:len(g.run)-1]
		if j != nil {
			g.nrun--
			return j
		}
	}
}

// compact squeezes out the holes left by completions (amortised O(1) per
// completion: it runs when at least half the slice is holes).
func (g *pgroup) compact() {
	w := 0
	for _, j := range g.run {
		if j != nil {
			j.Idx = w
			g.run[w] = j
			w++
		}
	}
	clear(g.run[w:])
	g.run = g.run[:w]
}

// deque is a ring buffer of jobs with pushes at both ends.
type deque struct {
	buf        []*sdk.Job
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	n := max(16, 2*len(d.buf))
	nb := make([]*sdk.Job, n)
	for i := range d.size {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(j *sdk.Job) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = j
	d.size++
}

func (d *deque) pushFront(j *sdk.Job) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = j
	d.size++
}

func (d *deque) popFront() *sdk.Job {
	j := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return j
}
