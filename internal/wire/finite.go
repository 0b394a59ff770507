package wire

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/msjfarm/msjfarm/sim"
)

// NonFinite returns the JSON path of the first NaN or infinite float in v
// (a struct, pointer, slice or map of such; "" if there is none), with the
// number, for example "classes[1].mean_response (NaN)". JSON cannot carry
// such a number: the plugin server reports it by name instead of failing
// to encode the result, and the host's result check (worker/resultcheck)
// refuses it. The path is built only for the number found, so a result
// with a 10^4-sample series is walked without allocating.
func NonFinite(v any) string {
	p, _ := nonFinite(reflect.ValueOf(v))
	return strings.TrimPrefix(p, ".")
}

// nonFinite reports whether v holds a non-finite float, and its path.
func nonFinite(v reflect.Value) (string, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf(" (%g)", f), true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			if p, ok := nonFinite(v.Field(i)); ok {
				return "." + jsonName(t.Field(i)) + p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		if v.Type() == samplesType {
			return nonFiniteSample(v.Interface().([]sim.Sample))
		}
		for i := range v.Len() {
			if p, ok := nonFinite(v.Index(i)); ok {
				return fmt.Sprintf("[%d]", i) + p, true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p, ok := nonFinite(it.Value()); ok {
				return fmt.Sprintf("[%v]", it.Key()) + p, true
			}
		}
	}
	return "", false
}

// samplesType is a result's time series, its only large slice (10^4
// samples by default), walked without reflection: 40 times faster.
var samplesType = reflect.TypeOf([]sim.Sample(nil))

func nonFiniteSample(ss []sim.Sample) (string, bool) {
	for i, s := range ss {
		if math.IsNaN(s.T) || math.IsInf(s.T, 0) {
			return fmt.Sprintf("[%d].t (%g)", i, s.T), true
		}
	}
	return "", false
}

func jsonName(f reflect.StructField) string {
	if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n != "" && n != "-" {
		return n
	}
	return f.Name
}
