package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"text/template"

	"github.com/msjfarm/msjfarm/results/aggregate"
)

// Editable figures: beside every figure <name>.pdf the report writes
// <name>.csv, the data as drawn (tidy: one row per panel × series × x),
// and <name>.py, a standalone matplotlib script that reads the CSV and
// redraws the figure (same series, intervals, bounds, scales, colours and
// markers) into <name>.mpl.pdf, so a figure can be restyled for a venue
// without msjfarm. The script needs only Python 3 and matplotlib.

// panelData is one panel of a figure: its title ("" for a figure of one
// panel) and curves.
type panelData struct {
	title string
	cs    []curve
}

// figureCSVHeader are the columns of <name>.csv.
var figureCSVHeader = aggregate.Table{Columns: []aggregate.Column{{Name: "panel", Kind: aggregate.String},
	{Name: "series", Kind: aggregate.String}, {Name: "style", Kind: aggregate.Int}, {Name: "x", Kind: aggregate.Float},
	{Name: "y", Kind: aggregate.Float}, {Name: "y_low", Kind: aggregate.Float}, {Name: "y_high", Kind: aggregate.Float},
	{Name: "reading", Kind: aggregate.String}}}

// panelScale is whether a panel's axes are logarithmic, decided as the Go
// figure decides them (newPlot: logXAxis of its x values, yRange of its
// curves), a panel at a time: in a grid, one class's panel may span
// decades where another's does not. A comparison panel (zero line) is
// linear in y.
type panelScale struct {
	LogX bool `json:"logx"`
	LogY bool `json:"logy"`
	// floor is the smallest value an interval is drawn down to (NaN:
	// none): 0 on a linear axis from 0 (a non-negative quantity, as
	// yAxis.interval stops it), relFloor on a comparison panel.
	floor float64
}

func scaleOf(cs []curve, zeroLine bool) panelScale {
	lo, _, logY, _ := yRange(cs)
	s := panelScale{LogX: logXAxis(distinctX(cs)), LogY: logY && !zeroLine, floor: math.NaN()}
	switch {
	case zeroLine:
		s.floor = relFloor
	case !logY && lo == 0:
		s.floor = 0
	}
	return s
}

// figureTable is the tidy data of a figure: y the mean, y_low and y_high
// its interval as drawn (on a log axis the delta-method interval
// m·exp(±hw/m); a comparison's Fieller interval, asymmetric, inf where
// unbounded; clipped at the quantity's bound and the panel's floor), reading estimate or
// lower bound (aggregate.IsBound: drawn as a triangle at the top, not on
// the line), absent rows left out. scales are the panels' (scaleOf).
func figureTable(panels []panelData, scales []panelScale) *aggregate.Table {
	t := &aggregate.Table{Columns: figureCSVHeader.Columns}
	for pi, p := range panels {
		logY, floor := scales[pi].LogY, scales[pi].floor
		for _, c := range p.cs {
			for i, x := range c.x {
				m, h := c.mean[i], c.hw[i]
				if !finite(m) || !finite(x) {
					continue
				}
				lo, hi := math.NaN(), math.NaN()
				reading := aggregate.ReadEstimate
				switch {
				case c.unstable[i]:
					reading = aggregate.ReadLowerBound
				case c.lo != nil:
					// An explicit interval (a comparison's Fieller
					// interval): an unbounded end stays infinite.
					lo, hi = c.lo[i], c.hi[i]
					if finite(floor) {
						lo = math.Max(lo, floor)
					}
				case finite(h) && h > 0:
					lo, hi = m-h, m+h
					if logY && m > 0 {
						lo, hi = m*math.Exp(-h/m), m*math.Exp(h/m)
					}
					if c.bound > 0 {
						hi = math.Min(hi, c.bound)
					}
					if finite(floor) {
						lo = math.Max(lo, floor)
					}
				case h == 0:
					lo, hi = m, m
				}
				t.Rows = append(t.Rows, []any{p.title, c.label, int64(c.style), x, m, lo, hi, reading})
			}
		}
	}
	return t
}

// writeEditable puts name.csv and name.py beside the figure.
func writeEditable(out *files, name, xLabel, yLabel string, panels []panelData, zeroLine bool) error {
	var all []curve
	scales := map[string]panelScale{}
	list := make([]panelScale, len(panels))
	for i, p := range panels {
		all = append(all, p.cs...)
		list[i] = scaleOf(p.cs, zeroLine)
		scales[p.title] = list[i]
	}
	var buf bytes.Buffer
	if err := figureTable(panels, list).WriteCSV(&buf); err != nil {
		return fmt.Errorf("%s.csv: %w", name, err)
	}
	out.put(name+".csv", bytes.Clone(buf.Bytes()))
	styles := map[int]pyStyle{}
	var order []string
	for _, p := range panels {
		order = append(order, p.title)
		for _, c := range p.cs {
			col, shape, dash := styleOf(c.style)
			r, g, b, _ := col.RGBA()
			st := pyStyle{Color: fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8), Marker: "o", Fill: true, Dash: "-"}
			st.Marker, st.Fill = pyMarker(shape)
			if len(dash) > 0 {
				st.Dash = "--"
				if len(dash) == 2 && dash[0] == dash[1] {
					st.Dash = ":"
				} else if len(dash) == 4 {
					st.Dash = "-."
				}
			}
			styles[c.style] = st
		}
	}
	bound := math.Inf(1)
	for _, c := range all {
		if c.bound > 0 {
			bound = math.Min(bound, c.bound)
		}
	}
	sj, _ := json.Marshal(styles)
	pj, _ := json.Marshal(order)
	cats := categoriesOf(all)
	if cats == nil {
		cats = []string{}
	}
	cj, _ := json.Marshal(cats)
	scj, _ := json.Marshal(scales)
	buf.Reset()
	err := pyTemplate.Execute(&buf, map[string]any{
		"Name": pyStr(name), "XLabel": pyStr(xLabel), "YLabel": pyStr(yLabel), "Scales": pyStr(string(scj)),
		"Styles": pyStr(string(sj)), "Panels": pyStr(string(pj)), "ZeroLine": pyBool(zeroLine),
		"Bound": pyFloat(bound), "ReadRows": pyReadRows, "XTicks": pyStr(string(cj)),
	})
	if err != nil {
		return fmt.Errorf("%s.py: %w", name, err)
	}
	out.put(name+".py", bytes.Clone(buf.Bytes()))
	return nil
}

type pyStyle struct {
	Color  string `json:"color"`
	Marker string `json:"marker"`
	Fill   bool   `json:"fill"`
	Dash   string `json:"dash"`
}

// pyStr is s as a Python string literal: its JSON string, whose escapes
// (quote, backslash, control characters, \uXXXX) are Python's too. Every
// text a script embeds goes through it, never between quotes of its own:
// a class named "\":1}'); import os; os.system('…'); _=('" ran its
// command in the scripts, when anyone redrew the figure.
func pyStr(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// pyFloat is x as a Python expression: float("inf") and float("-inf")
// for the infinities (Go's "+Inf" and "-Inf" are no Python), float("nan").
func pyFloat(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return `float("inf")`
	case math.IsInf(x, -1):
		return `float("-inf")`
	case math.IsNaN(x):
		return `float("nan")`
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyMarker is matplotlib's marker for one of shapes.
func pyMarker(g any) (marker string, filled bool) {
	switch s := g.(type) {
	case polyGlyph:
		if s.sides == 4 {
			return "D", s.filled
		}
		return "p", s.filled
	}
	switch fmt.Sprintf("%T", g) {
	case "draw.CircleGlyph":
		return "o", true
	case "draw.RingGlyph":
		return "o", false
	case "draw.SquareGlyph": // gonum's outlined square
		return "s", false
	case "draw.BoxGlyph": // its filled square
		return "s", true
	}
	return "o", true
}

// pyReadRows is the scripts' CSV reader: name.csv, or name.csv.gz in a
// large campaign's report (files.gz).
const pyReadRows = `def read_rows(path):
    if not os.path.exists(path):
        path += ".gz"  # a large campaign's report compresses its CSVs
    with (gzip.open(path, "rt", newline="") if path.endswith(".gz") else open(path, newline="")) as f:
        return list(csv.DictReader(f))
`

// pyTemplate is the matplotlib script. It reads only its CSV (beside it),
// so the data can be edited or filtered before redrawing; --out names the
// output (default <name>.mpl.pdf), --dump writes the drawn lines as JSON
// (the test compares them with the CSV).
var pyTemplate = template.Must(template.New("py").Parse(`#!/usr/bin/env python3
"""Redraw a figure of msjfarm's report from its CSV with matplotlib (written by msjfarm report).

Columns: panel, series, style, x, y (the mean), y_low/y_high (its 95%
confidence interval as drawn; on a log axis the delta-method interval
y*exp(+-hw/y); a comparison's interval is Fieller's, asymmetric, inf where
unbounded), reading ("estimate", or "lower bound": an unstable or
truncated point, drawn as a triangle at the top edge, not on the line).
Edit the settings below to restyle; run: python3 NAME.py [--out FILE]
"""
import argparse, csv, gzip, json, math, os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = {{.Name}}  # the figure: NAME.csv beside this script, NAME.pdf msjfarm's drawing
XLABEL = {{.XLabel}}
YLABEL = {{.YLabel}}
# Log axes per panel, as msjfarm's figure has them (a panel whose values
# span decades is log, its neighbour in the grid may not be).
SCALES = json.loads({{.Scales}})
ZERO_LINE = {{.ZeroLine}}
BOUND = {{.Bound}}          # largest possible value (inf: none)
WIDTH_IN, HEIGHT_IN = 3.3, 2.4  # a column; 6.9 for a page
STYLES = {int(k): v for k, v in json.loads({{.Styles}}).items()}
PANELS = json.loads({{.Panels}})
# A categorical x axis (a campaign with no swept scenario axis, a replayed
# trace): the names of x = 1, 2, …; its points are not joined. [] for none.
XTICKS = json.loads({{.XTicks}})

plt.rcParams.update({"font.size": 8, "axes.labelsize": 9, "legend.fontsize": 7,
                     "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path"})


{{.ReadRows}}

def num(s):
    return float(s) if s not in ("", None) else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, NAME + ".mpl.pdf"))
    ap.add_argument("--dump", help="write the drawn lines as JSON")
    args = ap.parse_args()
    rows = read_rows(os.path.join(HERE, NAME + ".csv"))
    ncols = min(3, len(PANELS))
    nrows = math.ceil(len(PANELS) / ncols)
    # as msjfarm draws it: a column for one panel, a page for two or three across
    w = WIDTH_IN if len(PANELS) == 1 else 6.9 if ncols == 2 else 2.3 * ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(w, HEIGHT_IN if len(PANELS) == 1 else 1.9 * nrows), squeeze=False)
    for ax in list(axes.flat)[len(PANELS):]:
        ax.set_visible(False)
    drawn = []
    for ax, panel in zip(axes.flat, PANELS):
        series = []
        for r in rows:
            if r["panel"] == panel and r["series"] not in series:
                series.append(r["series"])
        top = []
        unbounded = []
        for name in series:
            pts = [r for r in rows if r["panel"] == panel and r["series"] == name]
            st = STYLES.get(int(pts[0]["style"]), {"color": "k", "marker": "o", "fill": True, "dash": "-"})
            est = sorted((num(r["x"]), num(r["y"]), num(r["y_low"]), num(r["y_high"])) for r in pts if r["reading"] == "estimate")
            xs = [p[0] for p in est]
            ys = [p[1] for p in est]
            low = [p[1] - p[2] if math.isfinite(p[2]) else 0 for p in est]
            high = [p[3] - p[1] if math.isfinite(p[3]) else 0 for p in est]
            # An unbounded end (inf: a comparison whose baseline's mean is
            # within its own interval of 0) is drawn to the axis' edge below.
            unbounded += [(p[0], p[1], p[2], p[3], st["color"]) for p in est if math.isinf(p[2]) or math.isinf(p[3])]
            if est:
                ax.errorbar(xs, ys, yerr=[low, high], color=st["color"], marker=st["marker"], linestyle="none" if XTICKS else st["dash"],
                            markerfacecolor=st["color"] if st["fill"] else "white", markersize=4, linewidth=1,
                            elinewidth=0.7, capsize=2, label=name)
                drawn.append({"panel": panel, "series": name, "x": xs, "y": ys})
            top += [(num(r["x"]), st["color"]) for r in pts if r["reading"] != "estimate"]
        scale = SCALES.get(panel, {})
        if scale.get("logy"):
            ax.set_yscale("log")
        if scale.get("logx"):
            ax.set_xscale("log")
        if XTICKS:
            ax.set_xticks(range(1, len(XTICKS) + 1))
            ax.set_xticklabels(XTICKS)
            ax.set_xlim(0.5, len(XTICKS) + 0.5)
        if ZERO_LINE:
            ax.axhline(0, color="0.25", linewidth=0.8)
        if not math.isinf(BOUND):
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, min(hi, BOUND * 1.03))
        if unbounded:
            lo, hi = ax.get_ylim()
            for x, y, l, h, c in unbounded:
                ax.vlines(x, lo if math.isinf(l) else l, hi if math.isinf(h) else h, color=c, linewidth=0.7, linestyles="dotted")
            ax.set_ylim(lo, hi)
        if top:
            # Lower bounds (diverging points): triangles pinned to the top edge.
            ax.scatter([t[0] for t in top], [1] * len(top), transform=ax.get_xaxis_transform(), marker="^",
                       c=[t[1] for t in top], s=18, clip_on=False, label="unstable (off scale)")
        if panel:
            ax.set_title(panel, fontsize=8)
        ax.set_xlabel(XLABEL)
        ax.set_ylabel(YLABEL)
        ax.grid(True, color="0.9", linewidth=0.5)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if len(labels) > 6 or len(PANELS) > 1:
        # A long legend, or one shared by panels: in columns under the axes.
        ncol = 2 if w < 4 else 4
        band = 0.14 * math.ceil(len(labels) / ncol) + 0.1
        height = fig.get_figheight()
        fig.set_figheight(height + band)
        fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False)
        fig.tight_layout(rect=(0, band / (height + band), 1, 1))
    else:
        axes[0][0].legend(frameon=False)
        fig.tight_layout()
    fig.savefig(args.out)
    if args.dump:
        for d in drawn:
            ax = next(a for a, p in zip(axes.flat, PANELS) if p == d["panel"])
            d["logx"], d["logy"] = ax.get_xscale() == "log", ax.get_yscale() == "log"
        json.dump(drawn, open(args.dump, "w"))


if __name__ == "__main__":
    main()
`))
