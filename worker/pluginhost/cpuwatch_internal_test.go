package pluginhost

import (
	"testing"
	"time"
)

// TestCPUWatch: the rules of cpuWatch, on a process whose CPU time grows
// at a given number of cores, sampled every 250 ms as watch does, for a
// GOMAXPROCS of 2 (so at most 2.5 cores in any window, 0.5 in an idle
// one). The real-process test (TestPluginCPU) covers the idle rule end
// to end; this one the arithmetic of both, which a loaded machine cannot
// disturb (a spinner past its GOMAXPROCS gets less than that many cores
// when other processes want them).
func TestCPUWatch(t *testing.T) {
	const step = 250 * time.Millisecond
	for _, c := range []struct {
		name  string
		cores float64
		// inflight at sample i (of 20 in the window, after the first
		// one, which opens it); calls, the calls given by then.
		inflight func(i int) bool
		calls    func(i int) int64
		over     bool
		idle     bool
	}{
		{"idle, 0.4 cores", 0.4, never, none, false, false},
		{"idle, 0.6 cores", 0.6, never, none, true, true},
		{"one replication, 2.4 cores", 2.4, always, none, false, false},
		{"one replication, 2.6 cores", 2.6, always, none, true, false},
		{"in flight at one sample, 1.5 cores", 1.5, func(i int) bool { return i == 7 }, none, false, false},
		// A replication shorter than a sample's gap: no sample sees it
		// in flight, the call count does.
		{"a short call between samples, 1.5 cores", 1.5, never, func(i int) int64 { return int64(i / 10) }, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Unix(1000, 0)
			now := t0
			cw := cpuWatch{pid: 1, procs: 2, margin: defaultCPUMargin, cpu: func(int) time.Duration { return time.Duration(c.cores * float64(now.Sub(t0))) }}
			if _, _, over := cw.sample(now, false, 0); over {
				t.Fatal("a verdict at the first sample")
			}
			for i := 1; i <= 20; i++ {
				now = now.Add(step)
				cores, idle, over := cw.sample(now, c.inflight(i), c.calls(i))
				if i < 20 {
					if over {
						t.Fatalf("a verdict at %v, before the window's end", now.Sub(t0))
					}
					continue
				}
				if over != c.over || (over && idle != c.idle) || cores < c.cores-1e-9 || cores > c.cores+1e-9 {
					t.Errorf("%.2f cores, idle %v, over %v; want %.2f, idle %v, over %v", cores, idle, over, c.cores, c.idle, c.over)
				}
			}
		})
	}
}

func never(int) bool  { return false }
func always(int) bool { return true }
func none(int) int64  { return 0 }
