// Package balanced is Balanced Splitting BS-π (Anselmi and Doncel, "Balanced
// Splitting: A Framework for Achieving Zero-wait in the Multiserver-job
// Model", IEEE TPDS; §3.2–3.3, Definition 1), a non-preemptive, size-oblivious
// policy.
//
// # Partition (B §3.2, eq. (2))
//
// With α_i the class probabilities, d_i = E[D_i] the mean service times and
// n_i the needs, ϱ_i = α_i d_i n_i and ϱ = Σ ϱ_i. Class i gets a dedicated
// set A_i of
//
//	a_i = ⌊ψ · (k/n_i) · ϱ_i/ϱ⌋ · n_i
//
// servers (a multiple of n_i), and the remaining |H| = k − Σ a_i servers are
// the helpers. ψ = 1 if every c_i = (k/n_i)(ϱ_i/ϱ) is an integer; otherwise
// ψ = max{x ∈ [0,1] : k − Σ ⌊x c_i⌋ n_i ≥ max_i n_i}, so that the helpers can
// serve a job of any class. The paper gives no other ψ rule; parameter "psi"
// (default 0 = this automatic choice) fixes ψ ∈ (0, 1] instead, e.g. to study
// the trade-off between dedicated servers and helpers. A fixed ψ is applied
// as a_i = ⌊ψ c_i⌋ n_i with no further adjustment: if it leaves fewer helpers
// than the largest need, classes with a_i > 0 run on A_i alone when the
// helpers cannot take them, and a class with a_i = 0 that does not fit in
// the helpers is an Init error, as for the automatic choice.
//
// # Policy (B Definition 1)
//
//  1. A class-i arrival starts at once on A_i if A_i has n_i idle servers;
//     otherwise it is sent to the helper set.
//  2. The helper set schedules the jobs sent to it with π, a non-preemptive,
//     size-oblivious policy that sees only the helpers and the helper-set
//     jobs (never A).
//  3. When a class-i job completes on A_i, the oldest class-i job waiting in
//     the helper set (if any) is moved to A_i and started there.
//
// # Choices where the paper is silent or ambiguous
//
//   - Degenerate max in ψ: the set {x : k − Σ⌊x c_i⌋n_i ≥ max n} is [0, x*)
//     because ⌊·⌋ is right-continuous, so the max is a supremum not attained.
//     We use the partition of x just below x* (the largest feasible one),
//     and report ψ = x*. When every c_i is an integer, ψ = 1 as the paper
//     says, even though the helper set is then empty (|H| = 0 < max n): every
//     class then runs as its own FCFS queue on A_i through rule 3. Integrality
//     and ⌊c_i⌋ at x = 1 are judged with a relative tolerance of 1e-9, so
//     that floating-point rounding of ϱ_i/ϱ does not lose a block of n_i.
//   - a_i = 0 (B §3.2 "one can always redirect class-i jobs to the helpers"):
//     those jobs are always sent to the helpers and never pulled back. A class
//     that can run neither on A_i (a_i = 0) nor on the helpers (n_i > |H|) is
//     an Init error rather than a silently unstable run.
//   - ϱ_i is computed from the workload's class shares and service means
//     (Remark 1: the scheduler knows the relative demands, not λ). For a
//     replayed trace these are the trace's own class counts and mean sizes.
//   - π (parameter "pi"): "fcfs" (the paper's choice in all its experiments,
//     B §6) serves helper-set jobs in arrival order with head-of-line
//     blocking on the helpers; "first-fit" (B §2, First-Fit Back-Filling)
//     starts, in arrival order, every helper-set job that fits in the idle
//     helpers. "Arrival order" is the jobs' original arrival order.
//   - A job that arrives when A_i is full is "sent to the helper set" even
//     if π cannot start it at once; it may later be pulled back to A_i.
//
// # Small systems: when BS-FCFS is worse than FCFS
//
// B's results are asymptotic, and eq. (2) can be harsh at small k. On the
// Fig. 1–2 family (needs f·(1, 2, 4, 8)) c_2 = 4c_4 and c_3 = 2c_4, so the
// floors of classes 2–4 drop at the same ψ = ⌊c_4⌋/c_4: at k = 32 the
// partition is a = (5, 6, 4, 0), |H| = 17 (ψ = 0.928; class 4 has no A_4);
// at k = 128 and 256 about 30% of the servers are helpers and the one-slot
// A_4 is overloaded on its own above ρ = 0.46; at k ≥ 2048, |H|/k ≤ 6%
// (TestPartitionHalfinWhitt). Where the A system cannot carry its classes,
// the helpers carry a large share of the work, and π = FCFS's head-of-line
// blocking among needs f … 8f on |H| servers makes BS-FCFS worse than FCFS,
// even unstable (k = 32, ρ = 0.876: 77 ± 6 against 17.6 ± 0.7 over 20 × 10^6
// arrivals, and growing with the run length; k = 256, ρ = 0.95: 382 ± 76
// against 23.7 ± 1.4). This follows from B's definitions, so it is kept; π =
// first-fit avoids it (5.2 and 7.9 at those points). Where |H| is small —
// k = 2048 at eq. (8b)'s load 0.938, k = 16384 at ρ = 0.95 — BS-FCFS is far
// below FCFS as B reports (TestPaperRegimes). The same mechanism makes
// BS-FCFS no better than FCFS on B's SDSC SP2 and KIT FH2 models (Tables 2–3)
// at k = 512 and 1024: B's partition leaves 69–94 helpers, about one
// largest job (need 64), for the 20–35% of jobs served there.
//
// # Counters
//
//   - p_helper: P_H, the fraction of measured arrivals (those arriving in the
//     measurement window) that were sent to the helper set on arrival (rule
//     1: A_i full) — the "routed to the helper set" of B §4.3–4.4.
//   - p_helper_served: the fraction of measured arrivals that were served by
//     the helpers, i.e. P_H minus the jobs pulled back to A_i. This is the
//     quantity that B Corollary 1 / eq. (16) bounds by Σ_i α_i E_{s_i}(λα_i d_i)
//     (a pulled-back job never uses a helper).
//   - helpers (|H|) and psi (ψ).
//
// The queueing probability P(wait > 0) of B §3.4 is measured by the engine
// (Result.Overall.PWait, per class in Result.Classes).
//
// # Cost
//
// An arrival costs O(1). A completion on A_i without a waiting class-i job
// costs O(1); a helper completion or a pull-back costs O(C) per job started
// (the oldest waiting job across C per-class FIFOs; C = number of classes).
package balanced

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family.
var Policies = []sdk.Spec{{
	Name: "balanced-splitting",
	Doc: "Balanced Splitting BS-π (TPDS §3.2–3.3): a static partition of the servers into per-class sets A_i " +
		"in proportion to the class demands plus a helper set; arrivals start on A_i if it has room, else go to the " +
		"helpers, scheduled by π (fcfs or first-fit); completions on A_i pull back the oldest waiting class-i job.",
	New: func() sdk.Policy { return &BalancedSplitting{pi: PiFCFS} },
}}

// Values of the "pi" parameter.
const (
	PiFCFS     = "fcfs"
	PiFirstFit = "first-fit"
)

// Job.Tag bits.
const (
	onA      = 1 // running on its class's A_i
	onH      = 2 // running on the helpers
	measured = 4 // arrived in the measurement window
)

// BalancedSplitting is BS-π. Configure it (or leave π = FCFS, the default of
// a zero-configured instance made by the Spec), then run it.
type BalancedSplitting struct {
	pi       string
	firstFit bool
	fixedPsi float64 // parameter psi: 0 = automatic (B eq. (2)), else ψ in (0, 1]

	// Partition, fixed by Init.
	capA    []int // a_i
	helpers int   // |H|
	psi     float64

	// State.
	usedA []int // busy servers in A_i
	usedH int   // busy helpers
	q     sdk.ClassQueues

	// Counters over measured arrivals.
	nArr, nRouted, nServedH int64
}

// Params is the parameter schema: the auxiliary policy π and the reservation
// factor ψ. ψ's range is checked by Configure rather than by schema bounds
// so that the error names the whole valid range, (0, 1] or 0.
func (p *BalancedSplitting) Params() []sdk.Param {
	return []sdk.Param{{
		Name: "pi", Type: sdk.String, Default: PiFCFS, Enum: []string{PiFCFS, PiFirstFit},
		Doc: "auxiliary non-preemptive policy on the helper set: fcfs (the paper's experiments) or first-fit (backfilling)",
	}, {
		Name: "psi", Type: sdk.Float, Default: 0.0,
		Doc: "reservation factor ψ of B eq. (2), a_i = ⌊ψ (k/n_i) ϱ_i/ϱ⌋ n_i: 0 (default) = the paper's automatic " +
			"choice (1 if every (k/n_i) ϱ_i/ϱ is an integer, else the largest ψ ≤ 1 leaving helpers for the largest need); " +
			"otherwise a fixed ψ in (0, 1]",
	}}
}

// Configure sets π and ψ.
func (p *BalancedSplitting) Configure(v sdk.Values) error {
	switch pi := v.String("pi"); pi {
	case PiFCFS, PiFirstFit:
		p.pi = pi
	default:
		return fmt.Errorf("pi: unknown auxiliary policy %q", pi)
	}
	psi := v.Float("psi")
	if math.IsNaN(psi) || psi < 0 || psi > 1 {
		return fmt.Errorf("psi: must be in (0, 1], or 0 for the automatic choice of B eq. (2); got %v", psi)
	}
	p.fixedPsi = psi
	return nil
}

// PartitionPsi is Partition with a fixed ψ in (0, 1]: a_i = ⌊ψ c_i⌋ n_i,
// c_i = (k/n_i)(ϱ_i/ϱ), with the same 1e-9 relative tolerance on the floor
// as Partition uses at ψ = 1 (so that rounding of ϱ_i/ϱ does not lose a
// block of n_i). It returns a_i and |H|.
func PartitionPsi(k int, needs []int, demand []float64, psi float64) (a []int, helpers int) {
	a = make([]int, len(needs))
	var total float64
	for _, d := range demand {
		total += d
	}
	used := 0
	if total > 0 {
		for i, n := range needs {
			y := psi * float64(k) / float64(n) * demand[i] / total
			a[i] = int(math.Floor(y+1e-9*max(1, y))) * n
			used += a[i]
		}
	}
	return a, k - used
}

// Partition computes the sizes a_i of the per-class server sets, the number
// of helpers and ψ for k servers, class needs n_i and relative demands ϱ_i
// (B eq. (2); see the package documentation for the choices made).
func Partition(k int, needs []int, demand []float64) (a []int, helpers int, psi float64) {
	a = make([]int, len(needs))
	var total float64
	maxNeed := 0
	for i, n := range needs {
		total += demand[i]
		maxNeed = max(maxNeed, n)
	}
	if !(total > 0) {
		return a, k, 0
	}
	c := make([]float64, len(needs))
	integral := true
	for i, n := range needs {
		c[i] = float64(k) / float64(n) * demand[i] / total
		if math.Abs(c[i]-math.Round(c[i])) > 1e-9*max(1, c[i]) {
			integral = false
		}
	}
	sum := func(x float64, tol bool) int {
		s := 0
		for i, n := range needs {
			y := x * c[i]
			if tol {
				y += 1e-9 * max(1, y)
			}
			s += int(math.Floor(y)) * n
		}
		return s
	}
	limit := k - maxNeed
	switch {
	case integral:
		psi = 1
		for i, n := range needs {
			a[i] = int(math.Round(c[i])) * n
		}
	case sum(1, true) <= limit:
		psi = 1
		for i, n := range needs {
			a[i] = int(math.Floor(c[i]+1e-9*max(1, c[i]))) * n
		}
	default:
		// g(x) = Σ⌊x c_i⌋ n_i is a non-decreasing right-continuous step
		// function with g(0) = 0 <= limit < g(1): bisect for its first jump
		// above limit, keeping lo feasible and hi infeasible.
		lo, hi := 0.0, 1.0
		for range 200 {
			mid := lo + (hi-lo)/2
			if mid <= lo || mid >= hi {
				break
			}
			if sum(mid, false) <= limit {
				lo = mid
			} else {
				hi = mid
			}
		}
		psi = hi
		for i, n := range needs {
			a[i] = int(math.Floor(lo*c[i])) * n
		}
	}
	used := 0
	for _, x := range a {
		used += x
	}
	return a, k - used, psi
}

// Init computes the partition from the workload's class demands and resets
// the state.
func (p *BalancedSplitting) Init(s *sdk.System) error {
	if p.pi == "" {
		p.pi = PiFCFS
	}
	p.firstFit = p.pi == PiFirstFit
	cls := s.Classes()
	var shares float64
	for _, c := range cls {
		shares += c.Share
	}
	needs := make([]int, len(cls))
	demand := make([]float64, len(cls))
	for i, c := range cls {
		needs[i] = c.Need
		if shares > 0 {
			demand[i] = c.Share / shares * c.Service.Mean() * float64(c.Need)
		}
	}
	if p.fixedPsi > 0 {
		p.psi = p.fixedPsi
		p.capA, p.helpers = PartitionPsi(s.Servers(), needs, demand, p.psi)
	} else {
		p.capA, p.helpers, p.psi = Partition(s.Servers(), needs, demand)
	}
	for i, c := range cls {
		if p.capA[i] == 0 && c.Need > p.helpers {
			return fmt.Errorf("balanced-splitting: class %d (need %d) gets no dedicated servers (a_i = 0) and does not fit in the %d helpers", i, c.Need, p.helpers)
		}
	}
	if len(p.usedA) != len(cls) {
		p.usedA = make([]int, len(cls))
	}
	clear(p.usedA)
	p.usedH = 0
	p.q.Reset(len(cls))
	p.nArr, p.nRouted, p.nServedH = 0, 0, 0
	return nil
}

// Arrive applies rule 1: start on A_i if it has room, else send the job to
// the helper set, where π may start it at once.
func (p *BalancedSplitting) Arrive(s *sdk.System, j *sdk.Job) {
	i, n := j.Class(), j.Need()
	if s.Measuring() {
		p.nArr++
		j.Tag = measured
	}
	if p.usedA[i]+n <= p.capA[i] {
		p.usedA[i] += n
		j.Tag |= onA
		s.Start(j)
		return
	}
	if j.Tag&measured != 0 {
		p.nRouted++
	}
	// Both π keep the invariant that no waiting helper-set job can start
	// (FCFS: the head does not fit; First-Fit: none fits). Under FCFS a new
	// job behind a non-empty queue cannot start; otherwise it starts iff it
	// fits in the idle helpers.
	if (p.firstFit || p.q.Len() == 0) && n <= p.helpers-p.usedH {
		p.startH(s, j)
		return
	}
	p.q.Push(j)
}

// Complete releases the job's servers; a completion on A_i pulls back the
// oldest waiting class-i job (rule 3), a helper completion lets π start jobs.
func (p *BalancedSplitting) Complete(s *sdk.System, j *sdk.Job) {
	i, n := j.Class(), j.Need()
	if j.Tag&onA != 0 {
		p.usedA[i] -= n
		h := p.q.Pop(i)
		if h == nil {
			return
		}
		p.usedA[i] += n
		h.Tag |= onA
		s.Start(h)
		// Removing a waiting job frees no helper, so First-Fit's invariant
		// holds; under FCFS it may have been the blocking head.
		if !p.firstFit {
			p.fillH(s)
		}
		return
	}
	p.usedH -= n
	p.fillH(s)
}

func (p *BalancedSplitting) startH(s *sdk.System, j *sdk.Job) {
	p.usedH += j.Need()
	j.Tag |= onH
	if j.Tag&measured != 0 {
		p.nServedH++
	}
	s.Start(j)
}

// fillH runs π on the helpers.
func (p *BalancedSplitting) fillH(s *sdk.System) {
	for p.q.Len() > 0 {
		free := p.helpers - p.usedH
		var c int
		if p.firstFit {
			c = p.q.Oldest(free) // oldest waiting job that fits
		} else if c = p.q.Oldest(math.MaxInt); p.q.Q[c].Front().Need() > free {
			c = -1 // head-of-line blocking
		}
		if c < 0 {
			return
		}
		p.startH(s, p.q.Pop(c))
	}
}

// Counters reports P_H and the partition (see the package documentation).
// Cycles counts the measured jobs served on the helper servers: the rare
// events whose frequency Balanced Splitting's performance turns on
// (sdk.CycleReporter).
func (p *BalancedSplitting) Cycles() (string, int64) { return "helper_jobs", p.nServedH }

// DescribeCounters labels the counters in B's terms (sdk.CounterDescriber).
func (p *BalancedSplitting) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{
		{Name: "p_helper", Label: "arrivals routed to helpers P_H", Kind: sdk.KindFraction,
			Doc: "fraction of measured arrivals sent to the helper set on arrival"},
		{Name: "p_helper_served", Label: "arrivals served by helpers", Kind: sdk.KindFraction,
			Doc: "fraction of measured arrivals served by the helpers (P_H less those pulled back)"},
		{Name: "helpers", Label: "helper servers", Kind: sdk.KindCount},
		{Name: "psi", Label: "partition parameter ψ"},
	}
}

func (p *BalancedSplitting) Counters() []sdk.Counter {
	var ph, phs float64
	if p.nArr > 0 {
		ph = float64(p.nRouted) / float64(p.nArr)
		phs = float64(p.nServedH) / float64(p.nArr)
	}
	return []sdk.Counter{
		{Name: "p_helper", Value: ph},
		{Name: "p_helper_served", Value: phs},
		{Name: "helpers", Value: float64(p.helpers)},
		{Name: "psi", Value: p.psi},
	}
}

// Layout returns the partition of the last Init: a_i per class, |H| and ψ.
func (p *BalancedSplitting) Layout() (a []int, helpers int, psi float64) {
	return append([]int(nil), p.capA...), p.helpers, p.psi
}
