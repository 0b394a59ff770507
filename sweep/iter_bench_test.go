package sweep

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkPlanEach plans a sweep of 10^6 tasks (10^4 points × 100
// replications) and generates every task once, reporting the live heap
// after planning (what holding the campaign costs: no task is held) and
// the time per generated task.
func BenchmarkPlanEach(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("name: scale\nseed: 1\nworkload: one-or-all\nreplications: 100\nrun: {arrivals: 1e3, warmup: 1e2}\npolicies: [fcfs]\naxes:\n  load: [")
	const points = 10_000
	for i := range points {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.FormatFloat(0.1+0.8*float64(i)/points, 'g', -1, 64))
	}
	sb.WriteString("]\n")
	f, err := Parse([]byte(sb.String()), "yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c, err := Plan(f, testCatalog{})
		if err != nil {
			b.Fatal(err)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := 0
		if err := c.Each(func(Task) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != 1_000_000 || c.Len() != n {
			b.Fatalf("%d tasks generated, Len %d", n, c.Len())
		}
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "plan-heap-MiB")
		runtime.KeepAlive(c)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ns/task")
}
