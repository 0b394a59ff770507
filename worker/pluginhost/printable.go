package pluginhost

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable is s with every character a terminal would act on rather than
// show written out as an escape (\x1b, \u202e): C0 controls but newline
// and tab, DEL, C1 controls, Unicode's bidirectional controls, and bytes
// that are not UTF-8 (\xff). Text a plugin chooses (its policies' docs, a
// replication's error, its stderr) reaches the operator's terminal through
// plugin info, submit --wait, results and the worker's log; raw, a hostile
// plugin's error erased its own line and wrote "3/3 done (100%), 0 failed"
// in its place, changed the terminal's title, or set its clipboard (OSC
// 52) to a command.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
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
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == utf8.RuneError
}

// nameRE is what a plugin's family, policy and parameter names may be:
// they are sweep-file keys and values, file and column names, and printed
// everywhere.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// checkName refuses a name a plugin declares that is not nameRE.
func checkName(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s %q: not a name (letters, digits, '.', '_', '+', '-', at most 64, starting with a letter or digit)", what, name)
	}
	return nil
}
