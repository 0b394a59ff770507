package report

import (
	"fmt"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// sharedPanels are n panels of the same four series (as a class grid's).
func sharedPanels(n int) []*plot.Plot {
	var ps []*plot.Plot
	for i := 0; i < n; i++ {
		var cs []curve
		for s := 0; s < 4; s++ {
			c := curve{label: fmt.Sprintf("killsmart K=%d nu=%d", 3+s, 1024>>s), style: s + 1}
			for x := 1.0; x <= 5; x++ {
				c.add(x, x*float64(s+1), 0.1, false)
			}
			cs = append(cs, c)
		}
		ps = append(ps, newPlot(fmt.Sprintf("class %d", i), "λ", "E[T]", cs, true))
	}
	return ps
}

// TestSharedLegendPlacement: where a figure's one legend goes. 11 panels
// (k-fig6f's class grid of 23 is split into files of 11 and 12: 3 columns,
// the last row with one empty tile) and
// 5 panels in 3 columns (one empty tile) put it in the empty tile, not in
// a strip that narrows every panel; k-fig4i's two classes (one row, no
// empty tile: the strip took a third of the width) put it in a band
// under the row; 6 panels in 2 full rows put it in a band under them
// too (the strip made the figure 8 in wide, more than a page), and 3
// panels in a column (MSFQ's phases of one series) keep the strip.
func TestSharedLegendPlacement(t *testing.T) {
	for _, tc := range []struct {
		panels            int
		column            bool // a panel a row, not grid's rows of 3
		cells             int
		below, stripWidth bool
	}{
		{11, false, 1, false, false},
		{5, false, 1, false, false},
		{2, false, 0, true, false},
		{6, false, 0, true, false},
		{3, true, 0, false, true},
	} {
		rows := grid(sharedPanels(tc.panels))
		if tc.column {
			rows = nil
			for _, p := range sharedPanels(tc.panels) {
				rows = append(rows, []*plot.Plot{p})
			}
		}
		lay := layout{plots: rows, rows: len(rows)}
		for _, r := range rows {
			lay.cols = max(lay.cols, len(r))
		}
		lay.sharedLegend(panW, panH)
		lay.placeShared(panW, panH)
		if lay.cells != tc.cells || (lay.below != nil) != tc.below || (lay.legendW > 0) != tc.stripWidth {
			t.Errorf("%d panels: cells %d, band %v, strip %v; want %d, %v, %v",
				tc.panels, lay.cells, lay.below != nil, lay.legendW > 0, tc.cells, tc.below, tc.stripWidth)
		}
		if tc.below && len(lay.below) != 4 {
			t.Errorf("%d panels: %d entries in the band, want the 4 series", tc.panels, len(lay.below))
		}
		for _, r := range rows {
			for _, p := range r {
				legends.Delete(p)
				crowded.Delete(p)
			}
		}
	}
	// The figure is drawn at the panels' width, with the legend in it.
	files := newFiles()
	if err := render(files, "g", grid(sharedPanels(5)), panW, panH, true); err != nil {
		t.Fatal(err)
	}
	out, err := collect(files)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out["g.svg"]), "killsmart K=3 nu=1024"); n != 1 {
		t.Errorf("the legend entry is in g.svg %d times, want once", n)
	}
}

// TestClipLegendBothWays: an interval cut at the top gets an open △ (k-fig4's
// FCFS at λ = 1.33), one cut at the bottom an open ▽; the legend's entry
// showed ▽ alone, leaving the △ to be read as the filled ▲ of an unstable
// point. It now draws both: two closed outlines, one pointing down (its
// tip below its base), one up.
func TestClipLegendBothWays(t *testing.T) {
	rec := new(recorder.Canvas)
	c := draw.Canvas{Canvas: rec, Rectangle: vg.Rectangle{Max: vg.Point{X: 20, Y: 20}}}
	clipGlyph{pair: true}.DrawGlyph(&c, draw.GlyphStyle{Radius: vg.Points(3)}, vg.Point{X: 10, Y: 10})
	var dirs []string
	for _, a := range rec.Actions {
		st, ok := a.(*recorder.Stroke)
		if !ok {
			continue
		}
		tip, base := st.Path[0].Pos.Y, st.Path[1].Pos.Y
		if tip < base {
			dirs = append(dirs, "down")
		} else {
			dirs = append(dirs, "up")
		}
	}
	if got := strings.Join(dirs, " "); got != "down up" {
		t.Errorf("legend glyph draws %q, want ▽ then △ (\"down up\")", got)
	}
}
