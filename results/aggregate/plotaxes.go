package aggregate

import (
	"fmt"
	"slices"
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
// other scenario axis by name, else load; a scenario axis zipped with it
// (one value each way) replaces it, and never splits facets. The report draws its figures by
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
	// A scenario axis that determines x (b-fig1's servers, the load
	// following the Halfin-Whitt scaling; b-fig2b's, the load fixed) is the
	// x axis the paper plots: with x kept, every facet would hold one x
	// value. Axes it determines in turn (the zipped class needs) follow it
	// and split no facets.
	if nx := determiningAxis(pts, scen, x); nx != "" {
		x = nx
	}
	for _, a := range scen {
		if a != x && !determines(pts, x, a) {
			others = append(others, a)
		}
	}
	return x, others
}

// determiningAxis is the scenario axis other than x that determines x and
// every other scenario axis (servers first, else the first by name), ""
// for none.
func determiningAxis(pts []Point, scen []string, x string) string {
	var found []string
	for _, a := range scen {
		if a == x || !determines(pts, a, x) {
			continue
		}
		all := true
		for _, b := range scen {
			all = all && (b == a || determines(pts, a, b))
		}
		if all {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 0:
		return ""
	case slices.Contains(found, "servers"):
		return "servers"
	}
	return found[0]
}

// determines reports whether axis a takes more than one value and each of
// them goes with one value of b (b is a function of a: zipped with it, or
// fixed) at every point.
func determines(pts []Point, a, b string) bool {
	of := map[string]string{}
	for _, p := range pts {
		va, okA := p.Axes[a]
		if !okA {
			return false
		}
		kb := "\x00absent"
		if vb, okB := p.Axes[b]; okB {
			kb = fmt.Sprint(vb)
		}
		ka := fmt.Sprint(va)
		if w, seen := of[ka]; seen && w != kb {
			return false
		}
		of[ka] = kb
	}
	return len(of) > 1
}
