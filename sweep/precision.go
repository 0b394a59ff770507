package sweep

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/results/metric"
)

// Precision is the optional sequential mode of a sweep (docs/design.md):
//
//	replications: 10            # the initial number per point
//	precision: {metric: mean_response, rel_half_width: 0.05, max_replications: 200, batch: 10}
//
// Whenever every replication of a point has finished and the relative
// half-width (half-width / |mean|) of the 95% Student-t interval of Metric
// over the point's replications is above RelHalfWidth, the coordinator adds
// Batch more replications to that point (replication indices continue where
// they stopped, so the new tasks are exactly those a sweep with more
// replications would have), until the target is met or the point has
// MaxReplications. Points are decided independently.
type Precision struct {
	// Metric is a summary metric stem (results/metric, COLUMNS.md): a
	// base metric such as mean_response or weighted_mean_response, a
	// per-class metric such as class1_heavy_mean_response, or a policy
	// counter counter_<name>.
	Metric string `mapstructure:"metric" json:"metric"`
	// RelHalfWidth is the target relative half-width, > 0 (0.05 = ±5%).
	RelHalfWidth float64 `mapstructure:"rel_half_width" json:"rel_half_width"`
	// MaxReplications caps the replications of a point (>= replications).
	MaxReplications int `mapstructure:"max_replications" json:"max_replications"`
	// Batch is the number of replications added per round (default 10).
	Batch int `mapstructure:"batch" json:"batch,omitempty"`
}

// DefaultBatch is the batch of a precision block without one.
const DefaultBatch = 10

// BatchSize is p.Batch, or DefaultBatch when unset.
func (p *Precision) BatchSize() int {
	if p.Batch > 0 {
		return p.Batch
	}
	return DefaultBatch
}

var counterMetric = regexp.MustCompile(`^counter_[a-z0-9]+(_[a-z0-9]+)*$`)

// classMetricNames are the per-class metric stems of a workload's classes,
// as the summary names them (class<i>_<sanitized name>_<metric>,
// results/metric).
func classMetricNames(classes []workload.ClassSpec) []string {
	var out []string
	for i, c := range classes {
		pre := metric.ClassPrefix(i, metric.ClassName(i, c.Name))
		for _, m := range metric.Class {
			out = append(out, pre+m.Name)
		}
	}
	return out
}

// checkPrecision validates a precision block against the initial number of
// replications and the workload's classes (nil for a trace, whose classes
// are known only from the results: any class metric is then accepted).
func checkPrecision(p *Precision, replications int, classes []workload.ClassSpec, trace bool) error {
	if p == nil {
		return nil
	}
	if p.Metric == "" {
		return fmt.Errorf("precision.metric: required (e.g. mean_response)")
	}
	ok := counterMetric.MatchString(p.Metric)
	for _, m := range metric.Base {
		ok = ok || p.Metric == m.Name
	}
	cls := classMetricNames(classes)
	for _, m := range cls {
		ok = ok || p.Metric == m
	}
	if trace && strings.HasPrefix(p.Metric, "class") {
		ok = true
	}
	if !ok {
		return fmt.Errorf("precision.metric: unknown metric %s (use one of %s, a class metric %s, or counter_<name>)",
			quoted(p.Metric), strings.Join(metric.BaseNames(), ", "), strings.Join(cls, ", "))
	}
	if !(p.RelHalfWidth > 0 && p.RelHalfWidth < 1) {
		// A fraction: "5" (meaning 5%) asked for ±500%, and the first
		// replications met it.
		return fmt.Errorf("precision.rel_half_width: must be a fraction in (0, 1) of the mean, 0.05 for ±5%%, got %v", p.RelHalfWidth)
	}
	if p.MaxReplications < replications {
		return fmt.Errorf("precision.max_replications: must be >= replications (%d, the initial number per point), got %d",
			replications, p.MaxReplications)
	}
	if p.Batch < 0 {
		return fmt.Errorf("precision.batch: must be >= 1 (default %d), got %d", DefaultBatch, p.Batch)
	}
	return nil
}

// Replicate returns replication r of t's point: the task Expand would
// produce for it with enough replications (same point, seed derived from
// campaignSeed exactly as Expand derives it, same id). The coordinator
// uses it to add replications in precision mode.
func Replicate(t Task, campaignSeed uint64, r int) Task {
	scenario := map[string]any{"workload": t.Workload, "arrival_rate": t.ArrivalRate,
		"interarrival": t.Interarrival, "trace": t.Trace}
	t.Replication = r
	t.Seed = deriveSeed(campaignSeed, r, scenario)
	t.ID = TaskID(t)
	return t
}
