package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/msjfarm/msjfarm/plugins/quickswap/approx"
	"github.com/msjfarm/msjfarm/results/aggregate"
)

// msfqOverlay returns, for the mean and weighted mean response time plots,
// one curve per MSFQ series of a one-or-all workload with exponential sizes:
// the Quickswap paper's §5 approximation (approx.MSFQ) at each of the
// series' arrival rates, as Q Fig. 3 overlays it. It is drawn in the
// series' colour (while it has a free marker and dash: f.approxStyle)
// with another dash pattern and no error bars. Points where
// the approximation's premise fails (Result.Consistent false: light load,
// see package analysis) or that are beyond its stability bound are left out.
//
// The approximation is a function of the workload, the rates and the
// threshold, not of a campaign: overlaid campaigns of the same workload
// share one curve, labelled without a campaign's name. Each campaign drew
// its own, the same curve twice in the figure and in its legend.
func msfqOverlay(f *facet, m string) []curve {
	if m != "mean_response" && m != "weighted_mean_response" {
		return nil
	}
	var out []curve
	seen := map[string]int{} // the untagged label and points → index in out
	for i, s := range f.series {
		if s.policy != "msfq" {
			continue
		}
		c := curve{label: s.label + approxSuffix, style: f.approxStyle(i)}
		for _, p := range s.pts {
			v, ok := msfqApprox(p, m)
			if ok {
				c.add(p.ArrivalRate, v, 0, false)
			}
		}
		if len(c.x) == 0 {
			continue
		}
		c.sortByX()
		untagged := strings.TrimPrefix(s.label, s.tag+": ") + approxSuffix
		key := fmt.Sprint(untagged, c.x, c.mean)
		if j, ok := seen[key]; ok {
			out[j].label = untagged
			continue
		}
		seen[key] = len(out)
		out = append(out, c)
	}
	return out
}

// approxSuffix ends the label of an MSFQ series' approximation curve.
const approxSuffix = " — Q §5 approximation"

// msfqApprox evaluates the approximation at one point, if the point is a
// one-or-all system (a class of need 1 and one of need k) with exponential
// service.
func msfqApprox(p *aggregate.Point, m string) (float64, bool) {
	if len(p.Classes) != 2 || p.ArrivalRate <= 0 {
		return 0, false
	}
	light, heavy := p.Classes[0], p.Classes[1]
	if light.Need != 1 || heavy.Need != p.Servers || light.Service != "exp" || heavy.Service != "exp" ||
		light.ServiceMean <= 0 || heavy.ServiceMean <= 0 || light.Share+heavy.Share <= 0 {
		return 0, false
	}
	l := p.Servers - 1
	if v, ok := aggregate.Number(p.Params["threshold"]); ok && v >= 0 {
		l = int(v)
	}
	p1 := light.Share / (light.Share + heavy.Share)
	r, err := approx.MSFQ(p.Servers, l, p.ArrivalRate, p1, 1/light.ServiceMean, 1/heavy.ServiceMean)
	if err != nil || !r.Consistent {
		return 0, false
	}
	v := r.Overall
	if m == "weighted_mean_response" {
		v = r.Weighted
	}
	return v, !math.IsNaN(v) && !math.IsInf(v, 0)
}
