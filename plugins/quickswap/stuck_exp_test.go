//go:build exp31

package quickswap

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

func TestStuckDump(t *testing.T) {
	w := simtest.Named(t, "borg-b", 4.25)
	p := NewStatic(-1, "", "")
	r, err := sim.Run(w, p, sim.Config{Seed: 7922, Warmup: 100000, Arrivals: 1000000})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("util %.4f insys %.0f\n", r.Utilization, r.MeanInSystem)
	fmt.Printf("cur=%d c=%d need=%d drain=%v totalRun=%d Total=%d\n", p.cur, p.c, p.g.Need[p.c], p.drain, p.totalRun, p.g.Total)
	for i := range p.g.Need {
		fmt.Printf("  group %d need %d n=%d run=%d q=%d slots=%d\n", i, p.g.Need[i], p.n[i], p.g.run[i], p.g.Q[i].Len(), p.slots[i])
	}
}
