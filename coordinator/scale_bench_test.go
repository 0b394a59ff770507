package coordinator_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// benchTasksEnv sets the size of BenchmarkSubmitScale's campaign (default
// 10^6 tasks; MSJFARM_BENCH_TASKS=1e7 for the 10^7 one, which writes some
// 10 GB of stream to the nats-server's store directory).
const benchTasksEnv = "MSJFARM_BENCH_TASKS"

// scalePoints bounds the points of the benchmark's sweep, so that it
// measures tasks, not the planning of points.
const scalePoints = 10_000

// scaleSweep is a sweep of about n tasks: min(n/100, scalePoints) points
// (one load axis, one policy), each with the replications that make n.
func scaleSweep(b *testing.B, n int) *sweep.File {
	points := min(n/100, scalePoints)
	var sb strings.Builder
	fmt.Fprintf(&sb, "name: scale-%d\nseed: 1\nworkload: one-or-all\nreplications: %d\nrun: {arrivals: 1e3, warmup: 1e2}\npolicies: [fcfs]\naxes:\n  load: [", n, n/points)
	for i := range points {
		if i > 0 {
			sb.WriteString(", ")
		}
		// Distinct loads in (0.1, 0.9).
		sb.WriteString(strconv.FormatFloat(0.1+0.8*float64(i)/float64(points), 'g', -1, 64))
	}
	sb.WriteString("]\n")
	f, err := sweep.Parse([]byte(sb.String()), "yaml")
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapSampler records the peak of the live heap (runtime/metrics heap
// objects bytes) every 20 ms until stopped.
func heapSampler() (stop func() uint64) {
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// BenchmarkSubmitScale submits a campaign of 10^6 tasks (MSJFARM_BENCH_TASKS
// for another size) to a coordinator on a real nats-server (a separate
// process, so that the RSS measured is the coordinator's: it needs
// MSJFARM_NATS_SERVER) with a local store, and reports the peak live heap
// and the peak RSS of the process. Run it alone, once:
//
//	go test -run '^$' -bench SubmitScale -benchtime 1x ./coordinator/
func BenchmarkSubmitScale(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv(benchTasksEnv); v != "" {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 100 {
			b.Fatalf("%s=%q: want a number of tasks >= 100", benchTasksEnv, v)
		}
		n = int(x)
	}
	f := scaleSweep(b, n)
	n = f.Replications * len(f.Axes["load"])
	for b.Loop() {
		srv := natstest.StartBinary(b)
		nc, err := nats.Connect(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		st, err := storage.Open(context.Background(), b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		co, err := coordinator.New(context.Background(), coordinator.Options{Conn: nc, Store: st, Logf: b.Logf})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		stop := heapSampler()
		start := time.Now()
		r, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
		took := time.Since(start)
		heap := stop()
		if err != nil {
			b.Fatal(err)
		}
		if r.Tasks != n || r.Published != n {
			b.Fatalf("submitted %+v, want %d tasks published", r, n)
		}
		manifest, err := st.Stat(context.Background(), storage.ManifestKey(r.Campaign))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(took.Seconds(), "submit-s")
		b.ReportMetric(float64(manifest.Size)/(1<<10), "manifest-KiB")
		// Submitted again with every task queued: a reconcile that reads
		// the queued tasks from the stream (queuedSet) and publishes none.
		runtime.GC()
		stop = heapSampler()
		start = time.Now()
		r, err = co.Submit(context.Background(), protocol.SubmitRequest{Spec: f})
		took = time.Since(start)
		heap = stop()
		if err != nil {
			b.Fatal(err)
		}
		if r.Queued != n || r.Published != 0 {
			b.Fatalf("resubmitted %+v, want %d tasks queued and none published", r, n)
		}
		b.ReportMetric(float64(heap)/(1<<20), "resubmit-peak-heap-MiB")
		b.ReportMetric(took.Seconds(), "resubmit-s")
		nc.Close()
		srv.Stop()
	}
}
