// Package maxweight is the MaxWeight policy for the multiserver-job model
// (ServerFilling-SRPT paper, S §6; Balanced Splitting paper, B §2; both citing
// Maguluri, Srikant and Ying), preemptive, and its myopic non-preemptive
// variant (B §2).
//
// MaxWeight serves, at all times, a packing x (x_n jobs of server need n,
// Σ_n n·x_n <= k, x_n <= Q_n) that maximises Σ_n Q_n·x_n, where Q_n is the
// number of jobs with server need n in the system. Finding it is a bounded
// knapsack, solved exactly at every arrival and departure (see knapsack: an
// LP test, then branch and bound, and in the worst case dynamic programming
// in O(k · #needs)), so the number of servers is limited by the max_servers
// parameter.
package maxweight

import (
	"fmt"
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// DefaultMaxServers is the default of the max_servers parameter: the largest
// k for which Init accepts a workload. A decision that falls through to the
// DP costs about 2·k·#needs cells (≈ 2·10^5 at k = 4096 with Borg's 26
// needs, a few hundred microseconds) and a reconstruction table of as many
// int32s; on Borg cell B (k = 2048) about 1 decision in 10^5 does.
const DefaultMaxServers = 4096

// Policies lists the policies of this family.
var Policies = []sdk.Spec{
	{
		Name: "maxweight",
		Doc: "MaxWeight (S §6, B §2): preemptive-resume; at every arrival and departure serve the packing " +
			"maximising Σ Q_n·x_n (Q_n = jobs of need n in the system), solved exactly; k <= max_servers.",
		New: func() sdk.Policy { return &MaxWeight{} },
	},
	{
		Name: "maxweight-np",
		Doc: "Myopic non-preemptive MaxWeight (B §2): running jobs stay; the idle servers are filled with " +
			"the waiting jobs maximising Σ Q_n·x_n, at every arrival and departure.",
		New: func() sdk.Policy { return &Myopic{} },
	},
}

func maxServersParam() []sdk.Param {
	return []sdk.Param{{
		Name: "max_servers", Type: sdk.Int, Default: DefaultMaxServers, Min: sdk.Bound(1), Max: sdk.Bound(1 << 16),
		Doc: "largest number of servers k accepted: each decision solves a knapsack in O(k · #needs)",
	}}
}

// group is the state of the jobs of one server need (classes with equal need
// share a group: the weight Q_n is per need, not per class).
type group struct {
	need int
	q    int      // jobs of this need in the system (the MaxWeight weight)
	wait deque    // waiting jobs, oldest first
	run  youngest // running jobs, youngest on top (preemptive variant)
	x    int      // target number in service
}

// core is what both variants share: need groups, weights, the solver.
type core struct {
	name       string
	maxServers int
	k          int
	groups     []group
	groupOf    []int // class → group
	maxQ       int   // largest Q_n for which the solver cannot overflow
	ks         knapsack
}

func (c *core) configure(v sdk.Values) error {
	c.maxServers = v.Int("max_servers")
	return nil
}

func (c *core) init(s *sdk.System) error {
	if c.maxServers == 0 {
		c.maxServers = DefaultMaxServers
	}
	c.k = s.Servers()
	if c.k > c.maxServers {
		return fmt.Errorf("%s: k = %d servers exceeds the limit max_servers = %d "+
			"(each decision solves an exact knapsack in O(k · #needs); raise max_servers to accept the cost)",
			c.name, c.k, c.maxServers)
	}
	cls := s.Classes()
	var needs []int
	for _, cl := range cls {
		needs = append(needs, cl.Need)
	}
	slices.Sort(needs)
	needs = slices.Compact(needs)
	if len(c.groups) != len(needs) {
		c.groups = make([]group, len(needs))
	}
	for i := range c.groups {
		g := &c.groups[i]
		g.need, g.q, g.x = needs[i], 0, 0
		g.wait.reset()
		g.run.reset()
	}
	c.groupOf = c.groupOf[:0]
	for _, cl := range cls {
		i, _ := slices.BinarySearch(needs, cl.Need)
		c.groupOf = append(c.groupOf, i)
	}
	// The solver's largest numbers are sums of at most k unit weights Q_n
	// times a need (<= k), and branch and bound's prefix sums over every unit
	// the item types allow (fewer than 2k·(ln k + 1)): Q_n·(k+1)² < 2^61
	// keeps both below 2^62.
	k1 := int64(c.k) + 1
	c.maxQ = int(min(math.MaxInt64/4/(k1*k1), math.MaxInt)) // a count is an int on 32-bit targets
	return nil
}

// value is the value of one job of group g: its weight Q_n, then, to break
// ties towards packings using more servers, n·(k+1) (which dominates the
// at most k units of any further tie-break).
func (c *core) value(g *group) val {
	if g.q > c.maxQ {
		panic(fmt.Sprintf("%s: %d jobs of need %d in the system exceed the %d for which the packing weights fit in 64 bits",
			c.name, g.q, g.need, c.maxQ))
	}
	return val{hi: int64(g.q), lo: int64(g.need) * int64(c.k+1)}
}

// solve packs the items added to c.ks into capacity and sets each group's x
// to the units chosen.
func (c *core) solve(capacity int) {
	c.ks.solve(capacity)
	for i := range c.groups {
		c.groups[i].x = 0
	}
	for i, it := range c.ks.items {
		c.groups[it.g].x += c.ks.t[i]
	}
}

// MaxWeight is preemptive-resume MaxWeight (S §6, B §2).
//
// At every arrival and departure it serves a packing x maximising
// Σ_n Q_n·x_n over Σ_n n·x_n <= k, 0 <= x_n <= Q_n, where Q_n is the number of
// jobs with server need n in the system — waiting and in service (S §6:
// "a weight equal the number of jobs in the system with the same server
// need"; B §2 the same). The packing changes only when some Q_n does, so
// deciding at arrivals and departures is deciding "at all times".
//
// Choices where the papers are silent:
//   - Ties between maximum-weight packings go to the one using more servers,
//     then to the one preempting fewest jobs (keeping the running jobs of
//     each need), then to the solver's deterministic order. The solver
//     compares (Σ Q_n·x_n, Σ n·x_n·(k+1) + #kept) lexicographically, so this
//     costs nothing extra.
//   - Within a need, the x_n oldest jobs (by arrival) are served: a decrease
//     preempts the most recently arrived running job of that need, an
//     increase starts the oldest waiting one. Hence every running job of a
//     need is older than every waiting one, and a preempted job returns to
//     the front of its need's queue.
//   - Classes with the same need form one group (the weight is per need).
//
// Cost: enumerating the maximal packings is out of the question beyond toy
// systems — 10 for the powers-of-two system (k = 8, needs 1, 2, 4, 8), about
// 1.6·10^24 for Borg cell B (k = 2048, 26 needs) — so the knapsack is solved
// exactly (see knapsack: an LP test, then branch and bound, then if need be
// a DP in O(k · #needs)); it is skipped when everything fits (O(#needs)) and
// when an arrival provably just joins the packing (see Arrive). Init
// rejects k > max_servers (default 4096).
type MaxWeight struct {
	core
	totalNeed int // Σ need over the jobs in the system
}

// Params is the schema: max_servers.
func (p *MaxWeight) Params() []sdk.Param { return maxServersParam() }

// Configure sets max_servers.
func (p *MaxWeight) Configure(v sdk.Values) error { return p.configure(v) }

// Preemption: preempted jobs keep their progress.
func (p *MaxWeight) Preemption() sdk.Preemption { return sdk.PreemptResume }

// Init resets the state and checks k against max_servers.
func (p *MaxWeight) Init(s *sdk.System) error {
	p.name = "maxweight"
	p.totalNeed = 0
	return p.init(s)
}

// Arrive queues j at the back of its need group and re-packs.
//
// Shortcut: if every other job of j's need is in service and j fits in the
// idle servers, the packing in service plus j is optimal, so j just starts.
// Proof: let x* be the packing in service, optimal for the weights Q, with
// x*_n = Q_n, and Q' = Q + e_n. For x feasible under Q', if x_n <= Q_n then
// Q'·x = Q·x + x_n <= Q·x* + Q_n < Q'·(x*+e_n) = Q·x* + 2Q_n + 1; otherwise
// x−e_n is feasible under Q and Q'·x = Q·(x−e_n) + 2Q_n + 1 <= Q'·(x*+e_n).
// In a tie x−e_n ties x*, so it uses at most x*'s servers and keeps at most
// all of x*: the tie-breaks cannot prefer x either.
func (p *MaxWeight) Arrive(s *sdk.System, j *sdk.Job) {
	g := &p.groups[p.groupOf[j.Class()]]
	g.q++
	p.totalNeed += g.need
	if g.run.len() == g.q-1 && g.need <= s.Free() {
		g.x++
		s.Start(j)
		g.run.push(j)
		return
	}
	g.wait.pushBack(j)
	p.decide(s)
}

// Complete drops j and re-packs.
func (p *MaxWeight) Complete(s *sdk.System, j *sdk.Job) {
	g := &p.groups[p.groupOf[j.Class()]]
	g.q--
	p.totalNeed -= g.need
	g.run.remove(j.Idx)
	p.decide(s)
}

func (p *MaxWeight) decide(s *sdk.System) {
	if p.totalNeed <= p.k { // every job fits: x = Q is the unique optimum
		for i := range p.groups {
			p.groups[i].x = p.groups[i].q
		}
	} else {
		p.ks.reset()
		for i := range p.groups {
			g := &p.groups[i]
			if g.q == 0 {
				continue
			}
			v := p.value(g)
			r := g.run.len()
			p.ks.add(item{g: i, w: g.need, b: r, v: val{v.hi, v.lo + 1}})
			p.ks.add(item{g: i, w: g.need, b: g.q - r, v: v})
		}
		p.solve(p.k)
	}
	for i := range p.groups { // preempt first: it frees the servers to start
		g := &p.groups[i]
		for g.run.len() > g.x {
			j := g.run.pop()
			s.Preempt(j)
			g.wait.pushFront(j)
		}
	}
	for i := range p.groups {
		g := &p.groups[i]
		for g.run.len() < g.x {
			j := g.wait.popFront()
			s.Start(j)
			g.run.push(j)
		}
	}
}

// Myopic is the myopic non-preemptive MaxWeight that B §2 mentions (after
// Maguluri, Srikant and Ying): running jobs are never interrupted; at every
// arrival and departure the idle servers are filled with the waiting jobs y
// (y_n <= waiting jobs of need n, Σ_n n·y_n <= idle servers) that maximise
// Σ_n Q_n·y_n, i.e. the maximum-weight packing among those containing the
// jobs in service.
//
// Choices where B §2 is silent: Q_n counts the jobs of need n in the system
// (waiting and in service), as for MaxWeight; the paper says decisions are
// made at departures, and this policy also decides at arrivals so that an
// arrival never waits beside idle servers that could hold it (the
// continuous-time analogue of re-deciding every time slot); ties go to the
// packing using more servers, then to the solver's order; within a need,
// jobs start in arrival order. Same solver and max_servers limit as
// MaxWeight, with the idle servers as capacity.
type Myopic struct {
	core
	waitNeed int // Σ need over the waiting jobs
}

// Params is the schema: max_servers.
func (p *Myopic) Params() []sdk.Param { return maxServersParam() }

// Configure sets max_servers.
func (p *Myopic) Configure(v sdk.Values) error { return p.configure(v) }

// Init resets the state and checks k against max_servers.
func (p *Myopic) Init(s *sdk.System) error {
	p.name = "maxweight-np"
	p.waitNeed = 0
	return p.init(s)
}

// Arrive queues j and fills the idle servers.
func (p *Myopic) Arrive(s *sdk.System, j *sdk.Job) {
	g := &p.groups[p.groupOf[j.Class()]]
	g.q++
	p.waitNeed += g.need
	g.wait.pushBack(j)
	p.decide(s)
}

// Complete fills the servers j freed.
func (p *Myopic) Complete(s *sdk.System, j *sdk.Job) {
	p.groups[p.groupOf[j.Class()]].q--
	p.decide(s)
}

func (p *Myopic) decide(s *sdk.System) {
	free := s.Free()
	if p.waitNeed == 0 || free == 0 {
		return
	}
	if p.waitNeed <= free {
		for i := range p.groups {
			p.groups[i].x = p.groups[i].wait.len()
		}
	} else {
		p.ks.reset()
		for i := range p.groups {
			g := &p.groups[i]
			if g.wait.len() > 0 {
				p.ks.add(item{g: i, w: g.need, b: g.wait.len(), v: p.value(g)})
			}
		}
		p.solve(free)
	}
	for i := range p.groups {
		g := &p.groups[i]
		for ; g.x > 0; g.x-- {
			s.Start(g.wait.popFront())
			p.waitNeed -= g.need
		}
	}
}
