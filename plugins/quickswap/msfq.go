// Package quickswap holds the Quickswap policies of the Quickswap paper
// (Q = Grosof, Hong, Harchol-Balter, Scheller-Wolf et al., PEVA 2025):
// Most Servers First with Quickswap for the one-or-all case (MSFQ, Q §4.2),
// and its generalisations to any set of classes, Static Quickswap (Q §4.3)
// and Adaptive Quickswap (Q §4.4). All are non-preemptive and size-oblivious.
//
// Q identifies a job class with its server need (§3.1); workload classes
// that share a need are one class here, served first come first served
// among themselves, and every class is FIFO.
package quickswap

import (
	"fmt"
	"strconv"

	"github.com/msjfarm/msjfarm/internal/jobring"
	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "msfq",
	Doc:  "MSF with Quickswap (Q §4.2), one-or-all workloads only: phases 1-4 with threshold ℓ (parameter threshold, default k−1; ℓ = 0 is MSF).",
	New:  func() sdk.Policy { return &MSFQ{} },
}, {
	Name: "static-quickswap",
	Doc:  "Static Quickswap (Q §4.3): cycle through the classes in a fixed order (parameter order, default decreasing need), each with a working and a draining phase; threshold ℓ.",
	New:  func() sdk.Policy { return &Static{} },
}, {
	Name: "adaptive-quickswap",
	Doc:  "Adaptive Quickswap (Q §4.4): MSF-order (best-fit) admission; drain when every waiting class is out of service, until the largest waiting job enters.",
	New:  func() sdk.Policy { return &Adaptive{} },
}}

// MSFQ is Most Servers First with Quickswap (Q §4.2) for the one-or-all
// case: every class needs 1 server (light) or all k servers (heavy). With
// n1, nk the light and heavy jobs in the system, it cycles through
//
//	phase 1: serve heavy jobs exclusively until none remain (nk = 0);
//	phase 2: serve light jobs until fewer than k are in the system (n1 < k);
//	phase 3: serve light jobs until at most ℓ are in service (n1 <= ℓ);
//	phase 4: admit no light job; complete those in service, then phase 1.
//
// "Serve" means: start waiting jobs of that kind whenever they fit. Phase
// conditions are re-evaluated after every arrival and completion; a phase
// whose end condition already holds when it is entered lasts zero time (Q
// §5.2 calls this skipping a phase).
//
// Choices where Q leaves room (each tested):
//
//   - Phase 3 ends at n1 <= ℓ only while a heavy job is in the system
//     (nk > 0); otherwise phase 3 goes on serving light jobs. Read to the
//     letter, §4.2 would otherwise pass through phases 4, 1, 2 and back to 3
//     in zero time forever whenever the system holds no heavy job (an empty
//     system included), and with n1 <= ℓ light jobs waiting on idle servers
//     it would start none of them. Phases 4 and 1 exist to switch to heavy
//     jobs ("MSFQ switches to serving k-server jobs whenever the number of
//     1-server jobs falls below ℓ", §1.2), so with none to switch to the
//     policy keeps serving light jobs; the switch happens when a heavy job
//     arrives while n1 <= ℓ. With this, the cycle is always 1→2→3→4→1, an
//     empty system rests in phase 3, and ℓ = 0 is exactly MSF (§4.2: "when
//     ℓ = 0, our MSFQ policy is the same as the MSF policy"): the same start
//     decisions at the same instants, tested bit for bit against msf.
//   - n1 in phases 2 and 3 counts light jobs in the system, as the formulas
//     say; in phase 3 that equals the light jobs in service (n1 < k, and
//     only light jobs run). Phase 4 ends when no light job is in service
//     (its "n1 = 0" cannot count the light jobs that arrive and wait during
//     phase 4).
//   - Several classes of the same kind (e.g. two 1-server classes) are one
//     kind, FIFO between them. On k = 1 every job is light.
//   - Any other workload (a class needing neither 1 nor k servers) is an
//     Init error naming the class: MSFQ is defined only for one-or-all (Q
//     §4.2); Static and Adaptive Quickswap are its generalisations.
//
// Counters (Q Fig. 4), over the measurement window only (Measurer): for
// each phase i, phase<i>_mean, the mean phase duration E[H_i] estimated as
// the time spent in phase i within the window over the number of entries
// into phase i within the window, zero-length entries included (0 if there
// was none), and phase<i>_fraction, the fraction of the window spent in
// phase i (m_i of Q §5.3); cycles, the entries into phase 1.
//
// Cost: Arrive and Complete run the phase rules (step) only where one can
// fire. The events that make up nearly all of a run take a shortcut with
// the same effect, without a call: a light arrival in phase 1 or 4 (whose
// rules do not read n1 or the light queue), and a light arrival or
// completion in phase 2 that leaves n1 >= k (admit light jobs, stay).
// TestMSFQMatchesRules checks this against the rules as written above,
// event for event and counter for counter.
type MSFQ struct {
	ell int // configured threshold; -1 means k−1
	l   int // resolved ℓ

	k            int
	light, heavy jobring.Ring
	n1, nk       int // in the system
	run1         int // light jobs in service
	phase        int

	clk     clock
	time    [5]float64
	entries [5]int64
}

// Params: the threshold ℓ.
func (p *MSFQ) Params() []sdk.Param {
	return []sdk.Param{thresholdParam("threshold ℓ in [0, k−1]: phase 3 ends when at most ℓ light jobs remain; −1 (default) means k−1; 0 is MSF")}
}

// Configure reads ℓ (checked against k in Init).
func (p *MSFQ) Configure(v sdk.Values) error { p.ell = v.Int("threshold"); return nil }

// NewMSFQ returns MSFQ with threshold ell (−1 for k−1).
func NewMSFQ(ell int) *MSFQ { return &MSFQ{ell: ell} }

func resolveThreshold(name string, ell, k int) (int, error) {
	if ell == -1 {
		return k - 1, nil
	}
	if ell < 0 || ell > k-1 {
		return 0, fmt.Errorf("%s: threshold %d out of range [0, k−1] = [0, %d]", name, ell, k-1)
	}
	return ell, nil
}

// Init checks that the workload is one-or-all and resets the state.
func (p *MSFQ) Init(s *sdk.System) error {
	p.k = s.Servers()
	l, err := resolveThreshold("msfq", p.ell, p.k)
	if err != nil {
		return err
	}
	p.l = l
	// A job is light iff it needs 1 server (on k = 1 every job is), else
	// heavy: Arrive and Complete read the need, not a class table.
	for i, c := range s.Classes() {
		switch c.Need {
		case 1, p.k:
		default:
			name := c.Name
			if name == "" {
				name = strconv.Itoa(i)
			}
			return fmt.Errorf("msfq: defined for one-or-all workloads only (Q §4.2: every class needs 1 or k = %d servers); class %q needs %d (use static-quickswap or adaptive-quickswap)", p.k, name, c.Need)
		}
	}
	p.light.Reset()
	p.heavy.Reset()
	p.n1, p.nk, p.run1 = 0, 0, 0
	p.phase = 3 // an empty system rests in phase 3 (see the type's doc)
	p.clk = clock{}
	p.time, p.entries = [5]float64{}, [5]int64{}
	return nil
}

// StartMeasuring opens the window of the phase counters.
func (p *MSFQ) StartMeasuring(s *sdk.System) {
	p.clk.start(s.Now())
	p.time, p.entries = [5]float64{}, [5]int64{}
}

// Arrive queues j and applies the phase rules.
func (p *MSFQ) Arrive(s *sdk.System, j *sdk.Job) {
	p.time[p.phase] += p.clk.advance(s)
	if j.Need() != 1 {
		p.nk++
		p.heavy.Push(j)
		p.step(s)
		return
	}
	p.n1++
	switch p.phase {
	case 1, 4:
		// Phase 1's rules read nk, the heavy queue and the idle servers,
		// phase 4's the light jobs in service: a light arrival changes
		// none of them, so after the previous event's step none fires.
		p.light.Push(j)
		return
	case 2:
		// admitLight. After a step in phase 2 either no light job waits
		// or no server is idle, and the latter is the common case here
		// (n1 >= k): then j just queues. With idle servers j is the only
		// waiting light job and starts. n1 only grew, so if n1 >= k held
		// before, phase 2 goes on.
		if s.Free() == 0 {
			p.light.Push(j)
		} else if p.light.Len() == 0 {
			s.Start(j)
			p.run1++
		} else {
			p.light.Push(j)
			p.admitLight(s)
		}
		if p.n1 >= p.k {
			return
		}
	default:
		p.light.Push(j)
	}
	p.step(s)
}

// Complete updates the counts and applies the phase rules.
func (p *MSFQ) Complete(s *sdk.System, j *sdk.Job) {
	p.time[p.phase] += p.clk.advance(s)
	if j.Need() != 1 {
		p.nk--
		p.step(s)
		return
	}
	p.n1--
	p.run1--
	if p.phase != 2 || p.n1 < p.k {
		p.step(s)
		return
	}
	// Phase 2 with n1 >= k after admitting (admitting does not change n1):
	// step would admit light jobs and stay. This is admitLight inline.
	q := &p.light
	free := s.Free()
	for q.Len() > 0 && free > 0 {
		// pop(q), inline (a call here costs more than the prefetch saves
		// on short queues).
		j := q.Pop()
		if q.Len() >= prefetchAbove {
			q.Prefetch(prefetchAhead)
		}
		s.Start(j)
		p.run1++
		free-- // a light job needs 1 server
	}
}

func (p *MSFQ) enter(z int) {
	p.phase = z
	if p.clk.on {
		p.entries[z]++
	}
}

// step applies the phase rules until none fires. It terminates: the cycle
// 3→4→1→2→3 needs nk > 0 to leave 3 and nk = 0 to leave 1, and nk does not
// change within a step.
func (p *MSFQ) step(s *sdk.System) {
	for {
		switch p.phase {
		case 1:
			if p.nk == 0 {
				p.enter(2)
				continue
			}
			if p.heavy.Len() > 0 && s.Free() == p.k {
				s.Start(pop(&p.heavy))
			}
			return
		case 2:
			p.admitLight(s)
			if p.n1 < p.k {
				p.enter(3)
				continue
			}
			return
		case 3:
			p.admitLight(s)
			if p.n1 <= p.l && p.nk > 0 {
				p.enter(4)
				continue
			}
			return
		default: // 4
			if p.run1 == 0 {
				p.enter(1)
				continue
			}
			return
		}
	}
}

func (p *MSFQ) admitLight(s *sdk.System) {
	for p.light.Len() > 0 && s.Free() > 0 {
		s.Start(pop(&p.light))
		p.run1++
	}
}

// Counters reports the phase durations and time fractions (Q Fig. 4).
// Cycles counts the window's MSFQ cycles (entries into phase 1): the
// evidence that the window averaged over many phase cycles (sdk.CycleReporter).
func (p *MSFQ) Cycles() (string, int64) { return "cycles", p.entries[1] }

// DescribeCounters names the counters and, in their docs, the phases as Q
// §4.2 defines them (sdk.CounterDescriber).
func (p *MSFQ) DescribeCounters() []sdk.CounterInfo {
	phases := [5]string{
		1: "serving k-server jobs until none remain",
		2: "serving 1-server jobs until fewer than k are in the system",
		3: "serving 1-server jobs until at most ℓ are in service",
		4: "finishing the 1-server jobs in service, starting none",
	}
	out := make([]sdk.CounterInfo, 0, 9)
	for z := 1; z <= 4; z++ {
		doc := fmt.Sprintf("phase %d: %s", z, phases[z])
		out = append(out,
			sdk.CounterInfo{Name: fmt.Sprintf("phase%d_mean", z), Label: fmt.Sprintf("mean duration of phase %d", z),
				Unit: "time", Kind: sdk.KindTime, Doc: doc},
			sdk.CounterInfo{Name: fmt.Sprintf("phase%d_fraction", z), Label: fmt.Sprintf("fraction of time in phase %d", z),
				Kind: sdk.KindFraction, Doc: doc})
	}
	return append(out, sdk.CounterInfo{Name: "cycles", Label: "MSFQ cycles", Kind: sdk.KindCount,
		Doc: "entries into phase 1 in the measurement window"})
}

func (p *MSFQ) Counters() []sdk.Counter {
	var total float64
	for z := 1; z <= 4; z++ {
		total += p.time[z]
	}
	out := make([]sdk.Counter, 0, 9)
	for z := 1; z <= 4; z++ {
		out = append(out,
			sdk.Counter{Name: fmt.Sprintf("phase%d_mean", z), Value: ratio(p.time[z], float64(p.entries[z]))},
			sdk.Counter{Name: fmt.Sprintf("phase%d_fraction", z), Value: ratio(p.time[z], total)})
	}
	out = append(out, sdk.Counter{Name: "cycles", Value: float64(p.entries[1])})
	return out
}
