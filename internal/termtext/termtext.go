// Package termtext says which characters a terminal acts on rather than
// shows, and writes them out: text other people chose (a plugin's docs and
// errors, a campaign's name) reaches operators' terminals.
package termtext

import (
	"fmt"
	"strconv"
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

// OneLine is Printable with newline and tab written out too: for text
// other people chose that is shown inside one line (a worker's name in
// "verify: disagreeing workers: …"), where a newline forged a line of its
// own.
func OneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(Printable(s))
}

func unsafe(r rune) bool {
	return r != '\n' && r != '\t' && Control(r) || r == utf8.RuneError
}

// MaxMessage is how much of a message other people wrote Clip keeps: a
// plugin's error of 8 MiB went whole to the terminal and the worker's
// log, was stored six times over (the record, replications.csv and
// .parquet, summary.json) and was too large for the task's state on
// NATS. 16 KiB is what the host keeps of a plugin's stderr.
const MaxMessage = 16 << 10

// Clip is s cut to at most max bytes (at a character boundary), saying
// how much was left out.
func Clip(s string, max int) string {
	kept, more := cut(s, max)
	if more == 0 {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes more)", kept, more)
}

// MaxQuoted is how much of a value someone wrote an error quotes back
// (Quote): a sweep's 1 MB workload name was quoted whole in its error,
// and a 50 MB policy name took 1 GB and 48 s to report.
const MaxQuoted = 256

// Quote is s quoted as %q quotes it (control characters escaped), cut
// like Clip: for a value someone wrote, quoted back in an error (a sweep's
// 1 MB workload name was quoted whole).
func Quote(s string, max int) string {
	kept, more := cut(s, max)
	if more == 0 {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes more)", strconv.Quote(kept), more)
}

// cut is the first max bytes of s, cut at a character boundary, and the
// number of bytes after them.
func cut(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s) - n
}

// JoinMax joins the first max of names with ", " and says how many more
// there are: a list of names other people chose (a plugin's 30 000
// policies) made a 530 KB error.
func JoinMax(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
