package archive

import (
	"fmt"
	"sync"
	"testing"
)

// TestSumsLookup: Sums find every key read, miss the others, and of a
// key read twice keep the last sum, as the map they replace did — held
// in memory (4 keys) and sorted on disk (sumsInMemory lowered to 16, so
// that 3000 keys spill into 2·… buckets and 47 blocks of 64, the last
// one partial: 3000 − 2 read twice = 2998 entries = 46·64 + 54).
func TestSumsLookup(t *testing.T) {
	defer func(n int) { sumsInMemory = n }(sumsInMemory)
	for _, c := range []struct {
		name     string
		inMemory int
		keys     int
		onDisk   bool
	}{
		{"in memory", 1 << 16, 4, false},
		{"on disk", 16, 3000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sumsInMemory = c.inMemory
			sb := &sumsBuilder{dir: t.TempDir()}
			defer sb.close()
			key := func(i int) string { return fmt.Sprintf("c/results/%024x.json", i) }
			sumOf := func(i, pass int) [32]byte { return [32]byte{byte(i), byte(i >> 8), byte(pass)} }
			for i := range c.keys {
				sb.add(sumEntry{sumsKey(key(i)), sumOf(i, 0)}, c.keys)
			}
			// Keys 1 and c.keys-1 read again, later: their second sum stays.
			for _, i := range []int{1, c.keys - 1} {
				sb.add(sumEntry{sumsKey(key(i)), sumOf(i, 1)}, c.keys)
			}
			s, err := sb.finish()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if (s.f != nil) != c.onDisk {
				t.Fatalf("on disk = %v, want %v", s.f != nil, c.onDisk)
			}
			if s.Len() != c.keys {
				t.Fatalf("%d entries, want %d (two keys read twice)", s.Len(), c.keys)
			}
			// Four goroutines look up every key at once (Sums says lookups
			// may run concurrently: -race checks the shared block buffers).
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := g; i < c.keys; i += 4 {
						want := sumOf(i, 0)
						if i == 1 || i == c.keys-1 {
							want = sumOf(i, 1)
						}
						if got, ok := s.lookup(key(i)); !ok || got != want {
							t.Errorf("lookup(%q) = %x, %v; want %x", key(i), got[:3], ok, want[:3])
							return
						}
					}
				})
			}
			wg.Wait()
			for i := c.keys; i < c.keys+200; i++ {
				if _, ok := s.lookup(key(i)); ok {
					t.Fatalf("found %q, never read", key(i))
				}
			}
		})
	}
	var none *Sums
	if _, ok := none.lookup("c/results/a.json"); ok || none.Len() != 0 {
		t.Error("nil Sums found a key")
	}
}
