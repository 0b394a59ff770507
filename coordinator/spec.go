package coordinator

import (
	"bytes"
	"encoding/json"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/msjfarm/msjfarm/sweep"
)

// SpecYAML renders a sweep as the normalised YAML stored at
// campaigns/<id>/spec.yaml: the keys of the sweep file format (those of the
// JSON encoding), numbers exact, run.deadline as a duration string. Parsing
// it with sweep.Parse(data, "yaml") and expanding gives the same campaign
// id (tested).
func SpecYAML(f *sweep.File) ([]byte, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	v := numbers(m).(map[string]any)
	if run, ok := v["run"].(map[string]any); ok {
		if _, ok := run["deadline"]; ok {
			run["deadline"] = f.Run.Deadline.String()
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// numbers turns json.Numbers into int64, uint64 or float64 so YAML writes
// them as numbers, without rounding large seeds through float64.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		// Not fmt.Sscan: it reads "1e-9" as 1 and stops without error.
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
