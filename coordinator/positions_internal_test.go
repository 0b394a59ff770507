package coordinator

import (
	"slices"
	"testing"
)

// TestPositionsNext: the positions a reconcile publishes come back in
// order, a window at a time, across empty words and word boundaries.
func TestPositionsNext(t *testing.T) {
	want := []int32{0, 1, 63, 64, 200, 639, 640}
	p := newPositions(700)
	for _, i := range want {
		p.add(int(i))
	}
	if p.n != len(want) {
		t.Fatalf("n = %d, want %d", p.n, len(want))
	}
	var got []int32
	var buf []int32
	for from := 0; ; {
		buf, from = p.next(buf[:0], from, 3)
		if len(buf) == 0 {
			break
		}
		if len(buf) > 3 {
			t.Fatalf("window of %d, want at most 3", len(buf))
		}
		got = append(got, buf...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("positions %v, want %v", got, want)
	}
}
