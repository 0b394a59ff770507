package sweep

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/msjfarm/msjfarm/internal/termtext"
)

// Error is a mistake in a sweep file, said the way a compiler says one:
//
//	q.yaml:5:1: replicatons: unknown key (did you mean "replications"?)
//	q.yaml:6:31: run.deadline: "1hour" is not a duration: ...
//
// File, Line and Col place it (Line 0: unknown, e.g. a value set by an
// environment variable or a spec that was never a file); Path is the key
// path as written (run.deadline, policies[1].threshold,
// axes.class[0].share); Msg says what is wrong and quotes the bad value;
// Suggest holds the nearest known names when the mistake is a misspelt
// key, policy, workload, parameter or axis. The whole error is one line,
// so a terminal, an editor's quickfix list or grep can use it.
type Error struct {
	File      string
	Line, Col int
	Path      string
	Msg       string
	Suggest   []string
	err       error // the underlying error, for errors.Is/As
	// num, if set, is the bad number: an error at a list (an axis) is
	// placed at the element that holds it.
	num *float64
	// missing: the key is required and absent, so it has no line of its
	// own: the error is placed at its parent, or at the file's start.
	missing bool
	// inMsg: Msg begins with Path already (an error from elsewhere that
	// names the key itself, "policies[1] (msfq): ..."), so it is not
	// written twice.
	inMsg bool
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Col)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Col)
	}
	if e.Path != "" && !e.inMsg {
		// A key path is written as the file wrote it: a key of 1 MB, or
		// one holding "\e]0;...\a" (which retitled the terminal), is
		// clipped and escaped like a quoted value.
		b.WriteString(termtext.Clip(termtext.OneLine(e.Path), maxQuoted) + ": ")
	}
	// Values are quoted (quoted, %q) where the message is made; a
	// message from elsewhere (an error wrapped from the OS or a
	// plugin, a path) may still hold what a terminal acts on.
	b.WriteString(termtext.OneLine(e.Msg))
	if len(e.Suggest) > 0 {
		b.WriteString(" (did you mean " + QuoteOr(e.Suggest) + "?)")
	}
	return b.String()
}

// maxQuoted is how many bytes of a value written in the file an error
// quotes (termtext.MaxQuoted).
const maxQuoted = termtext.MaxQuoted

// quoted is s quoted as %q quotes it (control characters escaped), cut
// to maxQuoted bytes with the number of bytes left out said after it.
func quoted(s string) string { return termtext.Quote(s, maxQuoted) }

func (e *Error) Unwrap() error { return e.err }

// QuoteOr quotes names and joins them as a suggestion reads: "a",
// "a" or "b", "a", "b" or "c".
func QuoteOr(names []string) string {
	q := make([]string, len(names))
	for i, s := range names {
		q[i] = quoted(s)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// fieldErr is an error at a key path, placed later by source.locate.
func fieldErr(path string, suggest []string, format string, a ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, a...), Suggest: suggest}
}

// unknownName is the error of a misspelt name: the nearest known names
// when some are near, else the list of known names (list: how to
// introduce it, e.g. "its parameters"); hint, if any, says where they are
// listed.
func unknownName(path, what, name string, known []string, list, hint string) *Error {
	sug := Suggest(name, known)
	msg := fmt.Sprintf("unknown %s %s", what, quoted(name))
	switch {
	case len(sug) > 0 && hint != "":
		msg += " (" + hint + ")"
	case len(sug) == 0:
		msg += " (" + list + ": " + strings.Join(known, ", ") + ")"
	}
	return &Error{Path: path, Msg: msg, Suggest: sug}
}

// missingErr is the error of a required key that the file lacks.
func missingErr(path, format string, a ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, a...), missing: true}
}

// Errors is several mistakes found at once (every unknown key and wrong
// type of the file, not only the first), one line each, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, 0, min(len(es), maxErrorLines+1))
	for i, e := range es {
		if i == maxErrorLines {
			lines = append(lines, fmt.Sprintf("... and %d more", len(es)-maxErrorLines))
			break
		}
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

// maxErrorLines is how many of a file's errors are shown: 10 000 unknown
// keys printed 10 000 lines.
const maxErrorLines = 20

// Unwrap lets errors.As find the first *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// pos is a place in the file, 1-based.
type pos struct{ line, col int }

// source is where a File was read from: its name and the position of every
// key path, so that an error found after decoding (by Plan, PlanLimit or
// ReadTraceFile) can still name the line. A File built in code or decoded
// from a submit request has none, and its errors carry no position.
type source struct {
	file    string
	profile string // the selected profile, lower case ("" none)
	// profileEnv says the profile was selected by MSJFARM_PROFILE, not
	// by the caller.
	profileEnv bool
	// others is what checking the profiles not selected needs (the
	// file's content), kept only while the file has any
	// (keepForProfiles); nil once checked.
	others *otherProfiles
	// env holds the environment overrides applied (key of envKeys →
	// value): a file loaded from a path reads them, a content parsed
	// (a stored spec) never does.
	env map[string]string
	// keys holds the position of each mapping key (an unknown key is
	// reported there), vals that of each value (a bad value is reported
	// there); list items have only a value position.
	keys, vals map[string]pos
	// text holds each scalar value as written, to find the element of a
	// list that holds a bad number.
	text map[string]string
	// root is a YAML file's parsed content until walk reads its positions.
	root *yaml.Node
	// shape is the first mistake of the file's shape that the reader
	// would hide or choke on, found while indexing: keys and lists nested
	// past maxNesting, or a key repeated once case is folded.
	shape *Error
	// mapKeys counts each mapping's keys, nKeys all (countKey).
	mapKeys map[string]int
	nKeys   int
	// nMerged counts the keys YAML merge keys bring in (checkMerged).
	nMerged int
	// nulls are the file's null values, in file order, found while
	// indexing (a YAML or JSON file's; TOML has none) and refused by
	// nullErrors when a sweep file is read.
	nulls []nullAt
}

// locate turns err into an *Error placed in the file, when its key path
// can be told: an *Error's Path, or else the path that begins the message
// ("replications: must be >= 1", "policies[1] (msfq): ..."). Other errors
// get the file name only. A nil source (no file) adds nothing.
func (s *source) locate(err error) error {
	if err == nil || s == nil {
		return err
	}
	var es Errors
	if errors.As(err, &es) {
		for _, e := range es {
			s.place(e)
		}
		sort.SliceStable(es, func(i, j int) bool {
			a, b := es[i], es[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Col < b.Col
		})
		return es
	}
	var e *Error
	if !errors.As(err, &e) {
		path := s.pathOf(err.Error())
		e = &Error{Path: path, Msg: err.Error(), err: err, inMsg: path != ""}
	} else if e.File != "" {
		return err // placed already
	} else if outer, inner := err.Error(), e.Error(); outer != inner {
		// Wrapped with context ("point load=0.5: ..."): kept, after the
		// message, so that the line still begins with the key path.
		if i := strings.Index(outer, inner); i > 0 {
			e.Msg += " (" + strings.TrimSuffix(outer[:i], ": ") + ")"
		}
	}
	s.place(e)
	return e
}

// place fills in e's file and position from its Path: the value's position
// (or the key's, for an unknown key), under the selected profile when the
// profile sets that key; the nearest enclosing key that is in the file
// otherwise (a default value that is out of range has no line of its own).
func (s *source) place(e *Error) {
	e.File = s.file
	if e.Line > 0 || e.Path == "" {
		return
	}
	if env := envFor(e.Path); env != "" {
		if _, set := os.LookupEnv(env); set {
			e.Msg += " (set by " + env + ")"
			return
		}
	}
	defer func() {
		if e.Line == 0 && e.missing {
			e.Line, e.Col = 1, 1
		}
	}()
	for p := e.Path; p != ""; p = parentPath(p) {
		for _, full := range []string{"profiles." + s.profile + "." + p, p} {
			if s.profile == "" && full != p {
				continue
			}
			if at, ok := s.vals[full]; ok && !misspeltKey(e.Msg) {
				if el, ok := s.element(full, e.num); ok {
					at = el
				}
				e.Line, e.Col = at.line, at.col
				return
			}
			if at, ok := s.keys[full]; ok {
				e.Line, e.Col = at.line, at.col
				return
			}
		}
	}
}

// misspeltKey tells the errors whose bad text is the key itself (an
// unknown key, axis or parameter name), placed at the key rather than at
// its value.
func misspeltKey(msg string) bool {
	for _, p := range []string{"unknown key", "unknown axis", "unknown parameter", "class index"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// element is the position of the element of the list at path whose
// value is the number x.
func (s *source) element(path string, x *float64) (pos, bool) {
	if x == nil {
		return pos{}, false
	}
	for i := 0; ; i++ {
		p := fmt.Sprintf("%s[%d]", path, i)
		at, ok := s.vals[p]
		if !ok {
			return pos{}, false
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(s.text[p]), 64); err == nil && v == *x {
			return at, true
		}
	}
}

// envFor is the environment variable that overrides key path p, if any.
func envFor(p string) string {
	for _, k := range envKeys {
		if k == p {
			return envName(k)
		}
	}
	return ""
}

// parentPath drops the last element of a key path: run.deadline → run,
// policies[1] → policies, axes.class[0].share → axes (an axis name is one
// key even though it holds dots and brackets, so the parent of an axis is
// axes).
func parentPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "axes."); ok && rest != "" {
		return "axes"
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// lacks reports whether the file read has no key p (nor an environment
// override for it); false when there is no file to tell.
func (s *source) lacks(p string) bool {
	if s == nil {
		return false
	}
	if env := envFor(p); env != "" && os.Getenv(env) != "" {
		return false
	}
	_, k := s.keys[p]
	_, v := s.vals[p]
	if s.profile != "" {
		_, pk := s.keys["profiles."+s.profile+"."+p]
		k = k || pk
	}
	return !k && !v
}

// pathOf is the key path that begins a message "path: rest" or "path
// (detail): rest", when it is a key of the file; "" otherwise.
func (s *source) pathOf(msg string) string {
	end := strings.IndexAny(msg, ": ")
	if end <= 0 || !s.known(msg[:end]) {
		return ""
	}
	return msg[:end]
}

// known reports whether p names a key path of the file (or its parent
// does: policies[0] of a file that has policies).
func (s *source) known(p string) bool {
	for ; p != ""; p = parentPath(p) {
		if _, ok := s.keys[p]; ok {
			return true
		}
		if _, ok := s.vals[p]; ok {
			return true
		}
	}
	return false
}

// Suggest returns the known names nearest to name, best first: those
// equal to it once case, '-', '_' and ' ' are ignored, or within an edit
// distance of about a third of its length (at least 1, at most 3), or
// that contain it or are contained in it when it has at least 4
// characters. At most three; none for an exact match.
func Suggest(name string, known []string) []string {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '-', '_', ' ':
				return -1
			}
			return r
		}, strings.ToLower(s))
	}
	n := norm(name)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, k := range known {
		if k == name || seen[k] {
			if k == name {
				return nil
			}
			continue
		}
		seen[k] = true
		kn := norm(k)
		limit := min(3, max(1, len(n)/3))
		// Lengths further apart than limit are further apart in edit
		// distance too: not computed (its cost is the product of the
		// lengths, and a 50 MB policy name took 48 s against the
		// catalogue's names).
		d := limit + 1
		if abs(len(n)-len(kn)) <= limit {
			d = editDistance(n, kn)
		}
		switch {
		case kn == n:
			d = 0
		case d <= limit:
		case min(len(n), len(kn)) >= 4 && (strings.Contains(kn, n) || strings.Contains(n, kn)):
			// Both long enough to mean it: "replications" contains the
			// flag "ca", which was suggested for it.
			d = limit + 1 + abs(len(kn)-len(n))
		default:
			continue
		}
		cs = append(cs, cand{k, d})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment: insertions, deletions, substitutions and transpositions of
// neighbours, each 1) between a and b, by bytes: names are ASCII.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
