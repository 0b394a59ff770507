package aggregate

import (
	"regexp"
	"strings"

	"github.com/msjfarm/msjfarm/results/metric"
)

// Per-class policy counters: the one rule (Metric.ClassCounter).
//
// The SDK's convention says it: a policy reports a per-class counter as
// "<name>/<class>" (sdk.CounterDescriber: "a per-class counter
// name/class is described by the entry of name"), so a counter whose
// name is "<base>/<c>" with c one of the point's classes is per class,
// even for a single class. A counter named otherwise is per class only
// by the rule outputs used before the flag was recorded, kept for
// policies that spell the class into the name ("kills_small",
// "kills_large"): its column ends in "_<class>" (sanitized) for two or
// more of the point's classes with the same stem, the longest class name
// winning where two match. MSFQ's phase counters (counter_phase<z>_…)
// are never per class: they have their own figure.

// phaseColumn matches MSFQ's phase counters.
var phaseColumn = regexp.MustCompile(`^counter_phase\d+_`)

// markClassCounters sets ClassCounter, CounterClass and Base of the
// per-class counters among ms (the descriptions of the point's counter
// metrics, raw[i] being ms[i]'s name as the policy reported it).
func markClassCounters(ms []MetricDesc, raw []string, classes []Class) {
	names := make([]string, len(classes))
	for ci, c := range classes {
		names[ci] = metric.ClassName(ci, c.Name)
	}
	type member struct{ i, class int }
	stems := map[string][]member{}
	var order []string
	for i := range ms {
		if base, cls, ok := strings.Cut(raw[i], "/"); ok {
			for ci, n := range names {
				if cls == n {
					ms[i].ClassCounter, ms[i].CounterClass, ms[i].Base = true, ci, metric.CounterColumn(base)
					break
				}
			}
			continue
		}
		if stem, ci, ok := classSuffix(ms[i].Name, names); ok {
			if stems[stem] == nil {
				order = append(order, stem)
			}
			stems[stem] = append(stems[stem], member{i, ci})
		}
	}
	for _, stem := range order {
		g := stems[stem]
		distinct := map[int]bool{}
		for _, m := range g {
			distinct[m.class] = true
		}
		if len(distinct) < 2 {
			continue
		}
		for _, m := range g {
			ms[m.i].ClassCounter, ms[m.i].CounterClass, ms[m.i].Base = true, m.class, stem
		}
	}
}

// classSuffix splits counter column col into its stem and the class its
// "_<class>" suffix names (the longest match; ties to the first class).
func classSuffix(col string, classes []string) (stem string, class int, ok bool) {
	if phaseColumn.MatchString(col) {
		return "", -1, false
	}
	class, best := -1, ""
	for ci, n := range classes {
		s := metric.Sanitize(n)
		if s == "" {
			continue
		}
		s = "_" + s
		if strings.HasSuffix(col, s) && len(s) > len(best) && len(col)-len(s) > len(metric.CounterPrefix) {
			class, best = ci, s
		}
	}
	if class < 0 {
		return "", -1, false
	}
	return strings.TrimSuffix(col, best), class, true
}
