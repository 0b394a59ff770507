package wire

import (
	"math"
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// TestNonFinite: the path of the first NaN or infinity, by JSON name, or
// "" for a finite result.
func TestNonFinite(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(r *sim.Result)
		want string
	}{
		{"finite", func(*sim.Result) {}, ""},
		{"top level", func(r *sim.Result) { r.Utilization = math.NaN() }, "utilization (NaN)"},
		{"class", func(r *sim.Result) { r.Classes[1].MeanResponse = math.Inf(1) }, "classes[1].mean_response (+Inf)"},
		{"pointer", func(r *sim.Result) { r.Growth = &sim.Growth{Rate: math.Inf(-1)} }, "growth.rate (-Inf)"},
		{"counter", func(r *sim.Result) { r.Counters = []sim.Counter{{Name: "x", Value: math.NaN()}} }, "counters[0].value (NaN)"},
		{"series", func(r *sim.Result) { r.Series = []sim.Sample{{T: 1}, {T: math.NaN()}} }, "series[1].t (NaN)"},
	} {
		r := &sim.Result{Classes: make([]sim.ClassStats, 2)}
		c.edit(r)
		if got := NonFinite(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
