package archive

import "testing"

// TestSumsLookup: sorted Sums find every key read, miss the others, and
// of a key read twice keep the last sum, as the map they replace did.
func TestSumsLookup(t *testing.T) {
	var s Sums
	keys := []string{"c/results/b.json", "c/results/a.json", "c/refs/a.json", "c/results/b.json"}
	for i, k := range keys {
		s = append(s, sumEntry{sumsKey(k), [32]byte{byte(i + 1)}})
	}
	s = s.sorted()
	if len(s) != 3 {
		t.Fatalf("%d entries, want 3 (one key read twice)", len(s))
	}
	for k, want := range map[string]byte{"c/results/a.json": 2, "c/refs/a.json": 3, "c/results/b.json": 4} {
		if got, ok := s.lookup(k); !ok || got[0] != want {
			t.Errorf("lookup(%q) = %d, %v; want %d", k, got[0], ok, want)
		}
	}
	if _, ok := s.lookup("c/results/z.json"); ok {
		t.Error("found a key never read")
	}
	if _, ok := Sums(nil).lookup("c/results/a.json"); ok {
		t.Error("nil Sums found a key")
	}
}
