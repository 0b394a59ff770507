package serverfilling

import (
	"fmt"
	"testing"
)

// TestEvictRunsH2: the fast path against the general path on the
// hyperexponential two-class workload of BenchmarkLevelsH2 (k = 2048) at
// the L = 1300 and L = 5000 rates, where a short wide job arriving ahead
// of M's end evicts runs of up to 128 running narrow jobs (evictRuns), the
// repair steps after a carried one evict without a pass (carriedRuns) and
// the job added ahead of M's last keeps the carry (carryAdd), with
// crossings on and off and both packing readings.
func TestEvictRunsH2(t *testing.T) {
	for _, rate := range []float64{125, 137} {
		for _, params := range []map[string]any{nil, {"crossings": false}, {"packing": PackingStop}} {
			c := equivCase{
				name: fmt.Sprintf("two-class-2048-h2@%g/%v", rate, params), w: twoClass2048H2(rate),
				o: SRPTOrder, params: params, arrivals: 5000, seed: 3,
			}
			t.Run(c.name, func(t *testing.T) { t.Parallel(); fastVsGeneral(t, c) })
		}
	}
}
