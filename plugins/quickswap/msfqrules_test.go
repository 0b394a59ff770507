package quickswap_test

import (
	"reflect"
	"testing"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/plugins/quickswap"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// rulesMSFQ is MSFQ's phase rules (see quickswap.MSFQ) applied the plain
// way: after every arrival and completion, run the rules until none fires,
// with the phase-time counters advanced first. quickswap.MSFQ skips the
// rules where none can fire and admits light jobs inline; it must take
// exactly these decisions and report exactly these counters.
type rulesMSFQ struct {
	l, k         int
	light, heavy sdk.FIFO
	n1, nk, run1 int
	phase        int

	on      bool // measuring
	last    float64
	time    [5]float64
	entries [5]int64
}

func (p *rulesMSFQ) Init(s *sdk.System) error {
	p.k = s.Servers()
	if p.l == -1 {
		p.l = p.k - 1
	}
	p.light.Reset()
	p.heavy.Reset()
	p.n1, p.nk, p.run1, p.phase = 0, 0, 0, 3
	p.on, p.last, p.time, p.entries = false, 0, [5]float64{}, [5]int64{}
	return nil
}

func (p *rulesMSFQ) StartMeasuring(s *sdk.System) {
	p.on, p.last = true, s.Now()
	p.time, p.entries = [5]float64{}, [5]int64{}
}

// advance credits the time since the previous event to the current phase
// while the window is open (it closes at an arrival with Measuring false).
func (p *rulesMSFQ) advance(s *sdk.System) {
	if !p.on {
		return
	}
	p.time[p.phase] += s.Now() - p.last
	p.last = s.Now()
	if !s.Measuring() {
		p.on = false
	}
}

func (p *rulesMSFQ) Arrive(s *sdk.System, j *sdk.Job) {
	p.advance(s)
	if j.Need() == 1 {
		p.n1++
		p.light.Push(j)
	} else {
		p.nk++
		p.heavy.Push(j)
	}
	p.rules(s)
}

func (p *rulesMSFQ) Complete(s *sdk.System, j *sdk.Job) {
	p.advance(s)
	if j.Need() == 1 {
		p.n1--
		p.run1--
	} else {
		p.nk--
	}
	p.rules(s)
}

func (p *rulesMSFQ) enter(z int) {
	p.phase = z
	if p.on {
		p.entries[z]++
	}
}

func (p *rulesMSFQ) admitLight(s *sdk.System) {
	for p.light.Len() > 0 && s.Free() > 0 {
		s.Start(p.light.Pop())
		p.run1++
	}
}

func (p *rulesMSFQ) rules(s *sdk.System) {
	for {
		switch p.phase {
		case 1:
			if p.nk == 0 {
				p.enter(2)
				continue
			}
			if p.heavy.Len() > 0 && s.Free() == p.k {
				s.Start(p.heavy.Pop())
			}
			return
		case 2:
			p.admitLight(s)
			if p.n1 < p.k {
				p.enter(3)
				continue
			}
			return
		case 3:
			p.admitLight(s)
			if p.n1 <= p.l && p.nk > 0 {
				p.enter(4)
				continue
			}
			return
		default:
			if p.run1 == 0 {
				p.enter(1)
				continue
			}
			return
		}
	}
}

// Counters reports the raw phase times and entries; the test compares
// them with MSFQ's derived counters recomputed from these.
func (p *rulesMSFQ) Counters() []sdk.Counter {
	var out []sdk.Counter
	for z := 1; z <= 4; z++ {
		out = append(out, sdk.Counter{Name: "time", Value: p.time[z]}, sdk.Counter{Name: "entries", Value: float64(p.entries[z])})
	}
	return out
}

// TestMSFQMatchesRules: MSFQ takes the plain rules' decisions, event for
// event, and reports bit-identical counters, over thresholds from MSF
// (ℓ = 0) to the default k−1, loads from light to near the stability
// limit (λ < 7.805 on one-or-all), several seeds, a warm-up (so that the
// counters' window opens mid-run), and the two-light-class workload of
// TestMSFQKinds.
func TestMSFQMatchesRules(t *testing.T) {
	two := &sim.Workload{Name: "two-light", Servers: 8, ArrivalRate: 2.5, Classes: []sim.Class{
		{Name: "light-a", Need: 1, Share: 0.5, Service: dist.Must(dist.NewExponential(1))},
		{Name: "heavy", Need: 8, Share: 0.2, Service: dist.Must(dist.NewExponential(1))},
		{Name: "light-b", Need: 1, Share: 0.3, Service: dist.Must(dist.NewHyperExp(2, 10))},
	}}
	type tc struct {
		w   *sim.Workload
		ell int
	}
	var cases []tc
	for _, rate := range []float64{3, 6, 7, 7.5} {
		for _, ell := range []int{0, 1, 10, 30, -1} {
			cases = append(cases, tc{simtest.Named(t, "one-or-all", rate), ell})
		}
	}
	cases = append(cases, tc{two, -1}, tc{two, 3})
	for _, c := range cases {
		for seed := uint64(1); seed <= 2; seed++ {
			cfg := sim.Config{Seed: seed, Warmup: 3000, Arrivals: 30000}
			ra, ea := simtest.Record(t, c.w, quickswap.NewMSFQ(c.ell), cfg)
			ref := &rulesMSFQ{l: c.ell}
			rb, eb := simtest.Record(t, c.w, ref, cfg)
			if !reflect.DeepEqual(ea, eb) {
				t.Fatalf("%s λ=%v ℓ=%d seed %d: decision traces differ", c.w.Name, c.w.ArrivalRate, c.ell, seed)
			}
			if !reflect.DeepEqual(withoutCounters(ra), withoutCounters(rb)) {
				t.Fatalf("%s λ=%v ℓ=%d seed %d: results differ", c.w.Name, c.w.ArrivalRate, c.ell, seed)
			}
			got := counters(ra)
			var total float64
			for z := 1; z <= 4; z++ {
				total += ref.time[z]
			}
			for z := 1; z <= 4; z++ {
				mean, frac := 0.0, 0.0
				if ref.entries[z] != 0 {
					mean = ref.time[z] / float64(ref.entries[z])
				}
				if total != 0 {
					frac = ref.time[z] / total
				}
				name := string(rune('0' + z))
				if got["phase"+name+"_mean"] != mean || got["phase"+name+"_fraction"] != frac {
					t.Fatalf("%s λ=%v ℓ=%d seed %d: phase %d counters %v, %v; rules give %v, %v", c.w.Name, c.w.ArrivalRate, c.ell, seed, z,
						got["phase"+name+"_mean"], got["phase"+name+"_fraction"], mean, frac)
				}
			}
			if got["cycles"] != float64(ref.entries[1]) {
				t.Fatalf("%s λ=%v ℓ=%d seed %d: cycles %v, rules %d", c.w.Name, c.w.ArrivalRate, c.ell, seed, got["cycles"], ref.entries[1])
			}
		}
	}
}
