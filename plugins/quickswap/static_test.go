package quickswap_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// staticTrace: k = 4, class 0 needs 1 (m = 4 slots), class 1 needs 2
// (m = 2); ℓ = k−1 = 3, order "desc" (need 2, then need 1).
//
//	job: 0    1    2    3    4    5    6
//	at:  0    0.5  0.6  0.7  0.8  0.9  3.6
//	need:1    2    1    2    2    2    1
//	size:2    2.2  1    1    1    1    1
func staticTrace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 2}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0.5, Size: 2.2, Class: 1}, {At: 0.6, Size: 1, Class: 0},
		{At: 0.7, Size: 1, Class: 1}, {At: 0.8, Size: 1, Class: 1}, {At: 0.9, Size: 1, Class: 1},
		{At: 3.6, Size: 1, Class: 0},
	})
}

// TestStaticOverlapTrace, derived by hand with handover "overlap":
//
//	t=0:   the cycle starts at need 2, which has no job: passed over; need 1
//	       works: job 0 starts (to 2).
//	t=0.5: job 1 (need 2) waits, so need 1 (n = 1 < 4, 1 server <= ℓ, none
//	       waiting) ends its working phase; need 2 works at once: job 1
//	       starts on 2 of the 3 idle servers (to 2.7).
//	t=0.6: job 2 (need 1) waits: need 2 (n = 1 < 2, 2 <= ℓ) ends; need 1
//	       works: job 2 starts (to 1.6), 0 idle.
//	t=0.7: job 3 (need 2) waits: need 1 ends (n = 2, 2 <= ℓ); need 2 works
//	       but 0 idle: job 3 waits; n = 2 >= m keeps the phase.
//	t=0.8, 0.9: jobs 4, 5 wait (n = 4).
//	t=1.6: job 2 ends, 1 idle. t=2: job 0 ends: job 3 starts (to 3).
//	t=2.7: job 1 ends: job 4 starts (to 3.7). t=3: job 3 ends: job 5
//	       starts (to 4); n = 2 >= m: need 2 keeps working.
//	t=3.6: job 6 (need 1) waits: need 2 still has n = 2 = m (jobs 4, 5).
//	t=3.7: job 4 ends, n = 1 < m: need 2 ends; need 1 works on the 2 idle
//	       servers while job 5 drains: job 6 starts 3.7.
//
// Counters (window 0 to 4.7, when job 6 ends): working phases ended with
// jobs in service at 0.5, 0.6, 0.7, 3.7 (4 switches); a class other than
// the current one is in service (draining) over [0.5, 2) and [3.7, 4):
// 1.8 time units.
func TestStaticOverlapTrace(t *testing.T) {
	p := quickswap.NewStatic(-1, "desc", "overlap")
	checkStarts(t, staticTrace(), p, map[int64]float64{0: 0, 1: 0.5, 2: 0.6, 3: 2, 4: 2.7, 5: 3, 6: 3.7})
	checkCounters(t, staticTrace(), p, map[string]float64{
		"drain_fraction": 1.8 / 4.7, "switch_rate": 4 / 4.7, "mean_drain": 1.8 / 4,
	})
}

// TestStaticSequentialTrace, derived by hand with handover "sequential":
//
//	t=0:   job 0 starts (need 1 works, as above).
//	t=0.5: job 1 (need 2) waits: need 1 ends its working phase and drains
//	       job 0 (to 2); nothing may start meanwhile.
//	t=0.6–0.9: jobs 2–5 wait.
//	t=2:   drain over: need 2 works with 4 idle: jobs 1 (to 4.2) and 3 (to
//	       3) start; n = 4 >= m.
//	t=3:   job 3 ends: job 4 starts (to 4). t=3.6: job 6 waits.
//	t=4:   job 4 ends: job 5 starts (to 5); n = 2 (jobs 1, 5) = m.
//	t=4.2: job 1 ends, n = 1 < m with jobs waiting: need 2 drains job 5.
//	t=5:   drain over: need 1 works: jobs 2 and 6 start.
//
// Counters (window 0 to 6): 2 draining phases, [0.5, 2) and [4.2, 5).
func TestStaticSequentialTrace(t *testing.T) {
	p := quickswap.NewStatic(-1, "desc", "sequential")
	checkStarts(t, staticTrace(), p, map[int64]float64{0: 0, 1: 2, 2: 5, 3: 2, 4: 3, 5: 4, 6: 5})
	checkCounters(t, staticTrace(), p, map[string]float64{
		"drain_fraction": 2.3 / 6, "switch_rate": 2.0 / 6, "mean_drain": 2.3 / 2,
	})
}

// orderTrace: k = 4, needs 1, 2, 4.
//
//	job 0: t=0,   need 4, size 1
//	job 1: t=0.1, need 1, size 1
//	job 2: t=0.2, need 2, size 1
func orderTrace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 2, 4}, []simtest.J{
		{At: 0, Size: 1, Class: 2}, {At: 0.1, Size: 1, Class: 0}, {At: 0.2, Size: 1, Class: 1},
	})
}

// TestStaticOrder: the cyclic order decides which class follows, derived by
// hand with handover "sequential". Job 0 (need 4) starts at 0, jobs 1 and
// 2 wait; need 4 keeps working while it fills its one slot. At t=1 it has
// no job left and others wait: with "desc" (4, 2, 1) need 2 works next:
// job 2 starts at 1 and at once drains (n = 1 < 2, a need-1 job waits)
// until 2, when job 1 starts. With "4,1,2", job 1 starts at 1, job 2 at 2.
func TestStaticOrder(t *testing.T) {
	checkStarts(t, orderTrace(), quickswap.NewStatic(-1, "desc", "sequential"), map[int64]float64{0: 0, 1: 2, 2: 1})
	checkStarts(t, orderTrace(), quickswap.NewStatic(-1, "4,1,2", "sequential"), map[int64]float64{0: 0, 1: 1, 2: 2})
	// "asc" is the cycle 1, 2, 4: after 4 comes 1.
	checkStarts(t, orderTrace(), quickswap.NewStatic(-1, "asc", "sequential"), map[int64]float64{0: 0, 1: 1, 2: 2})
}

// TestStaticExhaustive: ℓ = 0 is exhaustive service (a class works until
// it has no job), derived by hand on staticTrace ("overlap"):
//
//	t=0:   job 0 starts (need 1 works; need 2 had no job).
//	t=0.5: job 1 (need 2) waits: need 1 holds 1 server > ℓ, keeps working.
//	t=0.6: job 2 (need 1) starts on arrival (to 1.6).
//	t=0.7–0.9: jobs 3–5 (need 2) wait. t=1.6: job 2 ends; job 0 remains.
//	t=2:   job 0 ends, need 1 has no job: need 2 works, jobs 1 (to 4.2) and
//	       3 (to 3) start.
//	t=3:   job 3 ends: job 4 starts (to 4). t=3.6: job 6 (need 1) waits.
//	t=4:   job 4 ends: job 5 starts (to 5). t=4.2: job 1 ends; n = 1 holds
//	       2 servers > ℓ: need 2 keeps working.
//	t=5:   job 5 ends, need 2 has no job: need 1 works, job 6 starts.
func TestStaticExhaustive(t *testing.T) {
	checkStarts(t, staticTrace(), quickswap.NewStatic(0, "desc", "overlap"),
		map[int64]float64{0: 0, 1: 2, 2: 0.6, 3: 2, 4: 3, 5: 4, 6: 5})
}

// TestStaticIsMSFQ: on one-or-all, Static Quickswap with the same ℓ takes
// MSFQ's decisions (its k-server class's working phase is MSFQ's phase 1,
// the 1-server class's are phases 2–3 and its draining phase 4), whatever
// the hand-over (a k-server job cannot overlap) and the order (two classes
// make one cycle). Traces and results (but counters) equal bit for bit.
func TestStaticIsMSFQ(t *testing.T) {
	w := simtest.Named(t, "one-or-all", 7.5)
	for _, ell := range []int{0, 7, 31} {
		cfg := sim.Config{Seed: uint64(ell + 1), Warmup: 2000, Arrivals: 30000}
		ra, ea := simtest.Record(t, w, quickswap.NewMSFQ(ell), cfg)
		for _, hand := range []string{"overlap", "sequential"} {
			for _, order := range []string{"desc", "asc"} {
				rb, eb := simtest.Record(t, w, quickswap.NewStatic(ell, order, hand), cfg)
				if !reflect.DeepEqual(ea, eb) {
					t.Errorf("ℓ=%d %s %s: traces differ from MSFQ", ell, hand, order)
				}
				if !reflect.DeepEqual(withoutCounters(ra), withoutCounters(rb)) {
					t.Errorf("ℓ=%d %s %s: results differ from MSFQ", ell, hand, order)
				}
			}
		}
	}
}

// TestStaticErrors: bad orders and hand-overs are refused with the reason.
func TestStaticErrors(t *testing.T) {
	spec := quickswap.Policies[1]
	if spec.Name != "static-quickswap" {
		t.Fatalf("Policies[1] = %s", spec.Name)
	}
	w := simtest.Named(t, "four-class", 4)
	cfg := sim.Config{Seed: 1, Arrivals: 10}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"order": "15,5,3"}, "must list every distinct need exactly once (needs: [1 3 5 15])"},
		{map[string]any{"order": "15,5,3,2"}, "no class needs 2 servers"},
		{map[string]any{"order": "15,5,3,3,1"}, "need 3 listed twice"},
		{map[string]any{"order": "big first"}, `want "desc", "asc" or a comma-separated list`},
		{map[string]any{"handover": "eager"}, "must be one of overlap, sequential"},
		{map[string]any{"threshold": 15}, "out of range [0, k−1] = [0, 14]"},
	} {
		if _, err := spec.Run(w, tc.params, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to contain %q", tc.params, err, tc.want)
		}
	}
	if _, err := spec.Run(w, map[string]any{"order": "1, 15,3,5", "handover": "sequential", "threshold": 14}, cfg); err != nil {
		t.Errorf("valid parameters refused: %v", err)
	}
}
