package quickswap

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/msjfarm/msjfarm/sdk"
)

// Static is Static Quickswap (Q §4.3). It cycles through the classes in a
// fixed order; class i (need d, m = ⌊k/d⌋ slots) has
//
//	working phase:  serve class-i jobs (schedule u_i = m): start waiting
//	                class-i jobs, FIFO, whenever they fit;
//	draining phase: admit no class-i job; complete those in service.
//
// Choices where Q leaves room (each tested):
//
//   - When the working phase ends. Q says "until the number of idle servers
//     exceeds k − ℓ" and, formally, u_i = ⌊k/i⌋. Here it ends when class i
//     can no longer fill its m slots (n_i < m, n_i its jobs in the system,
//     then all in service) and its jobs hold at most ℓ servers
//     (d·n_i <= ℓ, i.e. at least k − ℓ idle). "At least" rather than
//     "exceeds" keeps ℓ in [0, k−1] meaningful at both ends and makes the
//     one-or-all case exactly MSFQ (Q §4.2: phase 1 is the k-server class's
//     working phase, phases 2–3 the 1-server class's, phase 4 its
//     draining; tested decision for decision). The n_i < m part keeps a
//     class that still fills its slots working when d·m <= ℓ (d not
//     dividing k). ℓ = 0 is exhaustive service (a class works until it has
//     no job left); ℓ = k−1 (the default) starts draining as soon as the
//     class cannot fill its slots.
//   - As for MSFQ, a working phase ends only while some job of another
//     class is waiting: draining to switch to nobody would idle servers and
//     hold back the class's own arrivals for nothing, and a literal reading
//     spins through empty classes forever when the system is empty. An
//     empty system rests in the working phase of the class last served; a
//     class with no job at all is passed over at once.
//   - Hand-over (parameter handover). Q's draining phase forbids only
//     class-i admissions ("new class-i arrivals are not allowed to enter
//     service during this phase"), yet Q also says "when a given class's
//     draining phase is complete, the next class in the cycle is served".
//     "overlap" (default): the next class's working phase begins with class
//     i's draining phase, its jobs taking servers as they free up (so
//     several classes may be draining at once); in the working-phase rule
//     above, n_i < m and d·n_i <= ℓ are then read with no class-i job left
//     waiting. Q's published simulator also starts the next class on the
//     servers a draining class frees. "sequential": the literal reading,
//     the next class starts only once the draining phase is over (then all
//     servers are idle, and class i's jobs are all in service whenever
//     n_i < m). The choice matters: on four-class at λ = 4.5 the weighted
//     mean response time is about 14 with "overlap", which reproduces Q
//     Fig. 5 (Static well below MSF's 23 and First-Fit's 29), but about
//     22.5 with "sequential", no better than MSF. On one-or-all the two
//     coincide (a k-server job overlaps nothing).
//   - The cyclic order (Q: "we do not focus on the choice of cyclic
//     ordering") is the parameter order: "desc" (default: decreasing need,
//     as MSF ranks classes and as Q's published simulator cycles through
//     classes listed by increasing need), "asc", or an explicit
//     comma-separated list of the workload's distinct needs, e.g.
//     "15,1,5,3". (On four-class at λ = 4.5, "asc" gives about 10.6.)
//
// Counters, over the measurement window: drain_fraction (fraction of time
// with a class draining), switch_rate (working phases ended with jobs of
// the class in service, per unit time), mean_drain (draining time per such
// switch: the mean draining phase; the others last zero time).
type Static struct {
	ell      int
	order    string
	handover string

	g        needGroups
	l        int
	seq      bool     // handover "sequential"
	cycle    []int    // group indices in cycle order
	slots    []int    // ⌊k/need⌋ per group
	n        []int    // jobs of each group in the system
	pos      []int    // group -> position in cycle
	occ      []uint64 // bit at position p set iff n[cycle[p]] > 0
	totalRun int      // jobs in service, all groups
	cur      int      // position in cycle
	c        int      // cycle[cur], the group being served
	drain    bool     // sequential only: the current class is draining

	clk      clock
	tDrain   float64
	tAll     float64
	switches int64
}

// Params: threshold ℓ, cyclic order and hand-over.
func (p *Static) Params() []sdk.Param {
	return []sdk.Param{
		thresholdParam("threshold ℓ in [0, k−1]: a working phase ends once the class cannot fill its ⌊k/need⌋ slots and holds at most ℓ servers; −1 (default) means k−1; 0 is exhaustive service"),
		{Name: "order", Type: sdk.String, Default: "desc", Doc: `cyclic class order: "desc" (decreasing need, default), "asc", or a comma-separated list of the workload's distinct needs, e.g. "15,1,5,3"`},
		{Name: "handover", Type: sdk.String, Default: "overlap", Enum: []string{"overlap", "sequential"},
			Doc: `"overlap" (default): the next class starts on the servers a draining class frees; "sequential": only once the draining phase is over`},
	}
}

// Configure reads the parameters (the order is checked against the
// workload in Init).
func (p *Static) Configure(v sdk.Values) error {
	p.ell, p.order, p.handover = v.Int("threshold"), strings.TrimSpace(v.String("order")), v.String("handover")
	if p.order != "desc" && p.order != "asc" {
		if _, err := parseNeeds(p.order); err != nil {
			return err
		}
	}
	return nil
}

// NewStatic returns Static Quickswap with threshold ell (−1 for k−1), the
// given order ("" for "desc") and hand-over ("" for "overlap").
func NewStatic(ell int, order, handover string) *Static {
	return &Static{ell: ell, order: order, handover: handover}
}

func parseNeeds(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf(`static-quickswap: order %q: want "desc", "asc" or a comma-separated list of needs (positive integers)`, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// Init builds the cycle and resets the state.
func (p *Static) Init(s *sdk.System) error {
	k := s.Servers()
	l, err := resolveThreshold("static-quickswap", p.ell, k)
	if err != nil {
		return err
	}
	p.l = l
	switch p.handover {
	case "", "overlap":
		p.seq = false
	case "sequential":
		p.seq = true
	default:
		return fmt.Errorf("static-quickswap: handover %q: want overlap or sequential", p.handover)
	}
	p.g.reset(s)
	G := len(p.g.Need)
	p.cycle = p.cycle[:0]
	switch p.order {
	case "", "desc":
		for i := 0; i < G; i++ {
			p.cycle = append(p.cycle, i)
		}
	case "asc":
		for i := G - 1; i >= 0; i-- {
			p.cycle = append(p.cycle, i)
		}
	default:
		needs, err := parseNeeds(p.order)
		if err != nil {
			return err
		}
		sorted := append([]int(nil), p.g.Need...)
		sort.Ints(sorted)
		seen := make([]bool, G)
		for _, n := range needs {
			i := p.g.Index(n)
			if i < 0 {
				return fmt.Errorf("static-quickswap: order %q: no class needs %d servers (needs: %v)", p.order, n, sorted)
			}
			if seen[i] {
				return fmt.Errorf("static-quickswap: order %q: need %d listed twice", p.order, n)
			}
			seen[i] = true
			p.cycle = append(p.cycle, i)
		}
		if len(p.cycle) != G {
			return fmt.Errorf("static-quickswap: order %q must list every distinct need exactly once (needs: %v)", p.order, sorted)
		}
	}
	p.slots = p.slots[:0]
	for _, d := range p.g.Need {
		p.slots = append(p.slots, k/d)
	}
	p.n = make([]int, G)
	p.pos = make([]int, G)
	for at, i := range p.cycle {
		p.pos[i] = at
	}
	p.occ = make([]uint64, (G+63)/64)
	p.totalRun, p.cur, p.c, p.drain = 0, 0, 0, false
	if G > 0 {
		p.c = p.cycle[0]
	}
	p.clk = clock{}
	p.tDrain, p.tAll, p.switches = 0, 0, 0
	return nil
}

// StartMeasuring opens the counters' window.
func (p *Static) StartMeasuring(s *sdk.System) {
	p.clk.start(s.Now())
	p.tDrain, p.tAll, p.switches = 0, 0, 0
}

func (p *Static) account(s *sdk.System) {
	dt := p.clk.advance(s)
	p.tAll += dt
	if p.drain || p.totalRun > p.g.run[p.c] {
		p.tDrain += dt
	}
}

// Arrive queues j and applies the phase rules.
func (p *Static) Arrive(s *sdk.System, j *sdk.Job) {
	p.account(s)
	i := p.g.Of[j.Class()]
	if p.n[i]++; p.n[i] == 1 {
		at := p.pos[i]
		p.occ[at>>6] |= 1 << uint(at&63)
	}
	p.g.Push(j)
	p.step(s)
}

// Complete updates the counts and applies the phase rules.
func (p *Static) Complete(s *sdk.System, j *sdk.Job) {
	p.account(s)
	i := p.g.Of[j.Class()]
	if p.n[i]--; p.n[i] == 0 {
		at := p.pos[i]
		p.occ[at>>6] &^= 1 << uint(at&63)
	}
	p.g.run[i]--
	p.totalRun--
	p.step(s)
}

// next moves the pointer to the next class in the cycle that has a job in
// the system: the classes in between would each be passed over at once (no
// job: their working phase ends, their draining phase is empty). Some class
// has a job whenever next is called (a job waits), so it finds one.
func (p *Static) next() {
	if at := p.occupied(p.cur + 1); at >= 0 {
		p.cur, p.c = at, p.cycle[at]
		return
	}
	if at := p.occupied(0); at >= 0 {
		p.cur, p.c = at, p.cycle[at]
	}
}

// occupied returns the first cycle position >= from whose class has a job
// in the system, or -1.
func (p *Static) occupied(from int) int {
	w := from >> 6
	if w >= len(p.occ) {
		return -1
	}
	if x := p.occ[w] >> uint(from&63); x != 0 {
		return from + bits.TrailingZeros64(x)
	}
	for w++; w < len(p.occ); w++ {
		if p.occ[w] != 0 {
			return w<<6 + bits.TrailingZeros64(p.occ[w])
		}
	}
	return -1
}

// step applies the phase rules until none fires. It terminates within one
// cycle: the pointer moves only while some job waits, and a class the
// pointer reaches either keeps it (a job of the class still waits, or it
// fills its slots, or under "sequential" it drains jobs in service, which
// takes time) or has no waiting job left; so after one turn no job waits
// and the pointer stops.
func (p *Static) step(s *sdk.System) {
	g := &p.g
	for {
		c := p.c
		if p.drain {
			if g.run[c] > 0 {
				return
			}
			p.drain = false
			p.next()
			continue
		}
		d, q := g.Need[c], &g.Q[c]
		if q.Len() > 0 && d <= s.Free() {
			started := 0
			for {
				s.Start(g.Pop(c))
				started++
				if q.Len() == 0 || d > s.Free() {
					break
				}
			}
			g.run[c] += started
			p.totalRun += started
		}
		if g.Total == 0 {
			return
		}
		n := p.n[c]
		if n == 0 || (n < p.slots[c] && d*n <= p.l && q.Len() == 0) {
			if g.run[c] > 0 && p.clk.on {
				p.switches++
			}
			if p.seq {
				p.drain = true
			} else {
				p.next()
			}
			continue
		}
		return
	}
}

// Counters reports the draining statistics.
// Cycles counts the window's class switches, each ending one class's
// service turn (sdk.CycleReporter).
func (p *Static) Cycles() (string, int64) { return "switches", p.switches }

// DescribeCounters labels the counters (sdk.CounterDescriber).
func (p *Static) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "drain_fraction", Label: "time with a class draining", Kind: sdk.KindFraction},
		{Name: "switch_rate", Label: "switch rate", Unit: "1/time", Kind: sdk.KindRate,
			Doc: "working phases ended with jobs of the class in service, per unit time"},
		{Name: "mean_drain", Label: "mean draining phase", Unit: "time", Kind: sdk.KindTime,
			Doc: "draining time per switch with jobs in service"},
	}
}

func (p *Static) Counters() []sdk.Counter {
	return []sdk.Counter{
		{Name: "drain_fraction", Value: ratio(p.tDrain, p.tAll)},
		{Name: "switch_rate", Value: ratio(float64(p.switches), p.tAll)},
		{Name: "mean_drain", Value: ratio(p.tDrain, float64(p.switches))},
	}
}
