package serverfilling

import (
	"fmt"
	"testing"

	"github.com/msjfarm/msjfarm/sim/simtest"
)

// BenchmarkDivisorSRPTPathChoice: DivisorFilling-SRPT and -Gittins on their treap path
// (divisorsrpt.go) and on the general path, on two-class workloads of k
// servers with a need of k/4 (and some wider) beside need 1, and on
// one-or-all (k = 32), 10^5 measured arrivals (exponential durations:
// Gittins ranks constant, so both orders take the path): the measurements behind
// initDivSRPT's choice of the treap path wherever it applies.
func BenchmarkDivisorSRPTPathChoice(b *testing.B) {
	type wl struct {
		name    string
		k, wide int
	}
	cases := []wl{{"one-or-all", 32, 32}}
	for _, k := range []int{32, 64, 128, 256, 512, 2048} {
		cases = append(cases, wl{"two-class", k, k / 4})
	}
	cases = append(cases, wl{"two-class", 2048, 1024}, wl{"two-class", 2048, 2048}, wl{"two-class", 128, 128}, wl{"two-class", 128, 64})
	for _, c := range cases {
		w := twoClassWide(c.k, c.wide)
		if c.name == "one-or-all" {
			w = simtest.Named(b, "one-or-all", 7)
		}
		for _, o := range []Order{SRPTOrder, GittinsOrder} {
			for _, path := range []string{"treap", "general"} {
				b.Run(fmt.Sprintf("%s/k=%d/wide=%d/%s/%s", c.name, c.k, c.wide, orderName[o], path), func(b *testing.B) {
					p := New(o, DivisorFilling)
					p.general = path == "general"
					benchL(b, w, p, 100000)
				})
			}
		}
	}
}

// orderName names the orders in benchmark names.
var orderName = map[Order]string{SRPTOrder: "srpt", GittinsOrder: "gittins"}
