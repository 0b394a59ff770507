package limit_test

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/limit"
)

// rounds turns a RunFunc into a RoundFunc, counting the rounds.
func rounds(run limit.RunFunc, reps int, n *int) limit.RoundFunc {
	return func(rates []float64) ([]limit.Point, error) {
		*n++
		out := make([]limit.Point, len(rates))
		for i, lam := range rates {
			rs := make([]*sim.Result, reps)
			for r := range rs {
				res, err := run(lam, r)
				if err != nil {
					return nil, err
				}
				rs[r] = res
			}
			p, err := limit.PointOf(lam, rs)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
}

// TestSearchRoundsThreshold: on a sharp threshold the bracket contains it
// and meets the tolerance within MaxRounds rounds, for one to seven probes
// per round; with one probe the rates evaluated and the bracket are
// Search's bisection exactly.
func TestSearchRoundsThreshold(t *testing.T) {
	for _, lam := range []float64{1.01, 2.5, 3.0261, 7.8049, 9.9} {
		opt := limit.Options{Lo: 1, Hi: 10, Reps: 5, RelTol: 0.01}
		for _, probes := range []int{1, 3, 7} {
			n := 0
			l, err := limit.SearchRounds(rounds(threshold(lam, 0), 5, &n), opt, probes)
			if err != nil {
				t.Fatal(err)
			}
			if l.Outcome != limit.Found || !(l.Lo < lam && lam <= l.Hi) || l.Hi/l.Lo-1 > 0.01*(1+1e-9) {
				t.Errorf("λ* = %v, %d probes: %s [%v, %v]", lam, probes, l.Outcome, l.Lo, l.Hi)
			}
			if n > opt.MaxRounds(probes) || l.Runs != 5*len(l.Points) {
				t.Errorf("λ* = %v, %d probes: %d rounds (max %d), %d runs for %d points", lam, probes, n, opt.MaxRounds(probes), l.Runs, len(l.Points))
			}
			if probes == 1 {
				b, err := limit.Search(threshold(lam, 0), opt)
				if err != nil {
					t.Fatal(err)
				}
				if b.Lo != l.Lo || b.Hi != l.Hi || len(b.Points) != len(l.Points) {
					t.Errorf("λ* = %v: one probe [%v, %v] in %d points, bisection [%v, %v] in %d", lam, l.Lo, l.Hi, len(l.Points), b.Lo, b.Hi, len(b.Points))
				}
			}
		}
	}
	// ln(10)/ln(1.01) = 231.4 bracket widths: 8 halvings (the first round
	// halves too), or 4 rounds of quartering (4^4 = 256).
	o := limit.Options{Lo: 1, Hi: 10, RelTol: 0.01}
	if a, b := o.MaxRounds(1), o.MaxRounds(3); a != 8 || b != 4 {
		t.Errorf("MaxRounds = %d, %d; want 8, 4", a, b)
	}
}

// TestSearchRoundsOneSided: the one-sided outcomes end after the first
// round, with the deciding end's confidence; a round function returning the
// wrong points is an error.
func TestSearchRoundsOneSided(t *testing.T) {
	opt := limit.Options{Lo: 1, Hi: 10, Reps: 5}
	n := 0
	l, err := limit.SearchRounds(rounds(threshold(20, 0), 5, &n), opt, 3)
	if err != nil || l.Outcome != limit.NoLimitInRange || l.Lo != 10 || n != 1 || len(l.Points) != 5 {
		t.Errorf("no limit: %+v, %v, %d rounds", l, err, n)
	}
	n = 0
	l, err = limit.SearchRounds(rounds(threshold(0.5, 0), 5, &n), opt, 3)
	if err != nil || l.Outcome != limit.UnstableAtLowest || l.Hi != 1 || n != 1 {
		t.Errorf("unstable at lowest: %+v, %v, %d rounds", l, err, n)
	}
	_, miss := sim.MajorityErrors(5, 0.01, 0.01)
	if math.Abs(l.Confidence-(1-miss)) > 1e-15 {
		t.Errorf("confidence %v, want %v", l.Confidence, 1-miss)
	}
	short := func(rates []float64) ([]limit.Point, error) { return nil, nil }
	if _, err := limit.SearchRounds(short, opt, 3); err == nil {
		t.Error("a round without points: no error")
	}
	if _, err := limit.SearchRounds(short, opt, 0); err == nil {
		t.Error("0 probes: no error")
	}
}

// TestSaturationThroughput: the mean throughput of the unstable rates only.
func TestSaturationThroughput(t *testing.T) {
	pt := func(lam, thr float64, v sim.Verdict) limit.Point {
		return limit.Point{Lambda: lam, Throughput: thr, Verdict: sim.PointVerdict{Verdict: v}}
	}
	l := &limit.Limit{Points: []limit.Point{pt(2, 2, sim.VerdictStable), pt(4, 3.1, sim.VerdictUnstable),
		pt(5, 2.9, sim.VerdictUnstable), pt(6, 1, sim.VerdictTruncated)}}
	if m, n := limit.SaturationThroughput(l); n != 2 || math.Abs(m-3) > 1e-12 {
		t.Errorf("got %v over %d, want 3 over 2", m, n)
	}
	if _, n := limit.SaturationThroughput(&limit.Limit{}); n != 0 {
		t.Errorf("no points: n = %d", n)
	}
	// Far above the limit a run ends before its jobs leave: λ = 10^6 and
	// 10^12 departed at 0 and pulled the mean to 1.5.
	l.Points = append(l.Points, pt(1e6, 0, sim.VerdictUnstable), pt(1e12, 0, sim.VerdictUnstable))
	if m, n := limit.SaturationThroughput(l); n != 2 || math.Abs(m-3) > 1e-12 {
		t.Errorf("with far-overloaded rates: got %v over %d, want 3 over 2 (λ ≤ 2·4 only)", m, n)
	}
}
