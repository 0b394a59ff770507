package sim

// PreemptJobs preempts the jobs of js in order: the same as calling
// Preempt on each of them in turn, with the same results, the same trace
// and, on a job Preempt would refuse, the same error after the jobs before
// it are preempted. It is for a policy that moves many jobs per decision
// (the SRPT and Gittins orders of ServerFilling preempt 15–22 jobs per
// arrival on one-or-all and Borg cell B): one call per decision instead of
// one per job, and the checks that do not depend on the job (how the
// policy preempts, an observer, the list of running jobs) made once. The
// engine does not keep js.
func (s *System) PreemptJobs(js []*Job) { s.PreemptJobsIn(js, s.identity(len(js))) }

// PreemptJobsIn is PreemptJobs on the jobs tab[ids[0]], tab[ids[1]], ...:
// for a policy that keeps its jobs in a table and a decision's moves as
// indices into it (ServerFilling's SRPT and Gittins orders), so that no
// list of jobs is built per decision (copying each move's job into one
// cost the policy 13-15 instructions a move; see docs/design.md). The
// engine keeps neither tab nor ids.
func (s *System) PreemptJobsIn(tab []*Job, ids []int32) {
	if s.info.Preemption != PreemptResume || s.obs != nil || s.listRunning {
		for _, x := range ids {
			s.Preempt(tab[x])
		}
		return
	}
	for i := 0; i < len(ids); i++ {
		if i = s.preemptRunning(tab, ids, i); i < len(ids) {
			s.Preempt(tab[ids[i]]) // not running: fails as Preempt fails
		}
	}
}

// identity is iota's first n indices (0, 1, ..., n-1), grown as needed.
func (s *System) identity(n int) []int32 {
	for len(s.iota) < n {
		s.iota = append(s.iota, int32(len(s.iota)))
	}
	return s.iota[:n]
}

// preemptRunning is PreemptJobsIn on ids[i:] up to the first job that is
// not running, whose index in ids it returns (len(ids) if none): a loop
// without calls, so that its state stays in registers, and s's counters
// written once.
func (s *System) preemptRunning(tab []*Job, ids []int32, i int) int {
	now, busy, tagged := s.now, s.busy, s.taggedRunning
	i0 := i
	for ; i < len(ids); i++ {
		j := tab[ids[i]]
		if j.state != stateRunning {
			break
		}
		j.suspended = true // the departure's entry goes stale (suspend)
		busy -= int(j.need)
		if j.tagged {
			tagged--
		}
		r := j.remaining - (now - j.started)
		if r < 0 {
			r = 0
		}
		j.remaining = r
		j.state = stateWaiting
		j.delayed = true
		j.preempted++
	}
	moved := i - i0
	s.busy, s.taggedRunning = busy, tagged
	s.nRun -= moved
	s.events.stale += moved
	if s.measure {
		s.preemptions += int64(moved)
	}
	return i
}

// StartJobs starts the jobs of js in order: the same as calling Start on
// each of them in turn, with the same results (each departure gets the
// event sequence number its Start would have given it), the same trace
// and, on a job Start would refuse, the same error after the jobs before
// it are started. As PreemptJobs, it is one call per decision instead of
// one per job, with the job-independent checks made once. The engine does
// not keep js.
func (s *System) StartJobs(js []*Job) { s.StartJobsIn(js, s.identity(len(js))) }

// StartJobsIn is StartJobs on the jobs tab[ids[0]], tab[ids[1]], ... (see
// PreemptJobsIn). The engine keeps neither tab nor ids.
func (s *System) StartJobsIn(tab []*Job, ids []int32) {
	if s.obs != nil || s.listRunning || !s.events.track {
		for _, x := range ids {
			s.Start(tab[x])
		}
		return
	}
	for i := 0; i < len(ids); i++ {
		if i = s.startPlain(tab, ids, i); i < len(ids) {
			s.Start(tab[ids[i]])
		}
	}
}

// startPlain is StartJobsIn on ids[i:] up to the first job whose start is
// not plain, whose index in ids it returns (len(ids) if none) for Start to
// take. A
// start is plain when Start would accept it and its departure's entry
// needs no call: pushed at the end of the event list's array with room
// left (newSlot, rise), or its stale entry re-keyed in place and moved
// down (resume, fall), and no pop's hole pending. It is a loop without
// calls, so that its state stays in registers (with calls in it, ten
// values were reloaded from the stack at every job), with the heap's
// sifts written into it; the busy servers, jobs in service and the
// sequence number are written once at the end, the counters a start
// touches less often (measured jobs, stale entries) in place, which left
// the registers to the rest (−5% of its instructions). The sequence
// number, which every start takes, was kept in place too until the fifth
// round of issue #35; held in a register it cost 10.5 M fewer of
// startPlain's 636 M instructions per ServerFilling-SRPT replication on
// Borg cell B at ρ = 0.95 (−1.7%; no change in CPU time measurable).
func (s *System) startPlain(tab []*Job, ids []int32, i int) int {
	h := &s.events
	if h.hole {
		return i
	}
	now, free := s.now, s.k-s.busy
	ev, seq := h.ev, h.seq
	i0 := i
	for ; i < len(ids); i++ {
		j := tab[ids[i]]
		if j.state != stateWaiting || int(j.need) > free {
			break
		}
		t := now + j.remaining
		x, fresh := int(j.heapIdx), !j.suspended
		if fresh {
			if len(ev) == cap(ev) {
				break // push grows the array
			}
			x = len(ev)
		} else if p := parent(x); x > 0 && t < ev[p].t {
			break // it rises: resume's rise
		}
		free -= int(j.need)
		if j.tagged {
			s.taggedRunning++
		}
		j.state = stateRunning
		j.started = now
		seq++
		j.evSeq = seq
		if fresh {
			ev = ev[:x+1]
			rise(ev, x, t, j)
			continue
		}
		j.suspended = false
		h.stale--
		// fall, written out: a call here would cost the loop its registers.
		slot := &ev[x]
		for {
			l := firstChild(x)
			if l >= len(ev) {
				break
			}
			c := earliest(ev, l)
			down := &ev[c]
			e := *down
			if e.t > t {
				break
			}
			*slot = e
			e.j.heapIdx = int32(x)
			slot, x = down, c
		}
		*slot = event{t, j}
		j.heapIdx = int32(x)
	}
	h.ev, h.seq = ev, seq
	s.busy = s.k - free
	s.nRun += i - i0
	return i
}
