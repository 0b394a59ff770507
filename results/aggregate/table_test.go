package aggregate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/msjfarm/msjfarm/internal/pyfind"

	"github.com/msjfarm/msjfarm/sim/stats"
)

func TestRoundInput(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{1 * (0.9*1 + 0.1*32) / 32, 0.128125}, // the load of Q Fig. 3 at λ = 1
		{0.1 + 0.2, 0.3},
		{1.4114198792608974, 1.4114198792608974}, // a measured mean: not a short decimal
		{1.0 / 3, 1.0 / 3},
		{0, 0},
		{-0.1 - 0.2, -0.3},
	} {
		if got := RoundInput(c.in); got != c.want {
			t.Errorf("RoundInput(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if x := RoundInput(math.Inf(1)); !math.IsInf(x, 1) {
		t.Errorf("RoundInput(+Inf) = %v", x)
	}
	if x := RoundInput(math.NaN()); !math.IsNaN(x) {
		t.Errorf("RoundInput(NaN) = %v", x)
	}
}

func TestLabels(t *testing.T) {
	pts := []Point{
		{Policy: "fcfs", Params: map[string]any{}},
		{Policy: "msfq", Params: map[string]any{"threshold": 1, "x": "a"}},
		{Policy: "msfq", Params: map[string]any{"threshold": 31, "x": "a"}},
		{Policy: "nmsr", Params: map[string]any{"cycle": 100}},
	}
	got := Labels(pts)
	want := []string{"fcfs", "msfq threshold=1", "msfq threshold=31", "nmsr"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("label %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// tables are the three tables of the fixture.
func tables(t *testing.T) map[string]*Table {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	return map[string]*Table{"summary": WideTable(pts), "summary_long": LongTable(pts),
		"replications": ReplicationTable(pts, tasks, rec)}
}

// sameValue compares a table value with one read back (NaN equals NaN).
func sameValue(want, got any) bool {
	if w, ok := want.(float64); ok {
		g, ok := got.(float64)
		return ok && (w == g || math.IsNaN(w) && math.IsNaN(g))
	}
	return want == got
}

// TestTablesCSVRoundTrip reads every table's CSV back and parses each cell
// by its column's kind: the values must be the table's, bit for bit.
func TestTablesCSVRoundTrip(t *testing.T) {
	for name, tab := range tables(t) {
		var buf bytes.Buffer
		if err := tab.WriteCSV(&buf); err != nil {
			t.Fatal(name, err)
		}
		rows, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(name, err)
		}
		if strings.Join(rows[0], ",") != strings.Join(tab.Header(), ",") || len(rows) != len(tab.Rows)+1 {
			t.Fatalf("%s: header %v, %d rows; want %v, %d rows", name, rows[0], len(rows)-1, tab.Header(), len(tab.Rows))
		}
		for r, row := range rows[1:] {
			for c, cell := range row {
				var got any
				switch tab.Columns[c].Kind {
				case String:
					got = cell
				case Int:
					got, err = strconv.ParseInt(cell, 10, 64)
				case Bool:
					got, err = strconv.ParseBool(cell)
				case Float:
					if cell == "" {
						got = math.NaN()
					} else {
						got, err = strconv.ParseFloat(cell, 64)
					}
				}
				if err != nil || !sameValue(tab.Rows[r][c], got) {
					t.Errorf("%s row %d %s: read %q (%v), wrote %v", name, r, tab.Columns[c].Name, cell, err, tab.Rows[r][c])
				}
			}
		}
	}
}

// TestTablesParquetRoundTrip reads every table's Parquet file back: the
// schema has the columns in order with their types, NaN is null, and every
// value is the table's.
//
// Complexity 23: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestTablesParquetRoundTrip(t *testing.T) {
	for name, tab := range tables(t) {
		var buf bytes.Buffer
		if err := tab.WriteParquet(&buf); err != nil {
			t.Fatal(name, err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(name, err)
		}
		fields := f.Schema().Fields()
		if len(fields) != len(tab.Columns) {
			t.Fatalf("%s: %d parquet columns, want %d", name, len(fields), len(tab.Columns))
		}
		for i, fl := range fields {
			want := map[Kind]parquet.Kind{String: parquet.ByteArray, Int: parquet.Int64, Float: parquet.Double, Bool: parquet.Boolean}[tab.Columns[i].Kind]
			if fl.Name() != tab.Columns[i].Name || fl.Type().Kind() != want || fl.Optional() != (tab.Columns[i].Kind == Float) {
				t.Errorf("%s column %d: %s %v optional=%v, want %s %v", name, i, fl.Name(), fl.Type().Kind(), fl.Optional(), tab.Columns[i].Name, want)
			}
			// Text is annotated UTF-8 (pyarrow and R read it as strings, not bytes).
			if lt := fl.Type().LogicalType(); tab.Columns[i].Kind == String && (lt == nil || lt.String() != "STRING") {
				t.Errorf("%s column %s: no STRING logical type", name, fl.Name())
			}
		}
		if f.NumRows() != int64(len(tab.Rows)) {
			t.Fatalf("%s: %d parquet rows, want %d", name, f.NumRows(), len(tab.Rows))
		}
		rd := parquet.NewReader(f)
		rows := make([]parquet.Row, len(tab.Rows))
		n, err := rd.ReadRows(rows)
		if n != len(rows) {
			t.Fatalf("%s: read %d rows: %v", name, n, err)
		}
		for r, row := range rows {
			vals := make([]any, len(tab.Columns))
			for _, v := range row {
				c := v.Column()
				switch {
				case v.IsNull():
					vals[c] = math.NaN()
				case v.Kind() == parquet.ByteArray:
					vals[c] = string(v.ByteArray())
				case v.Kind() == parquet.Int64:
					vals[c] = v.Int64()
				case v.Kind() == parquet.Double:
					vals[c] = v.Double()
				case v.Kind() == parquet.Boolean:
					vals[c] = v.Boolean()
				}
			}
			for c := range vals {
				if !sameValue(tab.Rows[r][c], vals[c]) {
					t.Errorf("%s row %d %s: read %v, wrote %v", name, r, tab.Columns[c].Name, vals[c], tab.Rows[r][c])
				}
			}
		}
	}
}

// TestLongAndReplicationTables checks the content of the two new tables
// against the summary they come from: the long table has one row per
// metric of every point with the point's estimate, and the per-replication
// values of a point average to its summary mean with the same Student-t
// half-width.
//
// Complexity 26: a sequence of flat checks (each an if/t.Fatalf) on one scenario's
// outputs; split into helpers, the sequence a reader follows would scatter.
func TestLongAndReplicationTables(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	long := LongTable(pts)
	col := func(tab *Table, name string) int {
		for i, c := range tab.Columns {
			if c.Name == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	nrows := 0
	for _, p := range pts {
		nrows += len(p.Metrics)
	}
	if len(long.Rows) != nrows {
		t.Fatalf("long table: %d rows, want %d", len(long.Rows), nrows)
	}
	r := 0
	// A row is a bound (unstable) at an unstable point for the quantities
	// an overload drives up, not for throughput, utilisation, Jain's index
	// or the counts.
	grows := []string{"mean_response", "weighted_mean_response", "mean_wait", "p_wait", "mean_in_system", "mean_in_queue"}
	for _, p := range pts {
		for _, m := range p.Metrics {
			row := long.Rows[r]
			r++
			bound := p.NUnstable > 0 && !m.ClassCounter && slices.Contains(grows, m.Base)
			if row[col(long, "point")] != p.Point || row[col(long, "metric")] != m.Base ||
				row[col(long, "class_index")] != int64(m.Class) || !sameValue(m.Mean, row[col(long, "mean")]) ||
				!sameValue(m.HalfWidth, row[col(long, "hw")]) || row[col(long, "unstable")] != bound {
				t.Errorf("long row %d = %v, want point %s metric %+v", r, row, p.Point, m)
			}
			if m.Class == 1 && row[col(long, "class")] != "heavy" {
				t.Errorf("long row %d: class %v, want heavy", r, row[col(long, "class")])
			}
		}
	}

	reps := ReplicationTable(pts, tasks, rec)
	if len(reps.Rows) != len(tasks) {
		t.Fatalf("replication table: %d rows, want %d", len(reps.Rows), len(tasks))
	}
	status := map[string]int{}
	values := map[string][]float64{}
	unstable := 0
	for _, row := range reps.Rows {
		status[row[col(reps, "point")].(string)+" "+row[col(reps, "status")].(string)]++
		if row[col(reps, "unstable")].(bool) {
			unstable++
		}
		if v := row[col(reps, "mean_response")].(float64); !math.IsNaN(v) {
			values[row[col(reps, "point")].(string)] = append(values[row[col(reps, "point")].(string)], v)
		}
	}
	want := map[string]int{"A done": 3, "B done": 2, "B failed": 1, "C done": 1, "C pending": 1}
	for k, n := range want {
		if status[k] != n {
			t.Errorf("replications %s: %d, want %d (all: %v)", k, status[k], n, status)
		}
	}
	if unstable != 1 {
		t.Errorf("%d unstable replications, want 1", unstable)
	}
	for _, p := range pts {
		m, _ := p.Metric("mean_response")
		s := stats.MeanCI(values[p.Point], Level)
		if s.N != m.N || !sameValue(s.Mean, m.Mean) || !sameValue(s.HalfWidth, m.HalfWidth) {
			t.Errorf("point %s: replications give %+v, summary %+v", p.Point, s, m)
		}
	}
}

// TestPandasReadsTables runs python3 with pandas (Debian: python3-pandas)
// on the three tables: the CSVs, and the Parquet files when pandas has a
// Parquet engine (pyarrow or fastparquet), must come back with the column
// dtypes a researcher expects (counts int64, estimates float64, flags
// bool, labels object).
func TestPandasReadsTables(t *testing.T) {
	python := pandasPython()
	if python == "" {
		t.Skip("no python3 with pandas (apt-get install python3-pandas; or set MSJFARM_PYTHON)")
	}
	dir := t.TempDir()
	for name, tab := range tables(t) {
		var c, p bytes.Buffer
		if err := tab.WriteCSV(&c); err != nil {
			t.Fatal(err)
		}
		if err := tab.WriteParquet(&p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), c.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".parquet"), p.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `
import sys, pandas as pd
d = sys.argv[1]
want = {
  "summary": {"label": "object", "params": "object", "servers": "int64", "threshold": "float64",
              "load": "float64", "n": "int64", "mean_response_mean": "float64",
              "mean_response_hw": "float64", "counter_phase1_time_mean": "float64"},
  "summary_long": {"label": "object", "metric": "object", "class_index": "int64", "mean": "float64",
                   "hw": "float64", "n": "int64", "unstable": "bool", "undefined": "bool"},
  "replications": {"task": "object", "replication": "int64", "status": "object", "unstable": "bool",
                   "mean_response": "float64", "class1_heavy_mean_response": "float64"},
}
engine = None
for e in ("pyarrow", "fastparquet"):
    try:
        __import__(e); engine = e; break
    except ImportError:
        pass
bad = []
for name, cols in want.items():
    frames = [("csv", pd.read_csv(d + "/" + name + ".csv"))]
    if engine:
        frames.append(("parquet", pd.read_parquet(d + "/" + name + ".parquet", engine=engine)))
    for kind, df in frames:
        for c, dt in cols.items():
            if str(df[c].dtype) != dt:
                bad.append("%s.%s %s: %s, want %s" % (name, kind, c, df[c].dtype, dt))
    if engine:
        a, b = frames[0][1], frames[1][1]
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            bad.append("%s: csv and parquet differ in shape" % name)
        for c in cols:
            if cols[c] == "float64" and not a[c].equals(b[c]):
                bad.append("%s %s: csv and parquet values differ" % (name, c))
print("engine", engine)
if bad:
    print("\n".join(bad)); sys.exit(1)
`
	out, err := exec.Command(python, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("pandas: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "engine None") {
		t.Log("pandas has no Parquet engine (pyarrow or fastparquet): checked the CSV files only")
	}
}

// pandasPython is an interpreter that imports pandas (pyfind.With).
func pandasPython() string { return pyfind.With("pandas") }

// TestStreamedTables: a table generated as it is written (WideTableStream,
// LongTableStream: what the report and summary.csv use) writes the same
// CSV and Parquet bytes as the table collected whole, and says its rows:
// the wide table one a point, the long one a metric of each point.
func TestStreamedTables(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	nlong := 0
	for _, p := range pts {
		nlong += len(p.Metrics)
	}
	for _, c := range []struct {
		name          string
		whole, stream *Table
		rows          int
	}{
		{"summary", WideTable(pts), WideTableStream(pts), len(pts)},
		{"summary_long", LongTable(pts), LongTableStream(pts), nlong},
	} {
		if c.stream.Len() != c.rows || c.whole.Len() != c.rows || len(c.whole.Rows) != c.rows || c.stream.Rows != nil {
			t.Errorf("%s: %d streamed, %d whole rows (%d held, %d held streamed); want %d", c.name, c.stream.Len(), c.whole.Len(), len(c.whole.Rows), len(c.stream.Rows), c.rows)
		}
		for _, w := range []func(*Table, io.Writer) error{(*Table).WriteCSV, (*Table).WriteParquet} {
			var a, b bytes.Buffer
			if err := w(c.whole, &a); err != nil {
				t.Fatal(err)
			}
			if err := w(c.stream, &b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) || a.Len() == 0 {
				t.Errorf("%s: the streamed table writes %d bytes, the whole one %d, not the same", c.name, b.Len(), a.Len())
			}
		}
	}
}

// TestWriteJSONStreamed: WriteJSON, a point at a time, writes what
// json.Encoder with a two-space indent writes for the whole slice, for
// the fixture's points, one point and none.
func TestWriteJSONStreamed(t *testing.T) {
	tasks, rec := fixture()
	pts := Summarize(tasks, rec)
	for _, ps := range [][]Point{pts, pts[:1], nil} {
		var got, want bytes.Buffer
		if err := WriteJSON(&got, ps); err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		all := ps
		if all == nil {
			all = []Point{}
		}
		if err := enc.Encode(all); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%d points: WriteJSON wrote %d bytes, the encoder %d, not the same:\n%.300s\nwant:\n%.300s", len(ps), got.Len(), want.Len(), got.String(), want.String())
		}
	}
}

// TestParquetRowGroups writes a table of parquetRowGroup+3 rows: it is two
// row groups (parquetRowGroup rows, then 3), and every row reads back in
// order. A table of parquetRowGroup rows or fewer is one group.
func TestParquetRowGroups(t *testing.T) {
	for _, n := range []int{parquetRowGroup, parquetRowGroup + 3} {
		tab := &Table{Columns: []Column{{"i", Int}, {"x", Float}}}
		for i := range n {
			x := float64(i) / 2
			if i%7 == 0 {
				x = math.NaN()
			}
			tab.Rows = append(tab.Rows, []any{int64(i), x})
		}
		var buf bytes.Buffer
		if err := tab.WriteParquet(&buf); err != nil {
			t.Fatal(err)
		}
		f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatal(err)
		}
		groups := (n + parquetRowGroup - 1) / parquetRowGroup
		if g := len(f.RowGroups()); g != groups || f.NumRows() != int64(n) {
			t.Fatalf("%d rows: %d row groups of %d rows, want %d of %d", n, g, f.NumRows(), groups, n)
		}
		rows := make([]parquet.Row, n)
		if got, err := parquet.NewReader(f).ReadRows(rows); got != n {
			t.Fatalf("read %d of %d rows: %v", got, n, err)
		}
		for i, row := range rows {
			nan := i%7 == 0
			if row[0].Int64() != int64(i) || row[1].IsNull() != nan || (!nan && row[1].Double() != float64(i)/2) {
				t.Fatalf("row %d reads %v", i, row)
			}
		}
	}
}
