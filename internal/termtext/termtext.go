// Package termtext says which characters a terminal acts on rather than
// shows, and writes them out: text other people chose (a plugin's docs and
// errors, a campaign's name) reaches operators' terminals.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Control reports whether a terminal acts on r rather than showing it: C0
// and C1 controls (newline and tab among them), DEL, and Unicode's
// bidirectional controls.
func Control(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// Printable is s with every Control character but newline and tab, and
// every byte that is not UTF-8, written out as an escape (\x1b, \u202e,
// \xff). Raw, a hostile plugin's error erased its own line and wrote
// "3/3 done (100%), 0 failed" in its place, changed the terminal's title,
// or set its clipboard (OSC 52) to a command.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if unsafe(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafe(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafe(r rune) bool {
	return r != '\n' && r != '\t' && Control(r) || r == utf8.RuneError
}
