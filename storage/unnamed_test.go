package storage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLocalPutIfAbsentUnnamed runs PutIfAbsent both ways, from a file
// without a name (O_TMPFILE, linked in: writeUnnamed) and from a named
// temporary file (the fallback), with 16 writers racing for each key while
// Deletes keep emptying (and pruning) the directory: each key is created
// by exactly one writer, with its data, as a world-readable file, and no
// temporary file is left. On Linux the first way must really be the one
// taken (a fallback would silently measure the other).
func TestLocalPutIfAbsentUnnamed(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
			ctx := context.Background()
			root := t.TempDir()
			st, err := openLocal(root, false)
			if err != nil {
				t.Fatal(err)
			}
			s := st.(*localStore)
			s.noUnnamed.Store(named)
			const keys, writers = 40, 16
			for k := range keys {
				key := fmt.Sprintf("c/results/%d.json", k)
				var created atomic.Int64
				var winner atomic.Value
				var wg sync.WaitGroup
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						data := fmt.Sprintf("writer %d", w)
						c, err := s.PutIfAbsent(ctx, key, []byte(data))
						if err != nil {
							t.Errorf("%s: %v", key, err)
							return
						}
						if c {
							created.Add(1)
							winner.Store(data)
						}
					}()
				}
				// A Delete of another object that empties the directory
				// races with the writers (an unnamed file does not keep
				// the directory).
				wg.Add(1)
				go func() {
					defer wg.Done()
					other := fmt.Sprintf("c/results/other-%d", k)
					if err := s.Put(ctx, other, []byte("x")); err == nil {
						_ = s.Delete(ctx, other)
					}
				}()
				wg.Wait()
				if n := created.Load(); n != 1 {
					t.Fatalf("%s: created by %d writers, want 1", key, n)
				}
				got, err := s.Get(ctx, key)
				if err != nil || string(got) != winner.Load() {
					t.Fatalf("%s: %q, %v; want the creator's %q", key, got, err, winner.Load())
				}
				fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(key)))
				if err != nil || fi.Mode().Perm() != 0o644 {
					t.Fatalf("%s: %v, %v; want a 0644 file", key, fi, err)
				}
				if k%10 == 9 {
					// Empty the directory, so that the next writers find
					// it pruned.
					for j := k - 9; j <= k; j++ {
						if err := s.Delete(ctx, fmt.Sprintf("c/results/%d.json", j)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if !named && runtime.GOOS == "linux" && s.noUnnamed.Load() {
				t.Errorf("this Linux file system fell back to named temporary files")
			}
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), tmpMarker) {
					t.Errorf("temporary file left behind: %s", p)
				}
				return nil
			})
		})
	}
}
