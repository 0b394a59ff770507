package wire

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/msjfarm/msjfarm/sim"
)

// CounterName is the pattern of a counter name: lower-case words joined by
// underscores (a per-class counter adds "/" and a class name, checked by
// the worker against the task's classes). Names become summary.csv
// columns and report labels; the pattern keeps them readable and keeps a
// plugin from carrying arbitrary text there (a token, a path, a credential
// it found). worker/resultcheck applies it to every result's counters.
var CounterName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// Bounds of a counter description (sim.CounterInfo). A label is a short
// phrase, a unit a word or two; a word longer than CounterLabelWordMax is
// not a word but a blob (a token, a key, a path), refused so that a
// description cannot carry one into every report. CounterNameMax bounds a
// counter name (without a class suffix), CounterWordMax one of its words
// (the longest in the built-in families is 11: "preemptions"), MaxCounters
// both the counters of a result and the descriptions of a policy.
const (
	CounterNameMax      = 48
	CounterWordMax      = 16
	MaxCounters         = 256
	CounterLabelMax     = 32
	CounterUnitMax      = 16
	CounterDocMax       = 100
	CounterLabelWordMax = 20
)

// labelPunct is the punctuation a label or unit may contain besides
// letters, digits and single spaces: enough for "mean duration of phase 1",
// "P(helper)", "server-time", "1/time", "95% quantile", "jobs · time⁻¹".
// Left out on purpose: markup and quoting (< > & " ' `), CSV and shell
// separators (, ; | $), and anything a spreadsheet reads as a formula
// start (= + @ as first character is refused separately).
const labelPunct = "-_()/.%·:²³⁻¹×[]§"

// CheckCounterInfo checks a policy's counter descriptions as the worker
// reads them from a plugin (and sdk.Serve before serving them, so an author
// sees the error first): at most MaxCounters, each naming a valid counter
// once, with a label, unit and doc of bounded length made of letters, digits,
// single spaces and a few punctuation marks, and a known kind. The error
// names the entry and the field, never the offending text: errors are
// logged and stored, and must not become the channel the text was refused
// for.
func CheckCounterInfo(cs []sim.CounterInfo) error {
	if len(cs) > MaxCounters {
		return fmt.Errorf("counter descriptions: %d, more than %d", len(cs), MaxCounters)
	}
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		field := fmt.Sprintf("counter descriptions[%d]", i)
		if why := BadCounterName(c.Name); why != "" {
			return fmt.Errorf("%s.name: a name of %d bytes %s", field, len(c.Name), why)
		}
		if seen[c.Name] {
			return fmt.Errorf("%s.name: %s is described twice", field, c.Name)
		}
		seen[c.Name] = true
		if why := badLabel(c.Label, CounterLabelMax, ""); why != "" {
			return fmt.Errorf("%s.label (counter %s): %s", field, c.Name, why)
		}
		if why := badLabel(c.Unit, CounterUnitMax, ""); why != "" {
			return fmt.Errorf("%s.unit (counter %s): %s", field, c.Name, why)
		}
		// A doc is a phrase: it may have commas (a CSV writer quotes
		// the field).
		if why := badLabel(c.Doc, CounterDocMax, ","); why != "" {
			return fmt.Errorf("%s.doc (counter %s): %s", field, c.Name, why)
		}
		if !slices.Contains(sim.CounterKinds, c.Kind) {
			return fmt.Errorf("%s.kind (counter %s): a kind of %d bytes is not one of count, fraction, time, rate or empty", field, c.Name, len(c.Kind))
		}
	}
	return nil
}

// BadCounterName says why name (without a class suffix) is not a counter
// name ("" if it is).
func BadCounterName(name string) string {
	if len(name) > CounterNameMax {
		return fmt.Sprintf("is longer than %d characters", CounterNameMax)
	}
	if !CounterName.MatchString(name) {
		return "is not lower-case words joined by underscores (" + CounterName.String() + ")"
	}
	for _, w := range strings.Split(name, "_") {
		if len(w) > CounterWordMax {
			return fmt.Sprintf("has a word longer than %d characters", CounterWordMax)
		}
	}
	return ""
}

// badLabel says why s is not a label of at most max characters ("" if it
// is; the empty label is allowed: the raw name stands in), with the
// punctuation labelPunct and extra.
func badLabel(s string, max int, extra string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	if n := utf8.RuneCountInString(s); n > max {
		return fmt.Sprintf("has %d characters, more than %d", n, max)
	}
	if s != strings.TrimSpace(s) || strings.Contains(s, "  ") {
		return "has leading, trailing or repeated spaces"
	}
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		return "starts with =, +, - or @ (a spreadsheet would read a formula)"
	}
	for _, r := range s {
		switch {
		case r == ' ' || unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(labelPunct+extra, r):
		default:
			return fmt.Sprintf("contains %U: only letters, digits, single spaces and %s are allowed", r, labelPunct+extra)
		}
	}
	for _, w := range strings.Fields(s) {
		if utf8.RuneCountInString(w) > CounterLabelWordMax {
			return fmt.Sprintf("has a word longer than %d characters", CounterLabelWordMax)
		}
	}
	return ""
}
