package quickswap

import (
	"math/bits"
	"sort"

	"github.com/msjfarm/msjfarm/plugins/sdk"
)

// needGroups queues waiting jobs by server need, in decreasing need order:
// one FIFO per distinct need of the workload. Q §3.1 identifies a job class
// with its need ("class-i jobs all need i servers"), so workload classes that
// share a need form one Quickswap class, served in arrival order between
// themselves. It also counts each group's jobs in the system and in service.
//
// A bitset of groups with waiting jobs lets an MSF-order fill skip empty
// groups, and from[f] is the first group whose need is at most f idle
// servers, so a fill costs O(#groups/64 + jobs started).
type needGroups struct {
	need  []int // need of group g (decreasing)
	of    []int // class index -> group
	q     []sdk.FIFO
	run   []int    // jobs of group g in service
	nz    []uint64 // bit g set iff q[g] is non-empty
	from  []int    // from[f] = first g with need[g] <= f (len(need) if none)
	total int      // waiting jobs in all groups
}

func (g *needGroups) reset(s *sdk.System) {
	cls := s.Classes()
	var needs []int
	seen := map[int]bool{}
	for _, c := range cls {
		if !seen[c.Need] {
			seen[c.Need] = true
			needs = append(needs, c.Need)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(needs)))
	g.need = needs
	g.of = g.of[:0]
	for _, c := range cls {
		g.of = append(g.of, g.index(c.Need))
	}
	if len(g.q) != len(needs) {
		g.q = make([]sdk.FIFO, len(needs))
	}
	for i := range g.q {
		g.q[i].Reset()
	}
	g.run = make([]int, len(needs))
	g.nz = make([]uint64, (len(needs)+63)/64)
	g.total = 0
	g.from = g.from[:0]
	k := s.Servers()
	i := len(needs)
	for f := 0; f <= k; f++ {
		for i > 0 && needs[i-1] <= f {
			i--
		}
		g.from = append(g.from, i)
	}
}

// index returns the group of a need, or -1.
func (g *needGroups) index(need int) int {
	for i, n := range g.need {
		if n == need {
			return i
		}
	}
	return -1
}

func (g *needGroups) push(i int, j *sdk.Job) {
	g.q[i].Push(j)
	g.nz[i>>6] |= 1 << uint(i&63)
	g.total++
}

func (g *needGroups) pop(i int) *sdk.Job {
	j := g.q[i].Pop()
	if g.q[i].Len() == 0 {
		g.nz[i>>6] &^= 1 << uint(i&63)
	}
	g.total--
	return j
}

// next returns the first group at index >= i with a waiting job, or -1.
func (g *needGroups) next(i int) int {
	w := i >> 6
	if w >= len(g.nz) {
		return -1
	}
	if x := g.nz[w] >> uint(i&63); x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(g.nz); w++ {
		if g.nz[w] != 0 {
			return w<<6 + bits.TrailingZeros64(g.nz[w])
		}
	}
	return -1
}

// clock accumulates time over the measurement window only. The engine
// closes the window at an arrival, before calling Arrive with Measuring()
// false; advance, called first thing in every Arrive and Complete, credits
// the time up to that instant and then stops. Counters are thus exact
// time integrals over the window that the engine's own statistics use.
type clock struct {
	on   bool
	last float64
}

func (c *clock) start(now float64) { c.on, c.last = true, now }

// advance returns the measured time elapsed since the previous call.
func (c *clock) advance(s *sdk.System) float64 {
	if !c.on {
		return 0
	}
	now := s.Now()
	dt := now - c.last
	c.last = now
	if !s.Measuring() {
		c.on = false
	}
	return dt
}

// ratio is a/b, or 0 when b is 0 (counters are JSON: no NaN).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// thresholdParam is the shared schema entry of ℓ.
func thresholdParam(doc string) sdk.Param {
	return sdk.Param{Name: "threshold", Type: sdk.Int, Default: -1, Min: sdk.Bound(-1), Doc: doc}
}
