package balanced

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/sim/stats"
)

func named(t testing.TB, name string, rate float64) *sim.Workload {
	t.Helper()
	spec, err := workload.Named(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := spec.Build(rate)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// subcritical is the job mix of B Fig. 1–2 scaled as in B §4.3, eq. (7):
// f_k = ⌊(k/32)^{2/3}⌋; small jobs (need f_k, mean 1) with probability
// 0.95; large jobs (2f_k, mean 40), (4f_k, 20), (8f_k, 10), each with
// probability 0.05/3; exponential service; Poisson arrivals at the rate
// that gives load ρ: ϱ = Σ α_i d_i n_i = f_k(0.95 + 3·(0.05/3)·80) = 4.95 f_k
// and λ = ρ k/ϱ.
func subcritical(k int, rho float64) *sim.Workload {
	f := int(math.Floor(math.Pow(float64(k)/32, 2.0/3)))
	w := &sim.Workload{Name: "bs-subcritical", Servers: k, ArrivalRate: rho * float64(k) / (4.95 * float64(f))}
	for _, c := range [][3]float64{{1, 0.95, 1}, {2, 0.05 / 3, 40}, {4, 0.05 / 3, 20}, {8, 0.05 / 3, 10}} {
		w.Classes = append(w.Classes, sim.Class{
			Need: int(c[0]) * f, Share: c[1], Service: dist.Must(dist.NewExponential(c[2])),
		})
	}
	return w
}

// meanSize is Σ α_i d_i, the limit of the mean response time in B Theorem 1.
const meanSize = 0.95*1 + 0.05/3*(40+20+10)

func TestPartition(t *testing.T) {
	cases := []struct {
		name    string
		k       int
		needs   []int
		demand  []float64
		a       []int
		helpers int
		psi     float64
	}{
		// The subcritical family at k = 1024: f = 10, needs 10, 20, 40, 80,
		// ϱ_i = (9.5, 13.33, 13.33, 13.33), ϱ = 49.5.
		// c_i = (k/n_i)(ϱ_i/ϱ) = (19.65, 13.79, 6.90, 3.45): not integers.
		// Σ⌊c_i⌋n_i = 190 + 260 + 240 + 240 = 930 <= k − max n = 944, so
		// ψ = 1 and |H| = 94.
		{"subcritical-1024", 1024, []int{10, 20, 40, 80}, []float64{9.5, 40.0 / 3, 40.0 / 3, 40.0 / 3},
			[]int{190, 260, 240, 240}, 94, 1},
		// Integral: k = 8, needs 1 and 2, equal demands: c = (4, 2), so
		// ψ = 1, a = (4, 4) and no helpers (B §3.2).
		{"integral", 8, []int{1, 2}, []float64{1, 1}, []int{4, 4}, 0, 1},
		// k = 10, needs 1 and 4, equal demands: c = (5, 1.25); at x = 1,
		// 5 + 4 = 9 > 10 − 4 = 6. g(x) = ⌊5x⌋ + 4⌊1.25x⌋ is 3 on [0.6, 0.8)
		// and 4 + 4 = 8 > 6 at x = 0.8: ψ = 0.8 (supremum), a = (3, 0),
		// |H| = 7.
		{"psi<1", 10, []int{1, 4}, []float64{1, 1}, []int{3, 0}, 7, 0.8},
		// One-or-all (Q §6.2): ϱ = (0.9, 3.2), c = (7.02, 0.78), and
		// k − max n = 0 allows nothing: ψ = 1/c_1 = 4.1/28.8, a = (0, 0),
		// all 32 servers are helpers (BS-π is π).
		{"one-or-all", 32, []int{1, 32}, []float64{0.9, 3.2}, []int{0, 0}, 32, 4.1 / 28.8},
	}
	for _, c := range cases {
		a, h, psi := Partition(c.k, c.needs, c.demand)
		for i := range a {
			if a[i] != c.a[i] {
				t.Errorf("%s: a = %v, want %v", c.name, a, c.a)
				break
			}
		}
		if h != c.helpers || math.Abs(psi-c.psi) > 1e-12 {
			t.Errorf("%s: |H| = %d ψ = %v, want %d and %v", c.name, h, psi, c.helpers, c.psi)
		}
	}
}

// TestTraceFCFS: k = 6, class 0 needs 1, class 1 needs 2. Class sizes total
// 22 (class 0) and 9.5 (class 1), so ϱ ∝ (22, 19): c = (6·22/41, 3·19/41) =
// (3.22, 1.39); at x = 1, 3 + 2 = 5 > 6 − 2 = 4; g(x) = ⌊3.22x⌋ + 2⌊1.39x⌋
// reaches 2 + 2 = 4 at x = 0.72 and 3 + 2 = 5 at x = 3/3.22 = 0.932:
// a = (2, 2) (two need-1 slots, one need-2 slot), |H| = 2, ψ = 123/132.
//
//	J0 t=0   c0 size 10 → A_0 (slot 1): starts 0
//	J1 t=0.1 c0 size 10 → A_0 (slot 2): starts 0.1
//	J2 t=0.2 c1 size 1  → A_1: starts 0.2 (ends 1.2)
//	J3 t=0.3 c1 size 3  → A_1 full → helpers, empty queue, 2 idle: starts 0.3 (ends 3.3)
//	J4 t=0.4 c0 size 1  → A_0 full → helpers full → waits
//	J5 t=0.5 c1 size 1  → A_1 full → waits behind J4
//	t=1.2    J2 ends on A_1 → pull back J5 (oldest class-1 in H): starts 1.2 (ends 2.2);
//	         J4 still blocked (helpers full)
//	J6 t=1.5 c0 size 1  → A_0 full → waits behind J4
//	t=2.2    J5 ends on A_1, no class-1 waiting
//	t=3.3    J3 ends on helpers → J4 and J6 start 3.3
//	J7 t=20  c1 size 4.5 → A_1 idle: starts 20
//
// P_H = 4/8 (J3, J4, J5, J6 sent to the helpers), served by the helpers:
// J3, J4, J6 → 3/8.
func TestTraceFCFS(t *testing.T) {
	w := simtest.TraceWorkload(6, []int{1, 2}, []simtest.J{
		{At: 0, Size: 10, Class: 0}, {At: 0.1, Size: 10, Class: 0}, {At: 0.2, Size: 1, Class: 1},
		{At: 0.3, Size: 3, Class: 1}, {At: 0.4, Size: 1, Class: 0}, {At: 0.5, Size: 1, Class: 1},
		{At: 1.5, Size: 1, Class: 0}, {At: 20, Size: 4.5, Class: 1},
	})
	p := &BalancedSplitting{}
	r, evs := simtest.Record(t, w, p, sim.Config{Arrivals: int64(len(w.Trace))})
	simtest.CheckInvariants(t, w, p, evs, true)
	a, h, psi := p.Layout()
	if a[0] != 2 || a[1] != 2 || h != 2 || math.Abs(psi-123.0/132) > 1e-6 {
		t.Fatalf("partition a=%v |H|=%d ψ=%v, want [2 2], 2, %v", a, h, psi, 123.0/132)
	}
	simtest.CheckStarts(t, evs, map[int64]float64{0: 0, 1: 0.1, 2: 0.2, 3: 0.3, 4: 3.3, 5: 1.2, 6: 3.3, 7: 20})
	if ph := simtest.Counter(t, r, "p_helper"); ph != 0.5 {
		t.Errorf("p_helper = %v, want 4/8", ph)
	}
	if ph := simtest.Counter(t, r, "p_helper_served"); ph != 3.0/8 {
		t.Errorf("p_helper_served = %v, want 3/8", ph)
	}
}

// TestTraceFirstFit: π = FCFS against π = First-Fit on the helpers. k = 6,
// needs 1 and 2; class sizes total 26 and 11, so ϱ ∝ (26, 22),
// c = (3.25, 1.375): as in TestTraceFCFS, a = (2, 2), |H| = 2.
//
//	J0, J1 t=0 c0 size 10 → A_0: start 0;  J2 t=0 c1 size 10 → A_1: starts 0
//	J3 t=1 c0 size 5 → helpers (1 of 2 busy): starts 1 (ends 6)
//	J4 t=2 c1 size 1 → helpers: needs 2, 1 idle → waits
//	J5 t=3 c0 size 1 → helpers: FCFS: behind J4 → waits; First-Fit: fits → starts 3 (ends 4)
//	FCFS:      t=6 J3 ends → J4 starts 6 (ends 7), J5 does not fit → starts 7
//	First-Fit: t=4 J5 ends (J4 still needs 2 > 1 idle); t=6 J3 ends → J4 starts 6
func TestTraceFirstFit(t *testing.T) {
	w := simtest.TraceWorkload(6, []int{1, 2}, []simtest.J{
		{At: 0, Size: 10, Class: 0}, {At: 0, Size: 10, Class: 0}, {At: 0, Size: 10, Class: 1},
		{At: 1, Size: 5, Class: 0}, {At: 2, Size: 1, Class: 1}, {At: 3, Size: 1, Class: 0},
	})
	for _, c := range []struct {
		pi   string
		want map[int64]float64
	}{
		{PiFCFS, map[int64]float64{0: 0, 1: 0, 2: 0, 3: 1, 4: 6, 5: 7}},
		{PiFirstFit, map[int64]float64{0: 0, 1: 0, 2: 0, 3: 1, 4: 6, 5: 3}},
	} {
		p := Policies[0].New()
		if err := sim.Configure(p, map[string]any{"pi": c.pi}); err != nil {
			t.Fatal(err)
		}
		evs := simtest.RunTrace(t, w, p)
		simtest.CheckInvariants(t, w, p, evs, true)
		if a, h, _ := p.(*BalancedSplitting).Layout(); a[0] != 2 || a[1] != 2 || h != 2 {
			t.Fatalf("partition a=%v |H|=%d, want [2 2] and 2", a, h)
		}
		t.Run(c.pi, func(t *testing.T) { simtest.CheckStarts(t, evs, c.want) })
	}
}

// checked verifies BS-π's own invariants after every decision.
type checked struct {
	*BalancedSplitting
	t testing.TB
}

func (c checked) Arrive(s *sim.System, j *sim.Job)   { c.BalancedSplitting.Arrive(s, j); c.check(s) }
func (c checked) Complete(s *sim.System, j *sim.Job) { c.BalancedSplitting.Complete(s, j); c.check(s) }

func (c checked) check(s *sim.System) {
	p, t := c.BalancedSplitting, c.t
	busy := p.usedH
	if p.usedH < 0 || p.usedH > p.helpers {
		t.Fatalf("t=%g: %d of %d helpers busy", s.Now(), p.usedH, p.helpers)
	}
	for i, u := range p.usedA {
		n := s.Classes()[i].Need
		if u < 0 || u > p.capA[i] || u%n != 0 {
			t.Fatalf("t=%g: A_%d has %d of %d servers busy (need %d)", s.Now(), i, u, p.capA[i], n)
		}
		// Rule 3 keeps A_i full while class-i jobs wait in the helper set.
		if p.q.Q[i].Len() > 0 && u+n <= p.capA[i] {
			t.Fatalf("t=%g: class %d waits in the helper set while A_%d has room", s.Now(), i, i)
		}
		busy += u
	}
	if busy != s.Busy() || len(s.Running())+p.q.Len() != s.InSystem() {
		t.Fatalf("t=%g: accounting: busy %d vs %d", s.Now(), busy, s.Busy())
	}
	free := p.helpers - p.usedH
	if p.firstFit {
		if p.q.Oldest(free) >= 0 {
			t.Fatalf("t=%g: First-Fit left a fitting job waiting", s.Now())
		}
	} else if p.q.Len() > 0 {
		if c := p.q.Oldest(math.MaxInt); p.q.Q[c].Front().Need() <= free {
			t.Fatalf("t=%g: FCFS head fits in the idle helpers", s.Now())
		}
	}
}

// TestInvariantsLong: long random runs, checking the model's invariants on
// the decision trace and BS-π's own after every decision.
func TestInvariantsLong(t *testing.T) {
	cases := []struct {
		name string
		w    *sim.Workload
	}{
		{"subcritical-1024", subcritical(1024, 0.8)},
		{"subcritical-4096", subcritical(4096, 0.95)},
		{"borg-b", named(t, "borg-b", 2)},
		{"four-class", named(t, "four-class", 2)},
	}
	for _, c := range cases {
		for _, pi := range []string{PiFCFS, PiFirstFit} {
			p := &BalancedSplitting{}
			if err := sim.Configure(p, map[string]any{"pi": pi}); err != nil {
				t.Fatal(err)
			}
			cp := checked{p, t}
			r, evs := simtest.Record(t, c.w, cp, sim.Config{Seed: 11, Warmup: 1000, Arrivals: 50000, MaxInSystem: 50000})
			simtest.CheckInvariants(t, c.w, cp, evs, false)
			if r.Overall.Count == 0 {
				t.Errorf("%s/%s: no job completed", c.name, pi)
			}
		}
	}
}

// TestOneOrAllIsFCFS: on one-or-all every server is a helper (see
// TestPartition), so BS-FCFS makes exactly FCFS's decisions.
func TestOneOrAllIsFCFS(t *testing.T) {
	w := named(t, "one-or-all", 2.5)
	cfg := sim.Config{Seed: 5, Arrivals: 20000}
	a, _ := simtest.Record(t, w, &BalancedSplitting{}, cfg)
	b, _ := simtest.Record(t, w, &fcfs.FCFS{}, cfg)
	if a.Overall != b.Overall {
		t.Errorf("BS-FCFS %+v, FCFS %+v", a.Overall, b.Overall)
	}
}

type point struct {
	k                      int
	r, w, ph, phs, size, u stats.Summary
	bound, load            float64
}

// measure runs reps replications of BS-FCFS on the subcritical family at k.
func measure(t *testing.T, k int, rho float64, reps int, warmup, arrivals int64) point {
	t.Helper()
	w := subcritical(k, rho)
	var R, W, PH, PHS, S, U []float64
	var p *BalancedSplitting
	for seed := 1; seed <= reps; seed++ {
		p = &BalancedSplitting{}
		r, err := sim.Run(w, p, sim.Config{Seed: uint64(seed), Warmup: warmup, Arrivals: arrivals})
		if err != nil {
			t.Fatal(err)
		}
		if r.Unstable {
			t.Fatalf("k=%d seed %d flagged unstable: %+v", k, seed, r.Instability)
		}
		R = append(R, r.Overall.MeanResponse)
		W = append(W, r.Overall.MeanWait)
		S = append(S, r.Overall.MeanResponse-r.Overall.MeanWait)
		PH = append(PH, simtest.Counter(t, r, "p_helper"))
		PHS = append(PHS, simtest.Counter(t, r, "p_helper_served"))
		U = append(U, r.Utilization)
	}
	// B Corollary 1 / eq. (16): the probability of being served by the
	// helpers is at most Σ_i α_i E_{s_i}(λ α_i d_i), s_i = a_i/n_i (the
	// blocking probabilities of independent M/M/s_i/s_i queues).
	a, _, _ := p.Layout()
	var bound float64
	probs := w.Probabilities()
	for i, c := range w.Classes {
		bound += probs[i] * stats.ErlangB(a[i]/c.Need, w.ArrivalRate*probs[i]*c.Service.Mean())
	}
	ci := func(x []float64) stats.Summary { return stats.MeanCI(x, 0.95) }
	return point{k: k, r: ci(R), w: ci(W), ph: ci(PH), phs: ci(PHS), size: ci(S), u: ci(U), bound: bound, load: w.Load()}
}

// zeroWait checks B Theorem 1 on the subcritical family at ρ = 0.7 over
// growing k: P_H → 0 and E[T] → Σ α_i d_i.
//
// Every k replays the same job sequence (common random numbers: same seeds,
// classes and sizes; only the needs and the time scale change), so
// E[T] − Σ α_i d_i = E[W] + (S̄ − Σ α_i d_i), where S̄ is the sample mean
// size, identical at every k. The convergence is therefore tested on E[W]
// (the mean wait): it must fall from one k to the next with disjoint 95% CIs,
// and at the largest k the upper end of its CI must be below 1% of
// Σ α_i d_i — the claim under test, "E[T] is within 1% of its limit", not a
// tolerance. P_H and the probability of being served by the helpers must
// fall likewise, and the latter must not exceed its Corollary-1 bound.
//
// With sampling set, the 95% CIs of the mean size and of the utilisation
// must contain Σ α_i d_i and the load: the workload and the engine are
// right. (These are 95% statements about one set of seeds, shared by every
// k, so the long run, whose CIs are 5× narrower, does not repeat them: its
// seeds 1–30 draw a mean size 2.1205 ± 0.0023 — 0.18% above Σ α_i d_i, while
// 4·10⁸ draws of the same job stream average 2.11674.)
func zeroWait(t *testing.T, ks []int, reps int, warmup, arrivals int64, sampling bool) {
	var prev *point
	for _, k := range ks {
		pt := measure(t, k, 0.7, reps, warmup, arrivals)
		t.Logf("k=%7d  E[T]=%.4f±%.4f  E[T]−Σα_i d_i=%+.4f  E[W]=%.4g±%.2g  P_H=%.4g±%.2g  P(served by H)=%.4g±%.2g (bound %.4g)  util=%.4f±%.4f (load %.4f)",
			k, pt.r.Mean, pt.r.HalfWidth, pt.r.Mean-meanSize, pt.w.Mean, pt.w.HalfWidth, pt.ph.Mean, pt.ph.HalfWidth,
			pt.phs.Mean, pt.phs.HalfWidth, pt.bound, pt.u.Mean, pt.u.HalfWidth, pt.load)
		if pt.phs.Mean-pt.phs.HalfWidth > pt.bound {
			t.Errorf("k=%d: P(served by helpers) %.4g ± %.2g above the Corollary-1 bound %.4g", k, pt.phs.Mean, pt.phs.HalfWidth, pt.bound)
		}
		if sampling && math.Abs(pt.size.Mean-meanSize) > pt.size.HalfWidth {
			t.Errorf("k=%d: mean size %.4f ± %.4f, want %.4f", k, pt.size.Mean, pt.size.HalfWidth, meanSize)
		}
		if sampling && math.Abs(pt.u.Mean-pt.load) > pt.u.HalfWidth {
			t.Errorf("k=%d: utilisation %.4f ± %.4f, want the load %.4f", k, pt.u.Mean, pt.u.HalfWidth, pt.load)
		}
		if prev != nil {
			for _, q := range []struct {
				name     string
				now, was stats.Summary
			}{{"E[W]", pt.w, prev.w}, {"P_H", pt.ph, prev.ph}, {"P(served by H)", pt.phs, prev.phs}} {
				if q.now.Mean+q.now.HalfWidth >= q.was.Mean-q.was.HalfWidth {
					t.Errorf("%s did not fall from k=%d (%.4g ± %.2g) to k=%d (%.4g ± %.2g)", q.name, prev.k, q.was.Mean, q.was.HalfWidth, k, q.now.Mean, q.now.HalfWidth)
				}
			}
		}
		prev = &pt
	}
	if w := prev.w.Mean + prev.w.HalfWidth; w >= 0.01*meanSize {
		t.Errorf("k=%d: E[W] up to %.4g: E[T] not within 1%% of Σ α_i d_i = %.4f", prev.k, w, meanSize)
	}
}

// TestZeroWaitSubcritical: B Theorem 1 (and B Fig. 2b's regime) at modest
// run lengths: k = 2^10 … 2^16, 10 replications of 200 000 measured
// arrivals after 50 000 of warm-up (the longest class has mean 40, and
// 50 000 arrivals span at least 50 000/57.6 ≈ 870 time units at k = 2^16).
func TestZeroWaitSubcritical(t *testing.T) {
	zeroWait(t, []int{1 << 10, 1 << 12, 1 << 14, 1 << 16}, 10, 50000, 200000, true)
}

func TestParams(t *testing.T) {
	if err := sim.ValidateSchema(Policies[0].Params()); err != nil {
		t.Fatal(err)
	}
	if err := sim.Configure(Policies[0].New(), map[string]any{"pi": "msf"}); err == nil {
		t.Error("pi=msf accepted")
	}
	in := sim.Describe(Policies[0].New())
	if in.Preemption != sim.NoPreemption || in.SizeAware || in.Timers || !in.Counters {
		t.Errorf("capabilities %+v", in)
	}
	// A class with no dedicated servers (ϱ_i = 0) that does not fit in the
	// (empty) helper set: k = 4, need-2 class with all the demand (c = 2,
	// integral: a = 4, |H| = 0) and a need-4 class of share 0.
	w := &sim.Workload{Name: "bad", Servers: 4, ArrivalRate: 1, Classes: []sim.Class{
		{Need: 2, Share: 1, Service: dist.Must(dist.NewExponential(1))},
		{Need: 4, Share: 0, Service: dist.Must(dist.NewExponential(1))},
	}}
	if _, err := sim.Run(w, &BalancedSplitting{}, sim.Config{Arrivals: 10}); err == nil {
		t.Error("unservable class accepted")
	}
}

func BenchmarkBSFCFSOneOrAll(b *testing.B) {
	simtest.Bench(b, named(b, "one-or-all", 2.5), &BalancedSplitting{}, 1000000)
}

func BenchmarkBSFCFSBorgB(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 2), &BalancedSplitting{}, 1000000)
}

func BenchmarkBSFirstFitBorgB(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 2), &BalancedSplitting{pi: PiFirstFit}, 1000000)
}

// BenchmarkBSFCFSSubcritical: k = 2^16 of the subcritical family, where
// the A system carries most jobs.
func BenchmarkBSFCFSSubcritical(b *testing.B) {
	simtest.Bench(b, subcritical(1<<16, 0.7), &BalancedSplitting{}, 1000000)
}

func BenchmarkFCFSOneOrAll(b *testing.B) {
	simtest.Bench(b, named(b, "one-or-all", 2.5), &fcfs.FCFS{}, 1000000)
}

func BenchmarkFCFSBorgB(b *testing.B) {
	simtest.Bench(b, named(b, "borg-b", 2), &fcfs.FCFS{}, 1000000)
}
