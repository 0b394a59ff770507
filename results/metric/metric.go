// Package metric is the one catalogue of the quantities a campaign
// summarises: for every metric its column stem, what it estimates and how
// it is read from one replication's sim.Result, plus how per-class and
// counter columns are named.
//
// It is a leaf (it imports only the engine's result type) so that both
// ends of a campaign read the same table: package sweep validates the
// metric a precision block names against it when a sweep file is parsed,
// and package aggregate computes the summary columns from it. Before this
// package the list existed twice, kept equal by a test.
package metric

import (
	"strconv"
	"strings"

	"github.com/msjfarm/msjfarm/sim"
)

// Def is one metric every summary point has.
type Def struct {
	// Name is the column stem ("mean_response").
	Name string
	// Doc says what the metric estimates and which sim.Result field holds
	// the per-replication value.
	Doc string
	// Value reads the metric from one replication; ok is false when the
	// replication did not measure it (for example no measured departure),
	// so the mean is taken over the replications that did.
	Value func(r *sim.Result) (v float64, ok bool)
}

// ClassDef is one per-class metric.
type ClassDef struct {
	// Name is the stem after the class prefix ("mean_wait").
	Name string
	// Doc is as in Def.
	Doc string
	// Value reads the metric from a class with at least one measured
	// departure (a class without one has no defined mean and is skipped by
	// the caller).
	Value func(c *sim.ClassStats) float64
}

func measured(r *sim.Result) bool { return r.Overall.Count > 0 }

// Base are the metrics every point has, in column order.
var Base = []Def{
	{"mean_response", "mean response time E[T] over all classes (Result.Overall.MeanResponse)",
		func(r *sim.Result) (float64, bool) { return r.Overall.MeanResponse, measured(r) }},
	{"weighted_mean_response", "weighted mean response time Σ(ρ_i/ρ)E[T_i] (Result.WeightedMeanResponse)",
		func(r *sim.Result) (float64, bool) { return r.WeightedMeanResponse, measured(r) }},
	{"mean_wait", "mean waiting time E[T] − E[size] per job (Result.Overall.MeanWait)",
		func(r *sim.Result) (float64, bool) { return r.Overall.MeanWait, measured(r) }},
	{"p_wait", "queueing probability P(wait > 0) (Result.Overall.PWait)",
		func(r *sim.Result) (float64, bool) { return r.Overall.PWait, measured(r) }},
	{"mean_in_system", "time-average number of jobs in system (Result.MeanInSystem)",
		func(r *sim.Result) (float64, bool) { return r.MeanInSystem, r.Window > 0 }},
	{"mean_in_queue", "time-average number of jobs waiting (Result.MeanInQueue)",
		func(r *sim.Result) (float64, bool) { return r.MeanInQueue, r.Window > 0 }},
	{"utilization", "fraction of server-time busy (Result.Utilization)",
		func(r *sim.Result) (float64, bool) { return r.Utilization, r.Window > 0 }},
	{"throughput", "departures per unit time (Result.Throughput)",
		func(r *sim.Result) (float64, bool) { return r.Throughput, r.Window > 0 }},
	{"jain", "Jain's fairness index over per-class mean response times (Result.Jain)",
		// 0 marks "not computed" in sim.
		func(r *sim.Result) (float64, bool) { return r.Jain, measured(r) && r.Jain > 0 }},
	{"preemptions", "number of preemptions in the window (Result.Preemptions)",
		func(r *sim.Result) (float64, bool) { return float64(r.Preemptions), true }},
	{"preempted_jobs", "number of measured jobs preempted at least once (Result.PreemptedJobs)",
		func(r *sim.Result) (float64, bool) { return float64(r.PreemptedJobs), true }},
	{"wasted_work", "server-time of discarded service under preemptive-restart (Result.WastedWork)",
		func(r *sim.Result) (float64, bool) { return r.WastedWork, true }},
}

// Class are the per-class metrics, in column order.
var Class = []ClassDef{
	{"mean_response", "mean response time of the class (Result.Classes[i].MeanResponse)",
		func(c *sim.ClassStats) float64 { return c.MeanResponse }},
	{"mean_wait", "mean waiting time of the class (Result.Classes[i].MeanWait)",
		func(c *sim.ClassStats) float64 { return c.MeanWait }},
	{"p_wait", "queueing probability of the class (Result.Classes[i].PWait)",
		func(c *sim.ClassStats) float64 { return c.PWait }},
}

// boundWhenUnstable are the metrics (base and class stems) whose
// finite-run mean is a lower bound at a point whose system is unstable or
// whose run was truncated: the times and numbers of jobs a queue that
// grows without bound drives up, and the probability of waiting, which
// rises with it; the jobs still inside at the end, never measured, are
// the ones that waited longest. The others are not bounds of anything:
// throughput and utilisation estimate the saturation values the system
// serves at (what a stability limit λ_max is), Jain's index is a ratio,
// and preemption counts and policy counters count the window.
var boundWhenUnstable = map[string]bool{
	"mean_response": true, "weighted_mean_response": true, "mean_wait": true, "p_wait": true,
	"mean_in_system": true, "mean_in_queue": true,
}

// BoundWhenUnstable reports whether metric base (a base metric, or a
// per-class metric's stem) is a lower bound at an unstable or truncated
// point (aggregate's reading rule); a policy counter never is.
func BoundWhenUnstable(base string) bool { return boundWhenUnstable[base] }

// BaseNames are the names of Base, in order.
func BaseNames() []string {
	out := make([]string, len(Base))
	for i, m := range Base {
		out[i] = m.Name
	}
	return out
}

// CounterPrefix prefixes policy counter names in column stems.
const CounterPrefix = "counter_"

// CounterColumn is the column stem of the policy counter named name.
func CounterColumn(name string) string { return CounterPrefix + Sanitize(name) }

// ClassName is the name a class is shown under: its own, or "class<i>"
// when it has none.
func ClassName(i int, name string) string {
	if name == "" {
		return "class" + strconv.Itoa(i)
	}
	return name
}

// ClassPrefix is the column prefix of class i named name: "class<i>_<name>_"
// ("class<i>_" if the sanitized name is empty).
func ClassPrefix(i int, name string) string {
	s := Sanitize(name)
	if s == "" {
		return "class" + strconv.Itoa(i) + "_"
	}
	return "class" + strconv.Itoa(i) + "_" + s + "_"
}

// Sanitize maps a class or counter name to a column-name fragment: lower
// case, runs of characters other than [a-z0-9] replaced by one "_", no
// leading or trailing "_" ("class-15" → "class_15", "P(H)" → "p_h").
func Sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
		} else {
			under = true
		}
	}
	return b.String()
}
