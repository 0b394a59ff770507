package report

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/image/font"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// pdfLabels are texts the limit-points figure draws: axis labels (with a
// Greek letter and brackets, which PDF strings escape), a legend entry
// and a tick.
var pdfLabels = []string{"mean response time E[T]", "arrival rate λ", "fcfs", "msf"}

// TestPDFEmbeddedText: a PDF figure's text is real text in an embedded
// font subset, readable without poppler: the page's text operators,
// decoded through the font's ToUnicode map, spell every label; the font
// is a Type0/CIDFontType2 with Identity-H encoding and a /FontFile2;
// that file is a TrueType subset (far fewer glyphs than the font it was
// cut from) in which the glyph each used character maps to (through the
// CIDToGIDMap) is that character's glyph of the full font (same advance
// and outline); and the figure stays small.
//
// Complexity 24: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestPDFEmbeddedText(t *testing.T) {
	files, err := Render(Campaign{Points: limitPoints()})
	if err != nil {
		t.Fatal(err)
	}
	data := files["mean_response.pdf"]
	if n := len(data); n > 100<<10 {
		t.Errorf("mean_response.pdf is %d bytes, want under 100 kB (a subset, not a whole font)", n)
	}
	objs := pdfObjects(t, data)
	checkXref(t, data)

	// The font objects, found by their dictionaries and followed by
	// reference as a reader does.
	var type0 *pdfObject
	for _, o := range objs {
		if strings.Contains(o.dict, "/Subtype /Type0") {
			type0 = o
		}
	}
	if type0 == nil {
		t.Fatalf("no Type0 font in mean_response.pdf")
	}
	if !strings.Contains(type0.dict, "/Encoding /Identity-H") {
		t.Errorf("Type0 font not Identity-H: %s", type0.dict)
	}
	cid := objs[pdfRef(t, type0.dict, "DescendantFonts \\[")]
	if cid == nil || !strings.Contains(cid.dict, "/Subtype /CIDFontType2") {
		t.Fatalf("descendant font is not a CIDFontType2: %v", cid)
	}
	toUni := objs[pdfRef(t, type0.dict, "ToUnicode")]
	desc := objs[pdfRef(t, cid.dict, "FontDescriptor")]
	// Named as a subset, "TAG+PostScriptName", in the three places a
	// font's name is (fpdf wrote "utf8f0"); the padding is white space.
	subset := regexp.MustCompile(`/(?:BaseFont|FontName) /([A-Z]{6}\+LiberationSerif)\s`)
	var names []string
	for _, d := range []string{type0.dict, cid.dict, desc.dict} {
		m := subset.FindStringSubmatch(d)
		if m == nil {
			t.Fatalf("a font dictionary without a subset's name TAG+LiberationSerif: %s", d)
		}
		names = append(names, m[1])
	}
	if names[0] != names[1] || names[1] != names[2] {
		t.Errorf("the subset is named %v: one name wanted", names)
	}
	fontFile := objs[pdfRef(t, desc.dict, "FontFile2")]
	gidMap := objs[pdfRef(t, cid.dict, "CIDToGIDMap")]

	// The page's text, through the ToUnicode map.
	uni := parseToUnicode(t, string(toUni.stream))
	var text strings.Builder
	for _, o := range objs {
		for _, m := range regexp.MustCompile(`\(((?:\\.|[^\\)])*)\) Tj`).FindAllSubmatch(o.stream, -1) {
			codes := unescapePDF(m[1])
			for i := 0; i+1 < len(codes); i += 2 {
				text.WriteRune(uni(binary.BigEndian.Uint16(codes[i:])))
			}
			text.WriteByte('\n')
		}
	}
	for _, l := range pdfLabels {
		if !strings.Contains(text.String(), l+"\n") {
			t.Errorf("the PDF's text lacks %q; it has:\n%s", l, text.String())
		}
	}

	// The embedded file is a subset of the drawing font, and each used
	// character's glyph in it is the full font's.
	sub, err := sfnt.Parse(fontFile.stream)
	if err != nil {
		t.Fatalf("FontFile2 is not a TrueType font: %v", err)
	}
	full := plot.DefaultTextHandler.Cache().Lookup(plot.DefaultFont, 10).Face
	if sub.NumGlyphs() >= full.NumGlyphs()/4 {
		t.Errorf("embedded font has %d glyphs of the full font's %d: not a subset", sub.NumGlyphs(), full.NumGlyphs())
	}
	var buf sfnt.Buffer
	for _, r := range "λ[]E" {
		gid := sfnt.GlyphIndex(binary.BigEndian.Uint16(gidMap.stream[2*int(r):]))
		want, err := full.GlyphIndex(&buf, r)
		if err != nil || want == 0 {
			t.Fatalf("full font lacks %q: %v", r, err)
		}
		ppem := fixed.Int26_6(full.UnitsPerEm())
		wa, _ := full.GlyphAdvance(&buf, want, ppem, font.HintingNone)
		ga, err := sub.GlyphAdvance(&buf, gid, ppem, font.HintingNone)
		if gid == 0 || err != nil || ga != wa {
			t.Errorf("%q → subset glyph %d: advance %v (err %v), want %v as in the full font", r, gid, ga, err, wa)
			continue
		}
		ws, _ := full.LoadGlyph(&buf, want, ppem, nil)
		nw := len(ws)
		gs, err := sub.LoadGlyph(&buf, gid, ppem, nil)
		if err != nil || len(gs) != nw {
			t.Errorf("%q → subset glyph %d: %d outline segments (err %v), want %d", r, gid, len(gs), err, nw)
		}
	}
}

// TestPDFPoppler: where poppler-utils is installed (CI installs it), the
// tools a publisher's preflight and a reader use agree: pdffonts lists
// the font as an embedded subset (named TAG+LiberationSerif) with a
// ToUnicode map, and pdftotext extracts the labels, λ included.
func TestPDFPoppler(t *testing.T) {
	for _, tool := range []string{"pdffonts", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian: poppler-utils); TestPDFEmbeddedText checks the same without it", tool)
		}
	}
	files, err := Render(Campaign{Points: limitPoints()})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"mean_response.pdf", "mean_response_page.pdf"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("pdffonts", path).CombinedOutput()
		if err != nil {
			t.Fatalf("pdffonts %s: %v\n%s", name, err, out)
		}
		// name type encoding emb sub uni object ID: one font, embedded,
		// with a Unicode map.
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 3 {
			t.Fatalf("pdffonts %s: want one font:\n%s", name, out)
		}
		f := strings.Fields(lines[2])
		if len(f) < 9 || f[len(f)-5] != "yes" || f[len(f)-4] != "yes" || f[len(f)-3] != "yes" || !strings.Contains(lines[2], "CID TrueType") ||
			!regexp.MustCompile(`^[A-Z]{6}\+LiberationSerif$`).MatchString(f[0]) {
			t.Errorf("pdffonts %s: want a CID TrueType subset TAG+LiberationSerif with emb=yes, sub=yes and uni=yes:\n%s", name, out)
		}
		txt, err := exec.Command("pdftotext", path, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext %s: %v", name, err)
		}
		for _, l := range pdfLabels {
			if !strings.Contains(string(txt), l) {
				t.Errorf("pdftotext %s lacks %q:\n%s", name, l, txt)
			}
		}
	}
}

// TestPDFCanvasPlacement: text, paths and images land where vg puts
// them on the flipped page: a plot's x label is centred under the axes
// and upright (pdftotext reads it left to right), and the page is the
// size asked for.
func TestPDFCanvasPlacement(t *testing.T) {
	c := newPDFCanvas(3*vg.Inch, 2*vg.Inch)
	p := plot.New()
	p.X.Label.Text = "λ axis"
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if err := c.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte("/MediaBox [0 0 216.00 144.00]")) {
		t.Errorf("page is not 216 × 144 pt: %.300s", buf.Bytes())
	}
	// The label's text operator sits inside a translation to the label's
	// baseline start: x centred, y near the bottom (a few points up).
	m := regexp.MustCompile(`1\.00000 0\.00000 0\.00000 1\.00000 ([\d.]+) (-?[\d.]+) cm\n1\.00000 0\.00000 0\.00000 -1\.00000 0\.00000 [\d.]+ cm\nBT 0\.00 [\d.]+ Td \(`).FindAllSubmatch(inflateAll(t, buf.Bytes()), -1)
	if len(m) == 0 {
		t.Fatalf("no text placed as translate, flip, Td")
	}
	found := false
	for _, g := range m {
		x, _ := strconv.ParseFloat(string(g[1]), 64)
		y, _ := strconv.ParseFloat(string(g[2]), 64)
		// The x label: centred (±20 pt of 108) and within 15 pt of the
		// bottom (fpdf writes y negated).
		if x > 60 && x < 108 && -y >= 0 && -y < 15 {
			found = true
		}
	}
	if !found {
		t.Errorf("no text placed near (108 − w/2, bottom): %q", m)
	}
}

// pdfObject is one indirect object: its dictionary and its stream,
// inflated.
type pdfObject struct {
	dict   string
	stream []byte
}

// pdfObjects splits a PDF (as fpdf writes it: uncompressed object
// syntax, streams with a direct /Length) into its objects by number.
// checkXref: every in-use entry of the PDF's cross-reference table (the
// one startxref points to) gives the offset at which its object begins,
// as a reader that trusts the table (most do, and poppler repairs a
// broken one silently) finds it: renaming the font subsets in place
// must not move a byte.
func checkXref(t *testing.T, data []byte) {
	t.Helper()
	m := regexp.MustCompile(`startxref\s+(\d+)\s+%%EOF\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("no startxref at the end of the PDF")
	}
	at, _ := strconv.Atoi(string(m[1]))
	if at >= len(data) || !bytes.HasPrefix(data[at:], []byte("xref")) {
		t.Fatalf("startxref %d does not point to an xref table", at)
	}
	sc := bufio.NewScanner(bytes.NewReader(data[at:]))
	sc.Scan() // "xref"
	sc.Scan()
	var first, count int
	if _, err := fmt.Sscanf(sc.Text(), "%d %d", &first, &count); err != nil {
		t.Fatalf("xref subsection header %q: %v", sc.Text(), err)
	}
	checked := 0
	for i := range count {
		sc.Scan()
		var off, gen int
		var kind string
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &off, &gen, &kind); err != nil {
			t.Fatalf("xref entry %q: %v", sc.Text(), err)
		}
		if kind != "n" {
			continue
		}
		if want := fmt.Sprintf("%d %d obj", first+i, gen); !bytes.HasPrefix(data[off:], []byte(want)) {
			t.Errorf("xref: object %d at offset %d, where the file has %q", first+i, off, data[off:min(off+20, len(data))])
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("xref: %d objects in use; the figure has more", checked)
	}
}

func pdfObjects(t *testing.T, data []byte) map[int]*pdfObject {
	t.Helper()
	objs := map[int]*pdfObject{}
	re := regexp.MustCompile(`(?m)^(\d+) 0 obj\n`)
	for _, loc := range re.FindAllSubmatchIndex(data, -1) {
		n, _ := strconv.Atoi(string(data[loc[2]:loc[3]]))
		body := data[loc[1]:]
		end := bytes.Index(body, []byte("endobj"))
		if end < 0 {
			t.Fatalf("object %d has no endobj", n)
		}
		o := &pdfObject{dict: string(body[:end])}
		if s := bytes.Index(body[:end], []byte("stream\n")); s >= 0 {
			o.dict = string(body[:s])
			lm := regexp.MustCompile(`/Length (\d+)`).FindStringSubmatch(o.dict)
			if lm == nil {
				t.Fatalf("object %d: stream without /Length", n)
			}
			l, _ := strconv.Atoi(lm[1])
			o.stream = body[s+len("stream\n") : s+len("stream\n")+l]
			if strings.Contains(o.dict, "/FlateDecode") {
				r, err := zlib.NewReader(bytes.NewReader(o.stream))
				if err != nil {
					t.Fatalf("object %d: %v", n, err)
				}
				if o.stream, err = io.ReadAll(r); err != nil {
					t.Fatalf("object %d: %v", n, err)
				}
			}
		}
		objs[n] = o
	}
	return objs
}

// inflateAll is every stream of a PDF, inflated, one after the other.
func inflateAll(t *testing.T, data []byte) []byte {
	var all []byte
	for _, o := range pdfObjects(t, data) {
		all = append(all, o.stream...)
	}
	return all
}

// pdfRef is the object number the key refers to in dict ("/Key n 0 R").
func pdfRef(t *testing.T, dict, key string) int {
	t.Helper()
	m := regexp.MustCompile(`/` + key + ` ?(\d+) 0 R`).FindStringSubmatch(dict)
	if m == nil {
		t.Fatalf("no /%s reference in %s", key, dict)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// parseToUnicode reads a ToUnicode CMap's bfrange and bfchar entries
// (single UTF-16 units: the figures' text is in the Basic Multilingual
// Plane) into a lookup that returns U+FFFD for an unmapped code.
func parseToUnicode(t *testing.T, cmap string) func(uint16) rune {
	t.Helper()
	hex := func(s string) uint16 {
		v, err := strconv.ParseUint(s, 16, 16)
		if err != nil {
			t.Fatalf("ToUnicode: bad code <%s>", s)
		}
		return uint16(v)
	}
	type span struct{ lo, hi, dst uint16 }
	var spans []span
	for _, blk := range regexp.MustCompile(`(?s)beginbfrange(.*?)endbfrange`).FindAllStringSubmatch(cmap, -1) {
		for _, m := range regexp.MustCompile(`<([0-9A-Fa-f]{4})>\s*<([0-9A-Fa-f]{4})>\s*<([0-9A-Fa-f]{4})>`).FindAllStringSubmatch(blk[1], -1) {
			spans = append(spans, span{hex(m[1]), hex(m[2]), hex(m[3])})
		}
	}
	for _, blk := range regexp.MustCompile(`(?s)beginbfchar(.*?)endbfchar`).FindAllStringSubmatch(cmap, -1) {
		for _, m := range regexp.MustCompile(`<([0-9A-Fa-f]{4})>\s*<([0-9A-Fa-f]{4})>`).FindAllStringSubmatch(blk[1], -1) {
			spans = append(spans, span{hex(m[1]), hex(m[1]), hex(m[2])})
		}
	}
	if len(spans) == 0 {
		t.Fatalf("ToUnicode map has no entries:\n%s", cmap)
	}
	return func(c uint16) rune {
		for _, s := range spans {
			if c >= s.lo && c <= s.hi {
				return utf16.Decode([]uint16{s.dst + (c - s.lo)})[0]
			}
		}
		return '\uFFFD'
	}
}

// unescapePDF undoes a PDF literal string's escapes.
func unescapePDF(s []byte) []byte {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		default:
			if c >= '0' && c <= '7' {
				v, j := 0, i
				for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
					v = v*8 + int(s[j]-'0')
				}
				out = append(out, byte(v))
				i = j - 1
			} else {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestPDFImageUpright: an image drawn on the flipped page keeps its top
// row on top (heat maps are images). A 1 × 2 image, red over blue, fills
// a 72 × 72 pt page; pdftoppm at 72 dpi gives a 72 × 72 px raster whose
// top rows are red and bottom rows blue. Needs poppler-utils.
func TestPDFImageUpright(t *testing.T) {
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		t.Skip("pdftoppm not installed (Debian: poppler-utils)")
	}
	img := image.NewRGBA(image.Rect(0, 0, 1, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	img.Set(0, 1, color.RGBA{0, 0, 255, 255})
	c := newPDFCanvas(72, 72)
	c.DrawImage(vg.Rectangle{Max: vg.Point{X: 72, Y: 72}}, img)
	var buf bytes.Buffer
	if err := c.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "img.pdf")
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("pdftoppm", "-r", "72", "-png", "-singlefile", in, filepath.Join(dir, "img")).CombinedOutput(); err != nil {
		t.Fatalf("pdftoppm: %v\n%s", err, out)
	}
	f, err := os.Open(filepath.Join(dir, "img.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Bounds()
	top := color.RGBAModel.Convert(r.At(b.Dx()/2, b.Dy()/4)).(color.RGBA)
	bottom := color.RGBAModel.Convert(r.At(b.Dx()/2, 3*b.Dy()/4)).(color.RGBA)
	if top.R < 200 || top.B > 60 || bottom.B < 200 || bottom.R > 60 {
		t.Errorf("top %v, bottom %v: want red over blue", top, bottom)
	}
}
