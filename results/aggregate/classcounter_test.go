package aggregate

import (
	"encoding/json"
	"testing"

	"github.com/msjfarm/msjfarm/results/metric"
)

// TestMarkClassCounters: which counters are per class, and of which class.
// Classes "1", "cores-1", "cores-2" (indices 0, 1, 2; sanitized suffixes
// "_1", "_cores_1", "_cores_2").
func TestMarkClassCounters(t *testing.T) {
	classes := []Class{{Name: "1"}, {Name: "cores-1"}, {Name: "cores-2"}}
	type want struct {
		base  string
		class int
	}
	for _, c := range []struct {
		name string
		raw  []string
		want map[string]want // column → its counter's column without the class, and class
	}{
		// The SDK's form: "<name>/<class>" for a class of the point is per
		// class, even alone; a class the point does not have is not.
		{"sdk", []string{"kills/cores-1", "kills/cores-2", "kills", "solo/1", "odd/cores-3"},
			map[string]want{"counter_kills_cores_1": {"counter_kills", 1}, "counter_kills_cores_2": {"counter_kills", 2},
				"counter_solo_1": {"counter_solo", 0}}},
		// The rule for names without "/": two or more classes' suffixes.
		{"two classes", []string{"x", "x_cores_1", "x_cores_2"},
			map[string]want{"counter_x_cores_1": {"counter_x", 1}, "counter_x_cores_2": {"counter_x", 2}}},
		// "_cores_1" (class 1) is longer than "_1" (class 0): class 1's.
		// With class 0's "y_1" the group has three classes.
		{"longest class name wins", []string{"y_1", "y_cores_1", "y_cores_2"},
			map[string]want{"counter_y_1": {"counter_y", 0}, "counter_y_cores_1": {"counter_y", 1}, "counter_y_cores_2": {"counter_y", 2}}},
		// One class only: an ordinary counter that ends like a class.
		{"one class is not a group", []string{"phase_1", "z_cores_2"}, map[string]want{}},
		// MSFQ's phase counters are the phase figure's.
		{"phase counters", []string{"phase1_cores_1", "phase1_cores_2"}, map[string]want{}},
		// A bare class name after the prefix.
		{"bare class names", []string{"cores_1", "cores_2"}, map[string]want{}},
	} {
		ms := make([]MetricDesc, len(c.raw))
		for i, r := range c.raw {
			col := metric.CounterColumn(r)
			ms[i] = MetricDesc{Name: col, Base: col, Class: -1}
		}
		markClassCounters(ms, c.raw, classes)
		for _, m := range ms {
			w, per := c.want[m.Name]
			switch {
			case per != m.ClassCounter:
				t.Errorf("%s: %s per class %v, want %v", c.name, m.Name, m.ClassCounter, per)
			case per && (m.Base != w.base || m.CounterClass != w.class):
				t.Errorf("%s: %s is %s of class %d, want %s of class %d", c.name, m.Name, m.Base, m.CounterClass, w.base, w.class)
			case !per && m.Base != m.Name:
				t.Errorf("%s: %s not per class but its base changed to %s", c.name, m.Name, m.Base)
			case m.Class != -1:
				t.Errorf("%s: %s has Class %d", c.name, m.Name, m.Class)
			}
		}
	}
}

// TestClassCounterLongRows: summary_long names a per-class counter's class
// (class, class_index) under its column without the class (metric), as it
// does for the per-class metrics; summary.json keeps the mark.
func TestClassCounterLongRows(t *testing.T) {
	p := Point{Point: "p", Policy: "ks", Classes: []Class{{Name: "small"}, {Name: "large"}}, Replications: 2, N: 2,
		Metrics: []Metric{NewMetric(MetricDesc{Name: "counter_kills", Base: "counter_kills", Class: -1}, 0, 0, 2),
			NewMetric(MetricDesc{Name: "counter_kills_large", Base: "counter_kills", Class: -1, ClassCounter: true, CounterClass: 1}, 0, 0, 2)}}
	lt := LongTable([]Point{p})
	col := map[string]int{}
	for i, c := range lt.Columns {
		col[c.Name] = i
	}
	want := [][3]any{{"counter_kills", "", int64(-1)}, {"counter_kills", "large", int64(1)}}
	for i, r := range lt.Rows {
		if got := [3]any{r[col["metric"]], r[col["class"]], r[col["class_index"]]}; got != want[i] {
			t.Errorf("row %d: metric, class, class_index %v, want %v", i, got, want[i])
		}
	}
	b, err := json.Marshal(p.Metrics[1])
	if err != nil {
		t.Fatal(err)
	}
	var back Metric
	if err := json.Unmarshal(b, &back); err != nil || !back.ClassCounter || back.CounterClass != 1 || back.Base != "counter_kills" {
		t.Errorf("JSON round trip %s: %+v, %v", b, back, err)
	}
}
