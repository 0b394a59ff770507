package sim

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// segs builds the recorder's boundary arrays from 64 segment means of unit
// duration.
func segs(means func(i int) float64) (*[growthSegments + 1]float64, *[growthSegments + 1]float64) {
	var t, a [growthSegments + 1]float64
	for i := 1; i <= growthSegments; i++ {
		t[i] = float64(i)
		a[i] = a[i-1] + means(i-1)
	}
	return &t, &a
}

// TestGrowthNull: with independent normal batch means the statistic is
// Student t(30): over 4000 synthetic windows the share above the t(30) 95%
// quantile is 5% (within 4.5 binomial standard deviations, ±31), and the
// test never fires (its critical value is t(30)'s 1−10^-6 quantile times
// √3 or more).
func TestGrowthNull(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q95 := stats.TQuantile(0.95, 30)
	const n = 4000
	above, fired := 0, 0
	for range n {
		g, means := growthTest(segs(func(int) float64 { return 100 + 10*rng.NormFloat64() }))
		if g == nil || len(means) != growthSegments {
			t.Fatal("no statistic on a full window")
		}
		if g.T > q95 {
			above++
		}
		if g.Fired {
			fired++
		}
	}
	if math.Abs(float64(above)-0.05*n) > 4.5*math.Sqrt(n*0.05*0.95) {
		t.Errorf("%d of %d above the t(30) 95%% quantile, want about %d", above, n, n/20)
	}
	if fired != 0 {
		t.Errorf("fired %d times on independent batch means", fired)
	}
}

// TestGrowthSynthetic checks the statistic on windows whose answer is
// known.
func TestGrowthSynthetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// A queue growing by 5 jobs per unit time from 200, with random-walk
	// noise of σ = 3 per unit (the ratio of an M/M/1 queue at ρ = 1.02 over
	// a 64th of a 10^6-arrival window: drift 300, noise √(2·15000) = 173):
	// fires, rate ≈ 5, residuals visibly autocorrelated.
	walk := 0.0
	g, _ := growthTest(segs(func(i int) float64 { walk += 3 * rng.NormFloat64(); return 200 + 5*float64(i) + walk }))
	if g == nil || !g.Fired || math.Abs(g.Rate-5) > 1.5 || g.Phi < 0.3 || g.Critical <= growthBase {
		t.Errorf("linear growth: %+v", g)
	}
	// Constant: no growth, T = 0 (exact fit), not fired.
	g, _ = growthTest(segs(func(int) float64 { return 7 }))
	if g == nil || g.Fired || g.T != 0 || g.Rate != 0 {
		t.Errorf("constant: %+v", g)
	}
	// A clear but negligible drift: 1000 jobs growing by 0.01 per unit time
	// (0.32 over the tested half, under 25% of 1000 + 2) with tiny noise:
	// t is huge, the material guard keeps it from firing.
	g, _ = growthTest(segs(func(i int) float64 { return 1000 + 0.01*float64(i) + 1e-4*rng.NormFloat64() }))
	if g == nil || g.T < 100 || g.Fired || math.Abs(g.Relative-0.32/1000) > 1e-4 {
		t.Errorf("negligible drift: %+v", g)
	}
	// A decreasing queue never fires.
	g, _ = growthTest(segs(func(i int) float64 { return 1000 - 10*float64(i) }))
	if g == nil || g.Fired || g.Rate >= 0 {
		t.Errorf("decreasing: %+v", g)
	}
	// A zero-length segment (the window cut short) gives no statistic.
	st, sa := segs(func(int) float64 { return 1 })
	st[40] = st[39]
	if g, m := growthTest(st, sa); g != nil || m != nil {
		t.Errorf("degenerate window: %+v", g)
	}
}

// TestGrowthCritical: the critical value is t(30)'s 1−10^-6 quantile (5.871)
// times √3 without residual autocorrelation, and the AR(1) factor
// √((1+φ)/(1−φ)) with φ clamped to [0, 0.5] above it.
func TestGrowthCritical(t *testing.T) {
	base := 5.8710 * math.Sqrt(3)
	for _, c := range []struct{ phi, want float64 }{
		{-0.4, base}, {0, base}, {0.2, base * math.Sqrt(1.2/0.8)}, {0.5, base * math.Sqrt(3)}, {0.9, base * math.Sqrt(3)}, {math.NaN(), base * math.Sqrt(3)},
	} {
		if got := GrowthCritical(c.phi); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("GrowthCritical(%v) = %v, want %v", c.phi, got, c.want)
		}
	}
}

// TestCapTooSmall: a cap below the servers is an error naming the key; the
// default is the memory budget over the bytes per job.
func TestCapTooSmall(t *testing.T) {
	w := &Workload{Name: "w", Servers: 8, ArrivalRate: 1, Classes: []Class{{Name: "c", Need: 1, Share: 1, Service: dist.Must(dist.NewExponential(1))}}}
	p := &capProbe{}
	_, err := Run(w, p, Config{Arrivals: 10, MaxInSystem: 3})
	if err == nil || !strings.Contains(err.Error(), "max_in_system") {
		t.Errorf("cap 3 on 8 servers: %v", err)
	}
	if _, err := Run(w, p, Config{Arrivals: 10, MaxInSystem: 8}); err != nil {
		t.Errorf("cap 8 on 8 servers: %v", err)
	}
	if DefaultMaxInSystem != 1<<20 || DefaultMaxInSystem*BytesPerJob != MemoryBudget {
		t.Errorf("default cap %d from %d B / %d B per job", DefaultMaxInSystem, MemoryBudget, BytesPerJob)
	}
}

// capProbe starts every job at once if it fits (a greedy one-class policy).
type capProbe struct{ q []*Job }

func (p *capProbe) Init(*System) error { p.q = p.q[:0]; return nil }
func (p *capProbe) Arrive(s *System, j *Job) {
	p.q = append(p.q, j)
	p.fill(s)
}
func (p *capProbe) Complete(s *System, _ *Job) { p.fill(s) }
func (p *capProbe) fill(s *System) {
	for len(p.q) > 0 && s.Free() >= p.q[0].Need() {
		s.Start(p.q[0])
		p.q = p.q[1:]
	}
}

// starve serves class 0 greedily and never starts class 1.
type starve struct{ capProbe }

func (p *starve) Arrive(s *System, j *Job) {
	if j.Class() == 0 {
		p.capProbe.Arrive(s, j)
	}
}

// TestLowerBoundPerClass: a run stopped by the drain limit with measured
// jobs of one class inside marks that class's means (and the overall and
// weighted ones) as lower bounds, and not the class whose jobs all left;
// the census of undeparted jobs per class adds up to the engine's count.
func TestLowerBoundPerClass(t *testing.T) {
	e := dist.Must(dist.NewExponential(1))
	w := &Workload{Name: "w", Servers: 4, ArrivalRate: 1, Classes: []Class{
		{Name: "served", Need: 1, Share: 0.9, Service: e}, {Name: "starved", Need: 2, Share: 0.1, Service: e}}}
	r, err := Run(w, &starve{}, Config{Seed: 3, Warmup: 100, Arrivals: 2000, DrainLimit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ins := r.Instability
	if ins == nil || !r.Unstable || r.Truncated || ins.Reasons[0] != "drain_limit" || !r.LowerBound {
		t.Fatalf("want drain_limit with lower bounds: unstable=%v truncated=%v %+v", r.Unstable, r.Truncated, ins)
	}
	c0, c1 := r.Classes[0], r.Classes[1]
	if c0.LowerBound || c0.Undeparted != 0 || !c1.LowerBound || c1.Undeparted == 0 || c1.Count != 0 ||
		c1.Undeparted != ins.Undeparted || !r.Overall.LowerBound || r.Overall.Undeparted != ins.Undeparted {
		t.Errorf("per-class bounds: %+v / %+v / overall %+v, undeparted %d", c0, c1, r.Overall, ins.Undeparted)
	}
}
