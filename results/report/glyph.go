package report

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	pfont "gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// The SVG figures draw their text as glyph outlines taken from the font
// the PNG is rasterised with (gonum's default, Liberation Serif), so that an SVG looks the
// same in every browser and editor without a font file: it defines each
// glyph it uses once and places it with <use> (a few kB per figure, where
// embedding the font weighed 0.5 MB), and keeps each label's text in a
// <title>. (The PDFs carry real text in an embedded subset of the same
// font: pdfcanvas.go.)

// glyph is one glyph of a font in font units (origin on the baseline):
// its outline and its advance.
type glyph struct {
	svgPath string // the outline as SVG path data, y down (font units)
	advance float64
}

type glyphKey struct {
	font *sfnt.Font
	idx  sfnt.GlyphIndex
}

// glyphs caches outlines: a report draws the same few dozen glyphs in
// every figure, concurrently.
var glyphs sync.Map // glyphKey → *glyph

// placedGlyph is a glyph of a string and where its origin lies along the
// baseline, in points from the string's start.
type placedGlyph struct {
	g     *glyph
	key   glyphKey
	x     vg.Length
	scale float64 // font units → points
}

// layoutText places the glyphs of s set in f as gonum's text layout measures
// it (font.Face.Width: unhinted advances plus kerning), so that outlines
// land where the PNG's rasterised text does.
func layoutText(f pfont.Face, s string) []placedGlyph {
	if f.Face == nil || f.Font.Size <= 0 {
		return nil
	}
	var buf sfnt.Buffer
	upem := fixed.Int26_6(f.Face.UnitsPerEm())
	scale := float64(f.Font.Size.Points()) / float64(upem)
	var out []placedGlyph
	var x float64
	var prev sfnt.GlyphIndex
	hasPrev := false
	for _, r := range s {
		idx, err := f.Face.GlyphIndex(&buf, r)
		if err != nil {
			continue
		}
		if hasPrev {
			if k, err := f.Face.Kern(&buf, prev, idx, upem, font.HintingNone); err == nil {
				x += float64(k)
			} else if !errors.Is(err, sfnt.ErrNotFound) {
				continue
			}
		}
		key := glyphKey{f.Face, idx}
		g := loadGlyph(&buf, key, upem)
		if g == nil {
			continue
		}
		out = append(out, placedGlyph{g: g, key: key, x: vg.Points(x * scale), scale: scale})
		x += g.advance
		prev, hasPrev = idx, true
	}
	return out
}

// loadGlyph returns the cached outline of key, loading it at ppem = units
// per em (so that the outline's coordinates are font units).
func loadGlyph(buf *sfnt.Buffer, key glyphKey, upem fixed.Int26_6) *glyph {
	if g, ok := glyphs.Load(key); ok {
		return g.(*glyph)
	}
	segs, err := key.font.LoadGlyph(buf, key.idx, upem, nil)
	if err != nil {
		return nil
	}
	adv, err := key.font.GlyphAdvance(buf, key.idx, upem, font.HintingNone)
	if err != nil {
		return nil
	}
	g := &glyph{advance: float64(adv)}
	var d strings.Builder
	num := func(cmd byte, pts ...fixed.Point26_6) {
		d.WriteByte(cmd)
		for i, p := range pts {
			if i > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(strconv.Itoa(int(p.X)))
			d.WriteByte(' ')
			d.WriteString(strconv.Itoa(int(p.Y)))
		}
	}
	open := false
	for _, s := range segs {
		switch s.Op {
		case sfnt.SegmentOpMoveTo:
			if open {
				d.WriteByte('Z')
			}
			num('M', s.Args[0])
			open = true
		case sfnt.SegmentOpLineTo:
			num('L', s.Args[0])
		case sfnt.SegmentOpQuadTo:
			num('Q', s.Args[0], s.Args[1])
		case sfnt.SegmentOpCubeTo:
			num('C', s.Args[0], s.Args[1], s.Args[2])
		}
	}
	if open {
		d.WriteByte('Z')
	}
	g.svgPath = d.String()
	v, _ := glyphs.LoadOrStore(key, g)
	return v.(*glyph)
}
