package report

import (
	"strings"
	"sync"

	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot"
)

// figureFont is the font the figures' text is set in (gonum's default,
// Liberation Serif: Latin, Greek, Cyrillic and common symbols).
var figureFont = sync.OnceValue(func() *sfnt.Font {
	return plot.DefaultTextHandler.Cache().Lookup(plot.DefaultFont, 10).Face
})

// missingGlyph is what a character the font cannot draw is drawn as.
const missingGlyph = '?'

// drawable is s as the figures can draw it: each character the font has
// no glyph for becomes missingGlyph. Class, workload and policy names come
// from the sweep; raw, a CJK character vanished from a panel's title
// without a trace, and a character outside the Basic Multilingual Plane
// (an emoji) crashed the PDF writer (its font map has 2^16 entries), and
// with it the run's report. The data files and the HTML keep the names as
// they are.
func drawable(s string) string {
	face := figureFont()
	var buf sfnt.Buffer
	// strings.Map returns s itself when nothing changes.
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' {
			return r
		}
		if i, err := face.GlyphIndex(&buf, r); r > 0xFFFF || err != nil || i == 0 {
			return missingGlyph
		}
		return r
	}, s)
}
