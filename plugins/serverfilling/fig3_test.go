package serverfilling

import (
	"container/heap"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// srpt1 is a test-only reference for SRPT-1 on the resource-pooled single
// server (S §3.1): one server of speed 1 (all k servers pooled) serving job
// sizes need·duration/k by preemptive SRPT, on exactly the job sequence
// sim.Run feeds a policy for the same workload and seed (sim.NewJobStream).
// It returns the mean response time of the arrivals numbered warmup …
// warmup+arrivals−1 (the engine's measured jobs), simulating arrivals until
// all of them have left, as the engine does.
func srpt1(t testing.TB, w *sim.Workload, seed uint64, warmup, arrivals int64) float64 {
	js, err := sim.NewJobStream(w, seed)
	if err != nil {
		t.Fatal(err)
	}
	var h remHeap
	now, sum := 0.0, 0.0
	var done, tagged int64
	for idx := int64(0); ; idx++ {
		at, dur, class, ok := js.Next()
		if !ok {
			t.Fatal("job stream ended")
		}
		// Serve until the arrival: the job of least remaining size runs.
		for len(h) > 0 {
			top := &h[0]
			if now+top.rem <= at {
				now += top.rem
				if top.tagged {
					sum += now - top.arrival
					done++
					tagged--
				}
				heap.Pop(&h)
				continue
			}
			top.rem -= at - now // still the least: the heap order holds
			break
		}
		now = at
		if idx >= warmup+arrivals && tagged == 0 {
			break
		}
		isTagged := idx >= warmup && idx < warmup+arrivals
		if isTagged {
			tagged++
		}
		size := float64(w.Classes[class].Need) * dur / float64(w.Servers)
		heap.Push(&h, remJob{rem: size, arrival: at, tagged: isTagged})
	}
	return sum / float64(done)
}

type remJob struct {
	rem, arrival float64
	tagged       bool
}

type remHeap []remJob

func (h remHeap) Len() int           { return len(h) }
func (h remHeap) Less(i, j int) bool { return h[i].rem < h[j].rem }
func (h remHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *remHeap) Push(x any)        { *h = append(*h, x.(remJob)) }
func (h *remHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestSRPT1Reference validates the reference on two cases with known
// answers: (1) a single server with need-1 jobs, where ServerFilling-SRPT is
// preemptive SRPT itself, so the engine and the reference must agree job
// for job (same sequence, same mean to rounding); (2) equal sizes, where
// SRPT never preempts (a new job is never strictly smaller) and the pooled
// server is an M/D/1: E[T] = s + λs²/(2(1 − ρ)) (Pollaczek–Khinchine),
// which must lie in the 99% CI over replications.
func TestSRPT1Reference(t *testing.T) {
	w := &sim.Workload{Name: "m-h2-1", Servers: 1, ArrivalRate: 0.8, Classes: []sim.Class{
		{Need: 1, Share: 1, Service: must(dist.NewHyperExp(1, 10))},
	}}
	r, err := sim.Run(w, New(SRPTOrder, ServerFilling), sim.Config{Seed: 4, Warmup: 1000, Arrivals: 50000})
	if err != nil {
		t.Fatal(err)
	}
	if ref := srpt1(t, w, 4, 1000, 50000); relErr(r.Overall.MeanResponse, ref, 0) > 1e-9 {
		t.Errorf("k = 1: ServerFilling-SRPT E[T] = %.12g, SRPT-1 reference %.12g", r.Overall.MeanResponse, ref)
	}

	// k = 4, one class of need 4 and duration 1: size 1, λ = 0.7.
	w = &sim.Workload{Name: "m-d-1", Servers: 4, ArrivalRate: 0.7, Classes: []sim.Class{
		{Need: 4, Share: 1, Service: must(dist.NewDeterministic(1))},
	}}
	var ts []float64
	for seed := uint64(1); seed <= 10; seed++ {
		ts = append(ts, srpt1(t, w, seed, 2000, 40000))
	}
	ci := stats.MeanCI(ts, 0.99)
	want := 1 + 0.7/(2*0.3)
	if d := ci.Mean - want; d > ci.HalfWidth || -d > ci.HalfWidth {
		t.Errorf("M/D/1 through the reference: E[T] = %.4f ± %.4f, Pollaczek–Khinchine %.4f", ci.Mean, ci.HalfWidth, want)
	}
}

// fig3Ratios returns, per seed 1..reps, E[T] of ServerFilling-SRPT and of
// ServerFilling over E[T] of SRPT-1 on powers-of-two at load rho (common
// random numbers: the three see the same jobs).
func fig3Ratios(t *testing.T, rho float64, reps int, n int64) (sfs, sf []float64) {
	w := namedWorkload(t, "powers-of-two", p2Rate(rho))
	cfg := sim.Config{Warmup: n / 10, Arrivals: n}
	for seed := uint64(1); seed <= uint64(reps); seed++ {
		cfg.Seed = seed
		ref := srpt1(t, w, seed, cfg.Warmup, cfg.Arrivals)
		a, err := sim.Run(w, New(SRPTOrder, ServerFilling), cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := sim.Run(w, New(ArrivalOrder, ServerFilling), cfg)
		if err != nil {
			t.Fatal(err)
		}
		sfs = append(sfs, a.Overall.MeanResponse/ref)
		sf = append(sf, b.Overall.MeanResponse/ref)
	}
	return sfs, sf
}

// checkFig3 asserts S Fig. 3's shape over the given loads (increasing): the
// ratio E[T] ServerFilling-SRPT / E[T] SRPT-1 is above 1 and falls with the
// load, while ServerFilling's ratio rises. Each comparison is a paired
// difference between consecutive loads, seed by seed (the engine couples
// sample paths across loads: same seed, rescaled inter-arrival times), and
// must have a 99% Student-t CI entirely on the expected side of 0.
func checkFig3(t *testing.T, loads []float64, reps int, n int64) {
	sfs := make([][]float64, len(loads))
	sf := make([][]float64, len(loads))
	for i, rho := range loads {
		sfs[i], sf[i] = fig3Ratios(t, rho, reps, n)
		a, b := stats.MeanCI(sfs[i], 0.99), stats.MeanCI(sf[i], 0.99)
		t.Logf("ρ = %v: E[T] ratio to SRPT-1: ServerFilling-SRPT %.4f ± %.4f, ServerFilling %.3f ± %.3f (99%% CI, %d seeds × %d arrivals)",
			rho, a.Mean, a.HalfWidth, b.Mean, b.HalfWidth, reps, n)
		if a.Mean-a.HalfWidth <= 1 {
			t.Errorf("ρ = %v: ServerFilling-SRPT ratio %.4f ± %.4f is not above 1 (SRPT-1 is a lower bound)", rho, a.Mean, a.HalfWidth)
		}
	}
	for i := 1; i < len(loads); i++ {
		dsfs := make([]float64, reps)
		dsf := make([]float64, reps)
		for r := 0; r < reps; r++ {
			dsfs[r] = sfs[i-1][r] - sfs[i][r] // expected > 0: falls
			dsf[r] = sf[i][r] - sf[i-1][r]    // expected > 0: rises
		}
		a, b := stats.MeanCI(dsfs, 0.99), stats.MeanCI(dsf, 0.99)
		t.Logf("ρ %v → %v: ServerFilling-SRPT ratio falls by %.4f ± %.4f, ServerFilling ratio rises by %.3f ± %.3f",
			loads[i-1], loads[i], a.Mean, a.HalfWidth, b.Mean, b.HalfWidth)
		if a.Mean-a.HalfWidth <= 0 {
			t.Errorf("ρ %v → %v: ServerFilling-SRPT ratio does not fall: %.4f ± %.4f", loads[i-1], loads[i], a.Mean, a.HalfWidth)
		}
		if b.Mean-b.HalfWidth <= 0 {
			t.Errorf("ρ %v → %v: ServerFilling ratio does not rise: %.4f ± %.4f", loads[i-1], loads[i], b.Mean, b.HalfWidth)
		}
	}
}

// TestFig3 is S Fig. 3's behaviour at ρ = 0.9, 0.95, 0.98 (k = 8, needs
// uniform on {1, 2, 4, 8}, exponential durations): modest runs; the
// paper-scale version is TestFig3Long (build tag long).
func TestFig3(t *testing.T) {
	checkFig3(t, []float64{0.9, 0.95, 0.98}, 10, 100000)
}
