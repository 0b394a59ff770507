package sim_test

import (
	"slices"
	"testing"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sim"
)

// TestConvergenceVerdicts checks the converged verdict's two rules on runs
// whose answer is known: a stable M/M/1 at ρ = 0.5 (relaxation time of a few
// dozen arrivals, far below a 320th of the run) converges; an overloaded one (ρ = 1.2: the number in system
// grows linearly through the whole run) has its MSER point beyond half the
// run with a clear shift. Fixed seeds; each verdict has a margin (shift z
// at least 4 times the threshold, or none).
func TestConvergenceVerdicts(t *testing.T) {
	cfg := sim.Config{Warmup: 10000, Arrivals: 100000}
	for seed := uint64(1); seed <= 5; seed++ {
		cfg.Seed = seed
		r, err := sim.Run(mmk(1, 0.5)(t), &fcfs.FCFS{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := r.Convergence
		if c == nil || !c.Converged || c.Cycles != -1 || c.RunArrivals != 110000 {
			t.Fatalf("seed %d: stable M/M/1: %+v", seed, c)
		}

		// Overload, with a cap high enough not to stop the run.
		r, err = sim.Run(mmk(1, 1.2)(t), &fcfs.FCFS{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c = r.Convergence
		if c == nil || c.Converged || !slices.Equal(c.Reasons, []string{"mser", "throughput"}) || c.MSERFraction <= 0.5 || c.ShiftZ < 16 {
			t.Fatalf("seed %d: overloaded M/M/1 read as converged: %+v", seed, c)
		}
	}
}

// cycled wraps FCFS with a fixed cycle count, to test the cycles rule.
type cycled struct {
	fcfs.FCFS
	n int64
}

func (c *cycled) Cycles() (string, int64) { return "turns", c.n }

func TestConvergenceCycles(t *testing.T) {
	cfg := sim.Config{Seed: 3, Warmup: 10000, Arrivals: 100000}
	for _, n := range []int64{0, sim.MinCycles - 1, sim.MinCycles, 1000} {
		r, err := sim.Run(mmk(1, 0.5)(t), &cycled{n: n}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := r.Convergence
		want := n >= sim.MinCycles
		if c == nil || c.Converged != want || c.Cycles != n || c.CycleName != "turns" {
			t.Errorf("%d cycles: %+v, want converged = %v", n, c, want)
		}
		if !want && !slices.Equal(c.Reasons, []string{"cycles"}) {
			t.Errorf("%d cycles: reasons %v, want [cycles]", n, c.Reasons)
		}
	}
	// A real cycled policy reports its count: MSFQ's cycles on one-or-all
	// at λ = 6 (thousands in 10^5 arrivals) agree with its own counter.
	r, err := sim.Run(namedAt("one-or-all", 6)(t), quickswap.NewMSFQ(31), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cnt, _ := r.Counter("cycles")
	if c := r.Convergence; c == nil || c.CycleName != "cycles" || float64(c.Cycles) != cnt || c.Cycles < sim.MinCycles || !c.Converged {
		t.Errorf("MSFQ: %+v, counter cycles = %v", r.Convergence, cnt)
	}
}

// TestConvergenceAbsent: no verdict for a run stopped inside its window
// (the truncated verdict says more) or too short to batch.
func TestConvergenceAbsent(t *testing.T) {
	r, err := sim.Run(mmk(1, 1.5)(t), &fcfs.FCFS{}, sim.Config{Seed: 1, Warmup: 1000, Arrivals: 100000, MaxInSystem: 500})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Convergence != nil {
		t.Errorf("capped run: truncated %v, convergence %+v", r.Truncated, r.Convergence)
	}
	r, err = sim.Run(mmk(1, 0.5)(t), &fcfs.FCFS{}, sim.Config{Seed: 1, Arrivals: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Convergence != nil {
		t.Errorf("1000-arrival run: convergence %+v", r.Convergence)
	}
}

func TestPoolConvergence(t *testing.T) {
	rep := func(ok bool, frac float64, cycles int64, reasons ...string) *sim.Result {
		return &sim.Result{Convergence: &sim.Convergence{Converged: ok, MSERFraction: frac, Cycles: cycles, Reasons: reasons}}
	}
	v := sim.PoolConvergence([]*sim.Result{rep(true, 0, 100), rep(true, 0.1, 50), rep(false, 0.7, 20, "mser", "cycles"), {}})
	want := sim.ConvergenceVerdict{N: 3, Unconverged: 1, MSERLate: 1, FewCycles: 1, Converged: true, MedianMSERFraction: 0.1, MinCycles: 20}
	if v != want {
		t.Errorf("one of three: %+v, want %+v", v, want)
	}
	v = sim.PoolConvergence([]*sim.Result{rep(true, 0, -1), rep(false, 0.7, -1, "mser")})
	if v.Converged || v.MinCycles != -1 || v.MSERLate != 1 {
		t.Errorf("one of two (a tie fails): %+v", v)
	}
	if v := sim.PoolConvergence(nil); v.Converged || v.N != 0 {
		t.Errorf("none: %+v", v)
	}
}
