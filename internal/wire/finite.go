package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// NonFinite returns the JSON path of the first NaN or infinite float in v
// (a struct, pointer, slice or map of such; "" if there is none), for
// example "classes[1].mean_response". JSON cannot carry such a number:
// the plugin server reports it by name instead of failing to encode the
// result, and the host's result check (worker/resultcheck) refuses it.
func NonFinite(v any) string {
	return nonFinite(reflect.ValueOf(v), "")
}

func nonFinite(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s (%g)", strings.TrimPrefix(path, "."), f)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			if p := nonFinite(v.Field(i), path+"."+jsonName(t.Field(i))); p != "" {
				return p
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return ""
		}
		for i := range v.Len() {
			if p := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p := nonFinite(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key())); p != "" {
				return p
			}
		}
	}
	return ""
}

func jsonName(f reflect.StructField) string {
	if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" && n != "-" {
		return n
	}
	return f.Name
}
