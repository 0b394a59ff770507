package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"

	"github.com/msjfarm/msjfarm/sim/rng"
	"github.com/msjfarm/msjfarm/sim/stats"
)

// Version is the engine version recorded in every result. Bump it whenever a
// change can alter any result bit for bit.
const Version = "0.2.0"

// Config is the run length and instrumentation of one replication.
type Config struct {
	// Seed determines the job sequence (and the policy's random stream).
	Seed uint64
	// Warmup arrivals are simulated and discarded before measuring.
	Warmup int64
	// Arrivals is the number of measured ("tagged") arrivals after the warm-up.
	Arrivals int64
	// MSER replaces the fixed warm-up by MSER-5 truncation: a first pass
	// measures every one of Warmup+Arrivals arrivals and records response-time
	// batch means (batches of 5 jobs in arrival order); the truncation point
	// d minimising the MSER statistic over the first half is found; a second
	// pass of the same (deterministic) sample path then discards the first
	// 5d arrivals and measures the rest. Result.Warmup reports 5d.
	MSER bool
	// MaxInSystem stops the run once more jobs than this are in the system:
	// Result.Truncated, reason "truncated", means lower bounds (0: the
	// default from a memory budget, DefaultMaxInSystem; a positive value
	// below the number of servers is an error). Memory is O(jobs in
	// system), so this bounds memory on a runaway queue.
	MaxInSystem int
	// DrainLimit bounds the extra arrivals simulated after the window while
	// waiting for the last measured jobs to leave (0: Arrivals, at least
	// 1000). It applies only while a measured job is still waiting (one in
	// service will finish, however long its size); measured jobs still
	// waiting then make the run flagged unstable.
	DrainLimit int64
	// SeriesInterval > 0 samples the number in system every SeriesInterval
	// time units of the measurement window, at most SeriesMax samples
	// (0: 10000).
	SeriesInterval float64
	SeriesMax      int
	// Progress, if set, is called about 100 times per run with the number of
	// arrivals simulated so far and the planned total.
	Progress func(done, total int64)
	// Context, if set, cancels the run: it is polled every 1,024 events
	// (a non-blocking channel receive, well under 0.1 ns per event), and Run
	// then returns an error wrapping the context's error.
	Context context.Context
	// Observer, if set, receives every arrival, start, preemption and
	// completion as it happens: the decision trace that tests and the plugin
	// conformance check verify. It costs one nil check per action when unset.
	Observer func(Event)
}

// EventKind is the kind of a traced Event.
type EventKind uint8

// Traced event kinds.
const (
	Arrive EventKind = iota + 1
	Start
	Preempt
	Complete
)

func (k EventKind) String() string {
	return [...]string{"?", "arrive", "start", "preempt", "complete"}[k]
}

// Event is one entry of the decision trace. Busy is the number of busy
// servers after the event.
type Event struct {
	Time  float64
	Kind  EventKind
	Job   int64
	Class int
	Need  int
	Busy  int
}

// Validate checks the run length and limits; Run calls it, and a caller
// that dispatches runs elsewhere can reject a bad configuration early.
func (c *Config) Validate() error {
	switch {
	case c.Arrivals < 1:
		return fmt.Errorf("run: arrivals must be >= 1, got %d", c.Arrivals)
	case c.Warmup < 0:
		return fmt.Errorf("run: warmup must be >= 0, got %d", c.Warmup)
	case c.MaxInSystem < 0:
		return fmt.Errorf("run: max_in_system must be >= 0, got %d", c.MaxInSystem)
	case c.DrainLimit < 0:
		return fmt.Errorf("run: drain_limit must be >= 0, got %d", c.DrainLimit)
	case c.SeriesInterval < 0 || math.IsNaN(c.SeriesInterval):
		return fmt.Errorf("run: series_interval must be >= 0, got %v", c.SeriesInterval)
	case c.MSER && c.Warmup+c.Arrivals < 20:
		return fmt.Errorf("run: MSER-5 needs at least 20 arrivals, got %d", c.Warmup+c.Arrivals)
	}
	return nil
}

// PolicyError is an invariant the policy broke (starting a job that does not
// fit, preempting without declaring it, ...). The engine enforces these
// whatever the policy does, and turns them into an error of the run.
type PolicyError struct {
	Time float64
	Msg  string
}

func (e *PolicyError) Error() string { return fmt.Sprintf("policy error at t=%g: %s", e.Time, e.Msg) }

// System is the state of one replication as a policy sees it. Policies act
// through Start, Preempt and SetTimer and read the rest.
type System struct {
	w       *Workload
	k       int
	busy    int
	now     float64
	inSys   int
	running []*Job
	events  eventHeap
	pool    jobPool
	policy  Policy
	info    PolicyInfo
	timers  TimerHandler
	prng    *rng.Stream
	measure bool
	obs     func(Event)

	preemptions int64
	wasted      float64
	// taggedRunning counts measured jobs in service: the drain limit applies
	// only while some measured job is still waiting, since a job in service
	// under a policy that cannot preempt it will finish.
	taggedRunning int64
	preemptedN    int64 // measured jobs preempted at least once
}

// Now is the current simulated time.
func (s *System) Now() float64 { return s.now }

// Servers is k.
func (s *System) Servers() int { return s.k }

// Free is the number of idle servers.
func (s *System) Free() int { return s.k - s.busy }

// Busy is the number of servers in use.
func (s *System) Busy() int { return s.busy }

// InSystem is the number of jobs in the system (waiting or running).
func (s *System) InSystem() int { return s.inSys }

// Classes returns the workload's classes (read-only).
func (s *System) Classes() []Class { return s.w.Classes }

// Workload returns the workload being simulated (read-only).
func (s *System) Workload() *Workload { return s.w }

// Running returns the jobs in service, in no particular order. The slice is
// the engine's own: read it, do not modify or keep it across calls.
func (s *System) Running() []*Job { return s.running }

// Rand is the policy's own random stream, separate from the job sequence.
func (s *System) Rand() *rng.Stream { return s.prng }

// Measuring reports whether the warm-up is over.
func (s *System) Measuring() bool { return s.measure }

func (s *System) fail(format string, a ...any) {
	panic(&PolicyError{Time: s.now, Msg: fmt.Sprintf(format, a...)})
}

// Start puts waiting job j into service on j.Need() servers. Starting a job
// that is not waiting, or that does not fit in the idle servers, is a policy
// error.
func (s *System) Start(j *Job) {
	if j.state != stateWaiting {
		if j.state == stateRunning {
			s.fail("job %d started while already running", j.id)
		}
		s.fail("job %d started but it is not in the system", j.id)
	}
	if int(j.need) > s.k-s.busy {
		s.fail("job %d needs %d servers, only %d idle", j.id, j.need, s.k-s.busy)
	}
	s.busy += int(j.need)
	if j.tagged {
		s.taggedRunning++
	}
	j.state = stateRunning
	j.started = s.now
	j.runIdx = int32(len(s.running))
	s.running = append(s.running, j)
	s.events.push(s.now+j.remaining, j, 0)
	if s.obs != nil {
		s.observe(Start, j)
	}
}

func (s *System) observe(k EventKind, j *Job) {
	s.obs(Event{Time: s.now, Kind: k, Job: j.id, Class: int(j.class), Need: int(j.need), Busy: s.busy})
}

// Preempt takes running job j out of service. Under PreemptResume it keeps
// its progress; under PreemptRestart its progress is lost (counted as wasted
// work) and it will need its full original size again. Only policies that
// declare preemption may call it.
func (s *System) Preempt(j *Job) {
	if s.info.Preemption == NoPreemption {
		s.fail("job %d preempted by a policy that did not declare preemption", j.id)
	}
	if j.state != stateRunning {
		s.fail("job %d preempted but it is not running", j.id)
	}
	s.events.remove(int(j.heapIdx))
	s.removeRunning(j)
	s.busy -= int(j.need)
	if j.tagged {
		s.taggedRunning--
	}
	served := s.now - j.started
	if s.info.Preemption == PreemptRestart {
		if s.measure {
			s.wasted += float64(j.need) * served
		}
		j.remaining = j.size
	} else {
		j.remaining -= served
		if j.remaining < 0 {
			j.remaining = 0
		}
	}
	j.state = stateWaiting
	j.delayed = true
	j.preempted++
	if s.measure {
		s.preemptions++
	}
	if s.obs != nil {
		s.observe(Preempt, j)
	}
}

// SetTimer asks for a call to the policy's Timer(s, tag) at time at (>= Now).
func (s *System) SetTimer(at float64, tag int) {
	if s.timers == nil {
		s.fail("SetTimer called by a policy that does not implement TimerHandler")
	}
	if !(at >= s.now) {
		s.fail("timer set in the past (%v < now %v)", at, s.now)
	}
	s.events.push(at, nil, tag)
}

// Size returns job j's original service duration (size-aware policies only).
func (s *System) Size(j *Job) float64 {
	if !s.info.SizeAware {
		s.fail("Size read by a policy that did not declare SizeAware")
	}
	return j.size
}

// Remaining returns job j's remaining service duration now (size-aware
// policies only).
func (s *System) Remaining(j *Job) float64 {
	if !s.info.SizeAware {
		s.fail("Remaining read by a policy that did not declare SizeAware")
	}
	if j.state == stateRunning {
		r := j.remaining - (s.now - j.started)
		if r < 0 {
			r = 0
		}
		return r
	}
	return j.remaining
}

func (s *System) removeRunning(j *Job) {
	i := int(j.runIdx)
	last := len(s.running) - 1
	if i != last {
		m := s.running[last]
		s.running[i] = m
		m.runIdx = int32(i)
	}
	s.running[last] = nil
	s.running = s.running[:last]
}

// Run simulates one replication of workload w under policy p (configured and
// ready for Init) and returns its statistics. It never panics on a policy's
// misbehaviour: broken invariants and policy panics become errors.
func Run(w *Workload, p Policy, cfg Config) (*Result, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkCap(w, &cfg); err != nil {
		return nil, err
	}
	if w.Trace != nil && int64(len(w.Trace)) < cfg.Warmup+cfg.Arrivals {
		return nil, fmt.Errorf("run: warmup+arrivals = %d exceeds the trace's %d jobs", cfg.Warmup+cfg.Arrivals, len(w.Trace))
	}
	if !cfg.MSER {
		return runOnce(w, p, cfg, nil)
	}
	n := cfg.Warmup + cfg.Arrivals
	batches := make([]float64, n/5)
	first := cfg
	first.Warmup, first.Arrivals, first.Progress, first.Observer = 0, n, nil, nil
	if _, err := runOnce(w, p, first, batches); err != nil {
		return nil, err
	}
	for i := range batches {
		batches[i] /= 5
	}
	d := stats.MSER(batches)
	second := cfg
	second.Warmup, second.Arrivals = int64(5*d), n-int64(5*d)
	r, err := runOnce(w, p, second, nil)
	if err != nil {
		return nil, err
	}
	r.MSERBatches = int64(d)
	return r, nil
}

func runOnce(w *Workload, p Policy, cfg Config, batches []float64) (res *Result, err error) {
	s := &System{w: w, k: w.Servers, policy: p, info: Describe(p), obs: cfg.Observer}
	s.timers, _ = p.(TimerHandler)
	s.prng = rng.Derive(cfg.Seed, StreamPolicy)
	st := newRecorder(w, &cfg)
	src := newSource(w, cfg.Seed)
	measurer, _ := p.(Measurer)

	defer func() {
		if r := recover(); r != nil {
			var pe *PolicyError
			if e, ok := r.(error); ok && errors.As(e, &pe) {
				res, err = nil, pe
				return
			}
			res, err = nil, fmt.Errorf("policy panicked at t=%g: %v\n%s", s.now, r, debug.Stack())
		}
	}()
	if err := p.Init(s); err != nil {
		return nil, fmt.Errorf("policy init: %w", err)
	}

	maxIn := cfg.MaxInSystem
	if maxIn == 0 {
		maxIn = DefaultMaxInSystem
	}
	drain := cfg.DrainLimit
	if drain == 0 {
		drain = max(cfg.Arrivals, 1000)
	}
	winStart, winEnd := cfg.Warmup, cfg.Warmup+cfg.Arrivals
	stopAt := winEnd + drain // arrivals index at which draining gives up
	total := winEnd
	progEvery := max(total/100, 1)
	nextProg := progEvery
	if cfg.Progress == nil {
		nextProg = math.MaxInt64
	}

	var (
		nextJob  = s.pool.get()
		haveNext = src.next(nextJob)
		arrivals int64
		events   uint64
		tagged   int64 // measured jobs still in the system
		stop     string
	)
	var done <-chan struct{}
	if cfg.Context != nil {
		done = cfg.Context.Done()
	}
	for {
		if done != nil && events&0x3ff == 0x3ff {
			select {
			case <-done:
				return nil, fmt.Errorf("replication stopped at t=%g after %d arrivals: %w", s.now, arrivals, cfg.Context.Err())
			default:
			}
		}
		if s.events.len() > 0 && (!haveNext || s.events.ev[0].t <= nextJob.arrival) {
			e := s.events.pop()
			st.advance(s, e.t)
			s.now = e.t
			events++
			if j := e.j; j != nil {
				s.removeRunning(j)
				s.busy -= int(j.need)
				s.inSys--
				j.state = stateFree
				if j.tagged {
					tagged--
					s.taggedRunning--
					st.depart(s, j, batches, winStart)
				}
				if s.measure {
					st.departures++
				}
				if s.obs != nil {
					s.observe(Complete, j)
				}
				p.Complete(s, j)
				s.pool.put(j)
				if arrivals > winEnd && tagged == 0 {
					break
				}
			} else {
				s.timers.Timer(s, e.tag)
			}
			continue
		}
		if !haveNext {
			if tagged > 0 {
				stop = "trace ended"
			}
			break
		}
		// Arrival of nextJob.
		j := nextJob
		st.advance(s, j.arrival)
		s.now = j.arrival
		events++
		id := arrivals
		arrivals++
		switch id {
		case winStart:
			s.measure = true
			st.start(s)
			if measurer != nil {
				measurer.StartMeasuring(s)
			}
		case winEnd:
			st.end(s)
			s.measure = false
		}
		st.checkpoint(s, id)
		if id >= winEnd && tagged == 0 {
			s.pool.put(j)
			break
		}
		if id >= stopAt && tagged > s.taggedRunning {
			s.pool.put(j)
			stop = "drain limit"
			break
		}
		j.id = id
		j.state = stateWaiting
		j.remaining = j.size
		j.tagged = id >= winStart && id < winEnd
		if j.tagged {
			tagged++
		}
		s.inSys++
		if s.obs != nil {
			s.observe(Arrive, j)
		}
		p.Arrive(s, j)
		if j.state == stateWaiting {
			j.delayed = true
		}
		if s.inSys > maxIn {
			stop = "max_in_system"
			break
		}
		if arrivals >= nextProg {
			nextProg += progEvery
			if arrivals <= total {
				cfg.Progress(arrivals, total)
			}
		}
		nextJob = s.pool.get()
		haveNext = src.next(nextJob)
	}
	if s.measure { // stopped inside the window (max_in_system, trace end)
		st.end(s)
		s.measure = false
	}
	if cfg.Progress != nil {
		cfg.Progress(min(arrivals, total), total)
	}
	return st.result(s, events, tagged, stop), nil
}
