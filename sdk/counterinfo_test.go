package sdk

import "testing"

// TestCounterInfoLookup: how a reported counter is named in outputs from
// its policy's descriptions. Expected labels by the rules of
// CounterInfos.Lookup and CounterInfo.AxisLabel: the entry of the same
// name, with " (unit)" when it has a unit; a per-class counter "base/class"
// takes base's entry and adds ", class <class>"; no entry, or an entry
// without a label, gives the raw name (an SDK before descriptions, or a
// policy that does not describe that counter).
func TestCounterInfoLookup(t *testing.T) {
	info := []CounterInfo{
		{Name: "phase1_mean", Label: "mean phase 1 duration", Unit: "time", Kind: KindTime},
		{Name: "preempted_fraction", Label: "jobs preempted", Kind: KindFraction},
		{Name: "helpers", Label: "helper servers", Unit: "servers", Kind: KindCount},
		{Name: "unlabelled", Unit: "jobs"},
	}
	for _, c := range []struct {
		info        []CounterInfo
		counter     string
		described   bool
		label, axis string
		kind        CounterKind
	}{
		{info, "phase1_mean", true, "mean phase 1 duration", "mean phase 1 duration (time)", KindTime},
		{info, "preempted_fraction", true, "jobs preempted", "jobs preempted", KindFraction},
		{info, "preempted_fraction/small", true, "jobs preempted, class small", "jobs preempted, class small", KindFraction},
		{info, "helpers", true, "helper servers", "helper servers (servers)", KindCount},
		{info, "unlabelled", true, "unlabelled", "unlabelled (jobs)", KindOther},
		{info, "cycles", false, "cycles", "cycles", KindOther},
		{info, "cycles/small", false, "cycles/small", "cycles/small", KindOther},
		{nil, "phase1_mean", false, "phase1_mean", "phase1_mean", KindOther},
	} {
		got, described := CounterInfos(c.info).Lookup(c.counter)
		if described != c.described || got.Name != c.counter || got.Label != c.label || got.AxisLabel() != c.axis || got.Kind != c.kind {
			t.Errorf("Lookup(%q) = %+v (described %v), axis %q; want label %q, axis %q, kind %q, described %v",
				c.counter, got, described, got.AxisLabel(), c.label, c.axis, c.kind, c.described)
		}
	}
}
