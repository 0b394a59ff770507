package metric

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{"class-15": "class_15", "P(H)": "p_h", "light": "light",
		"  Phase 2 time ": "phase_2_time", "cores-0.5": "cores_0_5", "--": ""} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestColumnNames(t *testing.T) {
	for _, tc := range []struct {
		i          int
		name, want string
	}{{0, "light", "class0_light_"}, {1, "", "class1_"}, {2, "--", "class2_"}, {3, "Heavy (k)", "class3_heavy_k_"}} {
		if got := ClassPrefix(tc.i, tc.name); got != tc.want {
			t.Errorf("ClassPrefix(%d, %q) = %q, want %q", tc.i, tc.name, got, tc.want)
		}
	}
	if got := ClassName(4, ""); got != "class4" {
		t.Errorf("ClassName(4, \"\") = %q", got)
	}
	if got := CounterColumn("Phase 1 time"); got != "counter_phase_1_time" {
		t.Errorf("CounterColumn = %q", got)
	}
}

// TestAccessors: each accessor reads the field its Doc names, and reports
// "not measured" exactly when the replication could not measure it.
func TestAccessors(t *testing.T) {
	r := &sim.Result{MeanInSystem: 5, MeanInQueue: 6, Utilization: 0.7, Throughput: 8, Jain: 0.9,
		Preemptions: 10, PreemptedJobs: 11, WastedWork: 12, WeightedMeanResponse: 2, Window: 100}
	r.Overall.Count, r.Overall.MeanResponse, r.Overall.MeanWait, r.Overall.PWait = 3, 1, 3, 4
	want := map[string]float64{"mean_response": 1, "weighted_mean_response": 2, "mean_wait": 3, "p_wait": 4,
		"mean_in_system": 5, "mean_in_queue": 6, "utilization": 0.7, "throughput": 8, "jain": 0.9,
		"preemptions": 10, "preempted_jobs": 11, "wasted_work": 12}
	if len(want) != len(Base) {
		t.Fatalf("%d base metrics, test knows %d", len(Base), len(want))
	}
	for _, m := range Base {
		if v, ok := m.Value(r); !ok || v != want[m.Name] {
			t.Errorf("%s = %v, %v; want %v", m.Name, v, ok, want[m.Name])
		}
	}
	// Nothing measured: no departure, no window. Counts of events are
	// still defined (0).
	empty := &sim.Result{}
	for _, m := range Base {
		_, ok := m.Value(empty)
		wantOK := m.Name == "preemptions" || m.Name == "preempted_jobs" || m.Name == "wasted_work"
		if ok != wantOK {
			t.Errorf("%s on an empty result: ok = %v, want %v", m.Name, ok, wantOK)
		}
	}
	c := &sim.ClassStats{}
	c.MeanResponse, c.MeanWait, c.PWait = 1, 2, 3
	for i, m := range Class {
		if v := m.Value(c); v != float64(i+1) {
			t.Errorf("class %s = %v, want %v", m.Name, v, i+1)
		}
	}
}
