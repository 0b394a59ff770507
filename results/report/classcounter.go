package report

import (
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"gonum.org/v1/plot"
)

// classCounter is a per-class policy counter: a counter the policy reports
// once per class ("preempted_fraction/cores-1", column
// counter_preempted_fraction_cores_1). Its classes are drawn in one figure,
// a panel per class, as the class metrics are, instead of a figure each.
type classCounter struct {
	base    string         // the column without the class: counter_preempted_fraction
	columns map[int]string // class index → column
}

// classCounters groups the facet's per-class counters among its metric
// names: the columns aggregate marked per class (Metric.ClassCounter,
// the one rule: aggregate/classcounter.go), by the counter's column
// without the class (Metric.Base). byColumn maps each grouped column to
// its group.
func (f *facet) classCounters(names []string) (groups []*classCounter, byColumn map[string]*classCounter) {
	flagged := map[string]aggregate.Metric{}
	for _, p := range f.pts {
		for _, m := range p.Metrics {
			if _, seen := flagged[m.Name]; !seen && m.ClassCounter {
				flagged[m.Name] = m
			}
		}
	}
	byBase := map[string]*classCounter{}
	byColumn = map[string]*classCounter{}
	for _, n := range names {
		m, ok := flagged[n]
		if !ok {
			continue
		}
		g := byBase[m.Base]
		if g == nil {
			g = &classCounter{base: m.Base, columns: map[int]string{}}
			byBase[m.Base] = g
			groups = append(groups, g)
		}
		if _, dup := g.columns[m.CounterClass]; !dup {
			g.columns[m.CounterClass] = n
			byColumn[n] = g
		}
	}
	return groups, byColumn
}

// name is the group's file name: the counter's own name, or
// <counter>_by_class when the policy also reports a counter of that name
// (Kill-Smart's preempted_fraction beside preempted_fraction/<class>).
func (g *classCounter) name(names []string) string {
	for _, m := range names {
		if m == g.base {
			return g.base + "_by_class"
		}
	}
	return g.base
}

// classCounterFigure draws the per-class counter g, a panel per class in
// class order, each panel what metricFigure draws for that class's column
// (the same curves, axis and limit lines). A class whose counter is zero
// or undefined everywhere is skipped and one constant everywhere is listed
// in constant, as metricFigure does for a figure of its own; nil when no
// class is left to draw.
func (f *facet) classCounterFigure(out *files, x, xl string, g *classCounter, names []string) (figs []figure, skipped, constant []string, err error) {
	classes := 0
	for _, p := range f.pts {
		classes = max(classes, len(p.Classes))
	}
	var panels []panelData
	yl, first := "", ""
	for ci := 0; ci < classes; ci++ {
		m, ok := g.columns[ci]
		if !ok {
			continue
		}
		cs, nonzero := curvesFor(f, x, m)
		if !nonzero {
			skipped = append(skipped, m)
			continue
		}
		if desc, ok := constantCounter(cs); ok {
			constant = append(constant, f.columnOrLabel(m)+" ("+desc+")")
			continue
		}
		cname, need := f.class(ci)
		// The policy's label names the class ("jobs preempted, class
		// cores-1"); the panel title does here.
		if first == "" {
			first, yl = m, strings.Replace(f.metricLabel(m), ", class "+cname, "", 1)
		}
		panels = append(panels, panelData{title: fmt.Sprintf("class %d: %s (need %d)", ci, cname, need), cs: cs})
	}
	if len(panels) == 0 {
		return nil, skipped, constant, nil
	}
	title, parts, err := f.drawClassCounter(out, f.prefix+g.name(names), xl, yl, first, panels)
	if err != nil {
		return nil, nil, nil, err
	}
	if mt, ok := f.described(first); ok && mt.Doc != "" {
		title += ". " + mt.Doc
	}
	return partFigures(parts, title, len(panels) > 1), skipped, constant, nil
}

// drawClassCounter writes the per-class counter's figure name from its
// panels (first is the first drawn class's column, yl the label without
// the class), in several files past maxPanels classes, and returns the
// caption's start. One class left to draw is a figure of its own at
// column width with its legend below, as metricFigure draws one, not a
// one-panel grid whose legend takes half the width; its axis label names
// the class.
func (f *facet) drawClassCounter(out *files, name, xl, yl, first string, panels []panelData) (string, []figurePart, error) {
	title := "policy counter per class: " + yl
	if len(panels) == 1 {
		yl = f.metricLabel(first)
		panels[0].title = ""
		if err := writeEditable(out, name, xl, yl, panels, false); err != nil {
			return "", nil, err
		}
		p := newPlot("", xl, yl, panels[0].cs, true, f.lines...)
		return "policy counter: " + yl + crowdedNote(panels[0].cs), figureParts(name, 1), render(out, name, [][]*plot.Plot{{p}}, colW, colH, false)
	}
	ps := make([]*plot.Plot, 0, len(panels))
	for _, pd := range panels {
		ps = append(ps, newPlot(pd.title, xl, yl, pd.cs, true, f.lines...))
	}
	parts, err := drawPanels(out, name, xl, yl, panels, ps)
	return title + crowdedNote(panels[0].cs), parts, err
}

// class is the name and need of the facet's class ci, from the first point
// that has it.
func (f *facet) class(ci int) (name string, need int) {
	for _, p := range f.pts {
		if ci < len(p.Classes) {
			return p.Classes[ci].Name, p.Classes[ci].Need
		}
	}
	return "", 0
}
