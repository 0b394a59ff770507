package pluginhost

import (
	"testing"
	"time"
)

// TestLogBudget: a process may log logBurst bytes at once, then logRate
// bytes a second; the first line logged after drops says how many, and
// later ones at most every noticeEvery.
func TestLogBudget(t *testing.T) {
	t0 := time.Unix(0, 0)
	now := t0
	b := newLogBudget()
	b.now = func() time.Time { return now }
	b.last = t0
	// 16 lines of 1 KiB take the 16 KiB burst; the 17th is dropped, and
	// so is every one until a second has refilled 1 KiB.
	for i := range logBurst >> 10 {
		if ok, _ := b.take(1 << 10); !ok {
			t.Fatalf("line %d of the burst dropped", i)
		}
	}
	for range 10 {
		if ok, _ := b.take(1 << 10); ok {
			t.Fatal("a line past the burst was logged")
		}
	}
	now = now.Add(999 * time.Millisecond)
	if ok, _ := b.take(1 << 10); ok {
		t.Fatal("logged after 0.999 s: 1023 bytes refilled, 1024 needed")
	}
	now = now.Add(2 * time.Millisecond)
	if ok, dropped := b.take(1 << 10); !ok || dropped != 11 {
		t.Fatalf("after 1.001 s: logged %v, %d dropped reported; want true, 11", ok, dropped)
	}
	// Drops are said at most every 10 s: the next drop and the line after
	// it, a second later, go unsaid; ten seconds after the notice, the
	// count since it is said.
	if ok, _ := b.take(1 << 10); ok {
		t.Fatal("a line logged on an empty bucket")
	}
	now = now.Add(1001 * time.Millisecond)
	if ok, dropped := b.take(1 << 10); !ok || dropped != 0 {
		t.Fatalf("1 s after the notice: logged %v, %d dropped said; want true, 0", ok, dropped)
	}
	b.take(1 << 10) // dropped
	now = now.Add(9 * time.Second)
	if ok, dropped := b.take(1 << 10); !ok || dropped != 2 {
		t.Fatalf("10 s after the notice: logged %v, %d dropped said; want true, 2", ok, dropped)
	}
	// An hour's silence refills the burst, not more.
	now = now.Add(time.Hour)
	if ok, _ := b.take(logBurst); !ok {
		t.Fatal("the burst after an hour")
	}
	if ok, _ := b.take(1); ok {
		t.Fatal("more than the burst after an hour")
	}
}
