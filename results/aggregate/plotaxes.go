package aggregate

import (
	"sort"
	"strings"
)

// IsParamAxis reports whether axis a is a policy parameter (it then labels
// the series, not the x axis or the facet). The match ignores case: the
// sweep file's keys reach the axes lower-cased (kill-smart's K is the axis
// "k"), while the parameters keep the policy's spelling.
func IsParamAxis(pts []Point, a string) bool {
	for _, p := range pts {
		if _, in := p.Axes[a]; in && !hasParam(p.Params, a) {
			return false
		}
	}
	return true
}

func hasParam(params map[string]any, a string) bool {
	if _, ok := params[a]; ok {
		return true
	}
	for k := range params {
		if strings.EqualFold(k, a) {
			return true
		}
	}
	return false
}

// PlotAxes chooses the x axis a campaign's figures are drawn against and
// the other swept scenario axes, which split the points into facets (one
// figure each): x is arrival_rate if swept, else load, else the first
// other scenario axis by name, else load. The report draws its figures by
// it and the paired comparisons correct for multiplicity within its facets,
// so both agree on what "the points of a figure" are.
func PlotAxes(pts []Point) (x string, others []string) {
	set := map[string]bool{}
	for _, p := range pts {
		for a := range p.Axes {
			set[a] = true
		}
	}
	var scen []string
	for a := range set {
		if !IsParamAxis(pts, a) {
			scen = append(scen, a)
		}
	}
	sort.Strings(scen)
	switch {
	case set["arrival_rate"]:
		x = "arrival_rate"
	case set["load"]:
		x = "load"
	case len(scen) > 0:
		x = scen[0]
	default:
		x = "load"
	}
	for _, a := range scen {
		if a != x {
			others = append(others, a)
		}
	}
	return x, others
}
