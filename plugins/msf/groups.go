package msf

import (
	"math/bits"
	"sort"

	"github.com/msjfarm/msjfarm/plugins/sdk"
)

// needGroups queues waiting jobs by server need: one FIFO per distinct need
// of the workload (classes with the same need share it, so they are served in
// arrival order between themselves, which is what a priority on the need
// alone leaves open). Groups are indexed in priority order: decreasing need
// for MSF, increasing need for LSF. A bitset of non-empty groups lets a fill
// skip empty groups in O(#groups/64), and from[f] (decreasing order only)
// is the first group whose need is at most f idle servers.
type needGroups struct {
	need  []int // need of group g
	of    []int // class index -> group
	q     []sdk.FIFO
	nz    []uint64 // bit g set iff q[g] is non-empty
	from  []int    // desc only: from[f] = first g with need[g] <= f (len(need) if none)
	total int      // waiting jobs in all groups
}

// reset builds the groups for s's classes, in decreasing need order if desc
// and increasing otherwise, and empties them. It reuses the previous
// replication's storage when the shape is unchanged.
func (g *needGroups) reset(s *sdk.System, desc bool) {
	cls := s.Classes()
	var needs []int
	seen := map[int]bool{}
	for _, c := range cls {
		if !seen[c.Need] {
			seen[c.Need] = true
			needs = append(needs, c.Need)
		}
	}
	if desc {
		sort.Sort(sort.Reverse(sort.IntSlice(needs)))
	} else {
		sort.Ints(needs)
	}
	g.need = needs
	g.of = g.of[:0]
	for _, c := range cls {
		for i, n := range needs {
			if n == c.Need {
				g.of = append(g.of, i)
				break
			}
		}
	}
	if len(g.q) != len(needs) {
		g.q = make([]sdk.FIFO, len(needs))
	}
	for i := range g.q {
		g.q[i].Reset()
	}
	g.nz = make([]uint64, (len(needs)+63)/64)
	g.total = 0
	g.from = g.from[:0]
	if desc {
		k := s.Servers()
		i := len(needs)
		for f := 0; f <= k; f++ {
			for i > 0 && needs[i-1] <= f {
				i--
			}
			g.from = append(g.from, i)
		}
	}
}

func (g *needGroups) push(j *sdk.Job) {
	i := g.of[j.Class()]
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

// next returns the first non-empty group at index >= i, or -1.
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
