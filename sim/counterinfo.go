package sim

import "strings"

// CounterKind says what sort of number a counter is, so that outputs can
// scale and bound its axis: a fraction lies in [0, 1] (its confidence
// interval is clipped there), a count is a number of events, a time is a
// duration in the workload's time unit, a rate is events per time unit.
// The empty kind is "other": nothing is assumed.
type CounterKind string

// Counter kinds.
const (
	KindOther    CounterKind = ""
	KindCount    CounterKind = "count"
	KindFraction CounterKind = "fraction"
	KindTime     CounterKind = "time"
	KindRate     CounterKind = "rate"
)

// CounterKinds are the kinds a CounterInfo may declare, "" (other) first.
var CounterKinds = []CounterKind{KindOther, KindCount, KindFraction, KindTime, KindRate}

// CounterInfo describes one of a policy's counters for people: the name a
// figure's axis, a table's row and summary_long's label column show instead
// of the raw Name, and its unit. It is metadata only: it never changes a
// result, and a policy without it (CounterDescriber is optional; plugins
// built against an SDK before it existed) shows its raw counter names.
//
// A per-class counter ("preempted_fraction/small") is described by the
// entry of its base name ("preempted_fraction"): the class is added to the
// label (CounterInfos.Lookup).
type CounterInfo struct {
	// Name is the counter's name as Counters reports it, without a class
	// suffix.
	Name string `json:"name"`
	// Label is the counter's name in words, as a paper's axis would show
	// it ("mean duration of phase 1"); at most 32 characters of letters,
	// digits, single spaces and a few punctuation marks
	// (wire.CheckCounterInfo), so that with its unit it fits the axis of
	// a column-width figure (about 36 characters do).
	Label string `json:"label,omitempty"`
	// Unit is the counter's unit ("time", "jobs", "1/time", "servers"),
	// empty for a dimensionless number or one the label counts ("jobs
	// killed"); at most 16 characters.
	Unit string `json:"unit,omitempty"`
	// Kind is what sort of number it is (CounterKind).
	Kind CounterKind `json:"kind,omitempty"`
	// Doc says what the counter measures in a phrase, for captions and
	// `msjfarm plugin info` ("phase 1: serving k-server jobs until none
	// remain"); at most 100 characters, the same characters as Label.
	Doc string `json:"doc,omitempty"`
}

// CounterDescriber is implemented by a policy that describes its counters
// (CounterReporter). Like Params, DescribeCounters must answer on a fresh,
// unconfigured instance: describe every counter the policy may report
// under any parameter setting.
type CounterDescriber interface {
	DescribeCounters() []CounterInfo
}

// CounterInfos is a policy's counter descriptions.
type CounterInfos []CounterInfo

// Lookup returns the description of the counter called name: its own
// entry, or for a per-class counter "base/class" the entry of base with
// the class added to the label ("preempted fraction, class small"). A
// counter without an entry (or with an empty label) is labelled with its
// raw name, so that every counter has a label; described reports whether
// the policy described it.
func (cs CounterInfos) Lookup(name string) (c CounterInfo, described bool) {
	base, class, perClass := strings.Cut(name, "/")
	for _, c := range cs {
		if c.Name != name && (!perClass || c.Name != base) {
			continue
		}
		switch {
		case c.Label == "":
			c.Label = name
		case c.Name != name:
			c.Label += ", class " + class
		}
		c.Name = name
		return c, true
	}
	return CounterInfo{Name: name, Label: name}, false
}

// AxisLabel is the label with its unit in parentheses ("mean duration of
// phase 1 (time)"), or the label alone for a dimensionless counter.
func (c CounterInfo) AxisLabel() string {
	l := c.Label
	if l == "" {
		l = c.Name
	}
	if c.Unit == "" {
		return l
	}
	return l + " (" + c.Unit + ")"
}
