//go:build explore

package balanced

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/dist"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
	"github.com/msjfarm/msjfarm/stats"
	"github.com/msjfarm/msjfarm/workload"
)

func atLoad(t testing.TB, name string, k int, rho float64) *sim.Workload {
	s, err := workload.NamedFor(name, k)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Build(1)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EXPSVC") != "" {
		for i := range w.Classes {
			w.Classes[i].Service = dist.Must(dist.NewExponential(w.Classes[i].Service.Mean()))
		}
	}
	w.ArrivalRate = rho / w.Load()
	return w
}

func envInt(n string, d int) int {
	if v := os.Getenv(n); v != "" {
		x, _ := strconv.ParseFloat(v, 64)
		return int(x)
	}
	return d
}

// psiOne overrides the partition with ψ = 1.
type psiOne struct{ *BalancedSplitting }

func (p psiOne) Init(s *sim.System) error {
	err := p.BalancedSplitting.Init(s)
	k := s.Servers()
	cls := s.Classes()
	var tot float64
	d := make([]float64, len(cls))
	for i, c := range cls {
		d[i] = c.Share * c.Service.Mean() * float64(c.Need)
		tot += d[i]
	}
	used := 0
	for i, c := range cls {
		p.capA[i] = int(math.Floor(float64(k)/float64(c.Need)*d[i]/tot+1e-9)) * c.Need
		used += p.capA[i]
	}
	p.helpers = k - used
	return err
}

func TestExplore(t *testing.T) {
	reps := envInt("REPS", 5)
	arr := int64(envInt("ARR", 200000))
	type pt struct {
		name string
		k    int
		rho  float64
	}
	var pts []pt
	for _, s := range strings.Split(os.Getenv("PTS"), ";") {
		f := strings.Split(s, ",")
		k, _ := strconv.Atoi(f[1])
		r, _ := strconv.ParseFloat(f[2], 64)
		pts = append(pts, pt{f[0], k, r})
	}
	pols := strings.Split(os.Getenv("POLS"), ",")
	for _, p := range pts {
		w := atLoad(t, p.name, p.k, p.rho)
		for _, pol := range pols {
			var R, PH, PHS []float64
			unst := 0
			var lay string
			for seed := 1; seed <= reps; seed++ {
				var pp sim.Policy
				var bs *BalancedSplitting
				switch pol {
				case "bs":
					bs = &BalancedSplitting{}
					pp = bs
				case "bsff":
					bs = &BalancedSplitting{pi: PiFirstFit}
					pp = bs
				case "bs1":
					bs = &BalancedSplitting{}
					pp = psiOne{bs}
				case "fcfs":
					pp = &fcfs.FCFS{}
				}
				r, err := sim.Run(w, pp, sim.Config{Seed: uint64(seed), Warmup: arr / 10, Arrivals: arr, MaxInSystem: 200000})
				if err != nil {
					t.Fatal(err)
				}
				if r.Unstable {
					unst++
				}
				R = append(R, r.Overall.MeanResponse)
				if os.Getenv("CLS") != "" {
					for _, c := range r.Classes {
						fmt.Printf("   %s seed %d class need %d: n=%d T=%.4g W=%.4g PW=%.3f\n", pol, seed, c.Need, c.Count, c.MeanResponse, c.MeanWait, c.PWait)
					}
				}
				if bs != nil {
					PH = append(PH, counter(r.Counters, "p_helper"))
					PHS = append(PHS, counter(r.Counters, "p_helper_served"))
					a, h, psi := bs.Layout()
					lay = fmt.Sprintf("a=%v H=%d psi=%.4f", a, h, psi)
				}
			}
			ci := stats.MeanCI(R, 0.95)
			s := fmt.Sprintf("%s k=%d rho=%.4f %-5s: R=%9.4g ± %-8.2g unst=%d/%d", p.name, p.k, p.rho, pol, ci.Mean, ci.HalfWidth, unst, reps)
			if PH != nil {
				s += fmt.Sprintf(" PH=%.3f PHS=%.3f %s", stats.MeanCI(PH, .95).Mean, stats.MeanCI(PHS, .95).Mean, lay)
			}
			fmt.Println(s)
		}
	}
}

func TestExploreChecked(t *testing.T) {
	for _, c := range []struct {
		n   string
		k   int
		rho float64
	}{{"halfin-whitt", 32, 0.876}, {"sdsc-sp2", 512, 0.9}, {"kit-fh2", 512, 0.9}, {"halfin-whitt", 256, 0.95}} {
		w := atLoad(t, c.n, c.k, c.rho)
		for _, pi := range []string{PiFCFS, PiFirstFit} {
			p := &BalancedSplitting{pi: pi}
			cp := checked{p, t}
			_, evs := simtest.Record(t, w, cp, sim.Config{Seed: 3, Warmup: 1000, Arrivals: 50000, MaxInSystem: 100000})
			simtest.CheckInvariants(t, w, cp, evs, false)
		}
	}
}
