package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestVectorText: the SVG figures carry their text as glyph outlines, not
// as a font reference: the SVG defines each glyph once and places it with
// <use>, names no font-family and keeps the text in a <title> (search).
// (The PDFs' embedded text: TestPDFEmbeddedText.) Both stay small.
func TestVectorText(t *testing.T) {
	files, err := Render(Campaign{Points: limitPoints()})
	if err != nil {
		t.Fatal(err)
	}
	svg := string(files["mean_response.svg"])
	if strings.Contains(svg, "font-family") || strings.Contains(svg, "<text") {
		t.Errorf("mean_response.svg names a font or has <text>: the text must be outlines")
	}
	defs := regexp.MustCompile(`<path id="g(\d+)"`).FindAllStringSubmatch(svg, -1)
	uses := strings.Count(svg, `<use xlink:href="#g`)
	// "mean response time E[T]" alone repeats e, m, a, n, s, ' ': fewer
	// glyph definitions than glyphs placed, and each defined once.
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d[1]] {
			t.Errorf("glyph g%s defined twice", d[1])
		}
		seen[d[1]] = true
	}
	if len(defs) == 0 || uses <= len(defs) {
		t.Errorf("%d glyph definitions for %d uses: want each glyph defined once and reused", len(defs), uses)
	}
	for _, s := range []string{"<title>mean response time E[T]</title>", "<title>arrival rate λ</title>", "<title>fcfs</title>"} {
		if !strings.Contains(svg, s) {
			t.Errorf("mean_response.svg lacks %s", s)
		}
	}
	// A column figure: tens of kB, not the 0.2–0.5 MB an embedded whole
	// font weighs.
	for _, f := range []string{"mean_response.svg", "mean_response.pdf", "mean_response_page.pdf"} {
		if n := len(files[f]); n > 100<<10 {
			t.Errorf("%s is %d bytes, want under 100 kB", f, n)
		}
	}
}

// TestSVGTransforms: the SVG canvas applies its transform stack itself
// (no nested groups): a unit square translated by (10, 20) and scaled
// by 2 on a 100 pt high canvas lands at x 10–12, y (flipped) 78–80; a
// full circle becomes four cubic Béziers.
func TestSVGTransforms(t *testing.T) {
	c := newSVG(100, 100)
	c.Push()
	c.Translate(vg.Point{X: 10, Y: 20})
	c.Scale(2, 2)
	var sq vg.Path
	sq.Move(vg.Point{})
	sq.Line(vg.Point{X: 1})
	sq.Line(vg.Point{X: 1, Y: 1})
	sq.Close()
	c.Fill(sq)
	c.Pop()
	var circ vg.Path
	circ.Move(vg.Point{X: 60, Y: 50})
	circ.Arc(vg.Point{X: 50, Y: 50}, 10, 0, 2*3.141592653589793)
	c.Stroke(circ)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, `<path d="M10 80L12 80L12 78Z" fill="#000000"/>`) {
		t.Errorf("square: %s", out)
	}
	if n := strings.Count(out, "C"); n != 4 {
		t.Errorf("circle as %d cubic segments, want 4: %s", n, out)
	}
	// A plot draws on it without error and with outlined text.
	p := plot.New()
	p.X.Label.Text = "λ"
	c = newSVG(2*vg.Inch, vg.Inch)
	p.Draw(draw.New(c))
	buf.Reset()
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "<title>λ</title>") || !strings.Contains(buf.String(), `<use xlink:href="#g0"`) {
		t.Errorf("plot label not outlined: %.400s", buf.String())
	}
}
