package sweep

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
)

// unknownKeys walks the decoded settings raw against the Go type t that
// reads them (through the mapstructure tags) and returns one error per key
// that t has no field for, at its path, with the nearest field names as
// suggestions. Values of the wrong shape are left to the decoder.
func unknownKeys(raw any, t reflect.Type, path string) Errors {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out Errors
	switch t.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return nil
		}
		fields := map[string]reflect.Type{}
		structFields(t, fields)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := joinKey(path, k)
			ft, ok := fields[strings.ToLower(k)]
			if !ok {
				out = append(out, unknownKey(t, path, k))
				continue
			}
			out = append(out, unknownKeys(m[k], ft, p)...)
		}
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok {
			return nil
		}
		for k, v := range m {
			out = append(out, unknownKeys(v, t.Elem(), joinKey(path, k))...)
		}
	case reflect.Slice:
		l, ok := raw.([]any)
		if !ok {
			return nil
		}
		for i, v := range l {
			out = append(out, unknownKeys(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// unknownKey is the error of key k, which struct type t (read at path)
// has no field for, with the nearest field names.
func unknownKey(t reflect.Type, path, k string) *Error {
	fields := map[string]reflect.Type{}
	structFields(t, fields)
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	list := "the keys of " + path
	if path == "" {
		list = "the sweep file's keys"
	}
	return unknownName(joinKey(path, k), "key", k, names, list, "")
}

// structFields collects the keys of struct type t (mapstructure tags,
// squashed embeddings flattened) and their types.
func structFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("mapstructure")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "squash") || (f.Anonymous && name == "") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				structFields(ft, out)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[strings.ToLower(name)] = f.Type
	}
}

// keyType is the Go type that reads the value at key path p (folded, as
// the indexers write it: run.arrivals, policies[1].threshold,
// axes.class[0].share) under type t, or nil when t has no such key (an
// unknown key, which unknownKeys reports). Within a value of any type (a
// policies entry, an axis's list) every path is the value's.
func keyType(t reflect.Type, p string) reflect.Type {
	for p != "" {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Interface:
			return t
		case reflect.Slice:
			rest, ok := strings.CutPrefix(p, "[")
			i := strings.IndexByte(rest, ']')
			if !ok || i < 0 {
				return nil
			}
			t, p = t.Elem(), strings.TrimPrefix(rest[i+1:], ".")
		case reflect.Map:
			if !isMap(t.Elem()) {
				// An axis name is one key, dots and brackets included.
				return t.Elem()
			}
			_, rest, _ := strings.Cut(p, ".")
			t, p = t.Elem(), rest
		case reflect.Struct:
			name, rest := p, ""
			if i := strings.IndexAny(p, ".["); i >= 0 {
				name, rest = p[:i], strings.TrimPrefix(p[i:], ".")
			}
			fields := map[string]reflect.Type{}
			structFields(t, fields)
			ft, ok := fields[name]
			if !ok {
				return nil
			}
			t, p = ft, rest
		default:
			return nil
		}
	}
	return t
}

// decodeErrors turns the decoder's errors into Errors at key paths, with
// what was expected and the value found in words: the decoder itself names
// Go types ("expected type 'int', got unconvertible type 'string'").
func decodeErrors(err error) error {
	var out Errors
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var de *mapstructure.DecodeError
		if !errors.As(err, &de) {
			out = append(out, &Error{Msg: plainError(err), err: err})
			return
		}
		inner := de.Unwrap()
		var nested *mapstructure.DecodeError
		if errors.As(inner, &nested) {
			walk(inner)
			return
		}
		if j, ok := inner.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		out = append(out, &Error{Path: decoderPath(de.Name()), Msg: plainError(inner), err: err})
	}
	walk(err)
	if len(out) == 0 {
		return err
	}
	return out
}

// plainError describes a decoding error without Go type names.
func plainError(err error) string {
	var ut *mapstructure.UnconvertibleTypeError
	if errors.As(err, &ut) {
		return fmt.Sprintf("want %s, got %s", kindWord(ut.Expected.Type()), valueWord(ut.Value))
	}
	var pe *mapstructure.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("want %s, got %s", kindWord(pe.Expected.Type()), valueWord(pe.Value))
	}
	msg := err.Error()
	if i := strings.Index(msg, "has invalid keys: "); i >= 0 {
		return "unknown keys: " + msg[i+len("has invalid keys: "):]
	}
	return msg
}

// kindWord names what a Go type holds in the words of a sweep file.
func kindWord(t reflect.Type) string {
	if t == reflect.TypeOf(time.Duration(0)) {
		return `a duration like "90m" or "2h"`
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list [...]"
	case reflect.Map, reflect.Struct:
		return "a map of keys {key: value}"
	case reflect.Pointer:
		return kindWord(t.Elem())
	}
	return "a value"
}

// valueWord describes a decoded value for an error message: quoted text,
// "the number 3", "a list", "a map", never its Go type.
func valueWord(v any) string {
	switch x := v.(type) {
	case nil:
		return "nothing (an empty value)"
	case string:
		return "the text " + quoted(x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return fmt.Sprintf("the number %v", x)
	case []any:
		return fmt.Sprintf("a list of %d values", len(x))
	case map[string]any:
		return "a map of keys"
	case time.Time:
		return "the date " + x.Format(time.RFC3339)
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map of keys"
	}
	return fmt.Sprintf("%v", v)
}

// decoderMapKey matches the decoder's map element names (profiles[paper])
// that are keys rather than list indices.
var decoderMapKey = regexp.MustCompile(`\[([^\]\[0-9][^\]\[]*)\]`)

// decoderPath rewrites a decoder field name to the file's key path:
// profiles[paper].run → profiles.paper.run; an axis name keeps its
// brackets (axes[class[0].share] → axes.class[0].share).
func decoderPath(name string) string {
	if rest, ok := strings.CutPrefix(name, "axes["); ok {
		if i := strings.LastIndex(rest, "]"); i >= 0 {
			return "axes." + rest[:i] + rest[i+1:]
		}
	}
	return decoderMapKey.ReplaceAllString(name, ".$1")
}
