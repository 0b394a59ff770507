// Package serverfilling is the ServerFilling family of preemptive-resume
// multiserver-job policies: ServerFilling (S §6, B §2, Q App. D),
// ServerFilling-SRPT (S §3.2), ServerFilling-Gittins (S §5.1), and the
// DivisorFilling variants of each (S App. C).
//
// Every policy of the family is an ordering of the jobs plus a packing
// procedure applied to a prefix M of that ordering:
//
//   - ordering: arrival order (ServerFilling, DivisorFilling), remaining
//     size need × remaining duration / k (…-SRPT), or Gittins rank (…-Gittins);
//   - ServerFilling procedure (S §3.2): M is the shortest prefix whose total
//     need is at least k (all jobs if there is none); serve the jobs of M in
//     descending order of need, ties by the ordering, until the next one does
//     not fit (parameter packing, see Packing: "stop" there, the papers'
//     text and the default, or "skip" it and keep packing);
//   - DivisorFilling procedure (S App. C.1): M is the first k jobs (all if
//     fewer); the three-case recursion picks the jobs to serve.
//
// Common choices, documented once here:
//   - Ties in the ordering (equal remaining sizes, equal Gittins ranks; S
//     says "arbitrarily") are broken by a total rule: a job whose key is
//     moving (running, SRPT or a Gittins rank that changes with age) first,
//     the faster first among those (SRPT with crossings), then by the
//     instant fixed while it runs that its key is computed from, then by
//     arrival order (srptfastorder.go, engine 0.5.0; constant keys: arrival
//     order only).
//   - A decision is taken at every arrival and completion with every key
//     evaluated exactly at that instant (remaining size from the engine,
//     attained service tracked by the policy). The SRPT variants also decide
//     when remaining sizes cross in a way that can change the choice
//     (parameter crossings); the Gittins variants do not (see Policy).
//   - Preemptions are taken before starts within a decision.
//
// Performance, ServerFilling under a static order (arrival order, and the
// Gittins order when every class's rank is constant, as with exponential
// durations): O(C) per event at most (C classes; a decision visits only
// the occupied need buckets from the first whose count changed, and stops
// where the servers left are as before) plus O(1) per start, preemption
// and job entering or leaving M, independent of the number of jobs in
// system: linked lists per key group and per (group, need) cell, with a
// cursor per cell on the first unserved job (static.go). Under arrival
// order (policy serverfilling) the plain path (plain.go) specialises that
// further: the jobs behind M wait in a FIFO untouched until they enter M, an
// arrival behind a full M is one push, and a decision visits only the need
// buckets occupied in M. The decisions are exactly those of the general
// path below (TestEquivalentToReference against a frozen copy of it,
// TestShortcutsExact, TestPlainPathExact, TestStaticPathExact).
//
// Performance, ServerFilling-SRPT, and ServerFilling-Gittins when no
// class's rank rises with age (deterministic, uniform, rank tables that
// never rise, mixed with constant ranks), when no class needs more than
// k/2 servers: O(C · log n) per event plus O(log n) per start, preemption
// and job entering or leaving M (srptfast.go). With a wider class a
// decision moves many jobs at once and the treaps cost more per job moved
// than the general path below (measured, see initSRPT): ServerFilling-SRPT
// then keeps each need bucket as one slice, running jobs then waiting ones,
// where a move is a shift of the seam between them, O(1) when the job sits
// at its place, and an arrival or completion a binary search and a copy of
// the bucket's jobs behind it (srptwide.go); ServerFilling-Gittins of ranks
// that are not constant takes the general path. Within
// one need all running jobs lose remaining size at the same rate (within one class, all running jobs age at the same rate
// under one rank function), so they keep their order and, keys never
// rising, stay ahead of the waiting jobs, whose keys are frozen; M is then
// the running jobs plus a prefix of each need's waiting jobs, and a
// decision only moves jobs at those seams, found with order-statistics
// treaps. The decisions are exactly those of the general path below, by
// construction: both use the total order of srptfastorder.go and the same
// crossing-timer candidates (TestFastPathEquivalent, TestSRPTPathEquivalent
// and TestGittinsPathEquivalent over random and structured workloads, with
// ties, crossings on and off, both packings; TestEquivalentToReference
// against the frozen pre-rework implementation brought to that order).
//
// Performance, DivisorFilling under arrival order (policy divisorfilling):
// O(C) per recursion level plus O(C · log k) per "first kk jobs" it takes,
// O(C² · log k) for backfill, and O(1) per start, preemption and job
// entering M (divisorfast.go): M is kept per need bucket as on the plain
// path, and the recursion works on per-bucket counts, cutting a set of
// buckets at its kk-th job by one descent of a Fenwick tree over M's
// positions. Exactly the general path's decisions
// (TestDivisorFastPathExact).
//
// Performance, ServerFilling-Gittins when some class's rank rises with age
// (hyperexponential, Weibull of shape < 1, mixed with constant and falling
// ranks), under the same k/2 rule and from k = 128 servers up (below, the
// general path is faster; see initRise): O(C² · log n) per event plus O(log n)
// per start and preemption (gittinsrise.go). A rising rank moves running
// jobs backwards past waiting ones between events, so M cannot be repaired
// at its seams; it is found by search instead: each class's running jobs
// keep their order (youngest first, the computed rank being monotone in
// age) and each need's waiting jobs theirs, and a simultaneous descent of
// those 2C treaps finds M's last job and each need's served prefix;
// only the jobs that start or stop are touched. Same decisions as the
// general path (TestRisePathEquivalent, random mixes with ties and k = 2048).
//
// Performance, DivisorFilling-SRPT when k = 2^a·3^b (no level of the
// recursion is Case 3, so no crossing timer is ever armed), and
// DivisorFilling-Gittins under the same k with no rank rising with age
// (see initDivSRPT; with two classes of one need, a bucket per class,
// classBuckets): O(C · log n) per recursion
// level plus O(log n) per need's run of starts or preemptions and O(1) per
// job in it
// (divisorseams.go), and O(log n) per job entering or leaving M, when each
// level cuts at most one need; O(C² · log² n) per level that cuts a mix of
// needs (divisorsrpt.go): M is kept on the SRPT path's per-need treaps
// (srptfast.go) and repaired at its ends, and the recursion works on
// per-bucket counts, cutting a set of buckets at its kk-th job by a
// selection across their sequences. Exactly the general path's decisions
// (TestDivisorSRPTPathExact, TestDivisorGittinsPathExact).
//
// Performance, the other members (Gittins with a rank table that is not
// monotone, DivisorFilling-SRPT and -Gittins when k has a prime factor ≥ 5,
// DivisorFilling-Gittins with a rank that rises with age, the Gittins
// paths above, and DivisorFilling-SRPT, with a
// class of need above k/2, and rising ranks below k = 128): the jobs outside M are all waiting, and a waiting job's key
// does not change, so they stay in a heap (a FIFO for arrival order) keyed
// by (key, arrival index). M has at most k jobs; a decision refreshes the
// keys of M's running jobs, re-sorts M by insertion sort (it was sorted at
// the previous decision and only running jobs moved, so this costs |M|
// plus the few inversions), merges it with the heap until the stopping
// rule, and runs the procedure on M alone: O(|M| + #needs + log n) per
// event (times the recursion depth, at most log2 k, for DivisorFilling),
// never a pass over the whole queue. An arrival behind a full M, and
// arrivals and completions while every job is served, cost O(1) plus a
// heap push or an O(|M|) slice deletion (see Policy). The O(|M|) term is up
// to k jobs (at k = 2048 with need-1 jobs, thousands of operations per
// event). Why it stays for these (issue #18): a rank table that is not
// monotone (lognormal, bounded Pareto) does not even keep the order among
// the running jobs of one class; DivisorFilling's recursion takes "the
// first kk jobs" of need-defined subsets of M at every level, which under
// arrival order is one descent over positions that never reorder, and under
// SRPT a selection across per-need sequences whose relative order moves
// (done for k = 2^a·3^b; with a prime factor ≥ 5 Case 3's extractions also
// arm crossing timers found today by a pass over M); under rising Gittins
// ranks a bucket's own order moves.
// What O(C · log n) would take for each is written out in gittins.go and
// divisor.go.
package serverfilling

import (
	"fmt"
	"math"
	"slices"

	"github.com/msjfarm/msjfarm/sdk"
)

// Policies lists the policies of this family. The choices common to all
// are in the package comment, the rest in Policy's.
var Policies = []sdk.Spec{
	{
		Name: "serverfilling",
		Doc: "ServerFilling (S §6, B §2, Q App. D): preemptive-resume; M = shortest arrival-order prefix with " +
			"total need ≥ k (all jobs if none); serve M largest need first (ties by arrival) until the next " +
			"job does not fit (B §2: with needs not powers of two, servers may then stay idle). packing " +
			"(default stop): stop at that job (S §3.2, B §2) or skip it and keep packing smaller jobs of M.",
		New: func() sdk.Policy { return New(ArrivalOrder, ServerFilling) },
	},
	{
		Name: "serverfilling-srpt",
		Doc: "ServerFilling-SRPT (S §3.2): ServerFilling on the order by remaining size need × remaining " +
			"duration / k (ties by arrival); size-aware. crossings (default true): also decide when remaining " +
			"sizes cross so as to change the choice (S's continuous-time policy); false: arrivals and completions only. " +
			"packing as for serverfilling.",
		New: func() sdk.Policy { return New(SRPTOrder, ServerFilling) },
	},
	{
		Name: "serverfilling-gittins",
		Doc: "ServerFilling-Gittins (S §5.1): ServerFilling on the order by Gittins rank (need/k × the rank of " +
			"the job's class duration distribution at its attained service; closed forms for exp, det, H2, " +
			"uniform, Weibull ≤ 1, tables otherwise); re-evaluated at arrivals and completions. packing as for serverfilling.",
		New: func() sdk.Policy { return New(GittinsOrder, ServerFilling) },
	},
	{
		Name: "divisorfilling",
		Doc: "DivisorFilling (S App. C, its reference [13]): the three-case DivisorFilling recursion on the " +
			"first k jobs in arrival order; needs must divide k. backfill (default true): fill servers the " +
			"recursion leaves idle first-fit from those k jobs; false: the literal recursion.",
		New: func() sdk.Policy { return New(ArrivalOrder, DivisorFilling) },
	},
	{
		Name: "divisorfilling-srpt",
		Doc: "DivisorFilling-SRPT (S App. C): the DivisorFilling recursion on the k jobs of least remaining " +
			"size; needs must divide k; size-aware. Parameters crossings and backfill as above.",
		New: func() sdk.Policy { return New(SRPTOrder, DivisorFilling) },
	},
	{
		Name: "divisorfilling-gittins",
		Doc: "DivisorFilling-Gittins (S App. C, §5.1): the DivisorFilling recursion on the k jobs of least " +
			"Gittins rank; needs must divide k. Parameter backfill as above.",
		New: func() sdk.Policy { return New(GittinsOrder, DivisorFilling) },
	},
}

// Order is how a policy ranks jobs (lower first).
type Order uint8

// Orderings.
const (
	// ArrivalOrder ranks by arrival index.
	ArrivalOrder Order = iota
	// SRPTOrder ranks by remaining size need × remaining duration / k (S §3.1).
	SRPTOrder
	// GittinsOrder ranks by Gittins rank (S §5.1; see rankFn).
	GittinsOrder
)

// Procedure is how a policy packs the candidate set M onto the servers.
type Procedure uint8

// Packing procedures.
const (
	// ServerFilling: S §3.2.
	ServerFilling Procedure = iota
	// DivisorFilling: S App. C.1.
	DivisorFilling
)

// Packing is what ServerFilling does at the first job of M, in its need
// order, that does not fit in the servers left (parameter packing). The two
// readings differ only when class needs do not form a divisibility chain
// (each need dividing every larger one, as powers of two do): with such
// needs the servers left when a need-n job is reached are a multiple of n,
// so the first job that does not fit finds no servers left at all.
// Divisibility of k alone is not enough: with k = 12 and needs 6, 4, 1, M
// = {4, 4, 1, 6} (arrival order) serves 6 and one 4 under both readings,
// and the need-1 job only under PackSkip.
type Packing uint8

// Packing readings.
const (
	// PackStop ("stop", the default): placement ends at that job, so the
	// jobs after it in need order wait even if they would fit. This is the
	// literal text of S §3.2 ("placing jobs into service in descending order
	// of server need, until no servers remain or the next job cannot fit")
	// and of B §2, which spells the consequence out ("a job j in M may not
	// be packed in even when idle servers exist, and in this case the
	// scheduling is completed with all the jobs arrived later than j blocked
	// and some servers unused"). It is the default because both papers
	// define the policy so and because it is what this package has always
	// done, so results stay bit-identical.
	PackStop Packing = iota
	// PackSkip ("skip"): the job is passed over and packing goes on down
	// the need order, serving each later job of M that still fits (first
	// fit over M in the same order). Neither paper says this; it is the
	// other reading in use among implementations, and it never serves
	// fewer servers than PackStop on the same M. M itself (the prefix) is
	// the same under both readings.
	PackSkip
)

// Values of the "packing" parameter.
const (
	PackingStop = "stop"
	PackingSkip = "skip"
)

// Policy is one member of the family (see the package comment).
//
// SRPT orderings: what is kept ordered, and why it is correct. Remaining
// size r = need × remaining duration / k falls at rate need/k while a job
// runs and is frozen while it waits. So running jobs only ever move forward
// past waiting ones, but running jobs of different needs move at different
// rates and can swap (a wide job with a short remaining duration overtakes
// a narrow one): the order by remaining size among running jobs is NOT
// preserved, only the order among running jobs of one need. The jobs outside
// M are all waiting (every running job is in M), their keys are frozen, and
// every job of M is ahead of them at a decision and only moves forward
// after it; hence the policy keeps exactly those in a static heap on
// (remaining size, arrival index), and at each decision recomputes the keys
// of M's running jobs (keyAt: need/k × (fin − now), fin fixed while the
// job runs, see srptfastorder.go), re-sorts M and merges it with the heap. That is the general path, which
// DivisorFilling-SRPT takes when k has a prime factor ≥ 5; ServerFilling-SRPT,
// and DivisorFilling-SRPT with k = 2^a·3^b (divisorsrpt.go), keep the finer
// invariant of srptfast.go (per need, the running jobs' order) and never pass over M.
//
// Crossings (parameter crossings, default on): S's policy is defined at
// every instant, so a swap inside M between events can change what it
// serves. With crossings on the policy is that continuous-time policy
// exactly: after each decision it computes the first instant at which the
// choice can change and asks the engine for a timer then.
//   - ServerFilling: the choice depends only on M as a set (within one need
//     the served jobs are the first in the ordering, and running jobs of one
//     need move together, ahead of waiting ones). A job x of M can leave M
//     only if the jobs overtaking it carry need ≥ k − (need ahead of x);
//     since the jobs behind x in M sum to Σ(M) − (need ahead of x) − need_x,
//     and everything in M but the boundary job b (the last, whose need takes
//     the total to ≥ k) sums to less than k, x leaves only if b overtakes it
//     and need_x ≤ Σ(M) − k. Leaving changes the choice only if x is served,
//     or is the first job that did not fit while servers are idle. The timer
//     is the earliest such overtaking, (r_b − r_x)/(rate_b − rate_x) — none
//     when Σ(M) = k, the usual case in the power-of-two setting. Among the
//     served jobs of one need (one rate) the last, of largest fin, is
//     overtaken first, so it is the only candidate of its need.
//   - DivisorFilling: M, the k smallest, cannot change between events (the
//     rest are waiting and behind, M's keys only fall), and by the same
//     argument neither can the subproblems of Cases 1 and 2 and of Case 3's
//     Mp branch, nor which jobs of one need they serve. Only Case 3's
//     extraction takes "the k/p smallest" across needs of a set that mixes
//     served and unserved jobs, so only after an extraction is a timer armed,
//     at the earliest crossing of adjacent jobs of M.
//
// TestCrossingTimersSuffice checks both against a variant that decides at
// every crossing of any two jobs of M. Crossings are Zeno-free: a job a
// crossing preempts waits with a frozen key and only running jobs (which
// move forward) can pass it. A timer fires at the first instant (crossAt)
// at which the recomputed keys already put the faster job ahead (at equal
// keys the faster first, the order just after the instant), so the decision
// then sees the crossing and never asks for its own instant again; no
// tolerance is involved (srptfastorder.go says why). With crossings off the policy decides at arrivals
// and completions only, keys exact at those instants.
//
// Gittins orderings take no crossing timers. A Gittins rank can rise with
// attained service (for a hyperexponential the rank is 1/hazard, rising for
// ever: the Gittins policy is then foreground–background, which shares
// servers between equally old jobs in infinitely fast alternation); whole
// server allocations cannot follow that, so the Gittins variants re-evaluate
// every rank exactly at every arrival and completion and hold the schedule
// in between. Ranks are recomputed only for running jobs of classes whose
// rank is not constant (a waiting job's rank is frozen, and an exponential
// class's rank never changes). For exponential classes this is exact; with
// deterministic durations it equals SRPT with crossings off (B §2's remark;
// TestGittinsDeterministicIsSRPT).
//
// Packing (parameter packing) applies to the ServerFilling procedure only.
// DivisorFilling has no such parameter: its Case 1 already says what follows
// the first job that does not fit (the need-1 jobs of M, App. C.1.1), the
// recursion is only defined for needs dividing k, and the first-fit reading
// of its remainder is the backfill parameter below.
//
// DivisorFilling and backfill (parameter backfill, default on). As defined
// in S App. C.1 the recursion may serve nothing while servers are idle when
// fewer than k jobs are present (k = 12 and one job of need 1: not Case 1
// since 1 < 12/6, and Case 2 recurses on the empty set of even-need jobs),
// and jobs can be stranded until the next arrival. With backfill on, once
// the recursion has chosen, the idle servers are filled first-fit from M in
// ordering order. This keeps both of S's guarantees: the served jobs are
// still a subset of M, and with at least k jobs present the recursion
// already fills all k servers (Theorem C.1), so backfill never acts then.
// backfill=false is the literal definition.
//
// Shortcuts (exact; TestShortcutsExact compares traces with and without):
// an arrival whose key is behind every job of a full M (keys that cannot
// rise) changes nothing and costs one heap push; when every job is in M and
// served, an arrival that still fits just starts, and a completion changes
// nothing.
type Policy struct {
	ord       Order
	proc      Procedure
	crossings bool
	backfill  bool
	packing   Packing

	k    int
	invK float64

	slots []slot
	tn    []tnode // the treaps' nodes, by slot (srptfast.go)
	free  []int32
	m     []int32 // the candidate set M, sorted by current key at the last decision
	next  []int32 // scratch for the new M
	sumM  int     // total need of M
	// maxKey is the key of M's last job at the last decision; under orderings
	// whose keys never rise it bounds every key of M since.
	maxKey   float64
	monotone bool
	rest     restQueue

	cls      []classInfo
	nBuckets int
	bneed    []int32 // need of each bucket
	counts   []int32
	starts   []int32 // scratch: jobs to start

	lpf   []int32   // largest prime factor of 0..k
	dfBuf [][]int32 // per recursion depth: the subset recursed on
	dfSub [][]int32 // per recursion depth: Case 3's subproblem
	dfCnt []int32   // scratch: a recursion level's jobs per need bucket (divFill)

	timerAt   float64 // earliest pending timer (Inf if none)
	sameTime  int     // timers fired at the same instant in a row
	lastTimer float64

	timers int64 // crossing timers that fired (counter)

	exhaustive        bool // tests: no arrival/completion shortcuts, a full decision every time
	allPairs          bool // tests: a crossing timer for every approaching pair of M
	general           bool // tests: the general path even where the SRPT path applies
	forceFast         bool // tests: the SRPT path even with a need above k/2 (see initSRPT)
	forceClassBuckets bool // benchmarks: the divisor path with a bucket per class past maxClassBuckets
	forceTreap        bool // tests: that path on its treaps even where srptwide.go's slices apply
	noSFGate          bool // tests: DivisorFilling on its own paths even where it runs as ServerFilling (divAsServerFilling)

	dfExtracted bool  // the last DivisorFilling choice used a Case 3 extraction
	stopper     int32 // the last ServerFilling choice: first job that did not fit (PackStop; -1: none)
	idle        int   // servers it left idle

	pl *plain // the plain path (plain.go): arrival order; nil otherwise
	df *dfast // the DivisorFilling fast path (divisorfast.go): arrival order; nil otherwise
	ds *dsrpt // the DivisorFilling-SRPT path (divisorsrpt.go, with srptfast.go's state); nil otherwise

	// static path (static.go): ServerFilling under keys that never change.
	static bool
	groups []group
	cells  []cell
	gLast  int32      // group of M's last job (-1: M empty)
	mLast  int32      // M's last job (-1: M empty)
	stl    []stLink   // per slot: its job and its list links
	stB    []stBucket // per need bucket
	stAct  []uint64   // buckets with jobs in M
	stLo   int32      // first and last bucket whose count in M changed since the last decision
	stHi   int32

	// SRPT path (srptfast.go): ServerFilling-SRPT in O(C · log n).
	fastSRPT                     bool
	wide                         bool     // its buckets as slices (srptwide.go): SRPT with a class wider than k/2
	mergeBuf, preEnds, startEnds []int32  // scratch: mergeBucketRuns and its runs' ends
	live                         []uint64 // wide path: a bit per need bucket holding jobs
	occ                          []int32  // the need buckets a decision's passes visit (visit)
	occStale                     bool     // wide path: live changed since occ was listed
	wLast                        int32    // wide path: M's last job at the last repair pass (lastMWide)
	wSK                          float64  // and the key of the latest other candidate (−Inf: none): crossNone's bound
	crossBuf                     []int32  // wide path: the buckets crossCands leaves to the crossing timer's pass
	sb                           []sbucket
	rroot                        []int32 // treap of running jobs per run group (see runGroup)
	pend                         []int32 // running jobs not yet placed in their treap (flushPending)
	nOut                         int     // waiting jobs outside M
	seed                         uint32  // treap priorities
	evicted                      []int32 // scratch: running jobs that left M
	preRuns, startRuns, partRuns []run   // scratch: decideStatic's runs of moves (the first two as long as the cells)

	// runs: on ServerFilling's treap path under SRPT, each bucket's
	// running jobs as blocks instead of its running treap (srptrun.go);
	// else nil.
	runs []runSet
	tstk []tstkEntry // scratch: tBuild's stack

	// jobs[i] is slots[i].j, kept with it (alloc, release): the table
	// engineCallsRuns hands the engine with a decision's lists of slot
	// indices (System.PreemptJobsIn, StartJobsIn).
	jobs []*sdk.Job

	gr *riseState // the rising-rank path (gittinsrise.go); nil otherwise

	take    []int32 // scratch: jobs served per need bucket (see takes)
	lastRun []int32 // scratch: per need bucket, its last running job (armCrossing)
	rem     int     // servers takes left idle
	cut     int32   // the first bucket takes did not serve whole

	// carry: on the runSets' and wide paths, M's last job carried over to
	// the next decision (srptcarry.go). Last, so that no other field moves.
	carry carry

	// wPhi2 and wNew: on the wide path, a bound on the keys outside M but
	// the least, and the arrival + 1 that is that least job (0: none),
	// for the repair's next addition; wFromWait: the carry's record was
	// made with M's last job waiting (srptw50carry.go).
	wPhi2     float64
	wNew      int32
	wFromWait bool
}

type classInfo struct {
	need   int32
	bucket int32   // index of the class's need in descending order of distinct needs
	scale  float64 // need/k: size per unit of duration
	rank   *rankFn // Gittins only
	rank0  float64 // key of a new job (Gittins)
	group  int32   // static path: key group
	cell   int32   // static path: (key group, need bucket) cell
}

// slot is the policy's record of a job in the system (Job.Idx indexes it).
type slot struct {
	j      *sdk.Job
	id     int64
	key    float64 // current key (frozen while waiting)
	age    float64 // Gittins: attained service while waiting
	since  float64 // time of the last start
	rate   float64 // SRPT with crossings: need/k while running, else 0
	fin    float64 // while running: SRPT, the instant the key reaches 0; Gittins, the instant of age 0 (srptfastorder.go)
	key0   float64 // the key when it last started
	need   int32
	class  int32
	bucket int32 // the class's need bucket (needs in descending order)
	serve  bool  // scratch: chosen by the current decision
	dead   bool  // completed; released at the next decision
	moving bool  // running with a key that moves: SRPT, Gittins of a non-constant rank (setRun, stopRun)
	pend   int32 // 1 + index in Policy.pend (0: not pending)
}

// New returns a policy of the family. The SRPT variants start with
// crossings on; the DivisorFilling variants with backfill on.
func New(o Order, p Procedure) *Policy {
	return &Policy{ord: o, proc: p, crossings: o == SRPTOrder, backfill: true}
}

// Preemption declares preemptive-resume.
func (p *Policy) Preemption() sdk.Preemption { return sdk.PreemptResume }

// SizeAware is true for the SRPT orderings (they read remaining durations).
func (p *Policy) SizeAware() bool { return p.ord == SRPTOrder }

// Params: crossings for the SRPT orderings, backfill for DivisorFilling.
func (p *Policy) Params() []sdk.Param {
	var ps []sdk.Param
	if p.ord == SRPTOrder {
		ps = append(ps, sdk.Param{Name: "crossings", Type: sdk.Bool, Default: true,
			Doc: "also decide when remaining sizes cross in a way that changes the packing (exact continuous-time " +
				"policy); false: decide at arrivals and completions only"})
	}
	if p.proc == ServerFilling {
		ps = append(ps, sdk.Param{Name: "packing", Type: sdk.String, Default: PackingStop, Enum: []string{PackingStop, PackingSkip},
			Doc: "at the first job of M (in need order) that does not fit: stop (S §3.2 and B §2 literally: later " +
				"jobs of M wait) or skip (pass over it and keep packing the smaller jobs of M that fit); the two " +
				"differ only when needs do not form a divisibility chain"})
	}
	if p.proc == DivisorFilling {
		ps = append(ps, sdk.Param{Name: "backfill", Type: sdk.Bool, Default: true,
			Doc: "after the App. C recursion, fill idle servers first-fit from the k candidates " +
				"(false: the literal recursion, which can leave a lone job waiting)"})
	}
	return ps
}

// Configure applies resolved parameters.
func (p *Policy) Configure(v sdk.Values) error {
	if p.ord == SRPTOrder {
		p.crossings = v.Bool("crossings")
	}
	if p.proc == ServerFilling {
		switch v.String("packing") {
		case PackingStop:
			p.packing = PackStop
		case PackingSkip:
			p.packing = PackSkip
		default:
			return fmt.Errorf("packing: must be %s or %s, got %q", PackingStop, PackingSkip, v.String("packing"))
		}
	}
	if p.proc == DivisorFilling {
		p.backfill = v.Bool("backfill")
	}
	return nil
}

// StartMeasuring restarts the counter at the end of the warm-up.
func (p *Policy) StartMeasuring(*sdk.System) { p.timers = 0 }

// DescribeCounters labels the counter (sdk.CounterDescriber).
func (p *Policy) DescribeCounters() []sdk.CounterInfo {
	return []sdk.CounterInfo{{Name: "crossing_decisions", Label: "crossing timers fired", Kind: sdk.KindCount,
		Doc: "crossing timers that fired in the measurement window (SRPT with crossings)"}}
}

// Counters reports the crossing timers that fired in the measurement window
// (SRPT with crossings).
func (p *Policy) Counters() []sdk.Counter {
	if !p.kinetic() {
		return nil
	}
	return []sdk.Counter{{Name: "crossing_decisions", Value: float64(p.timers)}}
}

// Init checks the workload and resets all state.
func (p *Policy) Init(s *sdk.System) error {
	p.k = s.Servers()
	p.invK = 1 / float64(p.k)
	classes := s.Classes()
	p.cls = p.cls[:0]
	needs := map[int]bool{}
	for i, c := range classes {
		if p.proc == DivisorFilling && p.k%c.Need != 0 {
			return fmt.Errorf("divisorfilling: class %d need %d does not divide k = %d (S App. C needs the divisible setting)", i, c.Need, p.k)
		}
		needs[c.Need] = true
		ci := classInfo{need: int32(c.Need), scale: float64(c.Need) * p.invK}
		if p.ord == GittinsOrder {
			f, err := newRankFn(c.Service)
			if err != nil {
				return fmt.Errorf("class %d: %w", i, err)
			}
			ci.rank = f
			ci.rank0 = ci.scale * f.at(0)
		}
		p.cls = append(p.cls, ci)
	}
	// Buckets: distinct needs, largest first.
	p.nBuckets = 0
	for n := p.k; n >= 1; n-- {
		if !needs[n] {
			continue
		}
		for i := range p.cls {
			if int(p.cls[i].need) == n {
				p.cls[i].bucket = int32(p.nBuckets)
			}
		}
		p.nBuckets++
	}
	p.counts = make([]int32, p.nBuckets+1)
	p.dfCnt = make([]int32, p.nBuckets)
	p.take = make([]int32, p.nBuckets)
	p.lastRun = make([]int32, p.nBuckets)

	p.bneed = make([]int32, p.nBuckets)
	for _, c := range p.cls {
		p.bneed[c.bucket] = c.need
	}
	p.monotone = true
	if p.ord == GittinsOrder {
		for _, c := range p.cls {
			p.monotone = p.monotone && c.rank.nonIncreasing
		}
	}
	if p.proc == DivisorFilling {
		p.lpf = largestPrimeFactors(p.k)
	}
	p.initPlain()
	p.initDivFast()
	p.initStatic()
	p.initSRPT()
	p.initRise()
	p.initDivSRPT()
	for i := range p.slots {
		p.slots[i] = slot{}
	}
	p.slots = p.slots[:0]
	clear(p.jobs)
	p.jobs = p.jobs[:0]
	p.free = p.free[:0]
	p.m = p.m[:0]
	p.next = p.next[:0]
	p.sumM = 0
	p.maxKey = math.Inf(-1)
	p.rest.reset(p.ord == ArrivalOrder)
	p.timerAt = math.Inf(1)
	p.sameTime, p.lastTimer = 0, math.Inf(-1)
	p.timers = 0
	return nil
}

func largestPrimeFactors(k int) []int32 {
	lpf := make([]int32, k+1)
	for i := 2; i <= k; i++ {
		if lpf[i] == 0 { // prime
			for j := i; j <= k; j += i {
				lpf[j] = int32(i) // later (larger) primes overwrite
			}
		}
	}
	if k >= 1 {
		lpf[1] = 1
	}
	return lpf
}

func (p *Policy) alloc(j *sdk.Job) int32 {
	var i int32
	if n := len(p.free); n > 0 {
		i = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		p.slots = append(p.slots, slot{})
		p.jobs = append(p.jobs, nil)
		i = int32(len(p.slots) - 1)
	}
	c := &p.cls[j.Class()]
	p.slots[i] = slot{j: j, id: j.ID(), need: c.need, class: int32(j.Class()), bucket: c.bucket}
	p.jobs[i] = j
	j.Idx = int(i)
	return i
}

// release clears slot i, whose job has left, and returns it to alloc.
func (p *Policy) release(i int32) {
	p.slots[i] = slot{}
	p.jobs[i] = nil
	p.free = append(p.free, i)
}

// full reports whether M has reached its stopping rule at the last decision.
func (p *Policy) full() bool {
	if p.proc == ServerFilling {
		return p.sumM >= p.k
	}
	return len(p.m) >= p.k
}

// Arrive records j and re-decides unless j lands behind a full M.
func (p *Policy) Arrive(s *sdk.System, j *sdk.Job) {
	if p.pl != nil {
		p.pl.arrive(s, j)
		return
	}
	if p.df != nil {
		p.df.arrive(s, j)
		return
	}
	if p.static {
		p.arriveStatic(s, j) // no slot: the static path keeps its own (stl)
		return
	}
	i := p.alloc(j)
	sl := &p.slots[i]
	c := &p.cls[sl.class]
	switch p.ord {
	case ArrivalOrder:
		sl.key = float64(sl.id)
	case SRPTOrder:
		sl.key = c.scale * s.Size(j)
	case GittinsOrder:
		sl.key = c.rank0
	}
	if p.fastSRPT {
		p.arriveSRPT(s, i)
		return
	}
	if p.gr != nil {
		p.arriveRise(s, i)
		return
	}
	if p.ds != nil {
		if p.ds.oneK { // arriveDS's first test, a call less per event
			p.arriveOneK(s, i)
		} else {
			p.arriveDS(s, i)
		}
		return
	}
	if p.exhaustive {
		p.rest.push(p, i)
		p.decide(s)
		return
	}
	if p.allServed() && p.sumM+int(sl.need) <= p.k {
		// Every job is in M and the total need, j's included, fits: all are
		// served whatever the order, so j simply starts (M stays unsorted
		// until the next full decision, whose insertion sort places j).
		p.m = append(p.m, i)
		p.sumM += int(sl.need)
		p.maxKey = math.Max(p.maxKey, sl.key)
		p.start(s, sl, s.Now())
		return
	}
	p.rest.push(p, i)
	if p.full() && p.monotone && sl.key > p.maxKey {
		return // behind every job of M, whose keys have not risen: M unchanged
	}
	p.decide(s)
}

// allServed reports whether, at the last decision, every job in the system
// was in M and served (M is every job and its total need fits): then it
// stays so at a completion, and at an arrival that fits.
func (p *Policy) allServed() bool {
	return p.rest.len() == 0 && p.sumM <= p.k && (p.proc == ServerFilling || p.backfill)
}

// Complete drops j and re-decides.
func (p *Policy) Complete(s *sdk.System, j *sdk.Job) {
	if p.pl != nil {
		p.pl.complete(s, j)
		return
	}
	if p.df != nil {
		p.df.complete(s, j)
		return
	}
	i := int32(j.Idx)
	if p.static {
		p.completeStatic(s, i)
		return
	}
	if p.fastSRPT {
		p.completeSRPT(s, i)
		return
	}
	if p.gr != nil {
		p.completeRise(s, i)
		return
	}
	if p.ds != nil {
		if p.ds.oneK { // completeDS's first test, a call less per event
			p.completeOneK(s, i)
		} else {
			p.completeDS(s, i)
		}
		return
	}
	sl := &p.slots[i]
	if p.allServed() && !p.exhaustive { // still all served: nothing to decide
		p.sumM -= int(sl.need)
		k := slices.Index(p.m, i)
		p.m = slices.Delete(p.m, k, k+1)
		p.release(i)
		return
	}
	sl.dead = true
	sl.j = nil
	p.jobs[i] = nil
	p.sumM -= int(sl.need) // a running job is always in M
	p.decide(s)
}

// Timer is a crossing instant (or a superseded one: deciding again is
// harmless).
func (p *Policy) Timer(s *sdk.System, _ int) {
	now := s.Now()
	if now >= p.timerAt {
		p.timerAt = math.Inf(1)
	}
	if now == p.lastTimer {
		p.sameTime++
	} else {
		p.sameTime, p.lastTimer = 0, now
	}
	p.timers++
	if p.fastSRPT {
		p.decideSRPT(s)
		return
	}
	if p.ds != nil {
		p.decideDS(s) // not expected: this path arms no timers
		return
	}
	p.decide(s)
}

// kinetic reports whether the policy follows key crossings between events
// (SRPT ordering with crossings on).
func (p *Policy) kinetic() bool { return p.ord == SRPTOrder && p.crossings }

// decide recomputes M and the served set, and applies the difference.
func (p *Policy) decide(s *sdk.System) {
	now := s.Now()

	// 1–2. Drop completed jobs, refresh the keys of running jobs (keyAt,
	// written out for SRPT) and re-sort M (nearly sorted: insertion sort),
	// in one pass: each job is placed among the ones before it once its own
	// key is fresh, and only those keys are compared. Writes stay at or
	// below the index being read.
	m := p.m
	w := 0
	srpt := p.ord == SRPTOrder
	for _, x := range p.m {
		sl := &p.slots[x]
		if sl.dead {
			p.release(x)
			continue
		}
		if sl.moving {
			if srpt {
				p.refreshSRPT(sl, now)
			} else {
				sl.key = p.keyAt(sl, now)
			}
		}
		b := w
		for b > 0 && p.less(x, m[b-1]) {
			m[b] = m[b-1]
			b--
		}
		m[b] = x
		w++
	}
	m = m[:w]

	// 3. Merge M with the waiting jobs outside it up to the stopping rule,
	// counting M's jobs per need bucket.
	next := p.next[:0]
	cnt := p.counts
	clear(cnt)
	sum, a := 0, 0
	sf := p.proc == ServerFilling
	// M sorted: when its last job precedes the least one outside, all of
	// it does (one comparison instead of one per job; nothing is popped
	// from rest before M is exhausted then).
	allM := len(m) > 0 && p.rest.len() > 0 && p.less(m[len(m)-1], p.rest.top())
	for sf && sum < p.k || !sf && len(next) < p.k {
		var pick int32
		if a < len(m) && (allM || p.rest.len() == 0 || p.less(m[a], p.rest.top())) {
			pick = m[a]
			a++
		} else if p.rest.len() > 0 {
			pick = p.rest.pop(p)
		} else {
			break
		}
		next = append(next, pick)
		sl := &p.slots[pick]
		sum += int(sl.need)
		cnt[sl.bucket]++
	}
	evicted := m[a:]

	// 4. Choose; preempt what is no longer chosen (preemptions all come
	// before starts) and collect what must start.
	starts := p.starts[:0]
	for _, i := range evicted {
		sl := &p.slots[i]
		if sl.j.Running() {
			p.preempt(s, sl, now)
		}
		p.rest.push(p, i)
	}
	if sf {
		starts = p.serverFill(s, next, starts, now)
	} else {
		for _, i := range next {
			p.slots[i].serve = false
		}
		p.dfExtracted = false
		p.divFill(next, p.k, 1, 0)
		if p.backfill {
			p.fillFirstFit(next)
		}
		for _, i := range next {
			sl := &p.slots[i]
			switch run := sl.j.Running(); {
			case run && !sl.serve:
				p.preempt(s, sl, now)
			case !run && sl.serve:
				starts = append(starts, i)
			}
		}
	}

	// 5. Start.
	for _, i := range starts {
		p.start(s, &p.slots[i], now)
	}
	p.starts = starts[:0]
	p.next, p.m = m[:0], next
	p.sumM = sum
	if len(next) > 0 {
		p.maxKey = p.slots[next[len(next)-1]].key
	} else {
		p.maxKey = math.Inf(-1)
	}

	// 6. Crossing timer.
	if p.kinetic() {
		p.armCrossing(s, now)
	}
}

// start puts a waiting job into service.
func (p *Policy) start(s *sdk.System, sl *slot, now float64) {
	s.Start(sl.j)
	p.setRun(s, sl, now)
}

// preempt takes a running job out of service. Its key is already its value
// at this instant, which stays frozen while it waits.
func (p *Policy) preempt(s *sdk.System, sl *slot, now float64) {
	s.Preempt(sl.j)
	p.stopRun(sl, now)
}

// armCrossing asks for a timer at the first instant the SRPT ordering can
// change the packing (see Policy).
func (p *Policy) armCrossing(s *sdk.System, now float64) {
	m := p.m
	t := math.Inf(1)
	if p.allPairs {
		for a := range m {
			for b := a + 1; b < len(m); b++ {
				x, y := &p.slots[m[a]], &p.slots[m[b]]
				if y.rate > x.rate {
					t = math.Min(t, p.crossAt(y, x, now))
				}
			}
		}
	} else if p.proc == ServerFilling {
		if p.sumM < p.k || len(m) == 0 {
			return // every job is in M: the packing cannot change before an event
		}
		b := &p.slots[m[len(m)-1]]
		if b.rate == 0 {
			return
		}
		slack := int32(p.sumM - p.k)
		if slack <= 0 {
			return // M is exactly full: no job of M can leave it (see Policy)
		}
		// Candidates (srptfastorder.go): per need bucket its running job
		// of largest (fin, arrival), the first of the bucket a faster job
		// overtakes, and the first job that did not fit.
		last := p.lastRun[:p.nBuckets]
		for bi := range last {
			last[bi] = -1
		}
		bi := m[len(m)-1]
		for _, i := range m[:len(m)-1] {
			y := &p.slots[i]
			if y.moving {
				if l := last[y.bucket]; l < 0 || p.slots[l].fin < y.fin || p.slots[l].fin == y.fin && p.slots[l].id < y.id {
					last[y.bucket] = i
				}
			}
		}
		for _, i := range last {
			if i >= 0 && i != bi {
				if y := &p.slots[i]; y.need <= slack && y.rate < b.rate {
					t = math.Min(t, p.crossAt(b, y, now))
				}
			}
		}
		if i := p.stopper; i >= 0 && i != bi && p.idle > 0 {
			if y := &p.slots[i]; y.need <= slack && y.rate < b.rate {
				t = math.Min(t, p.crossAt(b, y, now))
			}
		}
	} else {
		if !p.dfExtracted {
			return // the choice cannot change before an event (see Policy)
		}
		for a := 1; a < len(m); a++ {
			x, y := &p.slots[m[a-1]], &p.slots[m[a]]
			if y.rate > x.rate {
				t = math.Min(t, p.crossAt(y, x, now))
			}
		}
	}
	p.setCrossingTimer(s, now, t)
}

// setCrossingTimer asks for a timer at instant at (the first crossing both
// arming paths found, see crossAt; +Inf: none), unless an earlier one is
// already set.
func (p *Policy) setCrossingTimer(s *sdk.System, now, at float64) {
	if math.IsInf(at, 1) {
		return
	}
	if at == now && p.sameTime > 64 {
		return // safety net against a same-instant loop (not expected: see Policy)
	}
	if at < p.timerAt {
		s.SetTimer(at, 0)
		p.timerAt = at
	}
}

// serverFill is S §3.2's packing of M (list, in ordering order, with
// p.counts holding its jobs per need bucket): largest need first, ties by
// the ordering, until the next job does not fit. In that order the served
// jobs are whole buckets down to a cut bucket, of which the first
// floor(rem/need) in ordering order are served, so the cut is found from the
// counts and one pass over list marks, preempts and collects the starts.
func (p *Policy) serverFill(s *sdk.System, list, starts []int32, now float64) []int32 {
	take := p.takes(p.counts)
	p.stopper, p.idle = -1, p.rem
	for _, i := range list {
		sl := &p.slots[i]
		serve := take[sl.bucket] > 0
		if serve {
			take[sl.bucket]--
		} else if p.stopper < 0 && sl.bucket == p.cut && p.packing == PackStop {
			p.stopper = i
		}
		sl.serve = serve
		switch run := sl.j.Running(); {
		case run && !serve:
			p.preempt(s, sl, now)
		case !run && serve:
			starts = append(starts, i)
		}
	}
	return starts
}

// takes returns how many jobs of each need bucket ServerFilling serves
// given cnt jobs of each bucket in M (into p.take, valid until the next
// call), and leaves the servers it leaves idle in p.rem and the first
// bucket it does not serve whole in p.cut (nBuckets if none): buckets in
// descending need, each served whole while it fits; the first that does
// not fit gets floor(servers left / need); after it PackStop serves
// nothing, PackSkip goes on with the same rule.
//
// The rule's state is in locals (it was behind takeStep's pointers, and the
// compiler reloaded it from the stack at every bucket, as in takesWide): on
// ServerFilling-SRPT at the L = 5000 rate of BenchmarkLevels (k = 2048, two
// buckets) 100 → 91 instructions per call.
func (p *Policy) takes(cnt []int32) []int32 {
	nb := p.nBuckets
	take, bneed := p.take[:nb], p.bneed[:nb]
	rem, cut := p.k, int32(nb)
	stop := p.packing == PackStop
	for b, c := range cnt[:nb] {
		n, t := int(bneed[b]), int(c)
		if t*n > rem {
			t = rem / n
			cut = min(cut, int32(b))
			if stop { // the later buckets take 0
				rem -= t * n
				take[b] = int32(t)
				clear(take[b+1:])
				break
			}
		}
		rem -= t * n
		take[b] = int32(t)
	}
	p.cut, p.rem = cut, rem
	return take
}

// fillFirstFit serves, in list order, every unserved job that fits in the
// servers the choice so far leaves idle.
func (p *Policy) fillFirstFit(list []int32) {
	rem := p.k
	for _, i := range list {
		if p.slots[i].serve {
			rem -= int(p.slots[i].need)
		}
	}
	for _, i := range list {
		sl := &p.slots[i]
		if rem == 0 {
			return
		}
		if !sl.serve && int(sl.need) <= rem {
			sl.serve = true
			rem -= int(sl.need)
		}
	}
}
