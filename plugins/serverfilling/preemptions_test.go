package serverfilling

import (
	"testing"

	"github.com/msjfarm/msjfarm/sim"
)

// preemptionAnatomy classifies the preemptions of one replication by the
// decision (instant) that made them. A decision's trigger is the widest job
// it starts or preempts outside the bulk it displaces: when the widest job
// moved at an instant is alone of its need among the moves and moves the
// other way to the rest (it starts while the others stop, or stops while
// they start), the decision is a toggle of that job.
type preemptionAnatomy struct {
	arrivals, preemptions int64
	// sameInstant counts jobs preempted and started again at the same
	// instant (or started and preempted at the same instant): moves that a
	// decision taken once per instant would not make.
	sameInstant int64
	// toggled counts the preemptions made by decisions that started a
	// wider job than every job they preempted (the wide job entering
	// service displaces narrower ones); restarted, the starts made by
	// decisions that preempted or completed a wider job than every job
	// they started.
	toggled, restarted int64
	// bulk counts the preemptions made by decisions preempting at least 16
	// jobs at once.
	bulk int64
}

func (a *preemptionAnatomy) observer() func(sim.TraceRecord) {
	var at float64 = -1
	var batch []sim.TraceRecord
	flush := func() {
		started := map[int64]bool{}
		preempted := map[int64]bool{}
		maxStart, maxStop := 0, 0
		nPre := 0
		for _, e := range batch {
			switch e.Kind {
			case sim.TraceStart:
				if preempted[e.Job] {
					a.sameInstant++
				}
				started[e.Job] = true
				maxStart = max(maxStart, e.Need)
			case sim.TracePreempt:
				if started[e.Job] {
					a.sameInstant++
				}
				preempted[e.Job] = true
				maxStop = max(maxStop, e.Need)
				nPre++
			case sim.TraceComplete:
				maxStop = max(maxStop, e.Need)
			}
		}
		if nPre > 0 {
			a.preemptions += int64(nPre)
			if maxStart > 0 && maxStart > maxNeed(batch, sim.TracePreempt) {
				a.toggled += int64(nPre)
			}
			if nPre >= 16 {
				a.bulk += int64(nPre)
			}
		}
		if len(started) > 0 && maxStop > maxStart {
			a.restarted += int64(len(started))
		}
		batch = batch[:0]
	}
	return func(e sim.TraceRecord) {
		if e.Time != at {
			flush()
			at = e.Time
		}
		if e.Kind == sim.TraceArrive {
			a.arrivals++
		}
		batch = append(batch, e)
	}
}

func maxNeed(batch []sim.TraceRecord, k sim.TraceKind) int {
	m := 0
	for _, e := range batch {
		if e.Kind == k {
			m = max(m, e.Need)
		}
	}
	return m
}

// preemptionCase is one run TestPreemptionsIntrinsic classifies: minWider
// is the least fraction of its preemptions that decisions starting a wider
// job must make (measured 0.96–0.997 on the ServerFilling cases at the
// seed and length below).
type preemptionCase struct {
	name     string
	w        *sim.Workload
	ord      Order
	proc     Procedure
	arrivals int64
	minWider float64
}

// TestPreemptionsIntrinsic: the 16–22 preemptions per arrival that the SRPT
// and Gittins orders make on Borg cell B and one-or-all (BenchmarkLoads'
// preemptions/arrival) are the policies' own, not moves of this
// implementation: counted on the frozen reference (ref_test.go), no job is
// preempted and restarted, or started and preempted, at one instant, and
// nearly all of them are made by decisions that start a job wider than
// every job they preempt (ServerFilling serves M's widest jobs first, so a
// wide job entering M displaces up to its need in narrow ones, and its
// leaving or completing restarts them). The DivisorFilling cases past
// saturation are in the long test file.
func TestPreemptionsIntrinsic(t *testing.T) {
	checkPreemptions(t, []preemptionCase{
		{"srpt/borg-b/rho=0.95", namedWorkload(t, "borg-b", 4.65378), SRPTOrder, ServerFilling, 8000, 0.95},
		{"gittins/borg-b/rho=0.95", namedWorkload(t, "borg-b", 4.65378), GittinsOrder, ServerFilling, 8000, 0.95},
		{"srpt/one-or-all/lambda=7", namedWorkload(t, "one-or-all", 7), SRPTOrder, ServerFilling, 8000, 0.95},
		{"gittins/one-or-all/lambda=7", namedWorkload(t, "one-or-all", 7), GittinsOrder, ServerFilling, 8000, 0.95},
	})
}

func checkPreemptions(t *testing.T, cases []preemptionCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var a preemptionAnatomy
			cfg := sim.Config{Seed: 5, Warmup: c.arrivals / 10, Arrivals: c.arrivals, Observer: a.observer()}
			if _, err := sim.Run(c.w, newRef(c.ord, c.proc), cfg); err != nil {
				t.Fatal(err)
			}
			perArr := float64(a.preemptions) / float64(a.arrivals)
			wider := float64(a.toggled) / float64(a.preemptions)
			t.Logf("%.2f preemptions/arrival; same instant %d; by a wider start %.3f; in bulk (>= 16) %.3f; restarts after a wider stop %.2f/arrival",
				perArr, a.sameInstant, wider, float64(a.bulk)/float64(a.preemptions),
				float64(a.restarted)/float64(a.arrivals))
			if a.sameInstant != 0 {
				t.Errorf("%d jobs preempted and started at one instant", a.sameInstant)
			}
			if perArr < 1 || wider < c.minWider {
				t.Errorf("%.2f preemptions/arrival, %.3f of them by a wider start: want >= 1 and >= %.2f", perArr, wider, c.minWider)
			}
		})
	}
}
