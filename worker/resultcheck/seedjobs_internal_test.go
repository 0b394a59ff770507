package resultcheck

import (
	"testing"

	"github.com/msjfarm/msjfarm/model/workload"
	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sim"
)

// sim.MeasuredJobs counts the window's jobs of each class, warm-up
// excluded, sums their sizes and times the window: the engine's own class
// counts and window over the same run (FCFS at load 0.5, which drains
// every measured job, with the fixed warm-up and under MSER) are the
// same, bit for bit, and so are the mean sizes but for the order of the
// sums.
func TestMeasuredJobsIsTheEngines(t *testing.T) {
	for _, name := range []string{"one-or-all", "borg-b"} {
		spec, err := workload.Named(name)
		if err != nil {
			t.Fatal(err)
		}
		unit, err := spec.Build(1)
		if err != nil {
			t.Fatal(err)
		}
		w, err := spec.Build(0.5 / unit.Load()) // load 0.5
		if err != nil {
			t.Fatal(err)
		}
		for _, mser := range []bool{false, true} {
			checkMeasuredJobs(t, name, w, sim.Config{Seed: 7, Warmup: 1000, Arrivals: 20000, MSER: mser})
		}
	}
}

// checkMeasuredJobs runs FCFS on w under cfg and compares its classes'
// counts and mean sizes with the drawn sequence's over the result's own
// window (under MSER, the one its truncation chose).
func checkMeasuredJobs(t *testing.T, name string, w *sim.Workload, cfg sim.Config) {
	t.Helper()
	r, err := sim.RunFresh(w, func() (sim.Policy, error) { return fcfs.Policies[0].New(), nil }, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MSER && r.MSERBatches == 0 {
		t.Errorf("%s: MSER truncated nothing: the window under MSER is not tested", name)
	}
	m, err := sim.MeasuredJobs(w, cfg.Seed, r.Warmup, r.Arrivals)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if r.Window != m.Window {
		t.Errorf("%s: the engine's window is %v long, the drawn one %v", name, r.Window, m.Window)
	}
	count, sum := m.Count, m.SizeSum
	for i, cs := range r.Classes {
		if cs.Undeparted != 0 || cs.Count != count[i] {
			t.Fatalf("%s class %d: engine %d departed + %d undeparted, drawn %d", name, i, cs.Count, cs.Undeparted, count[i])
		}
		if cs.Count > 0 && !near(cs.MeanSize, sum[i]/float64(count[i])) {
			t.Errorf("%s class %d: engine mean size %v, drawn %v", name, i, cs.MeanSize, sum[i]/float64(count[i]))
		}
	}
}

// BenchmarkMeasuredJobs is the sizes check's cost per job of a run
// (warm-up included), against which a policy's run over the same jobs
// costs two events or more a job.
func BenchmarkMeasuredJobs(b *testing.B) {
	spec, err := workload.Named("one-or-all")
	if err != nil {
		b.Fatal(err)
	}
	w, err := spec.Build(7)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	for b.Loop() {
		if _, err := sim.MeasuredJobs(w, 1, n/10, n); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*1.1), "ns/job")
}
