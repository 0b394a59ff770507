package serverfilling

import (
	"testing"

	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// remainingChecker is DivisorFilling-SRPT on the one-or-all slices,
// checking after every arrival and completion that each waiting job's
// kept remaining duration (age, oneKStop) is the engine's to the bit, and
// each running job's fin finAtMost's (checkFin).
type remainingChecker struct {
	*Policy
	t       *testing.T
	checked int
	fins    int // running jobs' fins checked
}

func (c *remainingChecker) Arrive(s *sdk.System, j *sdk.Job) {
	c.Policy.Arrive(s, j)
	c.check(s)
}

func (c *remainingChecker) Complete(s *sdk.System, j *sdk.Job) {
	c.Policy.Complete(s, j)
	c.check(s)
}

func (c *remainingChecker) check(s *sdk.System) {
	p := c.Policy
	for b := range p.sb {
		sb := &p.sb[b]
		for _, x := range sb.seq[sb.nRun:] {
			sl := &p.slots[x]
			if r := s.Remaining(sl.j); sl.age != r {
				c.t.Fatalf("t = %v: job %d waits with remaining %v kept, the engine's %v", s.Now(), sl.id, sl.age, r)
			}
			c.checked++
		}
		for _, x := range sb.seq[:sb.nRun] {
			c.checkFin(&p.slots[x])
		}
	}
}

// checkFin: a running job's fin is finAtMost's for its remaining duration
// at its start (age, kept until it is preempted) and its key then, to the
// bit: oneKStartSRPT takes finAtMost's usual one-ulp step itself.
func (c *remainingChecker) checkFin(sl *slot) {
	scale := c.cls[sl.class].scale
	if want := finAtMost(sl.since+sl.age, sl.since, scale, sl.key0); sl.fin != want {
		c.t.Fatalf("job %d started at %v with remaining %v, key %v: fin %v, finAtMost's %v", sl.id, sl.since, sl.age, sl.key0, sl.fin, want)
	}
	c.fins++
}

// TestOneKRemaining: the remaining durations the one-or-all slices keep
// under the SRPT order (oneKStop, read by oneKStart instead of
// s.Remaining) are the engine's, for every waiting job after every event,
// on one-or-all below and past λ = 7 and on needs 1 and k at k = 6 with
// ties (preempted jobs restarted many times, so rounding accumulates).
func TestOneKRemaining(t *testing.T) {
	for _, w := range []*sim.Workload{
		simtest.Named(t, "one-or-all", 4),
		simtest.Named(t, "one-or-all", 7),
		tiedWorkload("one-k/ties", 6, []int{1, 6}, 0.97, 3),
	} {
		for _, backfill := range []bool{true, false} {
			c := &remainingChecker{Policy: configured(t, SRPTOrder, DivisorFilling, map[string]any{"backfill": backfill}), t: t}
			if _, err := sim.Run(w, c, sim.Config{Seed: 1, Warmup: 500, Arrivals: 5000}); err != nil {
				t.Fatal(err)
			}
			if c.ds == nil || !c.ds.oneK || c.checked == 0 || c.fins == 0 {
				t.Fatalf("%s: the one-or-all slices not taken (%d waiting jobs, %d running ones checked)", w.Name, c.checked, c.fins)
			}
		}
	}
}
