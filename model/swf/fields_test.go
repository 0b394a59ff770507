package swf

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// fieldsWant is what splitFields must give: bytes.Fields, the first
// maxFields of them.
func fieldsWant(s string) [][]byte {
	f := bytes.Fields([]byte(s))
	return f[:min(len(f), maxFields)]
}

func equalFields(a, b [][]byte) bool { return slices.EqualFunc(a, b, bytes.Equal) }

// TestSplitFieldsIsFields: splitFields splits as bytes.Fields does, into
// the slice it is given (here holding stale fields from a previous line,
// as in scan), on ASCII lines and on lines with Unicode spaces (U+0085,
// U+00A0, U+2003) or other non-ASCII bytes, wherever they are, and stops
// after the 18 fields of SWF.
func TestSplitFieldsIsFields(t *testing.T) {
	lines := []string{
		"", " ", "1", " 1 ", "1 2", "1\t2\v3\f4\r5\n6", "  1   100  0 7 8 -1 -1  8 ",
		"1\u00a02 3", "1 2\u00853", "1 2 3\u2003", "é 1", "1 é", "1\x802", "\u00a0",
		strings.Repeat("1 ", 18), strings.Repeat("1 ", 19) + "2", strings.Repeat(" 7", 1000), "é" + strings.Repeat(" 7", 1000),
	}
	stale := [][]byte{[]byte("x"), []byte("y"), []byte("z")}
	for _, s := range lines {
		got := splitFields(stale[:0], []byte(s))
		if want := fieldsWant(s); !equalFields(got, want) {
			t.Errorf("splitFields(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzSplitFields(f *testing.F) {
	f.Add("3 100 0 7 8 -1 -1 8 -1 -1 1 -1 -1 -1 0 -1 -1 -1")
	f.Add("1\u00a02 é\t3")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := splitFields(nil, []byte(s)), fieldsWant(s); !equalFields(got, want) {
			t.Fatalf("splitFields(%q) = %q, want %q", s, got, want)
		}
	})
}
