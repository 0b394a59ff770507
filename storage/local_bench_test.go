package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
)

// BenchmarkLocalPutIfAbsent measures the local store's durable write of a
// result-sized object (1.5 kB, a new key each time) by one writer (a
// report, an archive import) and by 16 concurrent writers, as one worker
// process with 16 slots writes its results: the
// time per write and this process's CPU per write (the kernel's writeback
// done by its flusher threads is not in it). Compare with benchstat:
//
//	go test -run '^$' -bench LocalPutIfAbsent -count 6 ./storage/
func BenchmarkLocalPutIfAbsent(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) { benchLocalPutIfAbsent(b, writers, false) })
	}
}

// BenchmarkLocalPutIfAbsentNamed is BenchmarkLocalPutIfAbsent's 16
// writers with named temporary files (the fallback where there is no
// O_TMPFILE, and what every write did before), to compare with it:
//
//	go test -run '^$' -bench 'LocalPutIfAbsent(Named)?$/writers=16' -benchtime 4000x -count 3 ./storage/
func BenchmarkLocalPutIfAbsentNamed(b *testing.B) {
	b.Run("writers=16", func(b *testing.B) { benchLocalPutIfAbsent(b, 16, true) })
}

// BenchmarkLocalPutIfAbsentAfterDeletes is the 16 writers of
// BenchmarkLocalPutIfAbsent right after 8,000 files of the same file
// system were deleted, as the files of a finished benchmark run (or of
// any other process's temporary directory) are. On ext4 without a
// journal (this machine's root file system) the inode allocator passes
// over every inode freed in the last 30 s (recently_deleted in
// fs/ext4/ialloc.c, reading its inode-table block each time), so each new
// file costs more until they age: this is why BenchmarkThroughput run
// straight after itself was twice as slow. Compare the two:
//
//	go test -run '^$' -bench 'LocalPutIfAbsent(AfterDeletes)?$/writers=16' -benchtime 3000x -count 3 ./storage/
func BenchmarkLocalPutIfAbsentAfterDeletes(b *testing.B) {
	b.Run("writers=16", func(b *testing.B) {
		dir := b.TempDir()
		for i := range 8000 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		benchLocalPutIfAbsent(b, 16, false)
	})
}

// benchLocalPutIfAbsent writes with writers goroutines (from named
// temporary files if named).
func benchLocalPutIfAbsent(b *testing.B, writers int, named bool) {
	st, err := openLocal(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	st.(*localStore).noUnnamed.Store(named)
	data := make([]byte, 1500)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	var n atomic.Int64
	ctx := context.Background()
	var wg sync.WaitGroup
	cpu0, _ := cputime.Process()
	start := time.Now()
	b.ResetTimer()
	for range writers {
		wg.Go(func() {
			for i := n.Add(1); i <= int64(b.N); i = n.Add(1) {
				key := fmt.Sprintf("campaigns/c1/results/t%d.json", i)
				if created, err := st.PutIfAbsent(ctx, key, data); err != nil || !created {
					b.Errorf("PutIfAbsent %s: created %v, %v", key, created, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu1, _ := cputime.Process()
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "CPU-µs/op")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
	if g := st.(*localStore).group; g != nil {
		b.ReportMetric(float64(g.started)/float64(b.N), "syncs/op")
	}
}
