package aggregate

import (
	"fmt"
	"testing"
)

// TestPlotAxesZipped: an axis that determines the load (b-fig1: servers
// zipped with load and the class needs, two servers counts sharing a
// load; b-fig2b: the load fixed) becomes the x axis and the axes it
// determines split no facets; a crossed sweep keeps arrival_rate as x and
// its other axis as facets.
func TestPlotAxesZipped(t *testing.T) {
	var b1, b2, crossed []Point
	ks := []int{32, 128, 256, 2048}
	loads := []float64{0.876256, 0.9125, 0.9125, 0.938128}
	for i, k := range ks {
		need := map[string]any{"servers": k, "class[0].need": k / 32}
		a1 := map[string]any{"load": loads[i]}
		a2 := map[string]any{"load": 0.8}
		for n, v := range need {
			a1[n], a2[n] = v, v
		}
		b1 = append(b1, Point{Axes: a1})
		b2 = append(b2, Point{Axes: a2})
		for _, lam := range []float64{1, 2} {
			crossed = append(crossed, Point{Axes: map[string]any{"servers": k, "arrival_rate": lam}})
		}
	}
	for _, c := range []struct {
		name   string
		pts    []Point
		x      string
		others string
	}{
		{"b-fig1", b1, "servers", "[]"},
		{"b-fig2b", b2, "servers", "[]"},
		{"crossed", crossed, "arrival_rate", "[servers]"},
	} {
		x, others := PlotAxes(c.pts)
		if x != c.x || fmt.Sprint(others) != c.others {
			t.Errorf("%s: x %q, others %v; want %q, %s", c.name, x, others, c.x, c.others)
		}
	}
}
