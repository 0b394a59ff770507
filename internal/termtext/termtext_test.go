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

// Clip keeps max bytes at a character boundary and counts the rest;
// JoinMax lists max names and counts the rest.
func TestClipJoinMax(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 4, "abcd… (6 bytes more)"},
		// "é" is two bytes: a cut inside it moves before it.
		{"abcé", 4, "abc… (2 bytes more)"},
	} {
		if got := Clip(c.s, c.max); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
	if got := JoinMax([]string{"a", "b", "c", "d"}, 2); got != "a, b and 2 more" {
		t.Errorf("JoinMax: %q", got)
	}
	if got := JoinMax([]string{"a", "b"}, 2); got != "a, b" {
		t.Errorf("JoinMax: %q", got)
	}
}

// OneLine writes out newline and tab too: a worker named
// "evil\x1b[2J\nforged line" cleared the operator's screen and forged a
// line of `msjfarm status`.
func TestOneLine(t *testing.T) {
	if got, want := OneLine("evil\x1b[2J\nforged\tline"), `evil\x1b[2J\nforged\tline`; got != want {
		t.Errorf("OneLine = %q, want %q", got, want)
	}
	if got := OneLine("w1 (host a)"); got != "w1 (host a)" {
		t.Errorf("plain text changed: %q", got)
	}
}
