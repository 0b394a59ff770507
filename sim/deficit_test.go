package sim_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// capped serves class 0 first-come first-served on any idle server and
// class 1 on at most one server at a time: class 1 saturates at a
// throughput of 1/E[S_1] whatever the total load, the starving-class shape
// of MSF on Borg cell B in miniature.
type capped struct {
	q0, q1 []*sim.Job
	run1   int
}

func (p *capped) Init(*sim.System) error { p.q0, p.q1, p.run1 = nil, nil, 0; return nil }

func (p *capped) Arrive(s *sim.System, j *sim.Job) {
	if j.Class() == 0 {
		p.q0 = append(p.q0, j)
	} else {
		p.q1 = append(p.q1, j)
	}
	p.fill(s)
}

func (p *capped) Complete(s *sim.System, j *sim.Job) {
	if j.Class() == 1 {
		p.run1--
	}
	p.fill(s)
}

func (p *capped) fill(s *sim.System) {
	for len(p.q0) > 0 && s.Free() > 0 {
		s.Start(p.q0[0])
		p.q0 = p.q0[1:]
	}
	if p.run1 == 0 && len(p.q1) > 0 && s.Free() > 0 {
		s.Start(p.q1[0])
		p.q1 = p.q1[1:]
		p.run1++
	}
}

// cappedWorkload: k = 4; class 0 at rate 2 with unit exponential sizes
// (load 2 on the 3 servers class 1 leaves it: stable), class 1 at rate
// lambda1 with exponential sizes of mean 10 on its single server: stable
// for lambda1 < 0.1. Total load (2 + 10·lambda1)/4 < 1 for lambda1 < 0.2.
func cappedWorkload(lambda1 float64) *sim.Workload {
	return &sim.Workload{Name: "capped", Servers: 4, ArrivalRate: 2 + lambda1, Classes: []sim.Class{
		{Name: "fast", Need: 1, Share: 2, Service: expD(1)},
		{Name: "rare", Need: 1, Share: lambda1, Service: expD(10)},
	}}
}

func cappedRuns(t *testing.T, lambda1 float64, reps int, arrivals int64) []*sim.Result {
	t.Helper()
	w := cappedWorkload(lambda1)
	rs := make([]*sim.Result, reps)
	for i := range rs {
		r, err := sim.Run(w, &capped{}, sim.Config{Seed: uint64(i + 1), Warmup: arrivals / 10, Arrivals: arrivals})
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = r
	}
	return rs
}

func deficitOf(r *sim.Result, name string) sim.Deficit {
	for _, d := range r.Deficits {
		if d.Name == name {
			return d
		}
	}
	return sim.Deficit{}
}

// TestDeficitStarvingClass: class "rare" offered 0.12 jobs per unit time
// against its capacity 0.1 falls behind by 1 − 0.1/0.12 = 16.7% of its
// arrivals, while the total jobs fall behind by only 0.02/2.12 = 0.9%. The
// class's own quantity must show it, in every replication and pooled, and
// name the class; class "fast" must not fire. At lambda1 = 0.08 (80% of
// the class's capacity) nothing fires.
func TestDeficitStarvingClass(t *testing.T) {
	rs := cappedRuns(t, 0.12, 5, 100000)
	fired := 0
	for _, r := range rs {
		rare, fast := deficitOf(r, "rare"), deficitOf(r, "fast")
		if rare.Class != 1 || math.Abs(rare.Relative-1/6.0) > 0.05 || rare.T < 5 {
			t.Errorf("seed %d: starving class not seen: %+v", r.Seed, rare)
		}
		if rare.Fired {
			fired++
			if !r.Unstable || !slices.Contains(r.Instability.Reasons, "deficit") {
				t.Errorf("seed %d: no deficit reason: %+v", r.Seed, r.Instability)
			}
		}
		if fast.Fired {
			t.Errorf("seed %d: the served class fired: %+v", r.Seed, fast)
		}
	}
	// The replication's own test is strict (critical 10.2–17.6): at this
	// length it fires in most replications, not all; pooled, it is clear.
	if 2*fired < len(rs) {
		t.Errorf("the starving class fired in %d of %d replications", fired, len(rs))
	}
	v, err := sim.Pool(rs)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := v.StrongestDeficit()
	if v.Verdict != sim.VerdictUnstable || !ok || !d.Fired || d.Name == "fast" {
		t.Errorf("pooled: %+v, strongest %+v", v, d)
	}

	for _, r := range cappedRuns(t, 0.08, 5, 100000) {
		for _, d := range r.Deficits {
			if d.Fired || math.Abs(d.Relative) > 0.05 {
				t.Errorf("seed %d, stable: %s fired or far off: %+v", r.Seed, d.Name, d)
			}
		}
		if r.Convergence == nil || slices.Contains(r.Convergence.Reasons, "throughput") {
			t.Errorf("seed %d, stable: throughput rule fired: %+v", r.Seed, r.Convergence)
		}
	}
}

// deficitResult is a replication carrying only a work deficit's relative
// value (the pooled test reads nothing else) and a converged verdict whose
// whole-window job shortfall is short.
func deficitResult(rel, short float64) *sim.Result { return deficitResultT(rel, 0, short) }

func deficitResultT(rel, t, short float64) *sim.Result {
	return &sim.Result{
		Deficits: []sim.Deficit{
			{Name: sim.DeficitWork, Class: -1, Relative: rel, T: t},
			{Name: sim.DeficitJobs, Class: -1, Relative: 0, WindowRelative: short},
		},
		Convergence: &sim.Convergence{Converged: true, Cycles: -1},
	}
}

// TestPoolDeficit checks the pooled rule on constructed replications.
// Ten replications with relative work deficits 0.010 + 0.001·(i − 4.5)
// (mean 0.010, s = 0.001·√(82.5/9) = 0.00303): t = 0.010/(0.00303/√10) =
// 10.44 > t_9(1 − 10^-4/4) = 7.22 (the level split over two quantities
// and two statistics), so the point is unstable by the deficit although no
// replication is flagged. Spread ten times wider, t = 1.04 and it is
// stable; at 0.001 (below the 0.002 materiality) it is stable however
// tight; two replications are too few to test. Stouffer's Z: five
// replications with deficits 0.05·(i − 1) (t = 1.41 against t_4(1 − 2.5e-5)
// = 18.5) whose own t statistics are all 2.5 give Z = 2.5·√5 = 5.59 >
// √(31/29)·z_{2.5e-5} = 1.0339·4.056 = 4.19. One decisive replication
// among ten cannot decide the point alone (see lone below).
func TestPoolDeficit(t *testing.T) {
	mk := func(n int, mean, step float64) []*sim.Result {
		rs := make([]*sim.Result, n)
		for i := range rs {
			rs[i] = deficitResult(mean+step*(float64(i)-float64(n-1)/2), 0)
		}
		return rs
	}
	var stouffer []*sim.Result
	for i := range 5 {
		stouffer = append(stouffer, deficitResultT(0.05*float64(i-1), 2.5, 0))
	}
	// One replication with a deficit of 0.5 and t = 6000 (a class without
	// a departure through the second half), nine with none: Student's t is
	// 1 and Stouffer's z, each t capped at 5, is 5/√10 = 1.58 < 4.19.
	lone := []*sim.Result{deficitResultT(0.5, 6000, 0)}
	for range 9 {
		lone = append(lone, deficitResultT(0, 0, 0))
	}
	for _, c := range []struct {
		name        string
		rs          []*sim.Result
		want        sim.Verdict
		test        string
		tmin, tmax  float64
		crit, tcrit float64
	}{
		{"tight", mk(10, 0.010, 0.001), sim.VerdictUnstable, "deficit-t:work", 10.4, 10.5, 7.2, 7.25},
		{"noisy", mk(10, 0.010, 0.01), sim.VerdictStable, sim.TestNone, 1.0, 1.1, 7.2, 7.25},
		{"immaterial", mk(10, 0.001, 0.0001), sim.VerdictStable, sim.TestNone, 10.4, 10.5, 7.2, 7.25},
		{"equal", mk(5, 0.01, 0), sim.VerdictUnstable, "deficit-t:work", 0, 0, 18.4, 18.6},
		{"two", mk(2, 0.01, 0.001), sim.VerdictStable, sim.TestNone, 0, 0, 0, 0},
		{"stouffer", stouffer, sim.VerdictUnstable, "deficit-z:work", 1.41, 1.42, 18.4, 18.6},
		{"one decisive replication", lone, sim.VerdictStable, sim.TestNone, 0.99, 1.01, 7.2, 7.25},
	} {
		v, err := sim.Pool(c.rs)
		if err != nil {
			t.Fatal(err)
		}
		w := v.Deficits[0]
		if v.Verdict != c.want || v.Test != c.test || w.T < c.tmin || w.T > c.tmax || w.Critical < c.crit || w.Critical > c.tcrit {
			t.Errorf("%s: verdict %s by %s, work %+v; want %s by %s, t in [%g, %g], critical in [%g, %g]",
				c.name, v.Verdict, v.Test, w, c.want, c.test, c.tmin, c.tmax, c.crit, c.tcrit)
		}
		switch {
		case v.Test == "deficit-t:work" && (v.Statistic != w.T || v.Critical != w.Critical):
			t.Errorf("%s: evidence %v/%v, want the deficit's t %v/%v", c.name, v.Statistic, v.Critical, w.T, w.Critical)
		case v.Test == "deficit-z:work" && (math.Abs(v.Statistic-5.590) > 1e-3 || math.Abs(v.Critical-4.193) > 1e-3):
			t.Errorf("%s: evidence %v/%v, want Z 5.590 against 4.193", c.name, v.Statistic, v.Critical)
		}
	}
}

// TestPoolConvergenceThroughput: a shortfall of 4.6% ± 0.1% in every
// replication (Static Quickswap on Borg cell B at λ = 4.25 in issue #31;
// the constructed shortfalls are short + 0.001·(i mod 3 − 1), mean
// short − 0.0001)
// fails the converged verdict even though every replication passed its
// own rules; 0.1% (below materiality) does not.
func TestPoolConvergenceThroughput(t *testing.T) {
	for _, c := range []struct {
		short float64
		want  bool
	}{{0.046, false}, {0.001, true}} {
		var rs []*sim.Result
		for i := range 10 {
			rs = append(rs, deficitResult(0, c.short+0.001*float64(i%3-1)))
		}
		cv := sim.PoolConvergence(rs)
		if cv.Converged != c.want || cv.Throughput == nil || math.Abs(cv.Throughput.Mean-c.short) > 0.0002 {
			t.Errorf("shortfall %v: converged %v (want %v), throughput %+v", c.short, cv.Converged, c.want, cv.Throughput)
		}
		// The same shortfall in delivered work with every job departing
		// (a starving class of big jobs: MSF on Borg cell B delivers 89%
		// of the offered work while 99.3% of the jobs leave).
		for _, r := range rs {
			r.Deficits[0].WindowRelative, r.Deficits[1].WindowRelative = r.Deficits[1].WindowRelative, 0
		}
		if cv := sim.PoolConvergence(rs); cv.Converged != c.want || cv.WorkShortfall == nil || cv.WorkShortfall.Fired == c.want {
			t.Errorf("work shortfall %v: converged %v (want %v), work %+v", c.short, cv.Converged, c.want, cv.WorkShortfall)
		}
	}
}

// TestVerdictCalibrationShort is the default suite's form of
// TestVerdictCalibrationLong: Kill-Smart (5, 100) on its one-or-all
// workload, 10 replications of 3·10^5 arrivals (under a third of the long run's),
// at 1.8 (1.3% past its closed-form limit 1.7765: issue #31's missed
// overload) and at 0.97 of the limit. The overload must be called unstable
// and the stable point stable; at this length the replications' own
// verdicts are weak, so the pooled deficit must be what decides (or a
// majority). Seeds 1..10; deterministic.
func TestVerdictCalibrationShort(t *testing.T) {
	if testing.Short() {
		t.Skip("about 5 s of simulation")
	}
	const arrivals = 300000
	sc := verdictScenarios[5]
	if !strings.HasPrefix(sc.name, "Kill-Smart (5,100)") {
		t.Fatalf("scenario 5 is %s", sc.name)
	}
	over := runPoints(t, sc, 1.8, 0, 1, 10, arrivals)[0]
	d, _ := over.v.StrongestDeficit()
	t.Logf("λ = 1.8: %s by %s (%.3g vs %.3g); work deficit %.4f ± %.4f", over.v.Verdict, over.v.Test, over.v.Statistic, over.v.Critical, d.Mean, d.HalfWidth)
	if over.v.Verdict != sim.VerdictUnstable || !d.Fired {
		t.Errorf("λ = 1.8: %+v", over.v)
	}
	stable := runPoints(t, sc, 0.97*sc.lambda, 0, 1, 10, arrivals)[0]
	d, _ = stable.v.StrongestDeficit()
	t.Logf("λ = %.4f: %s by %s; strongest deficit %s %.4f ± %.4f, t %.3g vs %.3g", 0.97*sc.lambda, stable.v.Verdict, stable.v.Test, d.Name, d.Mean, d.HalfWidth, d.T, d.Critical)
	if stable.v.Verdict != sim.VerdictStable {
		t.Errorf("λ = 0.97 λ*: %+v", stable.v)
	}
}

// TestDeficitTrace: a replayed trace has no arrival rate, so its own
// arrivals are the offer. A single-server trace with unit sizes arriving
// every 2 time units (load 1/2) delivers all of it: every deficit 0
// exactly (each job leaves before the next arrives). Arriving every 0.8
// (load 1.25), the server falls behind by 1 − 0.8 = 20% of the jobs and the
// work: both fire.
func TestDeficitTrace(t *testing.T) {
	for _, c := range []struct {
		gap  float64
		want float64
	}{{2, 0}, {0.8, 0.2}} {
		var jobs []simtest.J
		for i := range 6400 {
			jobs = append(jobs, simtest.J{At: c.gap * float64(i+1), Size: 1})
		}
		w := simtest.TraceWorkload(1, []int{1}, jobs)
		r, err := sim.Run(w, &fcfs.FCFS{}, sim.Config{Arrivals: 6000, DrainLimit: 400})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{sim.DeficitWork, sim.DeficitJobs} {
			d := deficitOf(r, name)
			if math.Abs(d.Relative-c.want) > 0.002 || d.Fired != (c.want > 0) || d.Offered != 3000 {
				t.Errorf("gap %v, %s: %+v, want relative %v", c.gap, name, d, c.want)
			}
		}
	}
}

// TestStaticQuickswapBorgBNotConverged: issue #31's Static Quickswap on
// Borg cell B at λ = 4.25 (ρ = 0.87; throughput-optimal, so stable) holds
// 10^5–10^6 jobs and fills for millions of arrivals, so a short run
// departs well below λ and must not be called converged, whatever its own
// replications' rules say. Measured with 4 replications of 3·10^5 arrivals
// (seeds 1..4) of the policy at its defaults (ℓ = k − 1): 0.45–0.74 of λ
// departs, the pooled work shortfall is 0.23 ± 0.13 with Stouffer's z 8.3
// against √(63/61)·z_{1−2.5e-4} = 3.54. (Before engine 0.7.4's tests
// configured the policy, this test ran it with ℓ = 0, exhaustive service,
// which never leaves the one-server class's phase on this workload: 1.3%
// of the work delivered. Other seeds, through msjfarm simulate, depart
// 0.49–0.91 of λ: the same verdict.)
func TestStaticQuickswapBorgBNotConverged(t *testing.T) {
	if testing.Short() {
		t.Skip("about 0.4 s of simulation")
	}
	w := simtest.Named(t, "borg-b", 4.25)
	rs := simtest.Replicate(t, w, builtinP("static-quickswap"), 4, sim.Config{Warmup: 30000, Arrivals: 300000})
	cv := sim.PoolConvergence(rs)
	t.Logf("converged %v; throughput %+v; work %+v", cv.Converged, cv.Throughput, cv.WorkShortfall)
	short := func(p *sim.PooledDeficit) bool { return p != nil && p.Fired && p.Mean > 0.02 }
	if cv.Converged || !(short(cv.Throughput) || short(cv.WorkShortfall)) {
		t.Errorf("converged %v; throughput %+v; work %+v", cv.Converged, cv.Throughput, cv.WorkShortfall)
	}
	for _, r := range rs {
		t.Logf("seed %d: throughput %.4f of λ", r.Seed, r.Throughput/4.25)
		if thr := r.Throughput / 4.25; thr > 0.99 {
			t.Errorf("seed %d: throughput %.4f of λ, want a clear shortfall", r.Seed, thr)
		}
	}
}

// TestPoolDeficitAutocorrelated: Stouffer's z reads each replication's t
// on the scale of its own test, divided by the AR(1) factor
// √((1+φ)/(1−φ)) of its batches (φ clamped to [0, 0.5]). Ten replications
// with relative work deficits 0.01 + 0.05·(i − 4.5) (Student's t =
// 0.01/(0.151/√10) = 0.21: no evidence between replications) and own
// t = 2 each: uncorrelated batches (φ = 0) give z = 2·√10 = 6.32 against
// √(31/29)·z_{1−2.5e-5} = 4.19, unstable; φ = 0.5 (a stable policy whose
// episodes outlast a batch) gives z = (2/√3)·√10 = 3.65, stable; φ = 0.9
// is clamped to 0.5, the same.
func TestPoolDeficitAutocorrelated(t *testing.T) {
	for _, c := range []struct {
		phi  float64
		z    float64
		want sim.Verdict
	}{{0, 6.325, sim.VerdictUnstable}, {0.5, 3.651, sim.VerdictStable}, {0.9, 3.651, sim.VerdictStable}} {
		var rs []*sim.Result
		for i := range 10 {
			r := deficitResultT(0.01+0.05*(float64(i)-4.5), 2, 0)
			r.Deficits[0].Phi, r.Deficits[0].Critical = c.phi, sim.GrowthCritical(c.phi)
			rs = append(rs, r)
		}
		v, err := sim.Pool(rs)
		if err != nil {
			t.Fatal(err)
		}
		w := v.Deficits[0]
		if v.Verdict != c.want || math.Abs(w.Z-c.z) > 1e-3 || math.Abs(w.ZCritical-4.193) > 1e-3 {
			t.Errorf("φ = %v: %s by %s, work %+v; want %s, z %v against 4.193", c.phi, v.Verdict, v.Test, w, c.want, c.z)
		}
	}
}

// TestPoolDeficitPooledPhi: Stouffer's z reads every replication's t at
// the point's autocorrelation, the mean of the replications' own φ
// (engine 0.7.3), not at each replication's estimate. Ten replications
// with relative work deficits 0.01 + 0.05·(i − 4.5) (Student's t 0.21: no
// evidence between replications); the five even ones have own t = 4 at
// φ = 0.1, the five odd ones t = 0 at φ = 0.9. Read at their own φ (engine
// 0.7.2) the even ones count 4/√(1.1/0.9) = 3.618 each, z = 5·3.618/√10 =
// 5.721 against 4.193: unstable, carried by the replications whose φ
// happened to come out low. The pooled φ is (5·0.1 + 5·0.9)/10 = 0.5, so
// each counts 4/√3 = 2.309 and z = 5·2.309/√10 = 3.651: stable, Phi 0.5.
func TestPoolDeficitPooledPhi(t *testing.T) {
	var rs []*sim.Result
	for i := range 10 {
		tt, phi := 4.0, 0.1
		if i%2 == 1 {
			tt, phi = 0, 0.9
		}
		r := deficitResultT(0.01+0.05*(float64(i)-4.5), tt, 0)
		r.Deficits[0].Phi, r.Deficits[0].Critical = phi, sim.GrowthCritical(phi)
		rs = append(rs, r)
	}
	v, err := sim.Pool(rs)
	if err != nil {
		t.Fatal(err)
	}
	w := v.Deficits[0]
	if v.Verdict != sim.VerdictStable || math.Abs(w.Z-3.651) > 1e-3 || math.Abs(w.Phi-0.5) > 1e-12 || math.Abs(w.ZCritical-4.193) > 1e-3 {
		t.Errorf("%s by %s, work %+v; want stable, z 3.651 against 4.193 at φ 0.5", v.Verdict, v.Test, w)
	}
}

// simulatePoint runs the point `msjfarm simulate --workload workload
// --policy policy --rate rate --reps 10 --seed seed` runs (replication r
// has seed rng.Mix(seed, r); 10^6 arrivals after 10^5 of warm-up), on
// every core, and pools it.
func simulatePoint(t *testing.T, workload string, rate float64, policy string, seed uint64) ([]*sim.Result, sim.PointVerdict) {
	t.Helper()
	return seededPoint(t, workload, rate, policy, func(i int) uint64 { return rng.Mix(seed, uint64(i)) })
}

// seededPoint runs and pools 10 replications of 10^6 arrivals after 10^5
// of warm-up, replication i with seed seed(i), on every core.
func seededPoint(t *testing.T, workload string, rate float64, policy string, seed func(int) uint64) ([]*sim.Result, sim.PointVerdict) {
	t.Helper()
	w := simtest.Named(t, workload, rate)
	rs, errs := runParallel(10, func(i int) (*sim.Result, error) {
		return sim.Run(w, builtinP(policy)(), sim.Config{Seed: seed(i), Warmup: 100000, Arrivals: 1000000})
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	v, err := sim.Pool(rs)
	if err != nil {
		t.Fatal(err)
	}
	return rs, v
}

// TestVerdictMSFBorgBStable: MSF on Borg cell B at λ = 2.5 is stable (issue
// #31: a replication flagged by the growth test there), but its 2000-server
// class waits for the other classes to leave at most 48 servers busy, in
// episodes longer than a batch. This point (10 replications of 10^6
// arrivals, msjfarm simulate's seeds for --seed 221732: rng.Mix(221732, r))
// was the one of 40 such points that engine 0.7.0 called unstable, by
// Stouffer's z of the work deficit, 4.85 against 4.79, with no replication
// flagged; with each t divided by its AR(1) factor the point is stable.
func TestVerdictMSFBorgBStable(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2 s of simulation")
	}
	rs, v := simulatePoint(t, "borg-b", 2.5, "msf", 221732)
	// The raw Stouffer sum, as engine 0.7.0 formed it, to show the case
	// is the one it was.
	raw := 0.0
	for _, r := range rs {
		raw += math.Min(deficitOf(r, sim.DeficitWork).T, 5)
	}
	raw /= math.Sqrt(float64(len(rs)))
	work := v.Deficits[0]
	t.Logf("%s by %s; work deficit %.4f, z %.3g (raw %.3g) against %.3g", v.Verdict, v.Test, work.Mean, work.Z, raw, work.ZCritical)
	if v.Verdict != sim.VerdictStable || raw <= work.ZCritical {
		t.Errorf("verdict %s by %s (want stable); raw z %.3g, want above %.3g (the case engine 0.7.0 called unstable)", v.Verdict, v.Test, raw, work.ZCritical)
	}
}

// TestVerdictMSFBorgBPooledPhi: the point of MSF on Borg cell B at
// λ = 2.5 (stable) that engine 0.7.2 called unstable in the rounds
// calibration (point 9 of TestVerdictCalibrationRounds: seeds 91–100, 10^6
// arrivals after 10^5): five replications 19%–29% short of the offered
// work in the second half, t 3.6–5.7 at own φ 0.19–0.49, the others at
// φ 0.64–0.73; each t at its own φ gave z 4.82 against 4.79. At the
// pooled φ (0.50) z is 4.13 and the point is stable.
func TestVerdictMSFBorgBPooledPhi(t *testing.T) {
	if testing.Short() {
		t.Skip("about 2 s of simulation")
	}
	rs, v := seededPoint(t, "borg-b", 2.5, "msf", func(i int) uint64 { return uint64(91 + i) })
	own := 0.0 // engine 0.7.2's z: each t at its replication's own φ
	for _, r := range rs {
		d := deficitOf(r, sim.DeficitWork)
		own += math.Min(d.T*sim.GrowthCritical(0)/sim.GrowthCritical(d.Phi), 5)
	}
	own /= math.Sqrt(float64(len(rs)))
	work := v.Deficits[0]
	t.Logf("%s by %s; work z %.3g at φ %.2f (own φ: %.3g) against %.3g", v.Verdict, v.Test, work.Z, work.Phi, own, work.ZCritical)
	if v.Verdict != sim.VerdictStable || own <= work.ZCritical || work.Z >= work.ZCritical {
		t.Errorf("%s by %s, work z %.3g (own φ %.3g) against %.3g: want stable, and the own-φ z above its critical value (the case engine 0.7.2 called unstable)", v.Verdict, v.Test, work.Z, own, work.ZCritical)
	}
}

// TestPoolDeficitTransient: a deficit that more than halves from the
// window's first half to its second is a queue still filling, not an
// overload, and does not fire. Ten replications with second-half work
// deficits 0.01 + 0.0001·(i − 4.5) (t = 0.01/(0.000303/√10) = 104, far
// past t_9(1 − 2.5e-5) = 7.22): with whole-window deficits of 0.025 the
// first half is 2·0.025 − 0.01 = 0.04 and the ratio 0.25 < 0.5: stable,
// Transient; with 0.012 the first half is 0.014, ratio 0.71: unstable.
func TestPoolDeficitTransient(t *testing.T) {
	for _, c := range []struct {
		window, first float64
		want          sim.Verdict
	}{{0.025, 0.04, sim.VerdictStable}, {0.012, 0.014, sim.VerdictUnstable}} {
		var rs []*sim.Result
		for i := range 10 {
			r := deficitResultT(0.01+0.0001*(float64(i)-4.5), 0, 0)
			r.Deficits[0].WindowRelative = c.window
			rs = append(rs, r)
		}
		v, err := sim.Pool(rs)
		if err != nil {
			t.Fatal(err)
		}
		w := v.Deficits[0]
		if v.Verdict != c.want || math.Abs(w.FirstHalf-c.first) > 1e-9 || w.Transient != (c.want == sim.VerdictStable) || w.T < 100 {
			t.Errorf("window %v: %s by %s, work %+v; want %s, first half %v", c.window, v.Verdict, v.Test, w, c.want, c.first)
		}
	}
}

// TestVerdictFirstFitFilling: First-Fit on one-or-all at ρ = 0.97
// (λ = 7.5707) is stable but holds about 1.4·10^4 jobs, which a warm-up of
// 10^5 arrivals does not fill. This point (10 replications of 10^6
// arrivals, msjfarm simulate's seeds for --seed 2007) had its heavy class
// 1.12% short in the second half of every window, pooled t = 10.5 against
// 7.9: engine 0.7.0 called it unstable. Its first half was 4.2% short, so
// the deficit decayed (ratio 0.26): a transient, stable, not converged.
func TestVerdictFirstFitFilling(t *testing.T) {
	if testing.Short() {
		t.Skip("about 1.5 s of simulation")
	}
	rs, v := simulatePoint(t, "one-or-all", 7.5707, "first-fit", 2007)
	cv := sim.PoolConvergence(rs)
	var heavy sim.PooledDeficit
	for _, d := range v.Deficits {
		if d.Name == "heavy" {
			heavy = d
		}
	}
	t.Logf("%s by %s, converged %v; heavy %+v", v.Verdict, v.Test, cv.Converged, heavy)
	if v.Verdict != sim.VerdictStable || !heavy.Transient || heavy.T <= heavy.Critical || cv.Converged {
		t.Errorf("%s by %s, converged %v; heavy %+v: want stable, the heavy class's significant deficit read as a transient, not converged", v.Verdict, v.Test, cv.Converged, heavy)
	}
}

// TestVerdictAdaptiveQuickswapBorgBEpisodes: Adaptive Quickswap on Borg
// cell B at ρ = 0.97 (λ = 4.7517) is stable, but serves its rare classes
// once in several cycles of a sawtooth of 10^5 jobs. This point (msjfarm
// simulate's seeds for --seed 1007) was called unstable by engine 0.7.1: 5
// of 10 replications flagged, 4 of them by classes (needs 50, 98, 99) that
// delivered nothing through the second half, increments equal to their
// offer, t over 300. Batched by their own time scale (engine 0.7.2) those
// classes are not tested per replication; the replication is not
// converged ("episodes") instead, and the point is stable.
func TestVerdictAdaptiveQuickswapBorgBEpisodes(t *testing.T) {
	if testing.Short() {
		t.Skip("about 3 s of simulation")
	}
	rs, v := simulatePoint(t, "borg-b", 4.7517, "adaptive-quickswap", 1007)
	silent, episodes := 0, 0
	for _, r := range rs {
		if r.Instability != nil && slices.Contains(r.Instability.Reasons, "deficit") {
			t.Errorf("seed %d flagged by a deficit: %+v", r.Seed, r.Instability.Reasons)
		}
		for _, d := range r.Deficits {
			if d.Class >= 0 && d.Relative > 0.8 && d.Critical == 0 && d.Batch >= 16 {
				silent++
			}
		}
		if r.Convergence != nil && slices.Contains(r.Convergence.Reasons, "episodes") {
			episodes++
		}
	}
	t.Logf("%s by %s (%d of %d flagged); %d silent classes untested, %d replications not converged by episodes", v.Verdict, v.Test, v.Unstable, v.N, silent, episodes)
	if v.Verdict != sim.VerdictStable || silent == 0 || episodes == 0 {
		t.Errorf("verdict %s by %s (want stable); %d silent classes, %d episodes reasons (want some of each)", v.Verdict, v.Test, silent, episodes)
	}
}
