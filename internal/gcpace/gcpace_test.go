package gcpace

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		name  string
		env   string // "" leaves GOGC unset
		start int    // the target before Apply (as the runtime read $GOGC at start-up)
		want  int    // 0: PercentFor the live heap
	}{
		{"unset", "", 100, 0},
		{"set by the user", "150", 150, 150},
		{"off by the user", "off", -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == "" {
				t.Setenv("GOGC", "") // restores the variable afterwards
				if err := os.Unsetenv("GOGC"); err != nil {
					t.Fatal(err)
				}
			} else {
				t.Setenv("GOGC", tc.env)
			}
			debug.SetGCPercent(tc.start)
			got := Apply()
			inForce := debug.SetGCPercent(tc.start)
			want := tc.want
			if want == 0 && (got < Percent || got > maxPercent) {
				t.Errorf("Apply() = %d, want a percent in [%d, %d]", got, Percent, maxPercent)
			}
			if want == 0 {
				want = got
			}
			if got != want || inForce != want {
				t.Errorf("Apply() = %d and %d in force, want %d", got, inForce, want)
			}
		})
	}
}

// TestPercentFor: the goal live·(1 + p/100) is Floor (64 MiB) while live
// is between 64/17 and 64/5 MiB, never below live·5, and p never above the
// 1600 at which the runtime's own minimum, 4 MiB·p/100, reaches Floor.
func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 1600},           // before the first cycle: the runtime's minimum is the floor
		{1 * mib, 1600},     // 6400 − 100 clamped: goal max(64, 17) MiB
		{4 * mib, 1500},     // 4 · 16 = 64
		{8 * mib, 700},      // 8 · 8 = 64
		{12 * mib, 433},     // 6400/12 = 533 (integer), − 100: 12 · 5.33 = 64
		{64 * mib / 5, 400}, // the floor meets GOGC=400
		{100 * mib, 400},
	} {
		if got := PercentFor(tc.live); got != tc.want {
			t.Errorf("PercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestFloor runs a fresh process that applies the pace and then allocates
// 640 MiB of short-lived garbage, 64 KiB at a time, with almost nothing
// live. With the floor a cycle starts about every 64 MiB (a little more
// with the binary's globals, which the goal counts): 10-12 cycles here.
// Without it GOGC=400 would start one every 16 MiB (about 40), and the
// default GOGC=100 one every 4 MiB (about 160). Before the first 32 MiB no
// cycle may start at all.
func TestFloor(t *testing.T) {
	if os.Getenv("GCPACE_FLOOR_HELPER") == "1" {
		floorHelper()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloor$")
	cmd.Env = []string{"GCPACE_FLOOR_HELPER=1"} // and no GOGC
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOGC=") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var early, total, withLive, released int
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "CYCLES" {
			early, _ = strconv.Atoi(f[1])
			total, _ = strconv.Atoi(f[2])
		} else if len(f) == 3 && f[0] == "PERCENT" {
			withLive, _ = strconv.Atoi(f[1])
			released, _ = strconv.Atoi(f[2])
		}
	}
	// After a cycle that finds 40 MiB live the goal is 5 × 40 MiB (GOGC
	// 400), and after one that finds it gone, the floor again (1600).
	if withLive != Percent || released != maxPercent {
		t.Errorf("GOGC after a cycle with 40 MiB live = %d (want %d), after one with it released = %d (want %d)", withLive, Percent, released, maxPercent)
	}
	t.Logf("cycles: %d in the first 32 MiB, %d in 640 MiB", early, total)
	// At least one cycle (the floor does not switch the collector off),
	// not "about 10": on a loaded machine the marking of a cycle falls
	// behind the allocation and the heap overshoots its goal, so fewer
	// cycles run (2 in 640 MiB, seen under a parallel go test).
	if early != 0 || total < 1 || total > 25 {
		t.Fatalf("cycles: %d in the first 32 MiB (want 0), %d in 640 MiB (want about 10)\n%s", early, total, out)
	}
}

var sink []byte

func floorHelper() {
	Apply()
	cycles := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	c0 := cycles()
	for range 32 * 16 {
		sink = make([]byte, 64<<10)
	}
	early := cycles() - c0
	for range (640 - 32) * 16 {
		sink = make([]byte, 64<<10)
	}
	runtime.KeepAlive(sink)
	println("CYCLES", early, cycles()-c0)

	live := make([]byte, 40<<20)
	withLive := percentAfterGC()
	runtime.KeepAlive(live)
	println("PERCENT", withLive, percentAfterGC())
}

// percentAfterGC runs cycles until the GOGC set after one is the one for
// the live heap it found, and returns it (after a minute, the GOGC in force).
// It may take more than one cycle: a cycle can come before the cleanup of
// the previous one has run and armed the next sentinel.
func percentAfterGC() int64 {
	read := func() int64 {
		s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		runtime.GC()
		want := int64(PercentFor(liveHeap()))
		for i := 0; i < 100 && read() != want; i++ {
			time.Sleep(time.Millisecond)
		}
		if read() == want {
			return want
		}
	}
	return read()
}

// TestStopResume: Stop gives the default pace (100) and keeps it across
// cycles; Resume gives the simulation pace back, and it is set again
// after a cycle (the chain of cleanups is armed again).
func TestStopResume(t *testing.T) {
	simulationPace(t)
	Stop()
	runtime.GC()
	runtime.GC()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("after Stop and two cycles the pace is %d, want 100", p)
	}
	if got := Resume(); got < Percent || got > maxPercent {
		t.Fatalf("Resume() = %d, want a percent in [%d, %d]", got, Percent, maxPercent)
	}
	debug.SetGCPercent(100) // the cleanup after the next cycle sets the pace again
	for range 10 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
		if p := pace(); p >= Percent {
			return
		}
	}
	t.Errorf("after Resume a cycle did not set the simulation pace again (stays at %d)", pace())
}

// TestSimulating: after Stop, Simulating sets the simulation pace until
// its restore gives the default pace (100) back; in a process at the
// simulation pace it changes nothing, and its restore leaves that pace.
func TestSimulating(t *testing.T) {
	simulationPace(t)
	before := pace()
	Simulating()()
	if p := pace(); p != before || stopped.Load() {
		t.Fatalf("not stopped: Simulating and its restore changed the pace %d to %d (stopped %v)", before, p, stopped.Load())
	}
	Stop()
	restore := Simulating()
	if p := pace(); p < Percent || p > maxPercent {
		t.Fatalf("Simulating after Stop: pace %d, want a percent in [%d, %d]", p, Percent, maxPercent)
	}
	restore()
	if p := pace(); p != 100 || !stopped.Load() {
		t.Fatalf("after the restore: pace %d (stopped %v), want 100, stopped", p, stopped.Load())
	}
}

// pace is the GOGC in force, read without changing it.
func pace() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestHold: a hold puts the default pace (100) in place of the simulation
// pace, nested holds keep it until the last release, which resumes the
// simulation pace; in a process already stopped a hold and its release
// leave it stopped.
func TestHold(t *testing.T) {
	simulationPace(t)
	outer := Hold()
	inner := Hold()
	if p := pace(); p != 100 || !stopped.Load() {
		t.Fatalf("held: pace %d, stopped %v; want 100, true", p, stopped.Load())
	}
	inner()
	inner() // a second call of the same release does nothing
	if p := pace(); p != 100 || !stopped.Load() {
		t.Fatalf("one hold left: pace %d, stopped %v; want 100, true", p, stopped.Load())
	}
	outer()
	if p := pace(); p < Percent || stopped.Load() {
		t.Fatalf("released: pace %d, stopped %v; want ≥ %d, false", p, stopped.Load(), Percent)
	}
	Stop()
	Hold()()
	if p := pace(); p != 100 || !stopped.Load() {
		t.Errorf("a hold in a stopped process: pace %d, stopped %v after release; want 100, true", p, stopped.Load())
	}
}

// simulationPace puts the process at the simulation pace (Apply, GOGC
// unset) for a test, and the default pace back after it.
func simulationPace(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { debug.SetGCPercent(100) })
	t.Setenv("GOGC", "")
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopped.Store(false) })
	Apply()
}
