package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWorkloadsAligned: `msjfarm workloads` prints its columns aligned:
// "k=", the class count and the source start at the same column on every
// line (killsmart-one-or-all-bpareto used to push its line out of line).
func TestWorkloadsAligned(t *testing.T) {
	var b bytes.Buffer
	printWorkloads(&b)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d workloads listed", len(lines))
	}
	col := func(l, s string) int { return utf8.RuneCountInString(l[:strings.Index(l, s)]) }
	for _, l := range lines {
		for _, s := range []string{"k=", "("} {
			if c, c0 := col(l, s), col(lines[0], s); c != c0 {
				t.Errorf("%q: %q at column %d, want %d", l, s, c, c0)
			}
		}
	}
}
