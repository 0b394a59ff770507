package aggregate

import (
	"strconv"
	"sync"
	"testing"
)

// TestMetricDescShared: metrics described alike share one description,
// also when made concurrently (run with -race), and their values are
// their own.
func TestMetricDescShared(t *testing.T) {
	d := MetricDesc{Name: "counter_shared_test", Class: -1, Base: "counter_shared_test", Label: "a label", Unit: "time"}
	ms := make([]Metric, 64)
	var wg sync.WaitGroup
	for i := range ms {
		wg.Go(func() { ms[i] = NewMetric(d, float64(i), 0.5, i) })
	}
	wg.Wait()
	for i, m := range ms {
		if m.MetricDesc != ms[0].MetricDesc {
			t.Fatalf("metric %d has its own description", i)
		}
		if *m.MetricDesc != d || m.Mean != float64(i) || m.N != i || m.HalfWidth != 0.5 {
			t.Fatalf("metric %d is %+v %+v", i, *m.MetricDesc, m)
		}
	}
	other := d
	other.Unit = "jobs"
	if o := NewMetric(other, 0, 0, 0); o.MetricDesc == ms[0].MetricDesc || o.Unit != "jobs" {
		t.Fatalf("a different description is shared: %+v", *o.MetricDesc)
	}
}

// TestMetricDescBounded: past maxDescs distinct descriptions the table
// stops growing; a description made then is a copy of its own, equal.
func TestMetricDescBounded(t *testing.T) {
	tb := descTable{m: map[MetricDesc]*MetricDesc{}}
	for i := range maxDescs + 10 {
		d := MetricDesc{Name: "m" + strconv.Itoa(i)}
		if p := tb.intern(d); *p != d {
			t.Fatalf("description %d is %+v", i, *p)
		}
	}
	if len(tb.m) != maxDescs {
		t.Fatalf("%d descriptions kept, want %d", len(tb.m), maxDescs)
	}
	late := MetricDesc{Name: "m" + strconv.Itoa(maxDescs+3)}
	if a, b := tb.intern(late), tb.intern(late); a == b || *a != *b {
		t.Fatalf("a description past the bound is shared or altered")
	}
	early := MetricDesc{Name: "m7"}
	if a, b := tb.intern(early), tb.intern(early); a != b {
		t.Fatalf("a description within the bound is not shared")
	}
}
