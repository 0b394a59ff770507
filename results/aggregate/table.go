package aggregate

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Kind is the type of a table column: what a CSV reader should infer and
// what the Parquet column is declared as, so that pandas and R get the same
// dtypes from either file.
type Kind int

const (
	// String columns hold text (JSON for params).
	String Kind = iota
	// Int columns hold counts and indices (int64 in Parquet).
	Int
	// Float columns hold estimates; NaN (undefined) is an empty CSV cell
	// and a Parquet null, ±Inf are "inf"/"-inf" in CSV and ±Inf in Parquet.
	Float
	// Bool columns hold flags: "true"/"false" in CSV.
	Bool
)

// Column is one column of a Table.
type Column struct {
	Name string
	Kind Kind
}

// Table is a typed table that is written both as CSV and as Parquet from
// the same rows. Each row holds one value per column, of the column's Go
// type: string, int64, float64 or bool.
type Table struct {
	Columns []Column
	Rows    [][]any
	// gen, when set, generates the rows instead (n of them) as the table
	// is written, so that a table of many points is never held whole: at
	// 12,000 points the tidy table's cells were 300 MB, the largest thing
	// the report and the coordinator's finalisation held.
	gen func(yield func(row []any) error) error
	n   int
}

// Len is the number of rows.
func (t *Table) Len() int {
	if t.gen != nil {
		return t.n
	}
	return len(t.Rows)
}

// Collect generates the rows of a streamed table into Rows.
func (t *Table) Collect() *Table {
	if t.gen != nil {
		rows := make([][]any, 0, t.n)
		_ = t.gen(func(row []any) error { rows = append(rows, row); return nil })
		t.Rows, t.gen = rows, nil
	}
	return t
}

// each calls fn with each row in order (checked against the columns).
func (t *Table) each(fn func(r int, row []any) error) error {
	r := 0
	visit := func(row []any) error {
		if err := t.check(r, row); err != nil {
			return err
		}
		err := fn(r, row)
		r++
		return err
	}
	if t.gen != nil {
		return t.gen(visit)
	}
	for _, row := range t.Rows {
		if err := visit(row); err != nil {
			return err
		}
	}
	return nil
}

// Header is the column names in order.
func (t *Table) Header() []string {
	h := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		h[i] = c.Name
	}
	return h
}

func (t *Table) check(r int, row []any) error {
	if len(row) != len(t.Columns) {
		return fmt.Errorf("row %d has %d values for %d columns", r, len(row), len(t.Columns))
	}
	for i, v := range row {
		ok := false
		switch t.Columns[i].Kind {
		case String:
			_, ok = v.(string)
		case Int:
			_, ok = v.(int64)
		case Float:
			_, ok = v.(float64)
		case Bool:
			_, ok = v.(bool)
		}
		if !ok {
			return fmt.Errorf("row %d column %s: %T is not of the column's kind", r, t.Columns[i].Name, v)
		}
	}
	return nil
}

// formatCell formats a value for the CSV file: floats as FormatFloat.
func formatCell(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return FormatFloat(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// SafeCell defuses a text cell that a spreadsheet would run as a formula
// (OWASP, "CSV Injection"): one that begins with =, +, -, @, a tab or a
// carriage return gets a leading single quote, which spreadsheets read as
// "text follows" and hide. Campaign names, policy labels, class names and
// parameter values are the user's text, so a label such as =cmd|' /C calc'!A0
// must not reach a cell as written. A cell that is a plain number
// (-1, -1.5, +2e-3: a parameter value in a text column) is left as it is:
// it is not a formula, and quoting it would turn a number into text for
// every reader. Numeric columns are never touched, and the Parquet files
// keep every value raw (a typed reader runs nothing).
func SafeCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if plainNumber.MatchString(s) {
			return s
		}
		return "'" + s
	}
	return s
}

// plainNumber is a decimal number as a spreadsheet reads one: no NaN,
// Inf, hex or anything else a formula parser might take further.
var plainNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// WriteCSV writes the table with a header line (text cells made safe for
// spreadsheets: SafeCell).
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	h := t.Header()
	for i := range h {
		h[i] = SafeCell(h[i])
	}
	if err := cw.Write(h); err != nil {
		return err
	}
	rec := make([]string, len(t.Columns))
	err := t.each(func(_ int, row []any) error {
		for i, v := range row {
			rec[i] = formatCell(v)
			if _, text := v.(string); text {
				rec[i] = SafeCell(rec[i])
			}
		}
		return cw.Write(rec)
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// MaxParquetColumns is the most columns parquet-go writes in one file
// (its column indexes are 16-bit; measured: 65,535 are written, the
// 65,536th panics).
const MaxParquetColumns = 1<<16 - 1

// ErrParquetColumns: a table too wide for one Parquet file
// (MaxParquetColumns). Its CSV holds it all.
var ErrParquetColumns = errors.New("too many columns for Parquet")

// parquetRowGroup is the most rows of a Parquet row group.
const parquetRowGroup = 1 << 16

// WriteParquet writes the table as one Parquet file (zstd-compressed), with
// the columns in the table's order: string (UTF-8), int64, double (optional:
// null where the value is NaN) and boolean columns.
//
// The schema is built from a struct type made at run time (reflect.StructOf),
// because parquet.Group orders its fields by name and the tables' column
// order (identity, axes, then metrics) is part of what makes them readable.
//
// Rows go in row groups of at most parquetRowGroup rows: the writer holds
// a row group's pages until the group is complete, and the tidy table of
// a 10^5-point campaign is 2·10^6 rows, one group of which took over
// 100 MB. A table of fewer rows is one group, as before.
//
// A table of more than MaxParquetColumns columns is ErrParquetColumns,
// before anything is written: parquet-go panicked on the 65,536th (a
// workload of 3,200 classes is 67,000 columns in summary.csv), after the
// replications had run, and the campaign was left without its report.
func (t *Table) WriteParquet(w io.Writer) error {
	if len(t.Columns) > MaxParquetColumns {
		return fmt.Errorf("%w: %d columns, more than the %d a Parquet file holds", ErrParquetColumns, len(t.Columns), MaxParquetColumns)
	}
	fields := make([]reflect.StructField, len(t.Columns))
	for i, c := range t.Columns {
		f := reflect.StructField{Name: "F" + strconv.Itoa(i)}
		tag := c.Name
		switch c.Kind {
		case String:
			f.Type = reflect.TypeFor[string]()
		case Int:
			f.Type = reflect.TypeFor[int64]()
		case Float:
			f.Type = reflect.TypeFor[*float64]()
			tag += ",optional"
		case Bool:
			f.Type = reflect.TypeFor[bool]()
		}
		f.Tag = reflect.StructTag(`parquet:"` + tag + `,zstd"`)
		fields[i] = f
	}
	typ := reflect.StructOf(fields)
	pw := parquet.NewWriter(w, parquet.SchemaOf(reflect.New(typ).Interface()), parquet.MaxRowsPerRowGroup(parquetRowGroup))
	err := t.each(func(r int, row []any) error {
		v := reflect.New(typ)
		e := v.Elem()
		for i, x := range row {
			if f, ok := x.(float64); ok {
				if !math.IsNaN(f) {
					e.Field(i).Set(reflect.ValueOf(&f))
				}
				continue
			}
			e.Field(i).Set(reflect.ValueOf(x))
		}
		if err := pw.Write(v.Interface()); err != nil {
			return fmt.Errorf("parquet row %d: %w", r, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return pw.Close()
}
