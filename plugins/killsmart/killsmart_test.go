package killsmart

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// borgE1024 is Borg cell E on k = 1024 servers (the power of two above its
// largest need, 1000), where Kill-Smart can kill; see TestNoKillIsFCFS.
func borgE1024(t testing.TB, rate float64) *sim.Workload { return borgEAt(t, rate, 1024) }

// borgEAt is Borg cell E with k set explicitly (the named workload uses
// k = 1024).
func borgEAt(t testing.TB, rate float64, k int) *sim.Workload {
	w := simtest.Named(t, "borg-e", rate)
	w.Servers = k
	return w
}

// preempts returns, for each job, the instants it was preempted.
func preempts(evs []sim.TraceRecord) map[int64][]float64 {
	m := map[int64][]float64{}
	for _, e := range evs {
		if e.Kind == sim.TracePreempt {
			m[e.Job] = append(m[e.Job], e.Time)
		}
	}
	return m
}

type want struct {
	starts   []float64
	preempts []float64
}

func checkSchedule(t *testing.T, evs []sim.TraceRecord, wants []want) {
	t.Helper()
	st, pr := simtest.Starts(evs), preempts(evs)
	for id, w := range wants {
		if !reflect.DeepEqual(st[int64(id)], w.starts) {
			t.Errorf("job %d started at %v, want %v", id, st[int64(id)], w.starts)
		}
		if len(w.preempts) == 0 && len(pr[int64(id)]) == 0 {
			continue
		}
		if !reflect.DeepEqual(pr[int64(id)], w.preempts) {
			t.Errorf("job %d preempted at %v, want %v", id, pr[int64(id)], w.preempts)
		}
	}
}

// recordTrace runs p over the whole trace of w, checks the engine's
// invariants exactly, and returns the result and the events.
func recordTrace(t *testing.T, w *sim.Workload, p *KillSmart) (*sim.Result, []sim.TraceRecord) {
	t.Helper()
	r, evs := simtest.Record(t, w, p, sim.Config{Arrivals: int64(len(w.Trace))})
	simtest.CheckInvariants(t, w, p, evs, true)
	return r, evs
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// oneOrAllTrace is the hand-built trace of TestTraceOneOrAll: k = 4, class 0
// small (need 1), class 1 big (need 4).
var oneOrAllTrace = []simtest.J{
	{At: 0, Size: 10, Class: 0},   // j0
	{At: 0.5, Size: 1, Class: 0},  // j1
	{At: 1, Size: 2, Class: 1},    // j2
	{At: 1.5, Size: 3, Class: 0},  // j3
	{At: 3.5, Size: 1, Class: 1},  // j4
	{At: 4, Size: 5, Class: 0},    // j5
	{At: 5, Size: 1, Class: 1},    // j6
	{At: 15, Size: 2, Class: 0},   // j7
	{At: 16, Size: 1, Class: 1},   // j8
	{At: 17.5, Size: 1, Class: 0}, // j9
	{At: 18, Size: 1, Class: 1},   // j10
	{At: 19.5, Size: 1, Class: 1}, // j11
	{At: 20.2, Size: 1, Class: 0}, // j12
	{At: 20.4, Size: 1, Class: 1}, // j13
	{At: 21.5, Size: 1, Class: 0}, // j14
}

// TestTraceOneOrAll: killsmart with K = 3, ν = 2 on k = 4 ((K−1)ν = 4 ≤ k).
// Derivation, event by event (busy = busy servers after the event):
//
//	t=0    j0 arrives, starts (busy 1)
//	t=0.5  j1 arrives, starts (busy 2)
//	t=1    j2 (big) arrives, blocked (needs 4 > 2 idle); busy 2 ≤ ν, 4 > busy:
//	       KILL j0, j1 (wasted 1·1 + 1·0.5); j2 starts (kills 1, bigs 1)
//	t=1.5  j3 arrives: no room (busy 4 > ν, no kill)
//	t=3    j2 completes: j3 starts (busy 1)
//	t=3.5  j4 (big) arrives, blocked; busy 1 ≤ ν: KILL j3 (wasted 0.5); j4
//	       starts; kills 2 = K−1: the cycle is done, restart pending, box
//	       {j0, j1, j3} needs 3 > 0 idle
//	t=4    j5 arrives: restart pending, nothing enters
//	t=4.5  j4 completes: RESTART j0, j1, j3 (extra delays 4.5, 4, 1.5), then
//	       j5 by the restart fill; all four non-preemptable
//	t=5    j6 (big) arrives, blocked; no kill: non-preemptable jobs running
//	t=5.5  j1 completes; t=7.5 j3; t=9.5 j5: still j0 non-preemptable
//	t=14.5 j0 completes: j6 starts (bigs 1)
//	t=15   j7 arrives, blocked; t=15.5 j6 completes: j7 starts (busy 1)
//	t=16   j8 (big) arrives: KILL j7 (wasted 0.5); j8 starts (kills 1, bigs 2)
//	t=17   j8 completes: system idle with j7 in the box: IDLE RESTART j7
//	       (extra delay 17 − 15.5 = 1.5), non-preemptable; counters reset
//	t=17.5 j9 arrives, starts by the normal fill (preemptable)
//	t=18   j10 (big) arrives, blocked; no kill (j7 is non-preemptable)
//	t=18.5 j9 completes; t=19 j7 completes: j10 starts (bigs 1)
//	t=19.5 j11 (big) arrives, blocked; t=20 j10 completes: j11 starts
//	       (bigs 2; an empty batch of small jobs: no kill, still counted)
//	t=20.2 j12 arrives, blocked; t=20.4 j13 (big) arrives, blocked
//	t=21   j11 completes: j12 starts, and at once j13 is blocked behind ≤ ν
//	       small jobs: KILL j12 (zero service, zero waste); j13 starts:
//	       bigs 3 = K, the cycle is done (after only one kill), restart
//	       pending: box needs 1 > 0 idle
//	t=21.5 j14 arrives: restart pending, nothing enters
//	t=22   j13 completes: RESTART j12 (extra delay 1) and j14
//
// Totals: 4 kills, 5 jobs killed, 3 restarts (1 idle), wasted work 2.5, extra
// delay 4.5 + 4 + 1.5 + 1.5 + 1 = 12.5 over 5 restarted jobs (2.5 each) and
// 8 small jobs (of 15).
func TestTraceOneOrAll(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, oneOrAllTrace)
	p := New(OneOrAll, 3, 2)
	r, evs := recordTrace(t, w, p)
	checkSchedule(t, evs, []want{
		{[]float64{0, 4.5}, []float64{1}},    // j0
		{[]float64{0.5, 4.5}, []float64{1}},  // j1
		{[]float64{1}, nil},                  // j2
		{[]float64{3, 4.5}, []float64{3.5}},  // j3
		{[]float64{3.5}, nil},                // j4
		{[]float64{4.5}, nil},                // j5: held back while the restart is pending
		{[]float64{14.5}, nil},               // j6: no kill of non-preemptable jobs
		{[]float64{15.5, 17}, []float64{16}}, // j7: idle restart
		{[]float64{16}, nil},                 // j8
		{[]float64{17.5}, nil},               // j9
		{[]float64{19}, nil},                 // j10
		{[]float64{20}, nil},                 // j11
		{[]float64{21, 22}, []float64{21}},   // j12: killed on start
		{[]float64{21}, nil},                 // j13: K-th big job of the cycle
		{[]float64{22}, nil},                 // j14
	})
	for name, v := range map[string]float64{
		"kills": 4, "preemptions": 5, "restarts": 3, "idle_restarts": 1, "restarted_jobs": 5,
		"wasted_work": 2.5, "extra_delay_preempted": 2.5, "extra_delay_per_small_job": 12.5 / 8,
		"jobs_per_kill": 5.0 / 4, "preempted_fraction": 5.0 / 15,
		"preempted_fraction/need-1": 5.0 / 8, "preempted_fraction/need-4": 0,
	} {
		if got := simtest.Counter(t, r, name); !approx(got, v) {
			t.Errorf("counter %s = %v, want %v", name, got, v)
		}
	}
	if r.Preemptions != 5 || r.PreemptedJobs != 5 || !approx(r.WastedWork, 2.5) {
		t.Errorf("engine: %d preemptions, %d preempted jobs, wasted %v; want 5, 5, 2.5", r.Preemptions, r.PreemptedJobs, r.WastedWork)
	}
	if got, want := simtest.Counter(t, r, "wasted_power"), r.WastedWork/r.Window; !approx(got, want) {
		t.Errorf("wasted_power = %v, want wasted work / window = %v", got, want)
	}
}

// TestTraceOneOrAllMultiClassRule runs the trace of TestTraceOneOrAll under
// killsmart-multiclass (Algorithm 1), which counts kills, not big jobs. Up
// to t=21 the two agree (every cycle there ends by K−1 kills or by the idle
// restart). From t=21:
//
//	t=21   j11 completes: j12 starts, KILL j12, j13 starts: kills 1 < K−1,
//	       so no restart is pending
//	t=21.5 j14 arrives: no room (j13 holds all servers)
//	t=22   j13 completes: j14 starts by the normal fill; j12 stays boxed
//	t=23   j14 completes: system idle: IDLE RESTART j12 (extra delay 2)
func TestTraceOneOrAllMultiClassRule(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, oneOrAllTrace)
	p := New(MultiClass, 3, 2)
	r, evs := recordTrace(t, w, p)
	got := simtest.Starts(evs)
	for id, at := range map[int64][]float64{12: {21, 23}, 13: {21}, 14: {22}, 7: {15.5, 17}, 5: {4.5}} {
		if !reflect.DeepEqual(got[id], at) {
			t.Errorf("job %d started at %v, want %v", id, got[id], at)
		}
	}
	if v := simtest.Counter(t, r, "idle_restarts"); v != 2 {
		t.Errorf("idle_restarts = %v, want 2", v)
	}
	if v := simtest.Counter(t, r, "extra_delay_per_job"); !approx(v, 13.5/15) {
		t.Errorf("extra_delay_per_job = %v, want 13.5/15", v)
	}
}

// TestTraceMultiClass: killsmart-multiclass (Algorithm 1) with K = 3, ν = 4
// on k = 10, classes need 1, 3 and 8 ((K−1)ν = 8 ≤ k).
//
//	t=0    a0 (3, size 1.5) and a1 (3, size 5) start (busy 6)
//	t=0.5  a2 (8) arrives, blocked; busy 6 > ν: no kill
//	t=0.6  a3 (1) arrives: behind a2 (head-of-line blocking), waits
//	t=0.7  a4 (3) arrives, waits
//	t=1.5  a0 completes (busy 3): a2 still blocked (8 > 7 idle); busy 3 ≤ ν,
//	       8 > 3: KILL a1 (wasted 3·1.5); a2 starts, then a3 (fits in the 2
//	       left), a4 (3) does not fit. kills 1
//	t=2.5  a3 completes (busy 8): a4 still blocked
//	t=3    a5 (8) arrives, waits behind a4
//	t=3.5  a2 completes (busy 0): a4 starts; a5 blocked behind busy 3 ≤ ν:
//	       KILL a4 (zero service); a5 starts. kills 2 = K−1: restart pending,
//	       box {a1, a4} needs 6 > 2 idle
//	t=3.7  a6 (1) arrives: it would fit, but jobs cannot enter while the
//	       restart is pending (Algorithm 1 line 19)
//	t=4.5  a5 completes: RESTART a1, a4 (extra delays 4.5, 1), then a6 by the
//	       restart fill: all non-preemptable
//	t=5    a7 (8) arrives, blocked; busy 7 > ν, and anyway non-preemptable
//	t=5.5  a4 completes; t=5.7 a6 completes (busy 3 ≤ ν, but a1 is
//	       non-preemptable: no kill)
//	t=9.5  a1 completes: a7 starts
func TestTraceMultiClass(t *testing.T) {
	w := simtest.TraceWorkload(10, []int{1, 3, 8}, []simtest.J{
		{At: 0, Size: 1.5, Class: 1},   // a0
		{At: 0, Size: 5, Class: 1},     // a1
		{At: 0.5, Size: 2, Class: 2},   // a2
		{At: 0.6, Size: 1, Class: 0},   // a3
		{At: 0.7, Size: 1, Class: 1},   // a4
		{At: 3, Size: 1, Class: 2},     // a5
		{At: 3.7, Size: 1.2, Class: 0}, // a6
		{At: 5, Size: 1, Class: 2},     // a7
	})
	p := New(MultiClass, 3, 4)
	r, evs := recordTrace(t, w, p)
	checkSchedule(t, evs, []want{
		{[]float64{0}, nil},                   // a0
		{[]float64{0, 4.5}, []float64{1.5}},   // a1
		{[]float64{1.5}, nil},                 // a2
		{[]float64{1.5}, nil},                 // a3: admitted after the kill
		{[]float64{3.5, 4.5}, []float64{3.5}}, // a4
		{[]float64{3.5}, nil},                 // a5
		{[]float64{4.5}, nil},                 // a6
		{[]float64{9.5}, nil},                 // a7
	})
	for name, v := range map[string]float64{
		"kills": 2, "preemptions": 2, "restarts": 1, "idle_restarts": 0,
		"wasted_work": 4.5, "extra_delay_preempted": 2.75, "extra_delay_per_job": 5.5 / 8,
	} {
		if got := simtest.Counter(t, r, name); !approx(got, v) {
			t.Errorf("counter %s = %v, want %v", name, got, v)
		}
	}
}

// TestTraceKillNeedsBiggerHOL checks §5 condition (ii), which matters only
// when ν > k/2 (K = 2): k = 4, ν = 4, classes need 1 and 2.
//
//	t=0, 0.1, 0.2  b0 (size 2), b1, b2 (size 5) start (busy 3)
//	t=1    b3 (need 2) arrives, blocked (1 idle); busy 3 ≤ ν, but 2 ≤ busy:
//	       killing three servers to start a 2-server job would lower the
//	       utilisation: no kill
//	t=2    b0 completes: b3 starts
func TestTraceKillNeedsBiggerHOL(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 2}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0.1, Size: 5, Class: 0}, {At: 0.2, Size: 5, Class: 0}, {At: 1, Size: 1, Class: 1},
	})
	p := New(MultiClass, 2, 4)
	r, evs := recordTrace(t, w, p)
	if got := simtest.Starts(evs)[3]; !reflect.DeepEqual(got, []float64{2}) {
		t.Errorf("b3 started at %v, want [2]", got)
	}
	if r.Preemptions != 0 {
		t.Errorf("%d preemptions, want 0", r.Preemptions)
	}
}

// TestTraceKillNeedsMoreThanBusy: the boundary of §5 condition (ii), a
// head that needs exactly as many servers as are busy (killing them would
// free no more servers than it takes). k = 4, ν = 4, K = 2, classes need 1
// and 3. By hand:
//
//	t=0, 0.1, 0.2  b0 (size 2), b1, b2 (size 5) start (busy 3)
//	t=1    b3 (need 3, size 1) arrives, blocked (1 idle); busy 3 ≤ ν, but
//	       3 is not more than busy 3: no kill
//	t=2    b0 completes (busy 2): b3 still blocked (2 idle), now 3 > busy 2:
//	       KILL b1, b2; b3 starts; 1 kill = K−1, restart pending
//	t=3    b3 completes: RESTART b1, b2
func TestTraceKillNeedsMoreThanBusy(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 3}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 0.1, Size: 5, Class: 0}, {At: 0.2, Size: 5, Class: 0}, {At: 1, Size: 1, Class: 1},
	})
	p := New(MultiClass, 2, 4)
	_, evs := recordTrace(t, w, p)
	checkSchedule(t, evs, []want{
		{starts: []float64{0}},
		{starts: []float64{0.1, 3}, preempts: []float64{2}},
		{starts: []float64{0.2, 3}, preempts: []float64{2}},
		{starts: []float64{2}},
	})
}

// TestNoKillIsFCFS: when no kill can happen — K = 1 (no kill cycle), ν = 0,
// or a workload without big jobs — Kill-Smart makes FCFS's decisions at
// FCFS's instants, and wastes nothing (exactly 0).
func TestNoKillIsFCFS(t *testing.T) {
	smallOnly := simtest.Named(t, "killsmart-one-or-all", 1.5)
	smallOnly.Classes = smallOnly.Classes[:1] // small jobs only (1 server, mean 1.25): ρ ≈ 0.001
	cases := []struct {
		name string
		w    *sim.Workload
		p    *KillSmart
	}{
		{"K=1 one-or-all", simtest.Named(t, "killsmart-one-or-all", 1.3), New(OneOrAll, 1, -1)},
		{"nu=0 one-or-all", simtest.Named(t, "killsmart-one-or-all", 1.3), New(OneOrAll, 21, 0)},
		{"K=1 borg-b", simtest.Named(t, "borg-b", 1), New(MultiClass, 1, -1)},
		{"nu=0 borg-b", simtest.Named(t, "borg-b", 1), New(MultiClass, 5, 0)},
		{"small jobs only", smallOnly, New(OneOrAll, 21, -1)},
		// Borg cell E's largest need is 1000 ≤ k/2 = 1024: a blocked head job
		// needs more servers than are idle and than are busy only if it
		// needs more than k/2, so Algorithm 1 can never kill there.
		{"borg-e k=2048 defaults", borgEAt(t, 2, 2048), New(MultiClass, DefaultKMultiClass, -1)},
		{"borg-e k=2048 K=2 nu=2048", borgEAt(t, 2, 2048), New(MultiClass, 2, 2048)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := sim.Config{Seed: 7, Warmup: 2000, Arrivals: 50000}
			rf, ef := simtest.Record(t, c.w, &fcfs.FCFS{}, cfg)
			rk, ek := simtest.Record(t, c.w, c.p, cfg)
			if len(ef) != len(ek) {
				t.Fatalf("%d events under Kill-Smart, %d under FCFS", len(ek), len(ef))
			}
			for i := range ef {
				if ef[i] != ek[i] {
					t.Fatalf("event %d: Kill-Smart %+v, FCFS %+v", i, ek[i], ef[i])
				}
			}
			if rk.WastedWork != 0 || rk.Preemptions != 0 || simtest.Counter(t, rk, "wasted_work") != 0 || simtest.Counter(t, rk, "wasted_power") != 0 {
				t.Errorf("wasted %v, %d preemptions; want exactly 0", rk.WastedWork, rk.Preemptions)
			}
			if rk.Overall.MeanResponse != rf.Overall.MeanResponse {
				t.Errorf("mean response %v, FCFS %v", rk.Overall.MeanResponse, rf.Overall.MeanResponse)
			}
		})
	}
}

// checkRestartTrace verifies the policy's own invariants on a decision trace:
// no job is preempted twice (K §4.1's first rule); a job starts at most twice,
// the second time only after its preemption; and every preempted job that
// completed did so after a restart.
func checkRestartTrace(t *testing.T, evs []sim.TraceRecord) (kills int) {
	t.Helper()
	pre := map[int64]int{}
	starts := map[int64]int{}
	for i, e := range evs {
		switch e.Kind {
		case sim.TracePreempt:
			pre[e.Job]++
			kills++
			if pre[e.Job] > 1 {
				t.Fatalf("event %d (t=%g): job %d killed twice", i, e.Time, e.Job)
			}
		case sim.TraceStart:
			starts[e.Job]++
			if starts[e.Job] > 1+pre[e.Job] || starts[e.Job] > 2 {
				t.Fatalf("event %d (t=%g): job %d started %d times after %d kills", i, e.Time, e.Job, starts[e.Job], pre[e.Job])
			}
		case sim.TraceComplete:
			if starts[e.Job] != 1+pre[e.Job] {
				t.Fatalf("event %d (t=%g): job %d completed after %d starts and %d kills", i, e.Time, e.Job, starts[e.Job], pre[e.Job])
			}
		}
	}
	return kills
}

// TestInvariantsLong: the model's invariants (simtest.CheckInvariants) and
// Kill-Smart's own on long random runs where kills are frequent, and the
// counters against the engine's: preemptions equal, wasted work equal to the
// last bit (same formula, same order), wasted power = wasted work / window.
func TestInvariantsLong(t *testing.T) {
	cases := []struct {
		name string
		w    *sim.Workload
		p    *KillSmart
	}{
		{"one-or-all N=2048 K=7 nu=19", simtest.Named(t, "killsmart-one-or-all", 1.6), New(OneOrAll, 7, 19)},
		{"one-or-all N=2048 defaults", simtest.Named(t, "killsmart-one-or-all", 1.6), New(OneOrAll, DefaultKOneOrAll, -1)},
		{"one-or-all k=32 K=5 nu=8", simtest.Named(t, "one-or-all", 4), New(OneOrAll, 5, 8)},
		{"four-class multiclass K=3 nu=7", simtest.Named(t, "four-class", 4), New(MultiClass, 3, 7)},
		{"borg-b multiclass defaults", simtest.Named(t, "borg-b", 2), New(MultiClass, DefaultKMultiClass, -1)},
		{"borg-e k=1024 multiclass K=9 nu=128", borgE1024(t, 2), New(MultiClass, 9, 128)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, evs := simtest.Record(t, c.w, c.p, sim.Config{Seed: 3, Warmup: 10000, Arrivals: 200000})
			simtest.CheckInvariants(t, c.w, c.p, evs, false)
			if kills := checkRestartTrace(t, evs); kills == 0 {
				t.Fatalf("no kill in the run: the invariants were not exercised")
			}
			if r.Preemptions == 0 || r.WastedWork <= 0 {
				t.Errorf("kills happened but the window saw %d preemptions, wasted %v", r.Preemptions, r.WastedWork)
			}
			if got := simtest.Counter(t, r, "preemptions"); got != float64(r.Preemptions) {
				t.Errorf("preemptions counter %v, engine %d", got, r.Preemptions)
			}
			if got := simtest.Counter(t, r, "wasted_work"); got != r.WastedWork {
				t.Errorf("wasted_work counter %v, engine %v", got, r.WastedWork)
			}
			if got, want := simtest.Counter(t, r, "wasted_power"), r.WastedWork/r.Window; !approx(got, want) {
				t.Errorf("wasted_power %v, want wasted work / window = %v", got, want)
			}
			t.Logf("%s: E[T]=%.4g kills=%v preempted=%.4f wasted power=%.4g D_Jp=%.4g",
				c.name, r.Overall.MeanResponse, simtest.Counter(t, r, "kills"), simtest.Counter(t, r, "preempted_fraction"),
				simtest.Counter(t, r, "wasted_power"), simtest.Counter(t, r, "extra_delay_preempted"))
		})
	}
}

// TestReuseAndMSER: an instance serves replication after replication (Init
// resets everything): the same seed gives the same result after another run,
// and MSER's two passes work.
func TestReuseAndMSER(t *testing.T) {
	w := simtest.Named(t, "killsmart-one-or-all", 1.6)
	p := New(OneOrAll, 7, 19)
	cfg := sim.Config{Seed: 11, Warmup: 1000, Arrivals: 20000}
	a, err := sim.Run(w, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(w, p, sim.Config{Seed: 12, Warmup: 1000, Arrivals: 30000}); err != nil {
		t.Fatal(err)
	}
	b, err := sim.Run(w, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different results after reuse:\n%+v\n%+v", a, b)
	}
	cfg.MSER = true
	if _, err := sim.RunFresh(w, func() (sim.Policy, error) { return New(OneOrAll, 7, 19), nil }, cfg); err != nil {
		t.Fatal(err)
	}
}

// TestParams: the schema, defaults, ν's resolution and the Init checks.
func TestParams(t *testing.T) {
	for _, spec := range Policies {
		if err := sim.ValidateSchema(spec.Params()); err != nil {
			t.Errorf("%s: %v", spec.Name, err)
		}
		info := sim.Describe(spec.New())
		if info.Preemption != sdk.PreemptRestart || !info.Counters || info.SizeAware {
			t.Errorf("%s: capabilities %+v", spec.Name, info)
		}
	}
	w := simtest.Named(t, "killsmart-one-or-all", 1)
	for _, c := range []struct {
		spec    int
		params  map[string]any
		K, nu   int
		initErr string
	}{
		{0, nil, 21, 102, ""}, // ⌊2048/20⌋
		{1, nil, 5, 512, ""},  // ⌊2048/4⌋
		{0, map[string]any{"K": 7, "nu": 19}, 7, 19, ""},
		{1, map[string]any{"k": 3, "nu": 1024}, 3, 1024, ""}, // names match case-insensitively
		{0, map[string]any{"K": 1}, 1, 0, ""},
		{1, map[string]any{"K": 3, "nu": 1025}, 0, 0, "exceeds k"},
	} {
		spec := Policies[c.spec]
		p := spec.New()
		if err := sim.Configure(p, c.params); err != nil {
			t.Fatalf("%s %v: %v", spec.Name, c.params, err)
		}
		_, err := sim.Run(w, p, sim.Config{Arrivals: 10})
		if c.initErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.initErr) {
				t.Errorf("%s %v: error %v, want %q", spec.Name, c.params, err, c.initErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %v: %v", spec.Name, c.params, err)
		}
		ks := p.(*KillSmart)
		if ks.K != c.K || ks.nu != c.nu {
			t.Errorf("%s %v: K=%d ν=%d, want %d, %d", spec.Name, c.params, ks.K, ks.nu, c.K, c.nu)
		}
	}
	if err := sim.Configure(Policies[0].New(), map[string]any{"K": 0}); err == nil {
		t.Error("K = 0 accepted")
	}
	_, err := sim.Run(simtest.Named(t, "borg-b", 1), Policies[0].New(), sim.Config{Arrivals: 10})
	if err == nil || !strings.Contains(err.Error(), "one-or-all") {
		t.Errorf("killsmart on borg-b: error %v, want a one-or-all error", err)
	}
}
