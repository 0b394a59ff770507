package pluginhost

import (
	"testing"
	"time"
)

// The progress interval asked for keeps four reports within the stall
// limit: beats come with the reports, and at the default 250 ms a limit
// of 150 ms fired on honest runs beating every 47 ms.
func TestStallInterval(t *testing.T) {
	for _, c := range []struct {
		limit, asked, want time.Duration
	}{
		{0, 250 * time.Millisecond, 250 * time.Millisecond}, // not watched: as asked
		{10 * time.Minute, 250 * time.Millisecond, 250 * time.Millisecond},
		{time.Second, 250 * time.Millisecond, 250 * time.Millisecond},
		{600 * time.Millisecond, 250 * time.Millisecond, 150 * time.Millisecond},
		{20 * time.Millisecond, 250 * time.Millisecond, 10 * time.Millisecond}, // at least 10 ms
	} {
		var w *stallWatch
		if c.limit > 0 {
			w = &stallWatch{limit: c.limit}
		}
		if got := w.interval(c.asked); got != c.want {
			t.Errorf("limit %v, asked %v: %v, want %v", c.limit, c.asked, got, c.want)
		}
	}
}
