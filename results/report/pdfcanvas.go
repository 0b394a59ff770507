package report

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"codeberg.org/go-pdf/fpdf"
	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// pdfCanvas draws a figure into a one-page PDF whose text is real text in
// an embedded font: a paper's reader can select, search and copy "λ" or
// a tick label, and a publisher's preflight finds every font embedded.
//
// gonum's vgpdf cannot do this: it registers fonts in fpdf's single-byte
// Windows-1252 encoding (no λ, ρ or ≥) and embeds the whole font (0.2 MB
// per figure). Here each font goes through fpdf's UTF-8 path instead: a
// TrueType subset of the glyphs the figure uses, as a CIDFontType2 with
// Identity-H encoding and a ToUnicode map (a few kB per figure).
//
// Coordinates: vg's origin is the bottom left, y up, in points; the page
// is set up in fpdf's points with a flip so that a vg point is passed to
// fpdf as it is.
type pdfCanvas struct {
	doc   *fpdf.Fpdf
	w, h  vg.Length
	fonts map[*sfnt.Font]string // registered fonts → fpdf family names
	runes map[string][]rune     // fpdf family → the characters drawn in it
	stack []pdfState
	imgs  int
}

// pdfState is what Push saves beside the PDF's own graphics state: fpdf
// does not restore its idea of the line width or alpha on "Q", and
// Stroke must know whether the width is zero.
type pdfState struct {
	width vg.Length
	alpha float64
}

func newPDFCanvas(w, h vg.Length) *pdfCanvas {
	doc := fpdf.NewCustom(&fpdf.InitType{
		UnitStr: "pt",
		Size:    fpdf.SizeType{Wd: w.Points(), Ht: h.Points()},
	})
	doc.SetMargins(0, 0, 0)
	doc.SetAutoPageBreak(false, 0)
	doc.AddPage()
	c := &pdfCanvas{doc: doc, w: w, h: h, fonts: map[*sfnt.Font]string{}, runes: map[string][]rune{},
		stack: []pdfState{{width: 1, alpha: 1}}}
	// Flip fpdf's top-left, y-down page into vg's bottom-left, y-up one.
	doc.TransformBegin()
	doc.TransformTranslate(0, h.Points())
	doc.TransformScale(100, -100, 0, 0)
	vg.Initialize(c)
	return c
}

func (c *pdfCanvas) state() *pdfState { return &c.stack[len(c.stack)-1] }

// Size returns the page size.
func (c *pdfCanvas) Size() (w, h vg.Length) { return c.w, c.h }

// SetLineWidth sets the width of stroked lines.
func (c *pdfCanvas) SetLineWidth(w vg.Length) {
	c.state().width = w
	c.doc.SetLineWidth(w.Points())
}

// SetLineDash sets the dash pattern of stroked lines.
func (c *pdfCanvas) SetLineDash(dashes []vg.Length, offs vg.Length) {
	ds := make([]float64, len(dashes))
	for i, d := range dashes {
		ds[i] = d.Points()
	}
	c.doc.SetDashPattern(ds, offs.Points())
}

// SetColor sets the colour of lines, fills and text.
func (c *pdfCanvas) SetColor(clr color.Color) {
	if clr == nil {
		clr = color.Black
	}
	r, g, b, a := clr.RGBA()
	// RGBA is alpha-premultiplied: undo it for PDF's straight colour.
	un := func(v uint32) int {
		if a == 0 {
			return 0
		}
		return int(math.Round(float64(v) / float64(a) * 255))
	}
	c.doc.SetDrawColor(un(r), un(g), un(b))
	c.doc.SetFillColor(un(r), un(g), un(b))
	c.doc.SetTextColor(un(r), un(g), un(b))
	if alpha := float64(a) / 0xffff; alpha != c.state().alpha {
		c.state().alpha = alpha
		c.doc.SetAlpha(alpha, "Normal")
	}
}

// Rotate rotates the coordinates by r radians, counter-clockwise.
func (c *pdfCanvas) Rotate(r float64) { c.doc.TransformRotate(-r*180/math.Pi, 0, 0) }

// Translate moves the origin to pt.
func (c *pdfCanvas) Translate(pt vg.Point) { c.doc.TransformTranslate(pt.X.Points(), pt.Y.Points()) }

// Scale scales the coordinates.
func (c *pdfCanvas) Scale(x, y float64) { c.doc.TransformScale(x*100, y*100, 0, 0) }

// Push saves the graphics state.
func (c *pdfCanvas) Push() {
	c.stack = append(c.stack, *c.state())
	c.doc.TransformBegin()
}

// Pop restores the state saved by the matching Push.
func (c *pdfCanvas) Pop() {
	c.doc.TransformEnd()
	c.stack = c.stack[:len(c.stack)-1]
}

// Stroke strokes p (nothing at zero width: PDF would draw a hairline).
func (c *pdfCanvas) Stroke(p vg.Path) {
	if c.state().width > 0 {
		c.path(p, "D")
	}
}

// Fill fills p.
func (c *pdfCanvas) Fill(p vg.Path) { c.path(p, "F") }

// path emits p and paints it in style ("D" stroke, "F" fill). Arcs become
// cubic Béziers of at most a quarter turn each (error < 3×10⁻⁴ radius).
func (c *pdfCanvas) path(p vg.Path, style string) {
	var start vg.Point
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			start = comp.Pos
			c.doc.MoveTo(comp.Pos.X.Points(), comp.Pos.Y.Points())
		case vg.LineComp:
			c.doc.LineTo(comp.Pos.X.Points(), comp.Pos.Y.Points())
		case vg.ArcComp:
			c.arc(comp)
		case vg.CurveComp:
			switch len(comp.Control) {
			case 1:
				c.doc.CurveTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			case 2:
				c.doc.CurveBezierCubicTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(),
					comp.Control[1].X.Points(), comp.Control[1].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			}
		case vg.CloseComp:
			c.doc.ClosePath()
			c.doc.MoveTo(start.X.Points(), start.Y.Points())
		}
	}
	c.doc.DrawPath(style)
}

// arc draws comp as a line to its start and Bézier quarter-turns.
func (c *pdfCanvas) arc(comp vg.PathComp) {
	cx, cy, r := comp.Pos.X.Points(), comp.Pos.Y.Points(), comp.Radius.Points()
	at := func(a float64) (float64, float64) { return cx + r*math.Cos(a), cy + r*math.Sin(a) }
	x0, y0 := at(comp.Start)
	c.doc.LineTo(x0, y0)
	n := int(math.Ceil(math.Abs(comp.Angle) / (math.Pi / 2)))
	if n == 0 {
		return
	}
	step := comp.Angle / float64(n)
	k := 4.0 / 3 * math.Tan(step/4) * r // control-point distance
	a := comp.Start
	for range n {
		b := a + step
		x1, y1 := at(a)
		x2, y2 := at(b)
		c.doc.CurveBezierCubicTo(x1-k*math.Sin(a), y1+k*math.Cos(a), x2+k*math.Sin(b), y2-k*math.Cos(b), x2, y2)
		a = b
	}
}

// fontSources caches each font's file: serialising it is not free and a
// report embeds the same one or two fonts in every figure.
var fontSources sync.Map // *sfnt.Font → []byte

// FillString draws str with its baseline's left end at pt, as text in
// f's font, embedded as a subset.
func (c *pdfCanvas) FillString(f font.Face, pt vg.Point, str string) {
	if f.Face == nil || f.Font.Size <= 0 || str == "" {
		return
	}
	family, ok := c.fonts[f.Face]
	if !ok {
		src, ok := fontSources.Load(f.Face)
		if !ok {
			var buf bytes.Buffer
			if _, err := f.Face.WriteSourceTo(nil, &buf); err != nil {
				c.doc.SetError(fmt.Errorf("embed font %s: %w", f.Name(), err))
				return
			}
			src, _ = fontSources.LoadOrStore(f.Face, buf.Bytes())
		}
		family = subsetFamily(len(c.fonts))
		c.fonts[f.Face] = family
		c.doc.AddUTF8FontFromBytes(family, "", src.([]byte))
	}
	c.runes[family] = append(c.runes[family], []rune(str)...)
	c.doc.SetFont(family, "", f.Font.Size.Points())
	c.Push()
	c.Translate(pt)
	c.Scale(1, -1) // text is set y down in fpdf's page
	c.doc.Text(0, 0, str)
	c.Pop()
}

// DrawImage draws img into rect (as a PNG, which PDF stores losslessly).
func (c *pdfCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		c.doc.SetError(fmt.Errorf("encode image: %w", err))
		return
	}
	c.imgs++
	name := fmt.Sprintf("img%d", c.imgs)
	opts := fpdf.ImageOptions{ImageType: "png"}
	c.doc.RegisterImageOptionsReader(name, opts, &buf)
	// fpdf places an image by its top-left corner, y down: inside the
	// flipped page, draw it flipped back about its own box.
	c.Push()
	c.Translate(vg.Point{X: rect.Min.X, Y: rect.Max.Y})
	c.Scale(1, -1)
	sz := rect.Size()
	c.doc.ImageOptions(name, 0, 0, sz.X.Points(), sz.Y.Points(), false, opts, 0, "")
	c.Pop()
}

// writeTo ends the page and writes the PDF, each font named as the
// subset it is (tagSubset).
func (c *pdfCanvas) writeTo(w io.Writer) error {
	c.doc.TransformEnd()
	var buf bytes.Buffer
	if err := c.doc.Output(&buf); err != nil {
		return err
	}
	pdf := buf.Bytes()
	for face, family := range c.fonts {
		pdf = tagSubset(pdf, family, postScriptName(face), c.runes[family])
	}
	_, err := w.Write(pdf)
	return err
}

// A font subset's name in a PDF is its PostScript name behind a tag of
// six capital letters and a plus ("QXBKRT+LiberationSerif", ISO 32000-1
// 9.6.4): that is how pdffonts, a publisher's preflight (PDF/X, PDF/A)
// and a reader tell a subset from a whole embedded font, and the name a
// reader's font list shows. fpdf names a UTF-8 font "utf8" followed by
// its family in lower case ("utf8f0": pdffonts said "sub no"), and has
// no way to name it otherwise, so the name is replaced in its output, in
// place: the family is padded to be longer than any tagged name, and
// the tagged name is padded back with spaces (white space between a
// dictionary's tokens), so no byte moves and the cross-reference
// table's offsets stay true.

// subsetNameRoom is the longest tagged name written: a tag, a plus and
// a PostScript name of at most 63 characters (Adobe's limit).
const subsetNameRoom = 6 + 1 + 63

// subsetFamily is the fpdf family of the i-th font of a figure: "f<i>",
// padded with "x" so that fpdf's name for it ("utf8" and the family) has
// room for any tagged name.
func subsetFamily(i int) string {
	f := fmt.Sprintf("f%d", i)
	return f + strings.Repeat("x", subsetNameRoom-len("utf8")-len(f))
}

// postScriptName is f's PostScript name, only of the characters a PDF
// name and a PostScript name share without escapes, at most 63 of
// them; "Font" without one.
func postScriptName(f *sfnt.Font) string {
	name, _ := f.Name(nil, sfnt.NameIDPostScript)
	name = strings.Map(func(r rune) rune {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return r
		}
		return -1
	}, name)
	if len(name) > 63 {
		name = name[:63]
	}
	if name == "" {
		name = "Font"
	}
	return name
}

// tagSubset names the font fpdf registered as family in pdf
// "TAG+psName", padded in place; the tag is drawn from the name and the
// characters the subset holds, so a figure's bytes are the same on every
// render (a report is reproducible) and two subsets of one file differ.
func tagSubset(pdf []byte, family, psName string, runes []rune) []byte {
	rs := slices.Clone(runes)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	h := sha256.New()
	h.Write([]byte(psName))
	h.Write([]byte(family))
	for _, r := range rs {
		h.Write(utf8.AppendRune(nil, r))
	}
	sum := h.Sum(nil)
	tag := make([]byte, 6)
	for i := range tag {
		tag[i] = 'A' + sum[i]%26
	}
	// Every family has the same length (subsetFamily), so no font's
	// name begins another's.
	old := "/utf8" + strings.ToLower(family)
	name := "/" + string(tag) + "+" + psName
	name += strings.Repeat(" ", len(old)-len(name))
	return bytes.ReplaceAll(pdf, []byte(old), []byte(name))
}
