package aggregate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// FormatFloat formats a value for the summary table: the shortest decimal
// that reads back as the same float64; "" for NaN (undefined: pandas and R
// read an empty numeric cell as NaN / NA); "inf" and "-inf" for infinities
// (pandas reads them as ±inf, R as ±Inf).
func FormatFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return ""
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// FormatInf writes an infinity as the outputs meant for reading (the
// terminal's tables, index.html, the figures) write it: "∞", "-∞" — the
// minus of every other negative number they print, and a "+∞" where every
// number of the field is signed (FormatRelDiff). FormatFloat's "inf" and
// "-inf" are the data files' (CSV; Parquet holds ±Inf, JSON null). The
// terminal wrote "+Inf", index.html "∞" and "-Inf", a relative difference
// "−∞" with another minus sign.
func FormatInf(x float64) string {
	if x < 0 {
		return "-∞"
	}
	return "∞"
}

// formatAny formats an axis value: numbers as FormatFloat, anything else as
// JSON (a string without quotes).
func formatAny(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return FormatFloat(x)
	case float32:
		return FormatFloat(float64(x))
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// fixedAxes are axes that are also fixed columns: the fixed column holds the
// axis value exactly as written in the sweep file.
var fixedAxes = map[string]bool{"arrival_rate": true, "load": true, "servers": true}

// idColumns are the other fixed columns, which an axis must not shadow.
var idColumns = map[string]bool{"point": true, "policy": true, "params": true, "label": true, "workload": true,
	"replications": true, "n": true, "n_failed": true, "n_unstable": true, "baseline": true, "compare_note": true}

// AxisColumn is the column name of axis a: a itself, or "axis_"+a if a would
// collide with a fixed column. (arrival_rate, load and servers have no
// column of their own: the fixed column of that name holds the axis value.)
func AxisColumn(a string) string {
	if idColumns[a] {
		return "axis_" + a
	}
	return a
}

// axisNames is the sorted union of the axes of the points, without the ones
// held by fixed columns.
func axisNames(pts []Point) []string {
	set := map[string]bool{}
	for _, p := range pts {
		for a := range p.Axes {
			if !fixedAxes[a] {
				set[a] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// Header returns the column names WriteCSV writes for pts.
func Header(pts []Point) []string { return WideTableStream(pts).Header() }

// WriteCSV writes the summary table: a tidy CSV with a header and one row
// per point, in the order of pts. pandas.read_csv and R read.csv read it as
// is. Columns (all documented with examples in aggregate/COLUMNS.md):
//
//	point          point id (sweep.Task.Point)
//	policy         policy name
//	params         the policy's resolved parameters as a JSON object ({} if none)
//	label          policy and the parameters that differ between its points
//	               ("msfq threshold=31"; see Labels)
//	workload       workload name
//	servers        k (the axis value if servers is swept)
//	<axis>...      one column per swept axis other than arrival_rate, load and
//	               servers (union over the points, sorted by name; a policy
//	               parameter axis is named after the parameter; an axis named
//	               like a fixed column is prefixed "axis_"); empty where the
//	               point has no value for it
//	arrival_rate   total arrival rate λ (the axis value if swept)
//	load           offered load ρ = λ Σ p_i n_i E[S_i] / k (the axis value if swept;
//	               computed values without rounding noise: RoundInput)
//	replications   tasks of the point
//	n              replications with a result (the metrics are over these)
//	n_failed       replications that failed (error recorded)
//	n_unstable     replications among n flagged unstable by the engine; if > 0
//	               the point is unstable and its response-time means are lower
//	               bounds, not estimates
//
// then, for every metric m (metric.Base, then per class i the metric.Class
// as class<i>_<name>_<metric>, then the policy counters as
// counter_<name>; union over the points):
//
//	m_mean  mean over the replications that measured m
//	m_hw    half-width of the 95% Student-t CI of m_mean over those
//	        independent replications; "inf" when only one did
//	m_n     how many replications measured m
//
// Undefined values (NaN: no replication measured the metric, or the point
// lacks the class or counter) are empty cells.
func WriteCSV(w io.Writer, pts []Point) error { return WideTableStream(pts).WriteCSV(w) }

// WriteJSON writes the points as an indented JSON array of Point objects;
// every NaN or infinite metric value is null (see Metric.MarshalJSON).
//
// It writes a point at a time what json.Encoder with a two-space indent
// writes for the whole slice, byte for byte: the encoder held the array's
// encoding twice, unindented and indented (340 MB at 12,000 points).
func WriteJSON(w io.Writer, pts []Point) error {
	if len(pts) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("[\n")
	var ind bytes.Buffer
	for i := range pts {
		b, err := json.Marshal(&pts[i])
		if err != nil {
			return err
		}
		ind.Reset()
		if err := json.Indent(&ind, b, "  ", "  "); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.WriteString("  ")
		bw.Write(ind.Bytes())
	}
	bw.WriteString("\n]\n")
	return bw.Flush()
}
