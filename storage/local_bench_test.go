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

// BenchmarkLocalNaming is the part of a PutIfAbsent that writeUnnamed
// changes, without the syncs (which are the same both ways): a 1.5-kB file
// created, written, made 0644 and given its name, from a named temporary
// file (create, link, unlink) or from an unnamed one (O_TMPFILE, linkat of
// /proc/self/fd). The two alternate in blocks of 200 files in one
// directory, nothing deleted until the end, so that both see the same
// state of the file system (on ext4 every file created within 30 s of a
// mass deletion costs more, "Throughput" in docs/design.md); it reports
// the CPU per file of each:
//
//	go test -run '^$' -bench LocalNaming -benchtime 12000x ./storage/
func BenchmarkLocalNaming(b *testing.B) {
	dir := b.TempDir()
	if f, err := openUnnamed(dir); err != nil {
		b.Skipf("no unnamed files here: %v", err)
	} else {
		f.Close()
	}
	data := make([]byte, 1500)
	var cpu [2]time.Duration // named, unnamed
	var files [2]int
	const block = 200
	for i := 0; i < b.N; i += block {
		kind := (i / block) % 2
		c0, _ := cputime.Process()
		for j := i; j < min(i+block, b.N); j++ {
			var err error
			if kind == 0 {
				err = nameTemp(dir, filepath.Join(dir, fmt.Sprint(j)), data)
			} else {
				err = nameUnnamed(dir, filepath.Join(dir, fmt.Sprint(j)), data)
			}
			if err != nil {
				b.Fatal(err)
			}
			files[kind]++
		}
		c1, _ := cputime.Process()
		cpu[kind] += c1 - c0
	}
	for k, unit := range []string{"named-CPU-µs/file", "unnamed-CPU-µs/file"} {
		if files[k] > 0 {
			b.ReportMetric(float64(cpu[k].Microseconds())/float64(files[k]), unit)
		}
	}
}

// nameTemp writes data to a named temporary file in dir and links it to
// name (BenchmarkLocalNaming).
func nameTemp(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, tmpMarker+"*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(f.Name(), name)
	}
	if rerr := os.Remove(f.Name()); err == nil {
		err = rerr
	}
	return err
}

// nameUnnamed writes data to an unnamed file in dir and links it to name
// (BenchmarkLocalNaming).
func nameUnnamed(dir, name string, data []byte) error {
	f, err := openUnnamed(dir)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = linkUnnamed(f, name)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
