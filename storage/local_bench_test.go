package storage

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/cputime"
)

// BenchmarkLocalPutIfAbsent measures the local store's durable write of a
// result-sized object (1.5 kB, a new key each time) by 16 concurrent
// writers, as one worker process with 16 slots writes its results: the
// time per write and this process's CPU per write (the kernel's writeback
// done by its flusher threads is not in it). Compare with benchstat:
//
//	go test -run '^$' -bench LocalPutIfAbsent -count 6 ./storage/
func BenchmarkLocalPutIfAbsent(b *testing.B) {
	st, err := openLocal(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 1500)
	for i := range data {
		data[i] = 'a' + byte(i%26)
	}
	var n atomic.Int64
	ctx := context.Background()
	b.SetParallelism(8) // 16 writers on this 2-core machine
	cpu0, _ := cputime.Process()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			key := fmt.Sprintf("campaigns/c1/results/t%d.json", i)
			if created, err := st.PutIfAbsent(ctx, key, data); err != nil || !created {
				b.Errorf("PutIfAbsent %s: created %v, %v", key, created, err)
				return
			}
		}
	})
	b.StopTimer()
	cpu1, _ := cputime.Process()
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "CPU-µs/op")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
	if g := st.(*localStore).group; g != nil {
		b.ReportMetric(float64(g.started)/float64(b.N), "syncs/op")
	}
}
