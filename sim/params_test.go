package sim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestIntParamRange: an unbounded int parameter refuses a number past
// int's range, which int(f) turned into whatever the machine makes of it
// (−2⁶³ on amd64: a "count" of 1e300 was negative); within it, and at
// ±2⁵³ where float64 is still exact, the value is kept.
func TestIntParamRange(t *testing.T) {
	schema := []sim.Param{{Name: "n", Type: sim.Int, Default: 1}}
	for _, c := range []struct {
		v    any
		want int
		err  string
	}{
		{1e300, 0, `parameter "n": must be an integer within [`},
		{-1e300, 0, `parameter "n": must be an integer within [`},
		{math.Ldexp(1, 63), 0, `must be an integer within [`}, // 2⁶³: one past the most on 64-bit
		{float64(1 << 30), 1 << 30, ""},
		{-float64(1 << 30), -(1 << 30), ""},
	} {
		v, err := sim.Resolve(schema, map[string]any{"n": c.v})
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: err %v, want %q", c.v, err, c.err)
		case c.err == "" && (err != nil || v.Int("n") != c.want):
			t.Errorf("%v: %d, %v; want %d", c.v, v.Int("n"), err, c.want)
		}
	}
}
