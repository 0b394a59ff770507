package backfill

import (
	"testing"

	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// recorder is conservative backfilling that notes the reservation each job
// gets on arrival.
type recorder struct {
	*Policy
	res map[int64]float64
}

func (r *recorder) Arrive(s *sdk.System, j *sdk.Job) {
	r.Policy.Arrive(s, j)
	if n := len(r.q); n > 0 && r.q[n-1].j == j {
		r.res[j.ID()] = r.q[n-1].res
	}
}

// TestConservativeNeverDelays: conservative backfilling's guarantee — while
// estimates hold (exact sizes, or over-estimates), no job starts later than
// the reservation it got on arrival: later arrivals are only ever placed
// around it, and compression only moves it earlier. Checked for every job
// of long runs on the mixed workload (ρ = 0.77) and one-or-all (λ = 6).
func TestConservativeNeverDelays(t *testing.T) {
	for _, c := range []struct {
		w      *sim.Workload
		factor float64
	}{{simtest.Mixed(2.2), 1}, {simtest.Mixed(2.2), 2.5}, {simtest.Named(t, "one-or-all", 6), 1}} {
		p := &recorder{Policy: &Policy{conservative: true, factor: c.factor}, res: map[int64]float64{}}
		_, evs := simtest.Record(t, c.w, p, sim.Config{Seed: 4, Arrivals: 30000})
		checked := 0
		for _, e := range evs {
			if res, ok := p.res[e.Job]; ok && e.Kind == sim.TraceStart {
				checked++
				if e.Time > res+1e-9 {
					t.Fatalf("%s ×%v: job %d started at %v, after its arrival reservation %v", c.w.Name, c.factor, e.Job, e.Time, res)
				}
			}
		}
		if checked < 1000 {
			t.Errorf("%s ×%v: only %d jobs waited: the check is vacuous", c.w.Name, c.factor, checked)
		}
	}
}
