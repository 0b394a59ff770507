package sweep

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
)

// LimitSpec is a sweep file's limit: block. It replaces the arrival-rate
// axis: instead of a campaign over given rates, each policy variant's
// stability limit λ_max is searched (package sim/limit) between Lo and Hi,
// by rounds of Probes rates, each with the file's replications, until
// hi/lo − 1 ≤ RelTol. Every round is an ordinary campaign (one point per
// probe rate) run by the coordinator and workers, so its records are
// stored and reused by content like any other: running the file again
// replays the search from storage.
//
//	limit: {lo: 2, hi: 9, rel_tol: 0.02, probes: 3}
type LimitSpec struct {
	// Lo and Hi bracket the arrival rates searched (0: 0.05 and 1.5 times
	// the rate at offered load 1, the work-conserving bound).
	Lo float64 `mapstructure:"lo" json:"lo,omitempty"`
	Hi float64 `mapstructure:"hi" json:"hi,omitempty"`
	// RelTol ends the search once hi/lo − 1 ≤ RelTol (0: the growth
	// test's resolution at run.arrivals, LimitRelTol).
	RelTol float64 `mapstructure:"rel_tol" json:"rel_tol,omitempty"`
	// Probes is the number of rates evaluated per round inside the
	// current bracket (0: 3): each round divides the bracket's log width
	// by Probes+1, and its Probes × replications tasks run in parallel.
	Probes int `mapstructure:"probes" json:"probes,omitempty"`
}

// Limit search defaults.
const (
	DefaultLimitProbes = 3
	maxLimitProbes     = 64
)

// LimitResolution is the growth test's resolution at 10^6 measured
// arrivals (sim/limit): a bracket narrower than this is not more
// accurate, only more expensive. It scales like 1/√arrivals.
const LimitResolution = 0.0225

// LimitResolutionAt is the growth test's resolution for runs of arrivals
// measured arrivals: LimitResolution·√(10^6/arrivals).
func LimitResolutionAt(arrivals int64) float64 {
	return LimitResolution * math.Sqrt(1e6/float64(max(arrivals, 1)))
}

// LimitRelTol is the default tolerance of a limit search of runs of
// arrivals measured arrivals: the growth test's resolution there, rounded
// up to three significant digits (0.0225 at 10^6, 0.0504 at 2·10^5). A
// block without rel_tol searched to 0.02 whatever its run length, below
// the resolution of any run shorter than 1.27·10^6 arrivals, and
// `msjfarm limit FILE` then warned of a --rel-tol nobody had given.
func LimitRelTol(arrivals int64) float64 {
	res := LimitResolutionAt(arrivals)
	scale := math.Pow(10, 2-math.Floor(math.Log10(res)))
	return math.Ceil(res*scale-1e-9) / scale
}

var errLimitCampaign = errors.New("limit: a sweep file with a limit block is a stability-limit search, run by msjfarm run or msjfarm limit, not one campaign (remove limit: to sweep given rates)")

// LimitTarget is one policy variant whose λ_max a limit block searches.
type LimitTarget struct {
	// Label names the variant as the report's legends do ("msfq
	// threshold=31" when the file sweeps a parameter, else the policy
	// name).
	Label  string         `json:"label"`
	Policy string         `json:"policy"`
	Params map[string]any `json:"params"`
}

// LimitPlan is a validated limit block: the defaults filled in and the
// policy variants to search.
type LimitPlan struct {
	Lo, Hi, RelTol float64
	Probes         int
	// Rate1 is the arrival rate at offered load 1 (the work-conserving
	// bound drawn on the plots).
	Rate1   float64
	Targets []LimitTarget
}

// PlanLimit validates f's limit block against the catalogue and returns
// the search plan. Errors name the key.
func PlanLimit(f *File, cat Catalog) (*LimitPlan, error) {
	p, err := planLimit(f, cat)
	if err != nil {
		return nil, f.src.locate(err)
	}
	return p, nil
}

func planLimit(f *File, cat Catalog) (*LimitPlan, error) {
	if err := checkLimitFile(f); err != nil {
		return nil, err
	}
	if err := checkRun(f.Run); err != nil {
		return nil, err
	}
	base, _, err := baseWorkload(f)
	if err != nil {
		return nil, err
	}
	if err := checkCap(f, base.Servers); err != nil {
		return nil, err
	}
	unit, err := base.BuildArrivals(1, f.Interarrival, nil)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	p := limitBracket(f.Limit, 1/unit.Load(), f.Run.Arrivals)
	if p.Lo >= p.Hi {
		return nil, fmt.Errorf("limit.lo (%v) must be below limit.hi (%v)", p.Lo, p.Hi)
	}
	vs, err := policyVariants(f.Policies, cat)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		p.Targets = append(p.Targets, LimitTarget{Label: variantLabel(v), Policy: v.name, Params: v.params})
	}
	// Every probe is a campaign Expand validates; the first round's lowest
	// rate is checked here, so that a workload or parameter error is
	// reported before anything runs, naming the key.
	for _, t := range p.Targets {
		if _, err := Expand(ProbeFile(f, t, []float64{p.Lo}), cat); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkLimitFile checks the limit block's own keys and what a limit
// search excludes (a trace, precision, zip and axes).
func checkLimitFile(f *File) error {
	l := f.Limit
	if l == nil {
		return errors.New("limit: the sweep file has no limit block")
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case f.Name == "":
		return fmt.Errorf("name: required")
	case f.Replications < 1:
		return fmt.Errorf("replications: must be >= 1 (the replications per probe rate), got %d", f.Replications)
	case !finite(l.Lo) || l.Lo < 0:
		return fmt.Errorf("limit.lo: must be a positive arrival rate (0: 0.05 × the rate at load 1), got %v", l.Lo)
	case !finite(l.Hi) || l.Hi < 0:
		return fmt.Errorf("limit.hi: must be a positive arrival rate (0: 1.5 × the rate at load 1), got %v", l.Hi)
	case !finite(l.RelTol) || l.RelTol < 0 || l.RelTol >= 1:
		return fmt.Errorf("limit.rel_tol: must be a fraction in (0, 1), 0.02 for 2%% (0: the growth test's resolution at run.arrivals), got %v", l.RelTol)
	case l.Probes < 0 || l.Probes > maxLimitProbes:
		return fmt.Errorf("limit.probes: must be in [1, %d] (0: %d), got %d", maxLimitProbes, DefaultLimitProbes, l.Probes)
	case f.Trace != nil:
		return errors.New("limit: a replayed trace has fixed arrival times, there is no rate to search (remove trace or limit)")
	case f.Precision != nil:
		return errors.New("limit: precision is not supported with limit (replications is the number per probe rate)")
	case len(f.Zip) > 0:
		return errors.New("limit: zip is not supported with limit (the search sweeps the arrival rate itself)")
	}
	return limitAxesErr(f.Axes)
}

// limitAxesErr rejects any axis in a limit file, naming the arrival-rate
// axis the search replaces first.
func limitAxesErr(axes map[string][]any) error {
	if len(axes) == 0 {
		return nil
	}
	names := make([]string, 0, len(axes))
	for n := range axes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if n == "arrival_rate" || n == "load" {
			return fmt.Errorf("limit: replaces the arrival-rate axis: remove axes.%s (the search chooses the rates between limit.lo and limit.hi)", n)
		}
	}
	return fmt.Errorf("limit: axes.%s: a limit block searches one system; write one file per value of %s", names[0], names[0])
}

// limitBracket is the plan of block l with its defaults filled in, for a
// system whose rate at offered load 1 is rate1 and runs of arrivals.
func limitBracket(l *LimitSpec, rate1 float64, arrivals int64) *LimitPlan {
	p := &LimitPlan{Lo: l.Lo, Hi: l.Hi, RelTol: l.RelTol, Probes: l.Probes, Rate1: rate1}
	if p.Lo == 0 {
		p.Lo = 0.05 * p.Rate1
	}
	if p.Hi == 0 {
		p.Hi = 1.5 * p.Rate1
	}
	if p.RelTol == 0 {
		p.RelTol = LimitRelTol(arrivals)
	}
	if p.Probes == 0 {
		p.Probes = DefaultLimitProbes
	}
	return p
}

// variantLabel names a policy variant as the report's legends do: the
// policy, then its swept parameters in name order ("msfq threshold=31").
func variantLabel(v variant) string {
	label := v.name
	for _, k := range slices.Sorted(maps.Keys(v.axes)) {
		label += fmt.Sprintf(" %s=%v", k, v.axes[k])
	}
	return label
}

// ProbeFile is the sweep of one search round: f without its limit block,
// the target's policy variant only, and an arrival-rate axis of the round's
// rates. Its campaign id, like every task id, is a content hash: the same
// round of the same search is the same campaign.
func ProbeFile(f *File, t LimitTarget, rates []float64) *File {
	g := *f
	g.Limit, g.Profiles = nil, nil
	vals := make([]any, len(rates))
	for i, r := range rates {
		vals[i] = r
	}
	g.Axes = map[string][]any{"arrival_rate": vals}
	entry := map[string]any{"name": t.Policy}
	for k, v := range t.Params {
		entry[k] = v
	}
	g.Policies = []any{entry}
	if g.Description == "" {
		g.Description = "stability-limit search round of " + t.Label
	}
	return &g
}

// checkCap rejects a run.max_in_system too small to run at all, before
// any task is published: below the k servers the engine refuses every
// replication (sim.checkCap), so the whole campaign would fail. A swept
// servers axis is left to the engine's own check, per task.
func checkCap(f *File, servers int) error {
	m := f.Run.MaxInSystem
	if m <= 0 || servers <= 0 {
		return nil
	}
	if _, swept := f.Axes["servers"]; swept {
		return nil
	}
	if m < servers {
		return fmt.Errorf("run.max_in_system: %d is below the %d servers, too small to run at all (0: the engine's default, from its memory budget)", m, servers)
	}
	return nil
}
