package worker

import (
	"testing"
	"time"
)

// TestPassHold: a passed-on verification request is held VerifyNakDelay
// (1 s) for its first minute of passing around, then twice as long for
// each further minute, up to 32 s. By hand: 59 s held is within the
// first minute (1 s); 60 s starts the second (2 s); 150 s is in the third
// (4 s); 4 min 59 s in the fifth (16 s); from 5 min on the doubling stops
// at 2^5 = 32 s; a negative or absurd header counts as nothing held yet,
// or as the longest.
func TestPassHold(t *testing.T) {
	if VerifyNakDelay != time.Second || VerifyPassWindow != time.Minute {
		t.Skip("the expected holds below are derived for a 1 s hold and a 1 min window")
	}
	for _, c := range []struct {
		held, want time.Duration
	}{
		{0, time.Second},
		{-time.Hour, time.Second},
		{59 * time.Second, time.Second},
		{60 * time.Second, 2 * time.Second},
		{150 * time.Second, 4 * time.Second},
		{4*time.Minute + 59*time.Second, 16 * time.Second},
		{5 * time.Minute, 32 * time.Second},
		{time.Hour, 32 * time.Second},
		{1 << 62, 32 * time.Second},
	} {
		if got := passHold(c.held); got != c.want {
			t.Errorf("passHold(%v) = %v, want %v", c.held, got, c.want)
		}
	}
}
