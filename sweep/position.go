package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

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
	if s.deep == nil {
		s.deep = &Error{Path: top, Line: p.line, Col: p.col,
			Msg: fmt.Sprintf("keys and lists nested more than %d levels deep (a sweep file's own nest at most 7): refused before reading it further", maxNesting)}
	}
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
		if err := json.Unmarshal(data, new(any)); err != nil {
			return s, jsonSyntax(data, err)
		}
		_ = s.indexYAML(data) // positions only: a JSON file YAML cannot read has none
		return s, nil
	}
	return s, s.indexYAML(data)
}

// yamlLine reads the line of yaml.v3's syntax errors ("yaml: line 4: did
// not find expected key").
var yamlLine = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

func (s *source) indexYAML(data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
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
	if len(doc.Content) > 0 {
		s.root = doc.Content[0]
		s.checkNesting(s.root)
	}
	return nil
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
		return // an alias bomb or absurd nesting: positions are a courtesy
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
	arrays := map[string]int{} // [[name]] seen so far
	at := func(n *unstable.Node) pos {
		sh := p.Shape(n.Raw)
		return pos{sh.Start.Line, sh.Start.Column}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			name, first := tomlKey(e.Key())
			tableParts = strings.Count(name, ".") + 1
			s.nestTOML(name, tableParts, first, at)
			if e.Kind == unstable.ArrayTable {
				base := name
				name = fmt.Sprintf("%s[%d]", base, arrays[base])
				arrays[base]++
			}
			table = name
			if first != nil {
				s.keys[table] = at(first)
				s.vals[table] = at(first)
				s.prefixes(table, at(first))
			}
		case unstable.KeyValue:
			key, first := tomlKey(e.Key())
			path := joinKey(table, key)
			if first != nil {
				s.keys[path] = at(first)
			}
			depth := tableParts + strings.Count(key, ".") + 1
			s.nestTOML(path, depth, first, at)
			s.walkTOML(path, e.Value(), at, depth)
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

// tomlKey is a (possibly dotted) key, lower case, and its first part's node.
func tomlKey(it unstable.Iterator) (string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		parts = append(parts, strings.ToLower(string(n.Data)))
	}
	return strings.Join(parts, "."), first
}

// nestTOML records a key at depth (its parts, its table's included)
// deeper than maxNesting.
func (s *source) nestTOML(path string, depth int, first *unstable.Node, at func(*unstable.Node) pos) {
	if depth > maxNesting && first != nil {
		top, _, _ := strings.Cut(path, ".")
		top, _, _ = strings.Cut(top, "[")
		s.tooDeep(top, at(first))
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

// walkTOML reads the positions in a value at depth levels from the top
// (the key path's parts, and the lists and inline tables around it).
func (s *source) walkTOML(path string, n *unstable.Node, at func(*unstable.Node) pos, depth int) {
	if n == nil || !n.Valid() {
		return
	}
	if depth > maxNesting {
		top, _, _ := strings.Cut(path, ".")
		top, _, _ = strings.Cut(top, "[")
		s.tooDeep(top, at(n))
		return
	}
	if n.Raw.Length > 0 || n.Kind == unstable.InlineTable || n.Kind == unstable.Array {
		s.vals[path] = at(n)
	}
	if n.Kind == unstable.Float || n.Kind == unstable.Integer {
		s.text[path] = strings.ReplaceAll(string(n.Data), "_", "")
	}
	switch n.Kind {
	case unstable.Array:
		it := n.Children()
		i := 0
		for it.Next() {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			s.walkTOML(fmt.Sprintf("%s[%d]", path, i), c, at, depth+1)
			i++
		}
	case unstable.InlineTable:
		it := n.Children()
		for it.Next() {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			key, first := tomlKey(kv.Key())
			p := joinKey(path, key)
			if first != nil {
				s.keys[p] = at(first)
			}
			s.walkTOML(p, kv.Value(), at, depth+1)
		}
	}
}
