package aggregate

import (
	"encoding/json"
	"strconv"
)

// Number reads an axis or parameter value as a float: points carry them as
// the sweep file gave them (float64 or int from YAML, json.Number or a
// string from stored JSON), and plots, ticks and the live page need one
// number. ok is false for a value that is not numeric.
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}
