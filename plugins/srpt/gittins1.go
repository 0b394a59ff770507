package srpt

import (
	"fmt"
	"math"

	"github.com/msjfarm/msjfarm/model/dist"
	"github.com/msjfarm/msjfarm/sdk"
	"github.com/msjfarm/msjfarm/sim"
)

// RunGittins1 simulates Gittins-1, the reference model of S §5.1's
// ServerFilling-Gittins heavy-traffic result: the resource-pooled M/G/1 (as
// in RunSRPT1: one server of rate 1, a job of need n and duration d has
// size n·d/k there, the same job sequence with common random numbers) under
// the preemptive Gittins policy, which minimises the mean response time on
// one server among policies that do not know sizes (Gittins 1989; S §5.1).
// It is size-blind: a job's rank depends only on its class's size
// distribution and its attained service. Everything RunSRPT1 documents
// about the result holds, except that SizeAware is false.
//
// Ranks (S §5.1): a class-c job of need n (σ = n/k) with pooled attained
// service a has rank σ·G_D(a/σ), where D is the class's duration
// distribution and G_D(t) = inf_{u>t} ∫_t^u F̄ / (F(u) − F(t)) — the
// pooled size is σ·D, and the rank scales with it. The job of least rank is
// served (ties to the earlier arrival), re-decided at arrivals, completions
// and whenever the running job's rank rises above a waiting job's (a timer
// at the crossing): Gittins-1 is the exact preemptive Gittins policy, not
// one re-evaluated only at events. Closed forms are used for the supported
// distributions: exponential (constant rank: Gittins is then FCFS-like and
// never preempts a job for an equal-rank one), deterministic (d − t:
// SRPT), two-phase hyperexponential (1/h(t), rising), and empirical
// (discrete: the infimum over atoms, computed exactly; the rank falls
// between atoms and jumps at an atom the job outlives, where the timer
// fires just after the atom so that a job completing there leaves first).
// Two jobs whose H2 ranks rise through the same value would share the
// server; that is approximated by round robin with a small quantum (see
// h2Quantum). Any other class distribution is an error naming the class.
func RunGittins1(w *sim.Workload, cfg sim.Config) (*sim.Result, error) {
	return runPooled(w, func() sim.Policy { return &Gittins1{} }, cfg)
}

// Gittins1 is the preemptive single-server Gittins policy (see RunGittins1)
// on a one-server workload. On a pooled workload (pooledWorkload) it ranks
// each class by its underlying duration distribution scaled by n/k; on any
// other one-server workload with need-1 classes, by the class distribution
// itself. It preempts (resume) and reads no size.
type Gittins1 struct {
	rank  []gittinsRank // per class
	scale []float64     // per class: σ = n/k (1 for an unpooled workload)

	wait     jobHeap // waiting jobs by (rank, arrival); Job.Key = rank
	attained map[int64]float64

	cur      *sdk.Job
	curAtt   float64 // attained service at cur's last start
	curStart float64
	seq      int     // current timer's tag; older tags are stale
	crossAtt float64 // attained service at which the pending timer fires
	crossing bool
}

// Preemption declares preempt-resume.
func (p *Gittins1) Preemption() sdk.Preemption { return sdk.PreemptResume }

// Timer is handled (rank crossings).
func (p *Gittins1) Timer(s *sdk.System, tag int) {
	if tag != p.seq || p.cur == nil || !p.crossing {
		return // stale
	}
	j := p.cur
	att := math.Max(p.attainedNow(s), p.crossAtt)
	p.preempt(s, j, att)
	p.serveBest(s)
}

// Init builds the rank functions; a one-server system with need-1 classes
// is required.
func (p *Gittins1) Init(s *sdk.System) error {
	if s.Servers() != 1 {
		return fmt.Errorf("gittins-1: runs on one (pooled) server, got %d", s.Servers())
	}
	p.rank = p.rank[:0]
	p.scale = p.scale[:0]
	for i, c := range s.Classes() {
		d, sigma := c.Service, 1.0
		if pd, ok := d.(pooledDist); ok {
			d, sigma = pd.d, pd.n/pd.k
		}
		r, err := newGittinsRank(d)
		if err != nil {
			return fmt.Errorf("gittins-1: class %d (%q): %w", i, c.Name, err)
		}
		p.rank = append(p.rank, r)
		p.scale = append(p.scale, sigma)
	}
	p.wait.reset()
	p.attained = map[int64]float64{}
	p.cur, p.crossing = nil, false
	p.seq++
	return nil
}

// rankAt is a class-c job's rank at pooled attained service a.
func (p *Gittins1) rankAt(c int, a float64) float64 {
	sg := p.scale[c]
	return sg * p.rank[c].at(a/sg)
}

func (p *Gittins1) attainedNow(s *sdk.System) float64 {
	return p.curAtt + (s.Now() - p.curStart)
}

// Arrive: a new job preempts the running one iff its rank is strictly lower
// (it is the latest arrival, so ties go to the running job).
func (p *Gittins1) Arrive(s *sdk.System, j *sdk.Job) {
	j.Key = p.rankAt(j.Class(), 0)
	if p.cur == nil {
		p.start(s, j, 0)
		return
	}
	att := p.attainedNow(s)
	if j.Key < p.rankAt(p.cur.Class(), att) {
		p.preempt(s, p.cur, att)
		p.start(s, j, 0)
		return
	}
	p.wait.push(j)
	p.armCrossing(s)
}

// Complete serves the waiting job of least rank.
func (p *Gittins1) Complete(s *sdk.System, j *sdk.Job) {
	if j == p.cur {
		p.cur = nil
		p.seq++
	}
	p.serveBest(s)
}

func (p *Gittins1) serveBest(s *sdk.System) {
	if p.wait.len() == 0 {
		return
	}
	j := p.wait.pop()
	a := p.attained[j.ID()]
	delete(p.attained, j.ID())
	p.start(s, j, a)
}

func (p *Gittins1) preempt(s *sdk.System, j *sdk.Job, att float64) {
	s.Preempt(j)
	p.cur = nil
	p.seq++
	p.attained[j.ID()] = att
	j.Key = p.rankAt(j.Class(), att)
	p.wait.push(j)
}

func (p *Gittins1) start(s *sdk.System, j *sdk.Job, att float64) {
	p.cur, p.curAtt, p.curStart = j, att, s.Now()
	p.seq++
	s.Start(j)
	p.armCrossing(s)
}

// armCrossing sets a timer at the first attained service at which the
// running job's rank exceeds the best waiting job's (or equals it, if that
// job arrived earlier). Waiting ranks are frozen, so only the running job's
// rank moves.
func (p *Gittins1) armCrossing(s *sdk.System) {
	p.crossing = false
	if p.cur == nil || p.wait.len() == 0 {
		return
	}
	w := p.wait.top()
	c := p.cur.Class()
	sg := p.scale[c]
	att := p.attainedNow(s)
	// Beyond this attained service (duration units) the running job ranks
	// behind w.
	t, ok := p.rank[c].crossing(att/sg, w.Key/sg, w.ID() < p.cur.ID())
	if !ok {
		return
	}
	p.seq++
	p.crossing = true
	p.crossAtt = t * sg
	at := s.Now() + (p.crossAtt - att)
	if !(at > s.Now()) {
		at = math.Nextafter(s.Now(), math.Inf(1))
	}
	s.SetTimer(at, p.seq)
}

// gittinsRank is G_D in duration units.
type gittinsRank interface {
	at(t float64) float64
	// crossing returns the least attained service u > t (duration units)
	// at which at(u) > r (≥ r if tieLoses), if any.
	crossing(t, r float64, tieLoses bool) (float64, bool)
}

func newGittinsRank(d dist.Dist) (gittinsRank, error) {
	switch d := d.(type) {
	case *dist.Exponential:
		return constRank(d.Mean()), nil
	case *dist.Deterministic:
		return detRank(d.Mean()), nil
	case *dist.HyperExp:
		p1, r1, r2 := d.Phases()
		if r1 == r2 {
			return constRank(1 / r1), nil
		}
		p2 := 1 - p1
		if r1 < r2 {
			p1, p2, r1, r2 = p2, p1, r2, r1
		}
		return h2Rank{p1: p1, p2: p2, mu1: r1, mu2: r2}, nil
	case *dist.Empirical:
		return newDiscreteRank(d)
	}
	return nil, fmt.Errorf("no Gittins rank for %s (supported: exponential, deterministic, hyperexponential, empirical)", d)
}

// constRank: exponential, G = mean at every age; never crosses.
type constRank float64

func (c constRank) at(float64) float64 { return float64(c) }
func (c constRank) crossing(_, r float64, tieLoses bool) (float64, bool) {
	return 0, false // a constant rank that ranks ahead now stays ahead
}

// detRank: deterministic d, G(t) = d − t (remaining size): falls, never
// crosses upward.
type detRank float64

func (d detRank) at(t float64) float64                            { return math.Max(float64(d)-t, 0) }
func (d detRank) crossing(float64, float64, bool) (float64, bool) { return 0, false }

// h2Rank: two-phase hyperexponential with μ1 > μ2; decreasing hazard, so
// G(t) = 1/h(t) = (p1 e^{−μ1 t} + p2 e^{−μ2 t}) / (p1 μ1 e^{−μ1 t} + p2 μ2
// e^{−μ2 t}), written with e^{−(μ1−μ2)t} so that it cannot underflow to
// 0/0; it rises from 1/(p1μ1 + p2μ2) to 1/μ2.
type h2Rank struct{ p1, p2, mu1, mu2 float64 }

func (h h2Rank) at(t float64) float64 {
	e := h.p1 * math.Exp(-(h.mu1-h.mu2)*t)
	return (e + h.p2) / (e*h.mu1 + h.p2*h.mu2)
}

// h2Quantum is the hysteresis of a crossing of rising ranks: the running
// job yields when its rank exceeds the waiting job's by this relative
// margin. Exactly, two jobs whose ranks rise through the same value share
// the server (the limit of ever faster alternation — a Zeno sequence of
// crossings that an event simulation cannot take); the margin turns that
// into round robin with a quantum that shifts each rank by 1%.
const h2Quantum = 1e-2

// crossing bisects the rising G for its passage above r(1 + h2Quantum).
func (h h2Rank) crossing(t, r float64, _ bool) (float64, bool) {
	r *= 1 + h2Quantum
	if h.at(t) > r {
		return t, true
	}
	if 1/h.mu2 <= r {
		return 0, false
	}
	// G approaches 1/μ2 only asymptotically, and its floating-point value
	// may never exceed an r just below 1/μ2: then there is no crossing.
	lo, hi := t, t+1/h.mu2
	for h.at(hi) <= r {
		lo, hi = hi, hi+2*(hi-t)
		if math.IsInf(hi, 0) || h.at(hi) == h.at(lo) && h.at(hi) <= r {
			return 0, false
		}
	}
	for range 200 {
		m := lo + (hi-lo)/2
		if m <= lo || m >= hi {
			break
		}
		if h.at(m) > r {
			hi = m
		} else {
			lo = m
		}
	}
	return hi, true
}

// discreteRank: an empirical (discrete) distribution with atoms x_1 < … <
// x_m of probabilities q_i. For age t with x_{j−1} ≤ t < x_j (the job has
// outlived x_{j−1}), the infimum over b > t is attained at an atom b = x_l
// (between atoms the numerator grows and the denominator does not):
//
//	G(t) = min_{l ≥ j} [Σ_{i=j}^{l} q_i (x_i − t) + T_{l+1} (x_l − t)] / Σ_{i=j}^{l} q_i,
//
// T_l = Σ_{i≥l} q_i. Within a gap G falls (linearly in each term); when the
// job outlives an atom it jumps. So the running job can only pass a waiting
// job's rank at an atom.
type discreteRank struct {
	x, q []float64
}

func newDiscreteRank(d *dist.Empirical) (gittinsRank, error) {
	// The atoms are the jumps of the CDF, found by bisection on the bit
	// patterns of non-negative floats (exact whatever the scale).
	var r discreteRank
	prev, lo := 0.0, 0.0
	for prev < 1 {
		target := prev
		a, b := math.Float64bits(lo), math.Float64bits(math.MaxFloat64)
		if d.CDF(lo) > target {
			b = a
		} else {
			for b-a > 1 {
				m := a + (b-a)/2
				if d.CDF(math.Float64frombits(m)) > target {
					b = m
				} else {
					a = m
				}
			}
		}
		x := math.Float64frombits(b)
		f := d.CDF(x)
		r.x = append(r.x, x)
		r.q = append(r.q, f-prev)
		prev, lo = f, x
		if len(r.x) > d.Len() {
			return nil, fmt.Errorf("empirical distribution: cannot enumerate its atoms")
		}
		if f >= 1-1e-12 {
			break
		}
	}
	return r, nil
}

func (r discreteRank) first(t float64) int {
	j := 0
	for j < len(r.x) && r.x[j] <= t {
		j++
	}
	return j
}

func (r discreteRank) at(t float64) float64 {
	j := r.first(t)
	if j == len(r.x) {
		return 0 // beyond the largest atom (cannot happen for a real job)
	}
	var tail float64
	for i := j; i < len(r.q); i++ {
		tail += r.q[i]
	}
	best := math.Inf(1)
	var num, den float64
	for l := j; l < len(r.x); l++ {
		num += r.q[l] * (r.x[l] - t)
		den += r.q[l]
		rest := tail - den
		if v := (num + math.Max(rest, 0)*(r.x[l]-t)) / den; v < best {
			best = v
		}
	}
	return best
}

// crossing: the rank falls within a gap, so the first atom after t at
// which the job, having outlived it, ranks behind r. The timer fires just
// after that atom (the caller adds nothing: the returned age is the next
// float after the atom), so that a job completing exactly there leaves
// first.
func (r discreteRank) crossing(t, rk float64, tieLoses bool) (float64, bool) {
	for j := r.first(t); j < len(r.x)-1; j++ {
		v := r.at(r.x[j])
		if v > rk || (tieLoses && v == rk) {
			return math.Nextafter(r.x[j], math.Inf(1)), true
		}
	}
	return 0, false
}
