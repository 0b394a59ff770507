package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// compareMetrics are the metrics msjfarm results --compare prints.
var compareMetrics = []struct{ name, head string }{
	{"mean_response", "E[T]"}, {"weighted_mean_response", "weighted E[T]"}, {"mean_wait", "E[W]"},
}

// parseCompare splits --compare A,B into the series compared and the
// baseline.
func parseCompare(s string) (a, b string, err error) {
	a, b, ok := strings.Cut(s, ",")
	a, b = strings.TrimSpace(a), strings.TrimSpace(b)
	if !ok || a == "" || b == "" || strings.Contains(b, ",") {
		return "", "", fmt.Errorf("--compare %q: want two series, A,B (A compared with the baseline B: a policy name or a label such as \"msfq threshold=31\")", s)
	}
	if strings.EqualFold(a, b) {
		// Every row read 0% ± 0, "no difference": a table that looks
		// like a finding.
		return "", "", fmt.Errorf("--compare %q: a series compared with itself; name two different series", s)
	}
	return a, b, nil
}

// printComparison prints the paired comparison of series a (a label, or
// every series of a policy) with the baseline b at every scenario, pts
// compared against b already (aggregate.Compare).
func printComparison(w io.Writer, pts []aggregate.Point, a string) error {
	labels := aggregate.Labels(pts)
	var rows []int
	for i, p := range pts {
		if strings.EqualFold(labels[i], a) || strings.EqualFold(p.Policy, a) {
			rows = append(rows, i)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("--compare: no series %q (series: %s)", a, strings.Join(distinct(labels), ", "))
	}
	x, others := aggregate.PlotAxes(pts)
	base := pts[rows[0]].Compare.Baseline
	fmt.Fprintf(w, "%s against %s: paired over replications with the same seed (common random numbers).\n", a, base)
	fmt.Fprintf(w, "Relative difference mean(A)/mean(B) − 1 with its 95%% CI over the pairs (Fieller's: the ratios the paired t-test does not reject,\n")
	fmt.Fprintf(w, "asymmetric; it excludes 0 exactly when the unadjusted test rejects); verdict from the paired t-test,\n")
	fmt.Fprintf(w, "Holm-corrected over every series and %s of the figure (5%% family-wise); CRN ×: unpaired CI width / paired.\n", x)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"series"}
	head = append(head, others...)
	head = append(head, x, "pairs")
	for _, m := range compareMetrics {
		head = append(head, m.head+" vs "+base, "verdict", "CRN ×")
	}
	head = append(head, "note")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, i := range rows {
		p := &pts[i]
		cells := []string{labels[i]}
		for _, o := range others {
			cells = append(cells, fmt.Sprint(p.Axes[o]))
		}
		xv := p.Axes[x]
		if xv == nil {
			xv = p.Load
		}
		n := ""
		if m, ok := p.Compare.Paired("mean_response"); ok {
			n = fmt.Sprint(m.N)
		}
		cells = append(cells, fmt.Sprint(xv), n)
		var notes []string
		for _, cm := range compareMetrics {
			v, note := p.Compare.Verdict(cm.name)
			m, ok := p.Compare.Paired(cm.name)
			if note != "" && !slices.Contains(notes, note) {
				notes = append(notes, note)
			}
			switch {
			case v == aggregate.CmpUndefined || !ok:
				cells = append(cells, "—", v, "")
			default:
				cells = append(cells, aggregate.FormatRelDiff(m.RelDiff, m.RelDiffLo, m.RelDiffHi), v, crnGain(m.UnpairedHW, m.DiffHW))
			}
		}
		cells = append(cells, strings.Join(notes, "; "))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// crnGain writes the CRN × cell, the unpaired half-width over the paired
// one. A paired half-width of 0 (the same difference in every replication,
// as two policies that decide alike give) makes it infinite, written as
// every reading output writes an infinity (aggregate.FormatInf: "∞");
// both 0 (the metric constant on both sides, as a wait that is 0 in every
// replication) leave no ratio, "—" as the table's other undefined cells.
// Printed with %.1f they read "+Inf" and "NaN".
func crnGain(unpaired, paired float64) string {
	g := unpaired / paired
	switch {
	case math.IsNaN(g):
		return "—"
	case math.IsInf(g, 0):
		return aggregate.FormatInf(g)
	}
	return fmt.Sprintf("%.1f", g)
}

func distinct(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
