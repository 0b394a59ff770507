package maxweight

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
)

// best is the exhaustive maximum of (Σ Q_n·x_n, Σ n·x_n) over packings with
// x_n <= bound(g) and Σ n·x_n <= capacity.
func best(groups []group, capacity int, bound func(*group) int) val {
	var items []item
	for i := range groups {
		g := &groups[i]
		items = append(items, item{g: i, w: g.need, b: bound(g), v: val{int64(g.q), int64(g.need)}})
	}
	return brute(items, capacity)
}

func served(groups []group, count func(*group) int) val {
	var v val
	for i := range groups {
		g := &groups[i]
		v = v.add(val{int64(g.q), int64(g.need)}.mul(count(g)))
	}
	return v
}

// checked runs MaxWeight and verifies after every arrival and departure,
// by enumeration, that the packing in service maximises the weight and,
// among maximum-weight packings, the busy servers.
type checked struct {
	*MaxWeight
	t      *testing.T
	events int
}

func (c *checked) verify(s *sdk.System) {
	c.events++
	want := best(c.groups, c.k, func(g *group) int { return g.q })
	if got := served(c.groups, func(g *group) int { return g.run.len() }); got != want {
		c.t.Fatalf("t=%g: packing in service (weight, servers) %v, optimum %v", s.Now(), got, want)
	}
}

func (c *checked) Arrive(s *sdk.System, j *sdk.Job)   { c.MaxWeight.Arrive(s, j); c.verify(s) }
func (c *checked) Complete(s *sdk.System, j *sdk.Job) { c.MaxWeight.Complete(s, j); c.verify(s) }

// checkedNP verifies the myopic variant: the jobs each event starts
// maximise (Σ Q_n·y_n, Σ n·y_n) over the waiting jobs and idle servers it
// saw.
type checkedNP struct {
	*Myopic
	t      *testing.T
	before []int
	free   int
}

func (c *checkedNP) snapshot(s *sdk.System) {
	c.before = c.before[:0]
	for i := range c.groups {
		c.before = append(c.before, c.groups[i].wait.len())
	}
	c.free = s.Free()
}

func (c *checkedNP) verify(s *sdk.System) {
	i := 0
	want := best(c.groups, c.free, func(g *group) int { i++; return c.before[i-1] })
	i = 0
	got := served(c.groups, func(g *group) int { i++; return c.before[i-1] - g.wait.len() })
	if got != want {
		c.t.Fatalf("t=%g: started (weight, servers) %v, optimum %v", s.Now(), got, want)
	}
}

func (c *checkedNP) Arrive(s *sdk.System, j *sdk.Job) {
	c.snapshot(s)
	c.before[c.groupOf[j.Class()]]++ // j is waiting when the decision is made
	c.Myopic.Arrive(s, j)
	c.verify(s)
}

func (c *checkedNP) Complete(s *sdk.System, j *sdk.Job) {
	c.snapshot(s)
	c.Myopic.Complete(s, j)
	c.verify(s)
}

// TestPackingOptimalAtEveryEvent checks both variants' decisions against
// enumeration on random runs (all shortcuts included: everything fits, the
// arrival shortcut, the LP test, branch and bound, the DP).
func TestPackingOptimalAtEveryEvent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rate     float64
		arrivals int64
	}{{"powers-of-two", 0.9 / 0.46875, 20000}, {"powers-of-two-h2", 0.95 / 0.46875, 20000}, {"four-class", 4.7, 10000}} {
		s, err := workload.Named(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Build(tc.rate)
		if err != nil {
			t.Fatal(err)
		}
		cfg := sim.Config{Seed: 1, Arrivals: tc.arrivals}
		c := &checked{MaxWeight: &MaxWeight{}, t: t}
		if _, err := sim.Run(w, c, cfg); err != nil {
			t.Fatal(err)
		}
		np := &checkedNP{Myopic: &Myopic{}, t: t}
		if _, err := sim.Run(w, np, cfg); err != nil {
			t.Fatal(err)
		}
		ks := c.ks
		t.Logf("%s: %d events; maxweight solves %d (branch and bound %d, DP %d); maxweight-np solves %d",
			tc.name, c.events, ks.solves, ks.bbRuns, ks.dpRuns, np.ks.solves)
	}
}
