package pluginhost

import (
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/wire"
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

// TestTailLimit: from the last arrival, a run watched on its count of
// arrivals gets the limit plus four times afterShare times the time its
// arrivals took, never a negative or overflowing Duration.
func TestTailLimit(t *testing.T) {
	for _, c := range []struct {
		run  wire.RunConfig
		took time.Duration
		want time.Duration
	}{
		// drain 2000 (Arrivals) of 2200: 2 s + 4 × 0.909… × 3.3 s = 14 s.
		{wire.RunConfig{Warmup: 200, Arrivals: 2000}, 3300 * time.Millisecond, 14 * time.Second},
		// MSER adds a pass: 2 s + 4 × (1 + 1) × 1 s = 10 s.
		{wire.RunConfig{Arrivals: 5000, MSER: true}, time.Second, 10 * time.Second},
		// drain at least 1,000: 2 s + 4 × 1000/500 × 1 s = 10 s.
		{wire.RunConfig{Arrivals: 500}, time.Second, 10 * time.Second},
		// drain_limit 10^15 beside 1,000 arrivals: 4·10^21 ns, past the
		// largest Duration.
		{wire.RunConfig{Arrivals: 1000, DrainLimit: 1e15}, time.Second, maxTail},
		{wire.RunConfig{Arrivals: 1000, DrainLimit: 1e15}, 0, 2 * time.Second},
	} {
		got := tailLimit(2*time.Second, afterShare(c.run), c.took)
		if d := got - c.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%+v after %v: %v, want %v", c.run, c.took, got, c.want)
		}
	}
}
