package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	yaml "go.yaml.in/yaml/v3"
)

// maxNesting is how deep a sweep file's keys and lists may nest. The
// format's own nest at most seven deep
// (profiles.<name>.axes.class[0].service.mean); viper looks each key up
// by every prefix of its path, which costs about the cube of the depth: a
// 6 kB file of 1500 nested one-key maps took 7 s to be told its key was
// unknown, and a TOML table named by 10⁵ dotted parts ran out of memory.
const maxNesting = 32

// tooDeep records, once, that the value of the top-level key top (at p)
// nests more than maxNesting levels. The error names only the top-level
// key: the whole path of a too deep key can be 200 kB.
func (s *source) tooDeep(top string, p pos) {
	if s.shape == nil {
		s.shape = &Error{Path: top, Line: p.line, Col: p.col,
			Msg: fmt.Sprintf("keys and lists nested more than %d levels deep (a sweep file's own nest at most 7): refused before reading it further", maxNesting)}
	}
}

// repeated records, once, that the key written key at p, path path once
// folded, repeats the key written first on line firstLine of the same
// mapping. The reader folds keys to lower case and keeps the last of
// equal ones, so "Replications: 2" under "replications: 30" silently ran
// 2 replications; YAML and TOML refuse only keys written alike, and JSON
// not even those.
func (s *source) repeated(path, key, first string, p pos, firstLine int) {
	if s.shape != nil {
		return
	}
	msg := fmt.Sprintf("key %s repeats %s of line %d: keys are read without regard to case, and the later would silently replace the earlier", quoted(key), quoted(first), firstLine)
	if key == first {
		msg = fmt.Sprintf("key %s is already set on line %d: the later would silently replace the earlier", quoted(key), firstLine)
	}
	s.shape = &Error{Path: path, Line: p.line, Col: p.col, Msg: msg}
}

// keySet is keys' paths, folded, with how and where each was first written.
type keySet map[string]struct {
	key  string
	line int
}

// add checks key (written at p, under parent) against the mapping's
// earlier keys.
func (ks keySet) add(s *source, parent, key string, p pos) {
	f := joinKey(parent, strings.ToLower(key))
	if s.shape == nil {
		s.countKey(parent, f, p)
	}
	if strings.Contains(key, "::") && s.shape == nil {
		// The reader's key delimiter: "run::arrivals: 5" at the end of a
		// file set run.arrivals, over the "run: {arrivals: 1e7}" a reader
		// of the file sees, with no repeated key to catch.
		s.shape = &Error{Path: f, Line: p.line, Col: p.col, Msg: fmt.Sprintf("key %s holds \"::\", which msjfarm reads as a level of nesting: it would silently set %s; write the key nested", quoted(key), strings.ReplaceAll(strings.ToLower(key), "::", "."))}
		return
	}
	if k, ok := ks[f]; ok {
		s.repeated(f, key, k.key, p, k.line)
		return
	}
	ks[f] = struct {
		key  string
		line int
	}{key, p.line}
}

// index reads the positions of every key path of a sweep file's content
// (the same paths the decoder and the checks name: run.deadline,
// policies[1].threshold, classes[0].service.mean, axes.class[0].share).
// Keys are folded to lower case, as the reader folds them. It returns a
// syntax error, placed, when the content does not parse. YAML positions
// are only read by walk, once the file has been decoded (see walk).
func index(data []byte, format string) (*source, error) {
	s := &source{keys: map[string]pos{}, vals: map[string]pos{}, text: map[string]string{}}
	switch format {
	case "toml":
		return s, s.indexTOML(data)
	case "json":
		// JSON is read as YAML (a superset) for positions; a syntax error
		// is placed by encoding/json, which is what JSON users expect.
		var top any
		if err := json.Unmarshal(data, &top); err != nil {
			return s, jsonSyntax(data, err)
		}
		if _, ok := top.(map[string]any); !ok && top != nil {
			return s, &Error{Line: 1, Col: 1, Msg: fmt.Sprintf("the file is %s, not an object of keys (name, workload, axes, policies, ...)", jsonKind(top))}
		}
		s.jsonRepeats(data)
		// The nulls are jsonRepeats': a JSON file YAML cannot read has
		// them too, and YAML's walk of one it can would find them twice.
		nulls := s.nulls
		_ = s.indexYAML(data) // positions only: a JSON file YAML cannot read has none
		s.nulls = nulls
		return s, nil
	}
	return s, s.indexYAML(data)
}

// yamlLine reads the line of yaml.v3's syntax errors ("yaml: line 4: did
// not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

func (s *source) indexYAML(data []byte) error {
	// One decoder reads the document and then looks for another: the
	// file was parsed twice (a file of 10⁶ keys took 7 s to be refused,
	// 40% of it the second parse).
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		msg := err.Error()
		e := &Error{Msg: "not valid YAML: " + msg, err: err}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Msg = "not valid YAML: " + m[2]
			if m[1] != "" {
				e.Line, _ = strconv.Atoi(m[1])
				e.Col = 1
			}
		}
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			// yaml: unmarshal errors:\n  line 3: mapping key "a" already defined at line 2
			first := strings.TrimSpace(te.Errors[0])
			if m := regexp.MustCompile(`^line (\d+): (.*)$`).FindStringSubmatch(first); m != nil {
				e.Line, _ = strconv.Atoi(m[1])
				e.Col, e.Msg = 1, m[2]
			}
		}
		return e
	}
	if err := oneDocument(dec); err != nil {
		return err
	}
	if len(doc.Content) > 0 {
		s.root = doc.Content[0]
		if err := topMapping(s.root); err != nil {
			return err
		}
		s.checkNesting(s.root)
		if s.shape == nil {
			s.checkRepeats("", s.root)
		}
	}
	return nil
}

// checkRepeats finds a key repeated in its mapping once folded (see
// repeated). An alias is checked where its anchor is written; merge keys
// ("<<") may repeat and be overridden, as YAML means them to, but only
// by a key written alike (checkMerged). It stops at the first mistake
// of shape: past MaxKeys, it went on through every key of the file (3 s
// of a file of 10⁶ keys).
func (s *source) checkRepeats(path string, n *yaml.Node) {
	if s.shape != nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		ks := keySet{}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content) && s.shape == nil; i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value != "<<" {
				ks.add(s, path, k.Value, pos{k.Line, k.Column})
				if n, ok := null(v); ok {
					s.nulls = append(s.nulls, nullAt{path: joinKey(path, strings.ToLower(k.Value)), at: pos{k.Line, k.Column}, empty: n.Value == ""})
				}
			} else {
				merges = append(merges, k, v)
			}
			s.checkRepeats(joinKey(path, strings.ToLower(k.Value)), v)
		}
		for i := 0; i+1 < len(merges) && s.shape == nil; i += 2 {
			s.checkMerged(path, ks, merges[i], merges[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if s.shape != nil {
				return
			}
			p := fmt.Sprintf("%s[%d]", path, i)
			if n, ok := null(c); ok {
				s.nulls = append(s.nulls, nullAt{path: p, at: pos{c.Line, c.Column}, empty: n.Value == "", elem: true})
			}
			s.checkRepeats(p, c)
		}
	case yaml.ScalarNode:
		s.checkOctal(path, n)
	}
}

// checkMerged refuses a key that the merge key at (its value v) brings
// into the mapping at path and that differs only in case from a key of
// the mapping (ks, its own keys, then the keys merged before it). YAML
// lets a key written in the mapping override a merged one; but the
// reader folds case after YAML has merged, so "Arrivals" merged beside
// a written "arrivals" were two keys to YAML and one to the reader,
// which kept either: run: {<<: {Arrivals: 5}, arrivals: 1000} ran 5
// arrivals, and a top-level <<: {Run: {arrivals: 5}} replaced the file's
// whole run block. Keys merged written alike are YAML's to resolve.
func (s *source) checkMerged(path string, ks keySet, at, v *yaml.Node) {
	keys := mergedKeys(v, map[*yaml.Node]bool{})
	// Merges of merges can bring in many times the file's keys (a chain
	// of n anchors, each merging the one before, n²/2): bounded as the
	// file's own keys are.
	if s.nMerged += len(keys); s.nMerged > MaxKeys {
		s.shape = &Error{Path: path, Line: at.Line, Col: at.Column, Msg: fmt.Sprintf("more than %d keys brought in by merge keys (\"<<\") in the file", MaxKeys)}
		return
	}
	for _, k := range keys {
		f := joinKey(path, strings.ToLower(k.Value))
		prev, ok := ks[f]
		switch {
		case !ok:
			ks[f] = struct {
				key  string
				line int
			}{k.Value, k.Line}
		case prev.key != k.Value:
			s.shape = &Error{Path: f, Line: at.Line, Col: at.Column,
				Msg: fmt.Sprintf("key %s, merged by \"<<\" from line %d, and %s of line %d differ only in case: keys are read without regard to case, so the merged one could silently replace the other; write them alike (the key written in the mapping then wins, as YAML means) or drop one", quoted(k.Value), k.Line, quoted(prev.key), prev.line)}
			return
		}
	}
}

// mergedKeys is the keys a merge key's value brings in: those of a
// mapping, or of each mapping of a list, aliases followed, with the
// mappings' own merged keys (nested merges). seen holds the mappings
// visited, so an alias met twice is read once.
func mergedKeys(v *yaml.Node, seen map[*yaml.Node]bool) []*yaml.Node {
	for v.Kind == yaml.AliasNode && v.Alias != nil && !seen[v] {
		seen[v] = true
		v = v.Alias
	}
	if seen[v] {
		return nil
	}
	seen[v] = true
	var out []*yaml.Node
	switch v.Kind {
	case yaml.SequenceNode:
		for _, c := range v.Content {
			out = append(out, mergedKeys(c, seen)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			if k := v.Content[i]; k.Value == "<<" {
				out = append(out, mergedKeys(v.Content[i+1], seen)...)
			} else {
				out = append(out, k)
			}
		}
	}
	return out
}

// checkNesting finds a too deep value (see maxNesting) without expanding
// aliases: each node's height is computed once.
func (s *source) checkNesting(root *yaml.Node) {
	heights := map[*yaml.Node]int{}
	var height func(n *yaml.Node) int
	height = func(n *yaml.Node) int {
		if h, ok := heights[n]; ok {
			return h
		}
		heights[n] = 0 // an alias cycle, which yaml.v3 refuses anyway
		h := 0
		switch n.Kind {
		case yaml.AliasNode:
			if n.Alias != nil {
				h = height(n.Alias)
			}
		case yaml.MappingNode:
			for i := 1; i < len(n.Content); i += 2 {
				h = max(h, 1+height(n.Content[i]))
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				h = max(h, 1+height(c))
			}
		}
		heights[n] = h
		return h
	}
	switch {
	case root.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; 1+height(root.Content[i+1]) > maxNesting {
				s.tooDeep(strings.ToLower(k.Value), pos{k.Line, k.Column})
				return
			}
		}
	case height(root) > maxNesting:
		s.tooDeep("", pos{root.Line, root.Column})
	}
}

// walk reads the positions of a YAML file's keys and values. It must come
// after the decoder has accepted the file: walking expands every alias, and
// a file of a few lines whose anchors nest nine deep (a "billion laughs")
// expands to 9⁹ nodes, which exhausted the memory before anything refused
// the file. yaml.v3's decoder, which viper reads the file with, refuses
// such a file ("document contains excessive aliasing") after a few
// thousand nodes, and what it accepts costs the walk no more than the
// decoding itself.
func (s *source) walk() {
	if s.root != nil {
		s.walkYAML("", s.root, 0)
		s.root = nil
	}
}

func (s *source) walkYAML(path string, n *yaml.Node, depth int) {
	if depth > 64 {
		return // chains of aliases: positions are a courtesy (nesting past maxNesting was refused)
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s.vals[path] = pos{n.Line, n.Column}
		s.walkYAML(path, n.Alias, depth+1)
		return
	}
	if path != "" {
		if _, ok := s.vals[path]; !ok {
			s.vals[path] = pos{n.Line, n.Column}
			if n.Kind == yaml.ScalarNode {
				s.text[path] = n.Value
			}
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinKey(path, strings.ToLower(k.Value))
			s.keys[p] = pos{k.Line, k.Column}
			s.walkYAML(p, v, depth+1)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			s.walkYAML(fmt.Sprintf("%s[%d]", path, i), c, depth+1)
		}
	}
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonRepeats finds a key repeated in its object once folded (see
// repeated), with encoding/json's tokens: yaml.v3, which reads JSON's
// positions, may refuse a JSON file it cannot read as YAML. The content
// is valid JSON, so the tokens are well formed.
func (s *source) jsonRepeats(data []byte) {
	type frame struct {
		path   string
		keys   keySet // nil: a list
		next   int    // a list's next index
		key    string // an object's key whose value comes next
		keyAt  pos    // where key is written
		hasKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	// child is the path of the value that comes next in the top frame.
	child := func() string {
		if len(stack) == 0 {
			return ""
		}
		f := stack[len(stack)-1]
		if f.keys == nil {
			f.next++
			return fmt.Sprintf("%s[%d]", f.path, f.next-1)
		}
		f.hasKey = false
		return joinKey(f.path, strings.ToLower(f.key))
	}
	for s.shape == nil {
		tok, err := dec.Token()
		if err != nil {
			return
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				f := &frame{path: child()}
				if d == '{' {
					f.keys = keySet{}
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if len(stack) == 0 {
			return // a scalar document
		}
		f := stack[len(stack)-1]
		if f.keys != nil && !f.hasKey {
			key := tok.(string)
			// The token ends at InputOffset: its opening quote is the
			// last unescaped one before its closing quote.
			end := int(dec.InputOffset()) - 1
			start := end - 1
			for start > 0 && (data[start] != '"' || data[start-1] == '\\') {
				start--
			}
			line, col := lineCol(data, start)
			f.keys.add(s, f.path, key, pos{line, col})
			f.key, f.hasKey, f.keyAt = key, true, pos{line, col}
			continue
		}
		elem, keyAt := f.keys == nil, f.keyAt
		p := child()
		if tok == nil {
			// A key's null is placed at the key, as in YAML; an element's
			// at its "null", the token InputOffset ends.
			if elem {
				keyAt.line, keyAt.col = lineCol(data, int(dec.InputOffset())-len("null"))
			}
			s.nulls = append(s.nulls, nullAt{path: p, at: keyAt, elem: elem})
		}
	}
}

// jsonSyntax places an encoding/json syntax error at its line and column.
func jsonSyntax(data []byte, err error) error {
	e := &Error{Msg: "not valid JSON: " + err.Error(), err: err}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		e.Line, e.Col = lineCol(data, int(se.Offset)-1)
	}
	return e
}

// lineCol is the 1-based line and column (in bytes) of offset in data.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// indexTOML reads positions with go-toml's parser (the one viper reads
// TOML with): every key = value, [table] and [[array table]].
func (s *source) indexTOML(data []byte) error {
	var p unstable.Parser
	p.Reset(data)
	var table string
	var tableParts int
	arrays := map[string]int{} // [[name]] seen so far, by resolved name
	// defined holds every key path set, folded (table headers but
	// [[array tables]], which repeat by design); spelled how each
	// table, dotted key's parent and key was written (spell).
	defined, spelled := keySet{}, keySet{}
	// Positions from the lines' starts, found once: the parser's Shape
	// counts the lines from the file's start at every call, and a file
	// of 10^5 keys took minutes for that alone.
	t := &tomlText{data: data, starts: []int{0}}
	for i, b := range data {
		if b == '\n' {
			t.starts = append(t.starts, i+1)
		}
	}
	at := t.node
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			k := tomlKey(e.Key())
			tableParts = len(k.parts)
			name, written := k.path(arrays)
			s.nestTOML(name, tableParts, k.first, at)
			if k.first != nil && tableParts <= maxNesting {
				spelled.spell(s, k.prefixes(arrays), k.parts, at(k.first))
			}
			if e.Kind == unstable.Table && k.first != nil && tableParts <= maxNesting {
				defined.add(s, "", written, at(k.first))
			}
			if e.Kind == unstable.ArrayTable {
				base := name
				name = fmt.Sprintf("%s[%d]", base, arrays[base])
				arrays[base]++
				if _, ok := s.keys[base]; !ok && k.first != nil {
					// The array itself ("run" written [[run]]): a
					// table written as a list is refused there.
					s.keys[base] = at(k.first)
					s.vals[base] = at(k.first)
				}
			}
			table = name
			if k.first != nil {
				s.keys[table] = at(k.first)
				s.vals[table] = at(k.first)
				s.prefixes(table, at(k.first))
			}
		case unstable.KeyValue:
			k := tomlKey(e.Key())
			key, written := k.lower(), k.written()
			path := joinKey(table, key)
			if k.first != nil {
				s.keys[path] = at(k.first)
				// The enclosing keys of a dotted key (axes of
				// axes.load = [...]) have no line of their own: an
				// error at axes is placed at the key that opens it.
				for i := 1; i < len(k.parts) && i < maxNesting; i++ {
					pre := joinKey(table, strings.ToLower(strings.Join(k.parts[:i], ".")))
					if _, ok := s.keys[pre]; !ok {
						s.keys[pre] = at(k.first)
					}
				}
			}
			depth := tableParts + len(k.parts)
			s.nestTOML(path, depth, k.first, at)
			if k.first != nil && depth <= maxNesting {
				defined.add(s, table, written, at(k.first))
				spelled.spell(s, k.under(table), k.parts, at(k.first))
			}
			s.walkTOML(path, e.Value(), t, k.end, depth, keySets{defined, spelled})
		}
	}
	if err := p.Error(); err != nil {
		e := &Error{Msg: "not valid TOML: " + err.Error(), err: err}
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			e.Msg = "not valid TOML: " + pe.Message
			if len(pe.Highlight) > 0 {
				r := p.Range(pe.Highlight)
				e.Line, e.Col = lineCol(data, int(r.Offset))
			}
		}
		return e
	}
	return nil
}

// tomlDecodeError places an error of go-toml's decoder, which the parser
// that indexTOML runs lets pass: an integer past 2⁶³−1 ("seed =
// 18446744073709551615") was reported with neither its line nor its key.
// nil if err is not one.
func (s *source) tomlDecodeError(err error) *Error {
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return nil
	}
	e := &Error{Msg: "not valid TOML: " + strings.TrimPrefix(de.Error(), "toml: "), err: err}
	e.Line, e.Col = de.Position()
	if k := de.Key(); len(k) > 0 {
		e.Path = strings.Join(k, ".")
	} else {
		// The decoder names no key for a bad value: the index has it.
		for k, at := range s.vals {
			if at == (pos{e.Line, e.Col}) && (e.Path == "" || k < e.Path) {
				e.Path = k
			}
		}
	}
	if strings.Contains(e.Msg, "too large to fit in a 64-bit signed integer") {
		e.Msg += " (TOML's integers end at 2⁶³−1 = 9223372036854775807"
		if strings.EqualFold(e.Path, "seed") {
			e.Msg += `; a seed up to 2⁶⁴−1 is written as a string: seed = "18446744073709551615"`
		}
		e.Msg += ")"
	}
	return e
}

// tomlText is a TOML file's content with its lines' starts, to place
// nodes and offsets.
type tomlText struct {
	data   []byte
	starts []int
}

// at is the position of byte offset off.
func (t *tomlText) at(off int) pos {
	line := sort.Search(len(t.starts), func(i int) bool { return t.starts[i] > off })
	return pos{line, off - t.starts[line-1] + 1}
}

// node is the position of n, which has its own bytes (not an array:
// see walkTOML).
func (t *tomlText) node(n *unstable.Node) pos { return t.at(int(n.Raw.Offset)) }

// next is the offset of the first byte at or after off that is not
// blank, a line end, a comment, a comma or the '=' of a key: where the
// next value, or the bracket that closes a list or table, begins.
func (t *tomlText) next(off int) int {
	for off >= 0 && off < len(t.data) {
		switch t.data[off] {
		case ' ', '\t', '\r', '\n', ',', '=':
			off++
		case '#':
			for off < len(t.data) && t.data[off] != '\n' {
				off++
			}
		default:
			return off
		}
	}
	return len(t.data)
}

// tomlKeyParts is a (possibly dotted) key: its parts as written, its
// first part's node and the offset just past its last part.
type tomlKeyParts struct {
	parts []string
	first *unstable.Node
	end   int
}

func tomlKey(it unstable.Iterator) tomlKeyParts {
	var k tomlKeyParts
	for it.Next() {
		n := it.Node()
		if k.first == nil {
			k.first = n
		}
		k.parts = append(k.parts, string(n.Data))
		k.end = int(n.Raw.Offset + n.Raw.Length)
	}
	return k
}

func (k tomlKeyParts) written() string { return strings.Join(k.parts, ".") }
func (k tomlKeyParts) lower() string   { return strings.ToLower(k.written()) }

// path is a table header's key path, lower case and as written, with
// the element of each array table it is under: [classes.service] after
// a second [[classes]] is classes[1].service, where it belongs (as
// "classes.service", every class's service was one key, repeated).
func (k tomlKeyParts) path(arrays map[string]int) (string, string) {
	if len(k.parts) > maxNesting {
		return k.lower(), k.written() // refused as too deep; not resolved
	}
	var path, written string
	for i, p := range k.parts {
		path, written = joinKey(path, strings.ToLower(p)), joinKey(written, p)
		if i == len(k.parts)-1 {
			break
		}
		if n, ok := arrays[path]; ok {
			path += fmt.Sprintf("[%d]", n-1)
			written += fmt.Sprintf("[%d]", n-1)
		}
	}
	return path, written
}

// prefixes is the key path, folded, of each part of a table header:
// [Run.x] is run and run.x, with the element of each array table it is
// under (path).
func (k tomlKeyParts) prefixes(arrays map[string]int) []string {
	out := make([]string, len(k.parts))
	var path string
	for i, p := range k.parts {
		path = joinKey(path, strings.ToLower(p))
		out[i] = path
		if n, ok := arrays[path]; ok && i < len(k.parts)-1 {
			path += fmt.Sprintf("[%d]", n-1)
		}
	}
	return out
}

// under is the key path, folded, of each part of a (dotted) key in the
// table at path: run.warmup at the top level is run and run.warmup.
func (k tomlKeyParts) under(path string) []string {
	out := make([]string, len(k.parts))
	for i, p := range k.parts {
		path = joinKey(path, strings.ToLower(p))
		out[i] = path
	}
	return out
}

// keySets are the key sets a TOML file's keys are checked against:
// defined, the key paths set (add), and spelled, how each was written
// (spell).
type keySets struct{ keys, spelled keySet }

// spell checks that each part of a key (parts, at the folded paths
// paths) is written as the same key path was written before. TOML tells
// Run from run, the reader does not: run.warmup = 100 and then
// Run.arrivals = 1000 were two tables to TOML, and the reader kept one
// (warmup 0, silently); so was a [Run] table beside run.x keys. A path
// written alike may recur (run.warmup and run.arrivals both write run):
// setting the same key twice is add's to refuse.
func (ks keySet) spell(s *source, paths, parts []string, p pos) {
	for i, f := range paths {
		if s.shape != nil {
			return
		}
		if prev, ok := ks[f]; ok {
			if prev.key != parts[i] {
				s.repeated(f, parts[i], prev.key, p, prev.line)
			}
			continue
		}
		ks[f] = struct {
			key  string
			line int
		}{parts[i], p.line}
	}
}

// nestTOML records a key at depth (its parts, its table's included)
// deeper than maxNesting.
func (s *source) nestTOML(path string, depth int, first *unstable.Node, at func(*unstable.Node) pos) {
	if depth > maxNesting && first != nil {
		s.tooDeep(topKey(path), at(first))
	}
}

// prefixes gives each enclosing key of a dotted table name ([a.b.c]: a,
// a.b) that has no position of its own the table's: an unknown key "a"
// is reported there. Names past maxNesting are refused, not placed.
func (s *source) prefixes(name string, p pos) {
	if strings.Count(name, ".") >= maxNesting {
		return
	}
	for i := strings.IndexByte(name, '.'); i > 0; i = nextDot(name, i) {
		if _, ok := s.keys[name[:i]]; !ok {
			s.keys[name[:i]] = p
		}
	}
}

func nextDot(s string, i int) int {
	if j := strings.IndexByte(s[i+1:], '.'); j >= 0 {
		return i + 1 + j
	}
	return -1
}

// topKey is the top-level key of a key path (policies of policies[1].x).
func topKey(path string) string {
	top, _, _ := strings.Cut(path, ".")
	top, _, _ = strings.Cut(top, "[")
	return top
}

// walkTOML reads the positions in a value at depth levels from the top
// (the key path's parts, and the lists and inline tables around it),
// the value beginning at or after offset from, and returns the offset
// just past it. A list's node has no bytes of its own in go-toml's
// parser (its Raw is empty, offset 0), so its "[" is found from where
// the value begins: every error at a TOML list (a wrong type, an axis's
// value, zip) was placed at 1:1.
func (s *source) walkTOML(path string, n *unstable.Node, t *tomlText, from, depth int, defined keySets) int {
	if n == nil || !n.Valid() {
		return from
	}
	start := int(n.Raw.Offset)
	if n.Kind == unstable.Array {
		start = t.next(from)
	}
	if depth > maxNesting {
		s.tooDeep(topKey(path), t.at(start))
		return len(t.data)
	}
	if n.Raw.Length > 0 || n.Kind == unstable.InlineTable || n.Kind == unstable.Array {
		s.vals[path] = t.at(start)
	}
	if n.Kind == unstable.Float || n.Kind == unstable.Integer {
		s.text[path] = strings.ReplaceAll(string(n.Data), "_", "")
	}
	switch n.Kind {
	case unstable.Array:
		it := n.Children()
		i, end := 0, start+1
		for it.Next() {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			end = s.walkTOML(fmt.Sprintf("%s[%d]", path, i), c, t, end, depth+1, defined)
			i++
		}
		return t.next(end) + 1 // past the "]"
	case unstable.InlineTable:
		it := n.Children()
		end := start + 1
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			k := tomlKey(kv.Key())
			p := joinKey(path, k.lower())
			if k.first != nil {
				s.keys[p] = t.node(k.first)
				defined.keys.add(s, path, k.written(), t.node(k.first))
				defined.spelled.spell(s, k.under(path), k.parts, t.node(k.first))
			}
			end = s.walkTOML(p, kv.Value(), t, k.end, depth+1, defined)
		}
		return t.next(end) + 1 // past the "}"
	}
	return start + int(n.Raw.Length)
}

// unmark drops a UTF-8 byte order mark, which an editor on Windows
// writes at a file's start: YAML's reader skips it, TOML's and JSON's
// stopped at "invalid character 'ï'". A file in UTF-16 (YAML reads it)
// is refused in TOML and JSON with what to do.
func unmark(data []byte, format string) ([]byte, error) {
	if b, ok := bytes.CutPrefix(data, []byte("\xef\xbb\xbf")); ok {
		return b, nil
	}
	if format != "yaml" && len(data) >= 2 && (data[0] == 0xfe && data[1] == 0xff || data[0] == 0xff && data[1] == 0xfe) {
		return nil, errors.New("the file is in UTF-16: save it as UTF-8")
	}
	return data, nil
}

// CheckShape reads a YAML, TOML or JSON configuration file's content (yml
// is yaml; another format is not checked) for the mistakes of shape this
// package refuses in a sweep file before viper reads it: a syntax error,
// keys and lists nested past 32 levels, and a key repeated in its mapping
// once case is folded, which viper would silently merge. name places the
// errors. msjfarm's farm --config file is read with viper too.
func CheckShape(data []byte, format, name string) error {
	if format == "yml" {
		format = "yaml"
	}
	switch format {
	case "yaml", "toml", "json":
	default:
		return nil
	}
	_, src, err := indexShape(data, format)
	if src == nil {
		return err
	}
	src.file = name
	return src.locate(err)
}

// indexShape is index of data without its byte order mark (unmark, which
// it returns), with the file's first shape error as its error. src is nil
// when unmark refuses the data.
func indexShape(data []byte, format string) ([]byte, *source, error) {
	data, err := unmark(data, format)
	if err != nil {
		return nil, nil, err
	}
	src, err := index(data, format)
	if err == nil && src.shape != nil {
		err = src.shape
	}
	return data, src, err
}

// leadingZero is a YAML 1.1 octal integer: a 0 followed by digits.
var leadingZero = regexp.MustCompile(`^[-+]?0[0-9_]+$`)

// checkOctal refuses an integer written with a leading zero, which the
// YAML reader takes as octal: seed: 0777 was seed 511 and replications:
// 010 ran 8, silently (0999, not octal, was 999).
func (s *source) checkOctal(path string, n *yaml.Node) {
	if s.shape != nil || n.Style != 0 || n.Tag != "!!int" || !leadingZero.MatchString(n.Value) {
		return
	}
	digits := strings.TrimLeft(strings.TrimLeft(n.Value, "+-"), "0_")
	s.shape = &Error{Path: path, Line: n.Line, Col: n.Column,
		Msg: fmt.Sprintf("%s: a leading zero makes YAML read an integer as octal; write it without (%s), or 0o%s if octal is meant", n.Value, digits, digits)}
}

// MaxMapKeys and MaxKeys bound a sweep file's keys: in one mapping, and
// in all. The reader (viper) looks each key up through its mapping's
// keys one by one, so its cost grows as the square of a mapping's size:
// 10^5 unknown keys took 34 s and 10^6 more than 3 minutes (and printed
// an error line each), within the file-size limit. A sweep's largest
// mapping is its profiles, a few dozen.
const (
	MaxMapKeys = 4096
	MaxKeys    = 100_000
)

// countKey counts key f of the mapping at parent against MaxMapKeys and
// MaxKeys.
func (s *source) countKey(parent, f string, p pos) {
	if s.mapKeys == nil {
		s.mapKeys = map[string]int{}
	}
	s.mapKeys[parent]++
	s.nKeys++
	where := parent
	if where == "" {
		where = "the file's top level"
	}
	switch {
	case s.mapKeys[parent] > MaxMapKeys:
		s.shape = &Error{Path: f, Line: p.line, Col: p.col, Msg: fmt.Sprintf("more than %d keys in one mapping (%s): a sweep file's largest, its profiles, has a few dozen", MaxMapKeys, where)}
	case s.nKeys > MaxKeys:
		s.shape = &Error{Path: f, Line: p.line, Col: p.col, Msg: fmt.Sprintf("more than %d keys in the file", MaxKeys)}
	}
}

// oneDocument refuses a YAML stream of more than one document: the reader
// takes the first, and the rest (a "---" and more keys, misspelt ones
// too) was ignored without a word.
//
// An empty document (a trailing "---", with comments or nothing after it)
// holds nothing to ignore, and is accepted.
//
// dec has read the first document.
func oneDocument(dec *yaml.Decoder) error {
	for {
		var next yaml.Node
		if err := dec.Decode(&next); err != nil {
			return nil // io.EOF, or a syntax error the first read reports
		}
		if !emptyDocument(&next) {
			return &Error{Line: max(next.Line, 1), Col: 1, Msg: "a second YAML document (after \"---\"): a sweep file is one document, and the reader would ignore the rest"}
		}
	}
}

// emptyDocument: a document with no content, or only a null.
func emptyDocument(n *yaml.Node) bool {
	if len(n.Content) == 0 {
		return true
	}
	c := n.Content[0]
	return len(n.Content) == 1 && c.Kind == yaml.ScalarNode && c.Tag == "!!null" && (c.Value == "" || c.Value == "~" || strings.EqualFold(c.Value, "null"))
}

// topMapping refuses a file whose top level is not a mapping of keys,
// saying what it is without quoting it (a file of secrets named as a
// sweep by mistake had its first line printed in the decoder's error, with
// Go's type names).
func topMapping(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		return nil
	}
	what := map[yaml.Kind]string{yaml.SequenceNode: "a list", yaml.ScalarNode: "a single value", yaml.AliasNode: "an alias"}[n.Kind]
	if what == "" {
		return nil
	}
	return &Error{Line: n.Line, Col: n.Column, Msg: "the file is " + what + ", not a mapping of keys (name:, workload:, axes:, policies:, ...)"}
}

// jsonKind names a decoded JSON value's kind for topMapping's JSON twin.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "not an object"
}

// nullAt is a null value of a YAML or JSON file: a key's value or a list
// element written ~, null (or Null, NULL) or !!null, or not written at
// all ("policies:" with nothing after it).
type nullAt struct {
	path  string // the key's path, folded, or the element's (policies[1])
	at    pos    // the key, or the element
	empty bool   // nothing written: YAML reads an empty value as null
	elem  bool   // a list element, not a key's value
}

// null is the scalar n is, or an alias of n names, and whether YAML
// resolves it to null ("x: *a" where "&a ~" is a null at x too).
func null(n *yaml.Node) (*yaml.Node, bool) {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxNesting; i++ {
		n = n.Alias
	}
	return n, n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// nullErrors refuses the nulls of a sweep file, each at its key (or list
// element) with its path. The reader read a null as if the key were
// absent, silently: "limit: ~" ran a sweep and no search (where "limit:
// {}" is a search with every default), "max_in_system: ~" the engine's
// default cap where "no cap" may have been meant, "servers: ~" the
// workload's; a parameter's null was refused as "got <nil>". No key of a sweep file gives a null a meaning of its
// own, so a null is refused, with what to write instead. A null under a
// key the format does not have is that key's error, unknown key: the
// reader dropped such a key without a word ("replicatons:" with nothing
// after it, or "bogus: {x: ~}"), where unknownKeys names every other.
// It needs the keys' positions (walk). Not a check of CheckShape's: only
// sweep files are held to it.
func (s *source) nullErrors() error {
	var out Errors
	unknown := map[string]bool{}
	for _, n := range s.nulls {
		t := keyType(reflect.TypeOf(File{}), n.path)
		if t == nil {
			if e := unknownNull(n.path); e != nil && !unknown[e.Path] {
				unknown[e.Path] = true
				out = append(out, e)
			}
			continue
		}
		what, drop := "null", "remove the key"
		if n.empty {
			what = "null (no value written)"
		}
		if n.elem {
			drop = "remove the element"
		}
		msg := what + ": give a value or " + drop
		if isMap(t) {
			msg += " (an empty block is {})"
		}
		out = append(out, &Error{Path: n.path, Line: n.at.line, Col: n.at.col, Msg: msg})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// unknownNull is the error of the first key of path that the sweep file
// format does not have (path being a null's, which keyType does not know),
// placed later at that key; nil if none can be told.
func unknownNull(path string) *Error {
	file := reflect.TypeOf(File{})
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '.' {
			continue
		}
		if keyType(file, path[:i]) != nil {
			continue
		}
		parent, key := "", path[:i]
		if j := strings.LastIndexByte(path[:i], '.'); j >= 0 {
			parent, key = path[:j], path[j+1:i]
		}
		pt := keyType(file, parent)
		for pt != nil && pt.Kind() == reflect.Pointer {
			pt = pt.Elem()
		}
		if pt == nil || pt.Kind() != reflect.Struct {
			return nil
		}
		return unknownKey(pt, parent, key)
	}
	return nil
}
