package aggregate

import (
	"bytes"
	"encoding/csv"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestCSVInjection: a text cell a spreadsheet would evaluate (OWASP CSV
// injection: = + - @ tab CR first) is written with a leading quote, in
// the header too; numbers — in numeric columns, and plain numbers such
// as -1.5 in text columns — stay numbers; the Parquet file keeps the raw
// text.
func TestCSVInjection(t *testing.T) {
	tab := &Table{
		Columns: []Column{{Name: "policy", Kind: String}, {Name: "param", Kind: String}, {Name: "mean", Kind: Float}, {Name: "n", Kind: Int}, {Name: "=HYPERLINK(x)", Kind: String}},
		Rows: [][]any{
			{"=cmd|' /C calc'!A0", "-1.5", -1.5, int64(-3), "ok"},
			{"+1+1", "-1", 2.0, int64(1), "@SUM(A1)"},
			{"-2+3", "+2e-3", 3.0, int64(2), "\tx"},
			{"\rx", "-Inf", 4.0, int64(3), "plain"},
		},
	}
	var buf bytes.Buffer
	if err := tab.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"policy", "param", "mean", "n", "'=HYPERLINK(x)"},
		{"'=cmd|' /C calc'!A0", "-1.5", "-1.5", "-3", "ok"},
		{"'+1+1", "-1", "2", "1", "'@SUM(A1)"},
		{"'-2+3", "+2e-3", "3", "2", "'\tx"},
		// "-Inf" is text a formula parser may read: quoted.
		{"'\rx", "'-Inf", "4", "3", "plain"},
	}
	for r := range want {
		for c := range want[r] {
			if got[r][c] != want[r][c] {
				t.Errorf("row %d col %d: %q, want %q", r, c, got[r][c], want[r][c])
			}
		}
	}
	// Parquet: raw values.
	buf.Reset()
	if err := tab.WriteParquet(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if name := f.Schema().Fields()[4].Name(); name != "=HYPERLINK(x)" {
		t.Errorf("parquet column name %q, want the raw name", name)
	}
	rows := make([]parquet.Row, len(tab.Rows))
	if n, _ := parquet.NewReader(f).ReadRows(rows); n != len(rows) {
		t.Fatalf("read %d rows", n)
	}
	for r, row := range rows {
		for _, v := range row {
			if v.Column() == 0 && string(v.ByteArray()) != tab.Rows[r][0] {
				t.Errorf("parquet row %d policy %q, want raw %q", r, v.ByteArray(), tab.Rows[r][0])
			}
		}
	}
}
