package quickswap

import "github.com/msjfarm/msjfarm/sdk"

// Adaptive is Adaptive Quickswap (Q §4.4). It admits jobs in MSF order and
// alternates between
//
//	working phase: whenever servers become available, start the waiting
//	               job with the largest need that fits in the idle servers
//	               (repeatedly: MSF's pass, Q §4.1);
//	trigger:       switch to draining when some class is waiting and not in
//	               service, and no class in service has a job waiting;
//	draining phase: start no job except the waiting job with the largest
//	               need; once it has started, switch to working.
//
// Choices where Q leaves room (each tested):
//
//   - The working phase's MSF pass runs after every arrival and completion
//     (MSF's own rule, Q §4.1: "whenever a job arrives or completes"), so an
//     arriving job that fits starts at once, and the trigger is checked on
//     the state the pass leaves. Every waiting job is then too big for the
//     idle servers, so the trigger says: the jobs held back all belong to
//     classes shut out of service, and the classes in service have nothing
//     left to run.
//   - "The job in the queue with the largest server need" is re-read at
//     every event while draining: a larger job arriving during the drain
//     becomes the one waited for. Among equal needs, the oldest.
//   - When that job starts, the working phase begins at once with an MSF
//     pass over the servers still idle (as Q's published simulator does),
//     so other jobs that fit start at the same instant.
//   - Q defines no threshold for Adaptive Quickswap; it has no parameter.
//
// Counters, over the measurement window: drain_fraction (fraction of time
// draining), drain_rate (draining phases entered per unit time), mean_drain
// (time draining over the number of draining phases entered).
type Adaptive struct {
	g     needGroups
	drain bool
	// Trigger bookkeeping, O(1) per change: blocked counts classes with a
	// job in service and one waiting; starved counts classes with a job
	// waiting and none in service.
	blocked, starved int

	clk    clock
	tDrain float64
	tAll   float64
	drains int64
}

// Init resets the state.
func (p *Adaptive) Init(s *sdk.System) error {
	p.g.reset(s)
	p.drain = false
	p.blocked, p.starved = 0, 0
	p.clk = clock{}
	p.tDrain, p.tAll, p.drains = 0, 0, 0
	return nil
}

// StartMeasuring opens the counters' window.
func (p *Adaptive) StartMeasuring(s *sdk.System) {
	p.clk.start(s.Now())
	p.tDrain, p.tAll, p.drains = 0, 0, 0
}

func (p *Adaptive) account(s *sdk.System) {
	dt := p.clk.advance(s)
	p.tAll += dt
	if p.drain {
		p.tDrain += dt
	}
}

// Arrive queues j and applies the phase rules.
func (p *Adaptive) Arrive(s *sdk.System, j *sdk.Job) {
	p.account(s)
	g := &p.g
	i := g.Of[j.Class()]
	if g.Q[i].Len() == 0 {
		// The class now has a job waiting: blocked if it has one in
		// service, starved otherwise.
		if g.run[i] > 0 {
			p.blocked++
		} else {
			p.starved++
		}
	}
	g.Push(j)
	if !p.drain && g.Need[i] > s.Free() {
		// In the working phase every job that waited before this arrival
		// is too big for the idle servers (the previous event's MSF pass
		// left it so, and only a completion frees servers), so if j does
		// not fit either, the pass would start nothing: only the trigger
		// can fire.
		p.trigger()
		return
	}
	p.step(s)
}

// Complete updates the counts and applies the phase rules.
func (p *Adaptive) Complete(s *sdk.System, j *sdk.Job) {
	p.account(s)
	g := &p.g
	i := g.Of[j.Class()]
	if g.run[i]--; g.run[i] == 0 && g.Q[i].Len() > 0 {
		// Its last job in service has left while some wait: blocked
		// becomes starved.
		p.blocked--
		p.starved++
	}
	p.step(s)
}

// start starts the oldest waiting job of group i (it must fit), and then
// more of them, oldest first, while any wait and the next fits in the free
// servers, at most limit in all (no limit if limit < 0). It returns the
// number of free servers left. The group's blocked/starved status is updated once for
// the whole batch: it had a job waiting before, and has one in service
// after.
func (p *Adaptive) start(s *sdk.System, i, limit int) int {
	g := &p.g
	d := g.Need[i]
	wasRunning := g.run[i] > 0
	n := 0
	for {
		s.Start(g.Pop(i))
		n++
		if n == limit || g.Q[i].Len() == 0 || d > s.Free() {
			break
		}
	}
	g.run[i] += n
	waiting := g.Q[i].Len() > 0
	switch {
	case !wasRunning:
		p.starved--
		if waiting {
			p.blocked++
		}
	case !waiting:
		p.blocked--
	}
	return s.Free()
}

func (p *Adaptive) step(s *sdk.System) {
	g := &p.g
	if p.drain {
		i := g.Next(0) // largest need waiting
		if i < 0 || g.Need[i] > s.Free() {
			return
		}
		p.start(s, i, 1)
		p.drain = false
	}
	// MSF's pass: From[free] is the first group whose need fits in the
	// free servers, and every later group's need fits too; start each
	// non-empty one's jobs while they fit. The pass skips empty groups
	// through the bitset, and a group it leaves either has no job waiting
	// or needs more than the servers left.
	if g.Total > 0 {
		for free, i := s.Free(), 0; ; i++ {
			if i = g.Next(max(i, g.From[free])); i < 0 {
				break
			}
			free = p.start(s, i, -1)
		}
	}
	p.trigger()
}

// trigger switches to draining when some class is waiting and not in
// service, and no class in service has a job waiting.
func (p *Adaptive) trigger() {
	if p.starved > 0 && p.blocked == 0 {
		p.drain = true
		if p.clk.on {
			p.drains++
		}
	}
}

// Cycles counts the window's drain phases (sdk.CycleReporter).
func (p *Adaptive) Cycles() (string, int64) { return "drains", p.drains }

// DescribeCounters labels the counters (sdk.CounterDescriber).
func (p *Adaptive) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "drain_fraction", Label: "time draining", Kind: sdk.KindFraction},
		{Name: "drain_rate", Label: "drain rate", Unit: "1/time", Kind: sdk.KindRate, Doc: "draining phases entered per unit time"},
		{Name: "mean_drain", Label: "mean draining phase", Unit: "time", Kind: sdk.KindTime},
	}
}

// Counters reports the draining statistics.
func (p *Adaptive) Counters() []sdk.Counter {
	return []sdk.Counter{
		{Name: "drain_fraction", Value: ratio(p.tDrain, p.tAll)},
		{Name: "drain_rate", Value: ratio(float64(p.drains), p.tAll)},
		{Name: "mean_drain", Value: ratio(p.tDrain, float64(p.drains))},
	}
}
