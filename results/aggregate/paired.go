package aggregate

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// Paired comparisons with common random numbers.
//
// Replication r of every policy at a scenario has the same seed (sweep:
// the seed is derived from the scenario without the policy), so it sees
// the same arrivals and job sizes. The difference A_r − B_r of a metric
// between a policy A and the baseline B then cancels the part of each
// run's noise the two share, and the Student-t interval over the pairs,
//
//	mean(A_r − B_r) ± t(0.975, n−1) · sd(A_r − B_r) / √n,
//
// is narrower than the interval of the difference of two independent means
// (Welch: t · √(s_A²/n + s_B²/n)) by the factor √(1 − ρ) for equal
// variances, ρ the correlation of A_r and B_r. Both are reported, so a
// reader sees what the common random numbers bought.
//
// The verdict (better, worse, indistinguishable) comes from the paired
// t-test of mean(A_r − B_r) = 0, its p-value adjusted by Holm's step-down
// method within each family: the points of one figure (one facet: same
// workload and scenario axes other than the x axis) for one metric, every
// non-baseline series at every x. A verdict other than indistinguishable
// therefore holds at family-wise error rate 1 − Level = 5% across the
// figure. The confidence intervals printed are the unadjusted 95% ones.

// Verdicts of a paired comparison (Paired.Verdict).
const (
	CmpBetter            = "better"            // significantly better than the baseline
	CmpWorse             = "worse"             // significantly worse
	CmpHigher            = "higher"            // significantly higher (a metric without a better direction)
	CmpLower             = "lower"             // significantly lower
	CmpIndistinguishable = "indistinguishable" // the difference is within the noise at the corrected level
	CmpBaseline          = "baseline"          // this point is the baseline
	CmpUndefined         = "undefined"         // no comparison: Note says why
)

// lowerIsBetter and higherIsBetter give the metrics (by Metric.Base) a
// better direction; the others (utilisation, throughput, policy counters)
// are compared as higher or lower.
var (
	lowerIsBetter = map[string]bool{"mean_response": true, "weighted_mean_response": true, "mean_wait": true,
		"p_wait": true, "mean_in_system": true, "mean_in_queue": true, "preemptions": true,
		"preempted_jobs": true, "wasted_work": true}
	higherIsBetter = map[string]bool{"jain": true}
)

// Comparison is a point's paired comparison with the baseline at its
// scenario.
type Comparison struct {
	// Baseline is the label (Labels) of the baseline series.
	Baseline string `json:"baseline"`
	// BaselinePoint is the id of the baseline's point at this scenario
	// ("" when there is none).
	BaselinePoint string `json:"baseline_point,omitempty"`
	// IsBaseline marks the baseline's own points.
	IsBaseline bool `json:"is_baseline,omitempty"`
	// Undefined, when not empty, says why the point has no comparison:
	// its means or the baseline's are bounds (an unstable or truncated
	// point), or the baseline has no point at this scenario.
	Undefined string `json:"undefined,omitempty"`
	// Metrics are the comparisons by metric, in the point's metric order
	// (empty when Undefined or IsBaseline).
	Metrics []Paired `json:"metrics,omitempty"`
}

// Paired is the paired comparison of one metric with the baseline.
type Paired struct {
	// Name is the metric's column stem (Metric.Name).
	Name string
	// N is the number of pairs: replications of the point and of the
	// baseline with the same replication index and seed that both
	// measured the metric.
	N int
	// Diff is mean(A_r − B_r); DiffHW the half-width of its 95%
	// Student-t interval over the N pairs.
	Diff, DiffHW float64
	// UnpairedHW is the half-width the same difference would have from
	// independent samples (Welch's interval over the same replications):
	// UnpairedHW / DiffHW is the narrowing the common random numbers
	// bought.
	UnpairedHW float64
	// RelDiff is mean(A) / mean(B) − 1, the relative difference of the
	// means (NaN when the baseline's mean is 0; its sign is Diff's), and
	// [RelDiffLo, RelDiffHi] its 95% interval by Fieller's method, the
	// inversion of the paired t-test (relDiff): asymmetric about RelDiff,
	// and containing 0 exactly when the unadjusted paired t-test does not
	// reject. An end is −Inf or +Inf where the interval is unbounded (the
	// baseline's own 95% interval contains 0: Note says so);
	// both NaN where there is no interval.
	RelDiff, RelDiffLo, RelDiffHi float64
	// P is the two-sided p-value of the paired t-test of Diff = 0, PHolm
	// that p-value adjusted by Holm's method within the metric's family
	// (the points of one figure).
	P, PHolm float64
	// Verdict is one of the Cmp constants; Note says why a verdict is
	// undefined.
	Verdict, Note string
}

type jsonPaired struct {
	Name       string   `json:"name"`
	N          int      `json:"n"`
	Diff       *float64 `json:"diff"`
	DiffHW     *float64 `json:"diff_hw"`
	UnpairedHW *float64 `json:"unpaired_hw"`
	RelDiff    *float64 `json:"rel_diff"`
	RelDiffLo  *float64 `json:"rel_diff_lo"`
	RelDiffHi  *float64 `json:"rel_diff_hi"`
	P          *float64 `json:"p"`
	PHolm      *float64 `json:"p_holm"`
	Verdict    string   `json:"verdict"`
	Note       string   `json:"note,omitempty"`
	// LegacyHW is the delta-method half-width summaries written before
	// Fieller's interval carried (rel_diff_hw): read only, to tell such a
	// summary's absent interval from an unbounded one.
	LegacyHW json.RawMessage `json:"rel_diff_hw,omitempty"`
}

// MarshalJSON encodes NaN and ±Inf as null, like Metric: a null
// rel_diff_lo or rel_diff_hi beside a number in rel_diff is an unbounded
// end (−∞, +∞).
func (c Paired) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonPaired{Name: c.Name, N: c.N, Diff: finitePtr(c.Diff), DiffHW: finitePtr(c.DiffHW),
		UnpairedHW: finitePtr(c.UnpairedHW), RelDiff: finitePtr(c.RelDiff), RelDiffLo: finitePtr(c.RelDiffLo),
		RelDiffHi: finitePtr(c.RelDiffHi), P: finitePtr(c.P), PHolm: finitePtr(c.PHolm), Verdict: c.Verdict, Note: c.Note})
}

// UnmarshalJSON reads what MarshalJSON wrote (null as NaN; a null end of
// a defined relative difference's interval as −Inf or +Inf). A summary
// written before Fieller's interval (rel_diff_hw, the delta method's
// half-width, which overstated the evidence: see relDiff) reads with no
// interval (NaN ends).
func (c *Paired) UnmarshalJSON(b []byte) error {
	var j jsonPaired
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	f := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*c = Paired{Name: j.Name, N: j.N, Diff: f(j.Diff), DiffHW: f(j.DiffHW), UnpairedHW: f(j.UnpairedHW),
		RelDiff: f(j.RelDiff), RelDiffLo: f(j.RelDiffLo), RelDiffHi: f(j.RelDiffHi), P: f(j.P), PHolm: f(j.PHolm),
		Verdict: j.Verdict, Note: j.Note}
	if finite(c.RelDiff) && len(j.LegacyHW) == 0 && c.N >= 2 {
		if j.RelDiffLo == nil {
			c.RelDiffLo = math.Inf(-1)
		}
		if j.RelDiffHi == nil {
			c.RelDiffHi = math.Inf(1)
		}
	}
	return nil
}

// Paired returns the comparison of the metric named name, if the point has
// one.
func (c *Comparison) Paired(name string) (Paired, bool) {
	if c == nil {
		return Paired{}, false
	}
	for _, m := range c.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Paired{}, false
}

// Verdict is the comparison's verdict for the metric named name: baseline,
// undefined (with the reason) or the metric's own verdict.
func (c *Comparison) Verdict(name string) (verdict, note string) {
	switch {
	case c == nil:
		return "", ""
	case c.IsBaseline:
		return CmpBaseline, ""
	case c.Undefined != "":
		return CmpUndefined, c.Undefined
	}
	if m, ok := c.Paired(name); ok {
		return m.Verdict, m.Note
	}
	return CmpUndefined, "the metric was not measured here or at the baseline"
}

// resolveBaseline is the label of the baseline series named by baseline:
// a label of pts (case-insensitive), else a policy name (its first
// series), else, when baseline is empty, the first point's series (the
// sweep's first policy: points come in the sweep's order).
func resolveBaseline(pts []Point, labels []string, baseline string) (string, error) {
	if len(pts) == 0 {
		return "", nil
	}
	b := strings.TrimSpace(baseline)
	if b == "" {
		return labels[0], nil
	}
	for _, l := range labels {
		if strings.EqualFold(l, b) {
			return l, nil
		}
	}
	for i, p := range pts {
		if strings.EqualFold(p.Policy, b) {
			return labels[i], nil
		}
	}
	seen := map[string]bool{}
	var have []string
	for _, l := range labels {
		if !seen[l] {
			seen[l] = true
			have = append(have, l)
		}
	}
	return "", fmt.Errorf("comparison baseline %q: no policy or series of that name (series: %s)", baseline, strings.Join(have, ", "))
}

// FamilyKey is the figure a point is drawn in: its workload and the values
// of the scenario axes other than the x axis (PlotAxes), the facet of the
// report. Holm's correction runs over the points sharing it.
func FamilyKey(p *Point, others []string) string {
	parts := []string{p.Workload}
	for _, a := range others {
		s := "–"
		if v, ok := p.Axes[a]; ok {
			s = formatAny(v)
		}
		parts = append(parts, a+"="+s)
	}
	return strings.Join(parts, "\x00")
}

// Compare sets every point's Comparison against the baseline series named
// by baseline (see resolveBaseline; "" is the first policy), from the
// replications Summarize kept. Summarize calls it with ""; a caller that
// knows the sweep's compare block calls it again with its baseline. Points
// decoded from summary.json carry no replications: their comparisons are
// left as they are.
func Compare(pts []Point, baseline string) error {
	base, err := BaselineLabel(pts, baseline)
	if err != nil {
		return err
	}
	for i := range pts {
		if pts[i].recs == nil && pts[i].N > 0 {
			return nil // decoded points: no replications to pair
		}
	}
	return comparePaired(pts, base, func(idx []int) (map[int][]*record.Record, error) {
		out := make(map[int][]*record.Record, len(idx))
		for _, i := range idx {
			out[i] = pts[i].recs
		}
		return out, nil
	})
}

// ComparePaired is Compare for points summarised without their records
// (SummarizePoint): load returns the records of the replications of the
// points it is given (by index in pts; failed ones are skipped). It is
// called once per scenario, with the points that scenario compares and
// its baseline point, so that a caller streaming a large campaign holds
// one scenario's records at a time. An error from load is returned.
func ComparePaired(pts []Point, baseline string, load func(points []int) (map[int][]*record.Record, error)) error {
	base, err := BaselineLabel(pts, baseline)
	if err != nil {
		return err
	}
	return comparePaired(pts, base, load)
}

// BaselineLabel is the label of the series baseline names in pts (see
// resolveBaseline), or an error naming the series there are.
func BaselineLabel(pts []Point, baseline string) (string, error) {
	return resolveBaseline(pts, Labels(pts), baseline)
}

// comparePaired sets the comparisons against series base, pairing the
// replications load returns a scenario at a time, then runs Holm's
// correction over each family.
func comparePaired(pts []Point, base string, load func(points []int) (map[int][]*record.Record, error)) error {
	labels := Labels(pts)
	byScenario := map[string]int{}
	for i, l := range labels {
		if l == base {
			if _, dup := byScenario[pts[i].Scenario]; !dup {
				byScenario[pts[i].Scenario] = i
			}
		}
	}
	// The points to pair, by scenario (in the points' order).
	pairs := map[int][]int{} // baseline point → points compared with it
	var order []int
	for i := range pts {
		p := &pts[i]
		c := &Comparison{Baseline: base}
		p.Compare = c
		bi, ok := byScenario[p.Scenario]
		if !ok {
			c.Undefined = "the baseline has no point at this scenario"
			continue
		}
		if bi == i {
			c.IsBaseline = true
			continue
		}
		c.BaselinePoint = pts[bi].Point
		if c.Undefined = unpairable(p, &pts[bi]); c.Undefined != "" {
			continue
		}
		if _, seen := pairs[bi]; !seen {
			order = append(order, bi)
		}
		pairs[bi] = append(pairs[bi], i)
	}
	for _, bi := range order {
		idx := append([]int{bi}, pairs[bi]...)
		recs, err := load(idx)
		if err != nil {
			return fmt.Errorf("reading the replications to pair: %w", err)
		}
		for _, i := range pairs[bi] {
			pts[i].Compare.Metrics = pairMetrics(&pts[i], &pts[bi], succeeded(recs[i]), succeeded(recs[bi]))
		}
	}
	_, others := PlotAxes(pts)
	holm(pts, others)
	return nil
}

// unpairable says why point p cannot be compared with its baseline b
// ("" when it can): a mean that is a bound is not an estimate.
func unpairable(p, b *Point) string {
	switch {
	// Said, not left for the metrics' notes: summary.csv's compare_note
	// was empty for a baseline whose replications had all failed.
	case b.N == 0:
		return fmt.Sprintf("the baseline has no successful replication at this scenario (%d failed)", b.NFailed)
	case p.N == 0:
		return fmt.Sprintf("this point has no successful replication (%d failed)", p.NFailed)
	case p.Unstable() && b.Unstable():
		return "both this point's and the baseline's means are bounds (unstable or truncated), not estimates"
	case p.Unstable():
		return "this point's means are bounds (unstable or truncated), not estimates"
	case b.Unstable():
		return "the baseline's means are bounds (unstable or truncated), not estimates"
	}
	return ""
}

// succeeded are the records of rs that have a result (the replications a
// point's metrics are estimated from).
func succeeded(rs []*record.Record) []*record.Record {
	out := make([]*record.Record, 0, len(rs))
	for _, r := range rs {
		if r != nil && !r.Failed() {
			out = append(out, r)
		}
	}
	return out
}

// pairKey matches the replications of two policies that saw the same jobs.
type pairKey struct {
	rep  int
	seed uint64
}

func repValues(p *Point, recs []*record.Record) map[pairKey]map[string]float64 {
	out := make(map[pairKey]map[string]float64, len(recs))
	for _, r := range recs {
		out[pairKey{r.Task.Replication, r.Task.Seed}] = replicationValues(p, r)
	}
	return out
}

// pairMetrics compares every metric of p with the same metric of b over
// the pairs of replications (pr are p's successful replications, br b's).
func pairMetrics(p, b *Point, pr, br []*record.Record) []Paired {
	pv, bv := repValues(p, pr), repValues(b, br)
	keys := make([]pairKey, 0, len(pv))
	for k := range pv {
		if _, ok := bv[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].rep < keys[j].rep })
	out := make([]Paired, 0, len(p.Metrics))
	for _, m := range p.Metrics {
		var a, c []float64
		for _, k := range keys {
			x, ok1 := pv[k][m.Name]
			y, ok2 := bv[k][m.Name]
			if ok1 && ok2 {
				a, c = append(a, x), append(c, y)
			}
		}
		out = append(out, pairOf(m.Name, m.Base, a, c))
	}
	return out
}

// pairOf is the paired comparison of the samples a (the point) and b (the
// baseline), a[i] and b[i] from the same replication.
func pairOf(name, base string, a, b []float64) Paired {
	nan := math.NaN()
	c := Paired{Name: name, N: len(a), Diff: nan, DiffHW: nan, UnpairedHW: nan, RelDiff: nan, RelDiffLo: nan,
		RelDiffHi: nan, P: nan, PHolm: nan, Verdict: CmpUndefined}
	if len(a) < 2 {
		c.Note = fmt.Sprintf("%d paired replications: a paired interval needs 2", len(a))
		if len(a) == 1 {
			c.Diff = a[0] - b[0]
		}
		return c
	}
	n := len(a)
	d := make([]float64, n)
	for i := range a {
		d[i] = a[i] - b[i]
	}
	ds := stats.MeanCI(d, Level)
	c.Diff, c.DiffHW = ds.Mean, ds.HalfWidth
	as, bs := stats.MeanCI(a, Level), stats.MeanCI(b, Level)
	if bs.Mean != 0 {
		r := relDiff(a, b, ds.Mean, as.Mean, bs.Mean)
		c.RelDiff, c.RelDiffLo, c.RelDiffHi = r.rel, r.lo, r.hi
		if r.excl {
			// The set is two half-lines: reported, and printed, as
			// unbounded (its convex hull).
			c.RelDiffLo, c.RelDiffHi = math.Inf(-1), math.Inf(1)
		}
		if math.IsInf(c.RelDiffLo, 0) || math.IsInf(c.RelDiffHi, 0) {
			c.Note = "the baseline's own 95% interval contains 0: the relative difference's interval is unbounded"
		}
	} else {
		c.Note = "the baseline's mean is 0: no relative difference"
	}
	c.UnpairedHW = welchHalfWidth(as.StdDev, bs.StdDev, n)
	switch se := ds.StdDev / math.Sqrt(float64(n)); {
	case se > 0:
		c.P = stats.TTwoSided(ds.Mean/se, n-1)
	case ds.Mean == 0:
		c.P = 1 // identical in every replication
	default:
		c.P = 0 // the same nonzero difference in every replication
	}
	return c
}

// relSet is the 95% confidence set of a relative difference by Fieller's
// method (relDiff): [lo, hi] (an end infinite for a half-line, both for
// the whole line), or, when excl, the two half-lines (−∞, lo] ∪ [hi, ∞).
type relSet struct {
	rel, lo, hi float64
	excl        bool
}

// contains says whether x is in the set.
func (s relSet) contains(x float64) bool {
	if s.excl {
		return x <= s.lo || x >= s.hi
	}
	return s.lo <= x && x <= s.hi
}

// relDiff is the relative difference of the means of the pairs (a[i],
// b[i]), whose differences have mean dm, a's mean am and b's bm (not 0):
// dm/bm, that is R̂ − 1 with R̂ = am/bm, and its 95% confidence set by
// Fieller's method for the ratio ρ = E[A]/E[B] of paired means: the ρ the
// paired t-test of mean(A_r − ρ·B_r) = 0 does not reject,
//
//	|ā − ρ·b̄| ≤ t · sd(a_r − ρ·b_r)/√n,  t = t(0.975, n−1),
//
// that is, with q = t²/n and s the sample (co)variances,
//
//	(b̄² − q·s_bb)·ρ² − 2(ā·b̄ − q·s_ab)·ρ + (ā² − q·s_aa) ≤ 0,
//
// shifted by −1. At ρ = 1 the test is the paired t-test of the verdict
// (unadjusted): the set contains 0 exactly when that test does not reject
// at 5%. It is solved in δ = ρ − R̂, with e_r = a_r − R̂·b_r (mean 0),
//
//	(b̄² − q·s_bb)·δ² + 2q·s_eb·δ − q·s_ee ≤ 0,
//
// whose discriminant q²s_eb² + (b̄² − q·s_bb)·q·s_ee is not negative when
// the leading coefficient is positive (b̄'s own 95% interval excludes 0):
// the set is then an interval about R̂, asymmetric unless s_eb = 0. When b̄'s
// interval contains 0 the set is unbounded: the whole line, a half-line
// (leading coefficient exactly 0), or two half-lines (excl).
//
// It was the delta method's R̂ − 1 ± t·sd(a_r − R̂·b_r)/(√n·|b̄|), a
// linearisation of a/b about b̄ that holds only while b̄'s own relative
// error is small; near saturation it is not. Killsmart K=7 ν=19 against
// FCFS at λ = 1.4 (6 replications of 2·10⁴ arrivals; b̄ = 169 ± 83) read
// −73.0% ± 8.6% where the ratios the paired t-test accepts run from −78.8%
// to −56.4%: the end toward 0 twice as far. And the symmetric interval
// could exclude 0 where the test of the verdict did not reject (a = (1, 1,
// 1), b = (2, 3, 4): −66.7% ± 27.6%, p = 0.074), overstating the
// evidence. Before that it was the mean of the ratios a_r/b_r − 1, which a
// few pairs with a small b_r dominate (nmsr against msf at λ = 7.3 read
// +14.5% where the means were 8.8% apart the other way). The ratio of the
// means is what "12% lower E[T]" means, its sign is the difference's, and
// it needs only the baseline's mean to be nonzero, not every
// replication's (a policy counter is 0 in some).
func relDiff(a, b []float64, dm, am, bm float64) relSet {
	n := len(a)
	r := am / bm
	rel := dm / bm
	e := make([]float64, n)
	for i := range a {
		e[i] = a[i] - r*b[i]
	}
	em := 0.0
	for _, x := range e {
		em += x
	}
	em /= float64(n)
	var see, seb, sbb float64
	for i := range e {
		de, db := e[i]-em, b[i]-bm
		see += de * de
		seb += de * db
		sbb += db * db
	}
	see, seb, sbb = see/float64(n-1), seb/float64(n-1), sbb/float64(n-1)
	t := stats.TQuantile((1+Level)/2, n-1)
	q := t * t / float64(n)
	qa, qb, qc := bm*bm-q*sbb, q*seb, -q*see // qa·δ² + 2qb·δ + qc ≤ 0
	inf := math.Inf(1)
	if qa == 0 {
		switch {
		case qb > 0:
			return relSet{rel: rel, lo: -inf, hi: rel - qc/(2*qb)}
		case qb < 0:
			return relSet{rel: rel, lo: rel - qc/(2*qb), hi: inf}
		}
		return relSet{rel: rel, lo: -inf, hi: inf}
	}
	disc := qb*qb - qa*qc
	if disc <= 0 {
		if qa > 0 { // only s_ee = s_eb = 0: the single point R̂
			return relSet{rel: rel, lo: rel, hi: rel}
		}
		return relSet{rel: rel, lo: -inf, hi: inf}
	}
	// The roots without cancellation: s/qa and qc/s (their product qc/qa).
	s := -qb - math.Copysign(math.Sqrt(disc), qb)
	d1, d2 := s/qa, qc/s
	lo, hi := rel+math.Min(d1, d2), rel+math.Max(d1, d2)
	return relSet{rel: rel, lo: lo, hi: hi, excl: qa < 0}
}

// welchHalfWidth is the 95% half-width of the difference of two
// independent means of n observations each with standard deviations sa and
// sb, with the Welch–Satterthwaite degrees of freedom (rounded down).
func welchHalfWidth(sa, sb float64, n int) float64 {
	va, vb := sa*sa/float64(n), sb*sb/float64(n)
	se := math.Sqrt(va + vb)
	if se == 0 {
		return 0
	}
	df := (va + vb) * (va + vb) / (va*va/float64(n-1) + vb*vb/float64(n-1))
	return stats.TQuantile((1+Level)/2, max(1, int(df))) * se
}

// holm adjusts the p-values of every family (FamilyKey × metric) by Holm's
// step-down method and sets the verdicts: with the m p-values of a family
// sorted, p₍₁₎ ≤ … ≤ p₍ₘ₎, the adjusted p₍ⱼ₎ is max over i ≤ j of
// min(1, (m − i + 1)·p₍ᵢ₎); a difference is significant when its adjusted
// p-value is below 1 − Level.
func holm(pts []Point, others []string) {
	type ref struct{ point, metric int }
	fams := map[string][]ref{}
	var order []string
	for i := range pts {
		c := pts[i].Compare
		if c == nil {
			continue
		}
		fk := FamilyKey(&pts[i], others)
		for mi, m := range c.Metrics {
			if math.IsNaN(m.P) {
				continue
			}
			k := fk + "\x01" + m.Name
			if _, ok := fams[k]; !ok {
				order = append(order, k)
			}
			fams[k] = append(fams[k], ref{i, mi})
		}
	}
	alpha := 1 - Level
	for _, k := range order {
		rs := fams[k]
		sort.SliceStable(rs, func(a, b int) bool {
			return pts[rs[a].point].Compare.Metrics[rs[a].metric].P < pts[rs[b].point].Compare.Metrics[rs[b].metric].P
		})
		m := len(rs)
		run := 0.0
		for j, r := range rs {
			c := &pts[r.point].Compare.Metrics[r.metric]
			run = math.Max(run, math.Min(1, float64(m-j)*c.P))
			c.PHolm = run
			c.Verdict = verdictOf(c, pts[r.point].metricBase(c.Name), alpha)
		}
	}
}

func (p *Point) metricBase(name string) string {
	if m, ok := p.Metric(name); ok {
		return m.Base
	}
	return name
}

func verdictOf(c *Paired, base string, alpha float64) string {
	if !(c.PHolm < alpha) {
		return CmpIndistinguishable
	}
	lower := c.Diff < 0
	switch {
	case lowerIsBetter[base]:
		if lower {
			return CmpBetter
		}
		return CmpWorse
	case higherIsBetter[base]:
		if lower {
			return CmpWorse
		}
		return CmpBetter
	case lower:
		return CmpLower
	}
	return CmpHigher
}

// PairedWideColumns are summary.csv's comparison columns: baseline (the
// baseline series' label), compare_note (why the point has no comparison)
// and, per metric stem m, m_rel_diff, m_rel_diff_lo, m_rel_diff_hi and
// m_cmp (see COLUMNS.md).
func pairedWideColumns(mcols []Metric) []Column {
	cols := []Column{{"baseline", String}, {"compare_note", String}}
	for _, m := range mcols {
		cols = append(cols, Column{m.Name + "_rel_diff", Float}, Column{m.Name + "_rel_diff_lo", Float},
			Column{m.Name + "_rel_diff_hi", Float}, Column{m.Name + "_cmp", String})
	}
	return cols
}

func pairedWideCells(p *Point, mcols []Metric) []any {
	c := p.Compare
	base, note := "", ""
	if c != nil {
		base, note = c.Baseline, c.Undefined
	}
	row := []any{base, note}
	for _, m := range mcols {
		pm, _ := c.Paired(m.Name)
		v, _ := c.Verdict(m.Name)
		if _, has := p.Metric(m.Name); !has {
			v = ""
		}
		if pm.Name == "" {
			pm.RelDiff, pm.RelDiffLo, pm.RelDiffHi = math.NaN(), math.NaN(), math.NaN()
		}
		row = append(row, pm.RelDiff, pm.RelDiffLo, pm.RelDiffHi, v)
	}
	return row
}

// PairedLongColumns are summary_long's comparison columns, after
// LongColumns (see COLUMNS.md).
var PairedLongColumns = []Column{{"baseline", String}, {"pairs", Int}, {"diff", Float}, {"diff_hw", Float},
	{"unpaired_hw", Float}, {"rel_diff", Float}, {"rel_diff_lo", Float}, {"rel_diff_hi", Float}, {"p_holm", Float},
	{"comparison", String}, {"comparison_note", String}}

func pairedLongCells(p *Point, name string) []any {
	c := p.Compare
	pm, ok := c.Paired(name)
	if !ok {
		nan := math.NaN()
		pm = Paired{Diff: nan, DiffHW: nan, UnpairedHW: nan, RelDiff: nan, RelDiffLo: nan, RelDiffHi: nan, PHolm: nan}
	}
	v, note := c.Verdict(name)
	base := ""
	if c != nil {
		base = c.Baseline
	}
	return []any{base, int64(pm.N), pm.Diff, pm.DiffHW, pm.UnpairedHW, pm.RelDiff, pm.RelDiffLo, pm.RelDiffHi, pm.PHolm, v, note}
}

// keepRecords keeps the replications of each point for Compare.
func keepRecords(pts []Point, recs [][]*record.Record) {
	for i := range pts {
		pts[i].recs = recs[i]
		if pts[i].recs == nil {
			pts[i].recs = []*record.Record{}
		}
	}
}

// FormatRelDiff prints a relative difference and its 95% interval [lo,
// hi] as percentages, "-12.3% [-12.7%, -11.9%]": the decimals those of the
// shorter arm of the interval (min(rel − lo, hi − rel)) to one significant
// digit, two when its leading digit is 1 or 2 (where rounding to one digit
// would change it by up to a third), at least 1 and at most 3, the
// difference and both ends to the same decimal. An unbounded interval is
// said so, "+10.0% (unbounded)", or its half-line written "[-5.0%, +∞)"
// or "(-∞, +5.0%]" (FormatInf, signed as the percentages are);
// NaN ends (no interval) print the difference alone. Every output that
// prints a comparison uses it.
func FormatRelDiff(rel, lo, hi float64) string {
	if math.IsNaN(rel) {
		return "—"
	}
	dec := 1
	h := math.Inf(1)
	for _, arm := range []float64{100 * (rel - lo), 100 * (hi - rel)} {
		if arm > 0 && finite(arm) {
			h = math.Min(h, arm)
		}
	}
	if finite(h) {
		e := int(math.Floor(math.Log10(h)))
		sig := 1
		if lead := h / math.Pow(10, float64(e)); lead < 3 {
			sig = 2
		}
		dec = min(3, max(1, sig-1-e))
	}
	pct := func(x float64) string { return fmt.Sprintf("%+.*f%%", dec, 100*x) }
	s := pct(rel)
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi):
		return s
	case math.IsInf(lo, -1) && math.IsInf(hi, 1):
		return s + " (unbounded)"
	case math.IsInf(lo, -1):
		return s + " (" + FormatInf(lo) + ", " + pct(hi) + "]"
	case math.IsInf(hi, 1):
		return s + " [" + pct(lo) + ", +" + FormatInf(hi) + ")"
	}
	return s + " [" + pct(lo) + ", " + pct(hi) + "]"
}

// RelDiffExcludesZero says whether the interval [lo, hi] of a relative
// difference lies on one side of 0: the unadjusted paired t-test rejects
// (Fieller's interval inverts it).
func RelDiffExcludesZero(lo, hi float64) bool { return lo > 0 || hi < 0 }

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
