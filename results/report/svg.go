package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"

	pfont "gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// svgCanvas is a vg.Canvas writing SVG whose text is glyph outlines (see
// glyph.go): each glyph is defined once in <defs> and placed with <use>,
// so the figure renders identically without the font and stays small.
// Coordinates are written in points (the viewBox), transformed here
// rather than by nested <g> elements.
type svgCanvas struct {
	w, h   vg.Length
	body   bytes.Buffer
	stack  []svgState
	ids    map[glyphKey]int
	defs   bytes.Buffer
	images int
}

type svgState struct {
	m      affine
	col    color.Color
	width  vg.Length
	dashes []vg.Length
	offset vg.Length
}

// affine maps (x, y) to (a·x + c·y + e, b·x + d·y + f), as SVG's
// matrix(a b c d e f).
type affine [6]float64

func (m affine) apply(p vg.Point) (float64, float64) {
	x, y := float64(p.X), float64(p.Y)
	return m[0]*x + m[2]*y + m[4], m[1]*x + m[3]*y + m[5]
}

// then is m followed by n's coordinates: the map p ↦ m(n(p)).
func (m affine) then(n affine) affine {
	return affine{
		m[0]*n[0] + m[2]*n[1], m[1]*n[0] + m[3]*n[1],
		m[0]*n[2] + m[2]*n[3], m[1]*n[2] + m[3]*n[3],
		m[0]*n[4] + m[2]*n[5] + m[4], m[1]*n[4] + m[3]*n[5] + m[5],
	}
}

// newSVG starts a w × h canvas with vg's origin at the bottom left.
func newSVG(w, h vg.Length) *svgCanvas {
	c := &svgCanvas{w: w, h: h, ids: map[glyphKey]int{}}
	c.stack = []svgState{{m: affine{1, 0, 0, -1, 0, float64(h)}, col: color.Black, width: vg.Points(1)}}
	return c
}

func (c *svgCanvas) top() *svgState { return &c.stack[len(c.stack)-1] }

// SetLineWidth sets the width of stroked lines.
func (c *svgCanvas) SetLineWidth(w vg.Length) { c.top().width = w }

// SetLineDash sets the dash pattern of stroked lines.
func (c *svgCanvas) SetLineDash(d []vg.Length, off vg.Length) {
	c.top().dashes, c.top().offset = d, off
}

// SetColor sets the stroke and fill colour.
func (c *svgCanvas) SetColor(col color.Color) { c.top().col = col }

// Rotate rotates the coordinates by rad (counter-clockwise).
func (c *svgCanvas) Rotate(rad float64) {
	s, co := math.Sincos(rad)
	c.top().m = c.top().m.then(affine{co, s, -s, co, 0, 0})
}

// Translate moves the origin to pt.
func (c *svgCanvas) Translate(pt vg.Point) {
	c.top().m = c.top().m.then(affine{1, 0, 0, 1, float64(pt.X), float64(pt.Y)})
}

// Scale scales the coordinates.
func (c *svgCanvas) Scale(x, y float64) {
	c.top().m = c.top().m.then(affine{x, 0, 0, y, 0, 0})
}

// Push saves the state.
func (c *svgCanvas) Push() { c.stack = append(c.stack, *c.top()) }

// Pop restores the last pushed state.
func (c *svgCanvas) Pop() {
	if len(c.stack) > 1 {
		c.stack = c.stack[:len(c.stack)-1]
	}
}

func svgNum(b *bytes.Buffer, v float64) {
	if math.Abs(v) < 0.005 {
		v = 0
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	s = trimDot(s)
	b.WriteString(s)
}

func trimDot(s string) string {
	if s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

func svgColor(col color.Color) (hex string, alpha float64) {
	if col == nil {
		col = color.Black
	}
	r, g, b, a := col.RGBA()
	if a == 0 {
		return "none", 0
	}
	// Un-premultiply.
	r, g, b = r*0xffff/a, g*0xffff/a, b*0xffff/a
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8), float64(a) / 0xffff
}

// pathData writes p's data in page coordinates.
func (c *svgCanvas) pathData(p vg.Path) []byte {
	var b bytes.Buffer
	m := c.top().m
	pt := func(cmd byte, ps ...vg.Point) {
		b.WriteByte(cmd)
		for i, q := range ps {
			if i > 0 {
				b.WriteByte(' ')
			}
			x, y := m.apply(q)
			svgNum(&b, x)
			b.WriteByte(' ')
			svgNum(&b, y)
		}
	}
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			pt('M', comp.Pos)
		case vg.LineComp:
			pt('L', comp.Pos)
		case vg.CurveComp:
			if len(comp.Control) == 1 {
				pt('Q', comp.Control[0], comp.Pos)
			} else {
				pt('C', comp.Control[0], comp.Control[1], comp.Pos)
			}
		case vg.ArcComp:
			// As cubic Béziers, at most a quarter turn each, so that any
			// transform applies to them.
			n := int(math.Ceil(math.Abs(comp.Angle) / (math.Pi / 2)))
			r := float64(comp.Radius)
			at := func(a float64) vg.Point {
				return vg.Point{X: comp.Pos.X + vg.Length(r*math.Cos(a)), Y: comp.Pos.Y + vg.Length(r*math.Sin(a))}
			}
			if b.Len() == 0 {
				pt('M', at(comp.Start))
			} else {
				pt('L', at(comp.Start))
			}
			step := comp.Angle / float64(n)
			k := 4.0 / 3 * math.Tan(step/4) * r
			for i := 0; i < n; i++ {
				a0, a1 := comp.Start+float64(i)*step, comp.Start+float64(i+1)*step
				p0, p1 := at(a0), at(a1)
				c0 := vg.Point{X: p0.X - vg.Length(k*math.Sin(a0)), Y: p0.Y + vg.Length(k*math.Cos(a0))}
				c1 := vg.Point{X: p1.X + vg.Length(k*math.Sin(a1)), Y: p1.Y - vg.Length(k*math.Cos(a1))}
				pt('C', c0, c1, p1)
			}
		case vg.CloseComp:
			b.WriteByte('Z')
		}
	}
	return b.Bytes()
}

// scale is the factor by which the current transform scales lengths.
func (c *svgCanvas) scale() float64 {
	m := c.top().m
	return math.Sqrt(math.Abs(m[0]*m[3] - m[1]*m[2]))
}

// Stroke draws p's outline.
func (c *svgCanvas) Stroke(p vg.Path) {
	st := c.top()
	if st.width <= 0 || len(p) == 0 {
		return
	}
	hex, a := svgColor(st.col)
	c.body.WriteString(`<path d="`)
	c.body.Write(c.pathData(p))
	c.body.WriteString(`" fill="none" stroke="` + hex + `" stroke-width="`)
	svgNum(&c.body, float64(st.width)*c.scale())
	c.body.WriteByte('"')
	if a < 1 {
		fmt.Fprintf(&c.body, ` stroke-opacity="%.3g"`, a)
	}
	if len(st.dashes) > 0 {
		c.body.WriteString(` stroke-dasharray="`)
		for i, d := range st.dashes {
			if i > 0 {
				c.body.WriteByte(' ')
			}
			svgNum(&c.body, float64(d)*c.scale())
		}
		c.body.WriteByte('"')
		if st.offset != 0 {
			c.body.WriteString(` stroke-dashoffset="`)
			svgNum(&c.body, float64(st.offset)*c.scale())
			c.body.WriteByte('"')
		}
	}
	c.body.WriteString("/>\n")
}

// Fill fills p.
func (c *svgCanvas) Fill(p vg.Path) {
	if len(p) == 0 {
		return
	}
	hex, a := svgColor(c.top().col)
	c.body.WriteString(`<path d="`)
	c.body.Write(c.pathData(p))
	c.body.WriteString(`" fill="` + hex + `"`)
	if a < 1 {
		fmt.Fprintf(&c.body, ` fill-opacity="%.3g"`, a)
	}
	c.body.WriteString("/>\n")
}

// FillString draws str as outlines: one <use> of a glyph defined once per
// file, in a group carrying the colour and, as its title, the text (for
// search and screen readers).
func (c *svgCanvas) FillString(f pfont.Face, pt vg.Point, str string) {
	gs := layoutText(f, str)
	if len(gs) == 0 {
		return
	}
	hex, _ := svgColor(c.top().col)
	// The size is stated for readers of the file (the outlines carry it).
	c.body.WriteString(`<g fill="` + hex + `" style="font-size:`)
	svgNum(&c.body, f.Font.Size.Points())
	c.body.WriteString(`px"><title>`)
	xmlEscape(&c.body, str)
	c.body.WriteString("</title>")
	for _, g := range gs {
		if g.g.svgPath == "" {
			continue
		}
		id, ok := c.ids[g.key]
		if !ok {
			id = len(c.ids)
			c.ids[g.key] = id
			fmt.Fprintf(&c.defs, "<path id=\"g%d\" d=\"%s\"/>\n", id, g.g.svgPath)
		}
		// Glyph units (y down) → the string's local coordinates → page.
		m := c.top().m.then(affine{g.scale, 0, 0, -g.scale, float64(pt.X + g.x), float64(pt.Y)})
		fmt.Fprintf(&c.body, `<use xlink:href="#g%d" transform="matrix(`, id)
		for i, v := range m {
			if i > 0 {
				c.body.WriteByte(' ')
			}
			if i < 4 {
				c.body.WriteString(trimZeros(strconv.FormatFloat(v, 'f', 6, 64)))
			} else {
				svgNum(&c.body, v)
			}
		}
		c.body.WriteString(`)"/>`)
	}
	c.body.WriteString("</g>\n")
}

func trimZeros(s string) string {
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	return trimDot(s)
}

func xmlEscape(b *bytes.Buffer, s string) {
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
}

// DrawImage draws img (a PNG, inline) into rect.
func (c *svgCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return
	}
	c.images++
	m := c.top().m.then(affine{float64(rect.Size().X), 0, 0, -float64(rect.Size().Y), float64(rect.Min.X), float64(rect.Max.Y)})
	fmt.Fprintf(&c.body, `<image width="1" height="1" preserveAspectRatio="none" style="image-rendering:pixelated" transform="matrix(%g %g %g %g %g %g)" href="data:image/png;base64,%s"/>`+"\n",
		m[0], m[1], m[2], m[3], m[4], m[5], base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// WriteTo writes the SVG document.
func (c *svgCanvas) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<svg width="`)
	svgNum(&b, c.w.Points())
	b.WriteString(`pt" height="`)
	svgNum(&b, c.h.Points())
	b.WriteString(`pt" viewBox="0 0 `)
	svgNum(&b, c.w.Points())
	b.WriteByte(' ')
	svgNum(&b, c.h.Points())
	b.WriteString(`" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">` + "\n<defs>\n")
	b.Write(c.defs.Bytes())
	b.WriteString("</defs>\n")
	b.Write(c.body.Bytes())
	b.WriteString("</svg>\n")
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// Size is the canvas's size.
func (c *svgCanvas) Size() (w, h vg.Length) { return c.w, c.h }
