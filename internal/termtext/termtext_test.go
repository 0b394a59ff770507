package termtext

import "testing"

// TestPrintable: characters a terminal acts on are written out; text,
// newlines and tabs are kept.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é, 中文":     "plain text, é, 中文",
		"two\nlines\tand a tab": "two\nlines\tand a tab",
		"\x1b[2Jclear":          `\x1b[2Jclear`,
		"bell\x07 cr\r del\x7f": `bell\x07 cr\x0d del\x7f`,
		"c1 \u0085 \u009b":      `c1 \u0085 \u009b`,
		"bidi \u202e \u2066":    `bidi \u202e \u2066`,
		"bad \xff utf-8":        `bad \xff utf-8`,
		"":                      "",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
