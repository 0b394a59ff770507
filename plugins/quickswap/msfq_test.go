package quickswap_test

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/msf"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

func checkStarts(t *testing.T, w *sim.Workload, p sim.Policy, want map[int64]float64) []sim.TraceRecord {
	t.Helper()
	evs := simtest.RunTrace(t, w, p)
	simtest.CheckInvariants(t, w, p, evs, true)
	got := simtest.Starts(evs)
	if len(got) != len(want) {
		t.Errorf("%d jobs started, want %d", len(got), len(want))
	}
	for id, at := range want {
		if len(got[id]) != 1 || math.Abs(got[id][0]-at) > 1e-12 {
			t.Errorf("job %d started at %v, want [%v]", id, got[id], at)
		}
	}
	return evs
}

// checkCounters replays the whole trace (the window spans it: no warm-up,
// and no arrival closes it) and compares the policy's counters.
func checkCounters(t *testing.T, w *sim.Workload, p sim.Policy, want map[string]float64) {
	t.Helper()
	r, _ := simtest.Record(t, w, p, sim.Config{Arrivals: int64(len(w.Trace))})
	got := counters(r)
	if len(got) != len(want) {
		t.Errorf("counters %v, want %v", got, want)
	}
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-12 {
			t.Errorf("counter %s = %v, want %v", k, got[k], v)
		}
	}
}

func counters(r *sim.Result) map[string]float64 {
	m := map[string]float64{}
	for _, c := range r.Counters {
		m[c.Name] = c.Value
	}
	return m
}

// msfqTrace: one-or-all on k = 4 (class 0 light, need 1; class 1 heavy,
// need 4).
//
//	job: 0    1    2    3    4    5    6    7
//	at:  0    0.1  0.2  0.3  0.4  0.5  3.25 4.5
//	kind:L    L    L    L    L    H    L    H
//	size:3    3    3    3    1    1    1    1
func msfqTrace() *sim.Workload {
	return simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{
		{At: 0, Size: 3, Class: 0}, {At: 0.1, Size: 3, Class: 0}, {At: 0.2, Size: 3, Class: 0},
		{At: 0.3, Size: 3, Class: 0}, {At: 0.4, Size: 1, Class: 0}, {At: 0.5, Size: 1, Class: 1},
		{At: 3.25, Size: 1, Class: 0}, {At: 4.5, Size: 1, Class: 1},
	})
}

// TestMSFQTrace: ℓ = 2, derived by hand (n1, nk: light, heavy in system).
//
//	t=0–0.3: the empty system rests in phase 3; jobs 0–3 start (4 busy).
//	t=0.4: job 4 waits (n1 = 5). t=0.5: heavy job 5 waits (nk = 1); phase 3
//	       goes on: n1 = 5 > ℓ.
//	t=3:   job 0 ends, 1 idle: job 4 starts (to 4); n1 = 4.
//	t=3.1: job 1 ends, n1 = 3 > ℓ.
//	t=3.2: job 2 ends, n1 = 2 <= ℓ with nk = 1: phase 4; jobs 3 (to 3.3) and
//	       4 (to 4) still run.
//	t=3.25: job 6 (light) arrives in phase 4: not admitted although 2
//	       servers are idle (MSF would start it).
//	t=4:   job 4 ends, no light job in service: phase 1; job 5 starts.
//	t=4.5: job 7 (heavy) waits. t=5: job 5 ends, nk = 1: job 7 starts.
//	t=6:   job 7 ends, nk = 0: phase 2, job 6 starts; n1 = 1 < k: phase 3.
//	t=7:   job 6 ends.
//
// Phase counters (window = the whole run, 0 to 7; the initial phase 3 is
// not an entry): phase 3 for [0, 3.2) and [6, 7], 4.2 time in 1 entry;
// phase 4 [3.2, 4): 0.8; phase 1 [4, 6): 2; phase 2 at 6 for no time.
func TestMSFQTrace(t *testing.T) {
	w := msfqTrace()
	p := quickswap.NewMSFQ(2)
	checkStarts(t, w, p, map[int64]float64{0: 0, 1: 0.1, 2: 0.2, 3: 0.3, 4: 3, 5: 4, 6: 6, 7: 5})
	checkCounters(t, w, p, map[string]float64{
		"phase1_mean": 2, "phase1_fraction": 2.0 / 7,
		"phase2_mean": 0, "phase2_fraction": 0,
		"phase3_mean": 4.2, "phase3_fraction": 4.2 / 7,
		"phase4_mean": 0.8, "phase4_fraction": 0.8 / 7,
		"cycles": 1,
	})

	// Counters cover only the measurement window. With 2 warm-up arrivals
	// and 4 measured ones, the window runs from job 2's arrival (0.2) to
	// job 6's (3.25), as the engine's own Window: phase 3 for [0.2, 3.2)
	// with no entry inside the window (mean reported as 0), phase 4 for
	// [3.2, 3.25] in 1 entry; no cycle starts inside.
	r, _ := simtest.Record(t, w, quickswap.NewMSFQ(2), sim.Config{Warmup: 2, Arrivals: 4})
	if math.Abs(r.Window-3.05) > 1e-12 {
		t.Fatalf("engine window %v, want 3.05", r.Window)
	}
	want := map[string]float64{
		"phase1_mean": 0, "phase1_fraction": 0,
		"phase2_mean": 0, "phase2_fraction": 0,
		"phase3_mean": 0, "phase3_fraction": 3 / 3.05,
		"phase4_mean": 0.05, "phase4_fraction": 0.05 / 3.05,
		"cycles": 0,
	}
	got := counters(r)
	for k, v := range want {
		if math.Abs(got[k]-v) > 1e-12 {
			t.Errorf("windowed counter %s = %v, want %v", k, got[k], v)
		}
	}
}

// TestMSFQZeroTrace: with ℓ = 0 on the same trace, MSFQ is MSF: light jobs
// keep entering while any light job remains, so job 6 starts on arrival
// (3.25, 2 idle) and the heavy job 5 waits until the last light job ends
// (job 6 at 4.25); job 7 then follows at 5.25. msf.MSF takes the same
// decisions.
func TestMSFQZeroTrace(t *testing.T) {
	want := map[int64]float64{0: 0, 1: 0.1, 2: 0.2, 3: 0.3, 4: 3, 5: 4.25, 6: 3.25, 7: 5.25}
	a := checkStarts(t, msfqTrace(), quickswap.NewMSFQ(0), want)
	b := checkStarts(t, msfqTrace(), &msf.MSF{}, want)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("MSFQ(0) and MSF traces differ")
	}
}

// withoutCounters returns a copy of r with Counters cleared: MSFQ exports
// its phase counters, MSF none; every other field must agree bit for bit.
func withoutCounters(r *sim.Result) sim.Result {
	c := *r
	c.Counters = nil
	// The converged verdict's cycle evidence is policy-specific too (MSFQ
	// counts cycles, Static Quickswap switches, MSF none): keep the rest.
	if r.Convergence != nil {
		cv := *r.Convergence
		cv.CycleName, cv.Cycles, cv.Reasons, cv.Converged = "", 0, nil, false
		c.Convergence = &cv
	}
	return c
}

// TestMSFQZeroIsMSF: Q §4.2, "when ℓ = 0, our MSFQ policy is the same as
// the MSF policy". Same seed → identical sim.Result (reflect.DeepEqual, all
// fields but the policy counters) and identical decision traces, on
// one-or-all at λ = 7.5 (the heavy-load case of Q Fig. 1) and λ = 3.
func TestMSFQZeroIsMSF(t *testing.T) {
	for _, rate := range []float64{7.5, 3} {
		w := simtest.Named(t, "one-or-all", rate)
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := sim.Config{Seed: seed, Warmup: 2000, Arrivals: 40000}
			ra, ea := simtest.Record(t, w, quickswap.NewMSFQ(0), cfg)
			rb, eb := simtest.Record(t, w, &msf.MSF{}, cfg)
			if !reflect.DeepEqual(withoutCounters(ra), withoutCounters(rb)) {
				t.Errorf("λ=%v seed %d: results differ:\nmsfq(0) %+v\nmsf     %+v", rate, seed, withoutCounters(ra), withoutCounters(rb))
			}
			if !reflect.DeepEqual(ea, eb) {
				t.Errorf("λ=%v seed %d: decision traces differ", rate, seed)
			}
			if len(ra.Counters) == 0 {
				t.Errorf("MSFQ exported no counters")
			}
		}
	}
}

// TestMSFQErrors: MSFQ refuses workloads that are not one-or-all and
// thresholds outside [0, k−1].
func TestMSFQErrors(t *testing.T) {
	cfg := sim.Config{Seed: 1, Arrivals: 10}
	_, err := sim.Run(simtest.Named(t, "four-class", 4), quickswap.NewMSFQ(-1), cfg)
	if err == nil || !strings.Contains(err.Error(), "one-or-all") || !strings.Contains(err.Error(), `"class-3" needs 3`) {
		t.Errorf("four-class: err = %v, want a one-or-all error naming class-3", err)
	}
	_, err = sim.Run(simtest.Named(t, "one-or-all", 4), quickswap.NewMSFQ(32), cfg)
	if err == nil || !strings.Contains(err.Error(), "out of range [0, k−1] = [0, 31]") {
		t.Errorf("ℓ = 32 on k = 32: err = %v", err)
	}
	spec := quickswap.Policies[0]
	if spec.Name != "msfq" {
		t.Fatalf("Policies[0] = %s", spec.Name)
	}
	if _, err := spec.Run(simtest.Named(t, "one-or-all", 4), map[string]any{"threshold": -2}, cfg); err == nil || !strings.Contains(err.Error(), "must be >= -1") {
		t.Errorf("threshold −2: err = %v", err)
	}
	if _, err := spec.Run(simtest.Named(t, "one-or-all", 4), map[string]any{"threshold": 31}, cfg); err != nil {
		t.Errorf("threshold 31: %v", err)
	}
}

// TestMSFQDefaultThreshold: the default threshold (−1) is ℓ = k−1.
func TestMSFQDefaultThreshold(t *testing.T) {
	w := simtest.Named(t, "one-or-all", 7)
	cfg := sim.Config{Seed: 2, Warmup: 1000, Arrivals: 20000}
	a, err := quickswap.Policies[0].Run(w, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := simtest.Record(t, w, quickswap.NewMSFQ(31), cfg)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("default threshold differs from ℓ = 31")
	}
}

// TestMSFQKinds: classes of the same kind are one kind, FIFO between them
// (two 1-server classes with different sizes, one k-server class: ℓ = 0
// takes msf.MSF's decisions, which serves equal needs in arrival order),
// and on k = 1 every job is light (ℓ = 0 is then MSF, i.e. FCFS on one
// server).
func TestMSFQKinds(t *testing.T) {
	w := &sim.Workload{Name: "two-light", Servers: 8, ArrivalRate: 2.5, Classes: []sim.Class{
		{Name: "light-a", Need: 1, Share: 0.5, Service: dist.Must(dist.NewExponential(1))},
		{Name: "heavy", Need: 8, Share: 0.2, Service: dist.Must(dist.NewExponential(1))},
		{Name: "light-b", Need: 1, Share: 0.3, Service: dist.Must(dist.NewHyperExp(2, 10))},
	}}
	one := &sim.Workload{Name: "k1", Servers: 1, ArrivalRate: 0.8, Classes: []sim.Class{
		{Name: "only", Need: 1, Share: 1, Service: dist.Must(dist.NewExponential(1))},
	}}
	for _, w := range []*sim.Workload{w, one} {
		cfg := sim.Config{Seed: 11, Warmup: 1000, Arrivals: 30000}
		_, a := simtest.Record(t, w, quickswap.NewMSFQ(0), cfg)
		_, b := simtest.Record(t, w, &msf.MSF{}, cfg)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: MSFQ(0) and MSF traces differ", w.Name)
		}
		p := quickswap.NewMSFQ(-1)
		_, evs := simtest.Record(t, w, p, cfg)
		simtest.CheckInvariants(t, w, p, evs, false)
	}
}
