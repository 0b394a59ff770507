package serverfilling

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim/simtest"
)

// BenchmarkLoadsDivisor is BenchmarkLoads for the DivisorFilling members
// beside ServerFilling, on one-or-all (k = 32) at λ = 4 and λ = 7 (the
// rate of issue #35), 2·10^5 measured arrivals per replication. Borg cell B
// is not among them: its needs (3, 5, 2000, ...) do not all divide k = 2048,
// which DivisorFilling requires (Init rejects the workload).
func BenchmarkLoadsDivisor(b *testing.B) {
	cases := []simtest.BenchCase{
		{Name: "one-or-all/lambda=4", Workload: "one-or-all", Rate: 4, Arrivals: 200000},
		{Name: "one-or-all/lambda=7", Workload: "one-or-all", Rate: 7, Arrivals: 200000},
	}
	for _, sp := range Policies {
		if sp.Name != "serverfilling" && sp.Name[:min(len(sp.Name), 14)] != "divisorfilling" {
			continue
		}
		for _, bc := range cases {
			b.Run(sp.Name+"/"+bc.Name, func(b *testing.B) {
				benchL(b, simtest.Named(b, bc.Workload, bc.Rate), sp.New(), bc.Arrivals)
			})
		}
	}
}
