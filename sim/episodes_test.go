package sim_test

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// episodeResult is a replication with a work deficit rel and one class,
// "big", offered `offered` jobs in the tested half and silent for `silence`
// of its 32 segments; reasons are its instability reasons (nil: not
// flagged).
func episodeResult(rel float64, offered float64, silence int, reasons ...string) *sim.Result {
	r := &sim.Result{
		Deficits: []sim.Deficit{
			{Name: sim.DeficitWork, Class: -1, Relative: rel},
			{Name: sim.DeficitJobs, Class: -1},
			{Name: "small", Class: 0, Offered: 1e5},
			{Name: "big", Class: 1, Offered: offered, Silence: silence},
		},
	}
	if len(reasons) > 0 {
		r.Unstable = true
		r.Instability = &sim.Instability{Reasons: reasons}
	}
	return r
}

// TestPoolEpisodes checks the rule that withdraws an unstable verdict from
// a point whose class is served in episodes longer than the batches, on
// ten constructed replications each.
//
//   - majority: 6 flagged by growth, "big" (65 jobs offered in the half, as
//     Borg cell B's 2000-server class at λ = 3.5) silent for 32 segments in
//     all ten: undecided, Test "episodes:big", statistic 10 against 5,
//     Overruled "majority".
//   - silent in 5 of 10 (exactly half): still episodic, undecided.
//   - silent in 4 of 10: not episodic; the majority stands (unstable).
//   - silences of 7 segments (under an eighth of the window): unstable.
//   - offered 31 jobs in the half (under one per segment, where a silence
//     of 8 segments happens by chance): unstable.
//   - backlog: offered 65 but 40% of all jobs delivered (26 expected): a
//     silence by chance under a backlog: unstable.
//   - overload: six replications flagged for ρ ≥ 1 (reason "overload"):
//     unstable, whatever the episodes (ρ ≥ 1 needs no window).
//   - deficit: no replication flagged, relative work deficits 0.010 +
//     0.001·(i − 4.5) (TestPoolDeficit's "tight": t = 10.44 > 7.22), all
//     episodic: undecided, Overruled "deficit-t:work".
//   - stable: nothing flagged, no deficit, episodic: stable, Episodic set.
func TestPoolEpisodes(t *testing.T) {
	point := func(flagged int, reason string, offered float64, silence, silentReps int) []*sim.Result {
		rs := make([]*sim.Result, 10)
		for i := range rs {
			s := silence
			if i >= silentReps {
				s = 0
			}
			var why []string
			if i < flagged {
				why = []string{reason}
			}
			rs[i] = episodeResult(0, offered, s, why...)
		}
		return rs
	}
	// A queue far past saturation: every replication delivers 40% of the
	// jobs offered in the tested half (jobs deficit 0.6), so "big", offered
	// 65, should have delivered 0.4·65 = 26 < 32: its silence is chance
	// under a backlog, not an episode, and the majority stands.
	backlog := point(6, "growth", 65, 32, 10)
	for _, r := range backlog {
		r.Deficits[1].Relative = 0.6
	}
	deficit := make([]*sim.Result, 10)
	for i := range deficit {
		deficit[i] = episodeResult(0.010+0.001*(float64(i)-4.5), 65, 32)
	}
	for _, c := range []struct {
		name      string
		rs        []*sim.Result
		want      sim.Verdict
		test      string
		stat      float64
		overruled string
		episodic  string
	}{
		{"majority", point(6, "growth", 65, 32, 10), sim.VerdictUndecided, "episodes:big", 10, sim.TestMajority, "big"},
		{"half silent", point(6, "growth", 65, 8, 5), sim.VerdictUndecided, "episodes:big", 5, sim.TestMajority, "big"},
		{"minority silent", point(6, "growth", 65, 32, 4), sim.VerdictUnstable, sim.TestMajority, 6, "", ""},
		{"short silence", point(6, "growth", 65, 7, 10), sim.VerdictUnstable, sim.TestMajority, 6, "", ""},
		{"rare class", point(6, "growth", 31, 32, 10), sim.VerdictUnstable, sim.TestMajority, 6, "", ""},
		{"backlog", backlog, sim.VerdictUnstable, sim.TestMajority, 6, "", ""},
		{"overload", point(6, "overload", 65, 32, 10), sim.VerdictUnstable, sim.TestMajority, 6, "", "big"},
		{"deficit", deficit, sim.VerdictUndecided, "episodes:big", 10, "deficit-t:work", "big"},
		{"stable", point(0, "", 65, 32, 10), sim.VerdictStable, sim.TestNone, 0, "", "big"},
	} {
		v, err := sim.Pool(c.rs)
		if err != nil {
			t.Fatal(err)
		}
		if v.Verdict != c.want || v.Test != c.test || v.Statistic != c.stat || v.Overruled != c.overruled || v.Episodic != c.episodic {
			t.Errorf("%s: %s by %s (%v against %v), overruled %q, episodic %q; want %s by %s (%v), overruled %q, episodic %q",
				c.name, v.Verdict, v.Test, v.Statistic, v.Critical, v.Overruled, v.Episodic, c.want, c.test, c.stat, c.overruled, c.episodic)
		}
		if v.Verdict == sim.VerdictUndecided && v.Critical != 5 {
			t.Errorf("%s: critical %v, want ⌈10/2⌉ = 5", c.name, v.Critical)
		}
	}
}
