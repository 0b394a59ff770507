package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/msjfarm/msjfarm/internal/termtext"
)

// ParamType is the type of a policy parameter.
type ParamType string

// Parameter types. Numbers from sweep files arrive as float64 or int; an int
// parameter accepts a float only if it is integral.
const (
	Int    ParamType = "int"
	Float  ParamType = "float"
	Bool   ParamType = "bool"
	String ParamType = "string"
)

// Param is one entry of a policy's parameter schema.
//
// Min and Max bound numbers (inclusive) when set; Enum lists the allowed
// strings when non-empty. Bounds that depend on the workload (e.g. a threshold
// at most k−1) are checked by the policy's Init, which knows k.
type Param struct {
	Name    string    `json:"name"`
	Type    ParamType `json:"type"`
	Default any       `json:"default"`
	Min     *float64  `json:"min,omitempty"`
	Max     *float64  `json:"max,omitempty"`
	Enum    []string  `json:"enum,omitempty"`
	Doc     string    `json:"doc,omitempty"`
}

// Bound returns a pointer to v, for Param.Min and Param.Max literals.
func Bound(v float64) *float64 { return &v }

// Values are resolved parameter values: every schema entry present, with the
// Go type of its ParamType (int, float64, bool, string).
type Values map[string]any

// Int returns an int parameter (0 if absent: Resolve guarantees presence).
func (v Values) Int(name string) int { i, _ := v[name].(int); return i }

// Float returns a float parameter.
func (v Values) Float(name string) float64 { f, _ := v[name].(float64); return f }

// Bool returns a bool parameter.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// String returns a string parameter.
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Resolve checks given parameter values against a schema and returns the full
// set with defaults filled in. Unknown names, wrong types and out-of-range
// values are errors naming the parameter and the reason.
func Resolve(schema []Param, given map[string]any) (Values, error) {
	known := make(map[string]Param, len(schema))
	for _, p := range schema {
		known[strings.ToLower(p.Name)] = p
	}
	out := make(Values, len(schema))
	names := make([]string, 0, len(given))
	for k := range given {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p, ok := known[strings.ToLower(k)]
		if !ok {
			return nil, fmt.Errorf("unknown parameter %s (known: %s)", quoteShown(k), paramNames(schema))
		}
		v, err := coerce(p, given[k])
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	for _, p := range schema {
		if _, ok := out[p.Name]; ok {
			continue
		}
		v, err := coerce(p, p.Default)
		if err != nil {
			return nil, fmt.Errorf("schema default: %w", err)
		}
		out[p.Name] = v
	}
	return out, nil
}

// quoteShown is a value a user wrote, as a parameter's error quotes it:
// a sweep's 1 MB parameter value was quoted whole.
func quoteShown(s string) string { return termtext.Quote(s, termtext.MaxQuoted) }

func paramNames(schema []Param) string {
	if len(schema) == 0 {
		return "none"
	}
	n := make([]string, len(schema))
	for i, p := range schema {
		n[i] = p.Name
	}
	return strings.Join(n, ", ")
}

func coerce(p Param, v any) (any, error) {
	bad := func(why string) error {
		got := termtext.Clip(fmt.Sprint(v), termtext.MaxQuoted)
		if t, isText := v.(string); isText {
			got = "the text " + quoteShown(t)
		}
		return fmt.Errorf("parameter %q: %s, got %s", p.Name, why, got)
	}
	switch p.Type {
	case Int, Float:
		var f float64
		switch x := v.(type) {
		case int:
			f = float64(x)
		case int64:
			f = float64(x)
		case int32:
			f = float64(x)
		case uint64:
			f = float64(x)
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			return nil, bad("must be a number")
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, bad("must be finite")
		}
		if p.Type == Int && f != math.Trunc(f) {
			return nil, bad("must be an integer")
		}
		if p.Min != nil && f < *p.Min {
			return nil, bad(fmt.Sprintf("must be >= %v", *p.Min))
		}
		if p.Max != nil && f > *p.Max {
			return nil, bad(fmt.Sprintf("must be <= %v", *p.Max))
		}
		if p.Type == Int {
			// int(f) of a float past int's range is whatever the
			// machine makes of it (on amd64, −2⁶³).
			if f < math.MinInt || f >= -math.MinInt {
				return nil, bad(fmt.Sprintf("must be an integer within [%d, %d]", math.MinInt, math.MaxInt))
			}
			return int(f), nil
		}
		return f, nil
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return nil, bad("must be true or false")
		}
		return b, nil
	case String:
		s, ok := v.(string)
		if !ok {
			return nil, bad("must be a string")
		}
		if len(p.Enum) > 0 {
			for _, e := range p.Enum {
				if s == e {
					return s, nil
				}
			}
			return nil, bad("must be one of " + strings.Join(p.Enum, ", "))
		}
		return s, nil
	}
	return nil, fmt.Errorf("parameter %q: schema has unknown type %q", p.Name, p.Type)
}

// ValidateSchema checks that a schema is well formed: names unique and
// non-empty, known types, defaults valid against their own constraints.
func ValidateSchema(schema []Param) error {
	seen := map[string]bool{}
	for _, p := range schema {
		if p.Name == "" {
			return fmt.Errorf("schema: a parameter has no name")
		}
		if seen[strings.ToLower(p.Name)] {
			return fmt.Errorf("schema: parameter %q declared twice", p.Name)
		}
		seen[strings.ToLower(p.Name)] = true
		if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
			return fmt.Errorf("schema: parameter %q: min %v > max %v", p.Name, *p.Min, *p.Max)
		}
		if _, err := coerce(p, p.Default); err != nil {
			return fmt.Errorf("schema: default: %w", err)
		}
	}
	return nil
}

// Configure resolves given values against p's schema and configures p. A
// policy without parameters accepts only an empty set.
func Configure(p Policy, given map[string]any) error {
	c, ok := p.(Configurable)
	if !ok {
		if len(given) > 0 {
			for k := range given {
				return fmt.Errorf("unknown parameter %s: this policy takes no parameters", quoteShown(k))
			}
		}
		return nil
	}
	v, err := Resolve(c.Params(), given)
	if err != nil {
		return err
	}
	return c.Configure(v)
}
