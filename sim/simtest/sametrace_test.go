package simtest_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/plugins/firstfit"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sim/simtest"
)

// recorder is a testing.TB that keeps what SameTrace reports, so a test can
// check the report of a comparison meant to fail. Fatalf ends the calling
// goroutine as testing.T's does.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// compare runs SameTrace against a recorder in its own goroutine (Fatalf
// ends it) and returns the messages.
func compare(w *sim.Workload, ref, got sim.Policy, cfg sim.Config) []string {
	r := &recorder{}
	var wg sync.WaitGroup
	wg.Go(func() { simtest.SameTrace(r, "cmp", w, ref, got, cfg) })
	wg.Wait()
	return r.msgs
}

// TestSameTrace: k = 4, class 0 needs 1, class 1 needs 4.
//
//	job 0: t=0,   need 1, size 2
//	job 1: t=1,   need 4, size 1
//	job 2: t=1.5, need 1, size 1
//	job 3: t=3.5, need 1, size 5
//
// Both policies record arrive 0 (t=0), start 0 (t=0), arrive 1 (t=1),
// arrive 2 (t=1.5): records 0–3. Then FCFS keeps job 2 behind job 1 and
// records the completion of job 0 at t=2, while first-fit starts job 2 on
// one of the three idle servers at t=1.5: the first difference is record 4.
// FCFS against itself reports nothing.
func TestSameTrace(t *testing.T) {
	w := simtest.TraceWorkload(4, []int{1, 4}, []simtest.J{
		{At: 0, Size: 2, Class: 0}, {At: 1, Size: 1, Class: 1}, {At: 1.5, Size: 1, Class: 0}, {At: 3.5, Size: 5, Class: 0},
	})
	cfg := sim.Config{Arrivals: int64(len(w.Trace))}
	if msgs := compare(w, &fcfs.FCFS{}, &fcfs.FCFS{}, cfg); len(msgs) != 0 {
		t.Errorf("FCFS against itself: %q", msgs)
	}
	msgs := compare(w, &fcfs.FCFS{}, &firstfit.FirstFit{}, cfg)
	if len(msgs) != 1 {
		t.Fatalf("FCFS against first-fit: %d messages %q, want 1", len(msgs), msgs)
	}
	want := fmt.Sprintf("cmp: event 4: %+v, reference %+v",
		sim.TraceRecord{Time: 1.5, Kind: sim.TraceStart, Job: 2, Class: 0, Need: 1, Busy: 2},
		sim.TraceRecord{Time: 2, Kind: sim.TraceComplete, Job: 0, Class: 0, Need: 1, Busy: 0})
	if msgs[0] != want {
		t.Errorf("got  %s\nwant %s", msgs[0], want)
	}

}

// TestSameTraceStreams: the comparison holds a few batches, not the
// traces. FCFS on Borg cell B at λ = 2, 10⁵ arrivals, makes about 3.9·10⁵
// records, 19 MB as a slice; one run allocates about 2 MB. SameTrace runs
// it twice and may add its batches (4 × 192 KiB) and the goroutine's
// stack: the bound is twice a run plus 4 MB, well below the trace. (The
// version that recorded the reference whole allocated 208 MB here.)
func TestSameTraceStreams(t *testing.T) {
	w := simtest.Named(t, "borg-b", 2)
	cfg := sim.Config{Seed: 3, Arrivals: 100000}
	alloc := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	var records int64
	run := alloc(func() {
		c := cfg
		c.Observer = func(sim.TraceRecord) { records++ }
		if _, err := sim.Run(w, &fcfs.FCFS{}, c); err != nil {
			t.Fatal(err)
		}
	})
	trace := uint64(records) * uint64(unsafe.Sizeof(sim.TraceRecord{}))
	same := alloc(func() { simtest.SameTrace(t, "borg-b", w, &fcfs.FCFS{}, &fcfs.FCFS{}, cfg) })
	t.Logf("%d records (%.1f MB as a slice); one run allocates %.1f MB, SameTrace %.1f MB",
		records, float64(trace)/1e6, float64(run)/1e6, float64(same)/1e6)
	if bound := 2*run + 4<<20; same > bound || same > trace/2 {
		t.Errorf("SameTrace allocated %d bytes, want at most %d (and less than half the trace's %d)", same, bound, trace)
	}
}
