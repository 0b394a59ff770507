package balanced

import (
	"reflect"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestPsiParameter: ψ = 0 (the default) is the automatic choice of B eq. (2)
// bit for bit; a fixed ψ gives a_i = ⌊ψ c_i⌋ n_i. On the subcritical mix at
// k = 1024 (needs 10, 20, 40, 80; ϱ_i = 9.5, 40/3, 40/3, 40/3; ϱ = 49.5) c_i
// = (k/n_i)(ϱ_i/ϱ) = (19.65, 13.79, 6.896, 3.448); at ψ = 0.5 the floors are
// ⌊9.83⌋ = 9, ⌊6.90⌋ = 6, ⌊3.45⌋ = 3, ⌊1.72⌋ = 1, so a = (90, 120, 120, 80)
// and |H| = 1024 − 410 = 614.
func TestPsiParameter(t *testing.T) {
	w := subcritical(1024, 0.9)
	run := func(psi any) (*BalancedSplitting, *sim.Result) {
		p := &BalancedSplitting{}
		if err := sim.Configure(p, map[string]any{"psi": psi}); err != nil {
			t.Fatal(err)
		}
		r, err := sim.Run(w, p, sim.Config{Seed: 3, Warmup: 2000, Arrivals: 20000})
		if err != nil {
			t.Fatal(err)
		}
		return p, r
	}
	auto := &BalancedSplitting{pi: PiFCFS}
	ra, err := sim.Run(w, auto, sim.Config{Seed: 3, Warmup: 2000, Arrivals: 20000})
	if err != nil {
		t.Fatal(err)
	}
	p0, r0 := run(0)
	if !reflect.DeepEqual(ra.Overall, r0.Overall) || !reflect.DeepEqual(ra.Counters, r0.Counters) {
		t.Errorf("psi = 0 differs from the automatic choice:\n%+v\n%+v", ra.Overall, r0.Overall)
	}
	_, _, autoPsi := auto.Layout()
	if _, _, psi := p0.Layout(); psi != autoPsi || !(psi > 0.5 && psi <= 1) {
		t.Errorf("psi = 0 reports ψ = %v, automatic %v", psi, autoPsi)
	}
	p5, _ := run(0.5)
	a, h, psi := p5.Layout()
	if want := []int{90, 120, 120, 80}; !reflect.DeepEqual(a, want) || h != 614 || psi != 0.5 {
		t.Errorf("psi = 0.5: a = %v, |H| = %d, ψ = %v; want %v, 614, 0.5", a, h, psi, want)
	}
}

func TestPsiOutOfRange(t *testing.T) {
	for _, psi := range []any{-0.1, 1.5, 2} {
		err := sim.Configure(&BalancedSplitting{}, map[string]any{"psi": psi})
		if err == nil || !strings.Contains(err.Error(), "psi: must be in (0, 1]") {
			t.Errorf("psi = %v: err = %v, want the valid range named", psi, err)
		}
	}
}
