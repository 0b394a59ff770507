package sim

// Parked is a waiting job that its policy has handed back to the engine
// (System.Park) until it needs the job again (System.Unpark). It holds what
// identifies the job and nothing else — arrival instant, size, and arrival
// index and class in one word — 24 bytes with no pointers, against the Job's
// 96. A policy that keeps long queues it only takes the front of (FCFS behind
// a large job, any queue of an overloaded system) can keep the jobs deep in
// them as Parked values: the backlog then costs a quarter of the memory, the
// kernel zero-fills a quarter of the pages for it, and the garbage collector
// has no pointers in it to scan. (sdk.ParkingFIFO is such a queue.)
type Parked struct {
	arrival float64
	size    float64
	idClass uint64 // id<<parkClassBits | class
}

// parkClassBits is the width of the class in Parked.idClass: classes are
// server needs (at most one per need), so 2^16 of them is far beyond any
// workload, and the 2^48 arrival indices left are 10^14 arrivals.
const (
	parkClassBits = 16
	parkMaxID     = 1<<(64-parkClassBits) - 1
)

// ID is the parked job's arrival index (Job.ID).
func (p *Parked) ID() int64 { return int64(p.idClass >> parkClassBits) }

// Class is the index of the parked job's class (Job.Class); its need is the
// class's (System.Classes).
func (p *Parked) Class() int { return int(p.idClass & (1<<parkClassBits - 1)) }

// Arrival is the parked job's arrival instant (Job.Arrival).
func (p *Parked) Arrival() float64 { return p.arrival }

// Park takes waiting job j out of the policy's hands until Unpark, writing
// what identifies it into *p: the engine keeps counting it in the system,
// and the Job struct goes back to the engine for reuse, so j must not be
// used after the call (as after its departure). Only a job that has never
// been in service can be parked (its remaining work is its size, which
// Parked keeps). The policy's scratch fields (Idx, Tag, Key) are not kept.
//
// Park writes into the policy's storage rather than returning a Parked
// because it sits on every arrival of an overloaded queue: a returned
// value is stored field by field and reloaded 16 bytes at a time on its way
// into a queue, a forwarding stall that measured a tenth of the time of an
// unstable FCFS run.
func (s *System) Park(j *Job, p *Parked) {
	if j.state != stateWaiting {
		s.fail("job %d parked but it is not waiting", j.id)
	}
	if j.preempted != 0 {
		s.fail("job %d parked after it was preempted: only jobs that never ran can be parked", j.id)
	}
	if j.id > parkMaxID || j.class >= 1<<parkClassBits {
		s.fail("job %d (class %d) parked: Parked holds arrival indices below 2^%d and %d classes", j.id, j.class, 64-parkClassBits, 1<<parkClassBits)
	}
	p.arrival, p.size, p.idClass = j.arrival, j.size, uint64(j.id)<<parkClassBits|uint64(j.class)
	if j.tagged {
		s.parkedTagged[j.class]++
	}
	s.pool.put(j)
}

// Unpark gives back, as a waiting Job, the job parked in *p (which the
// policy may then reuse). Its scratch fields are zero.
//
// The job counts as having waited (Result's P(wait)) unless it is unparked
// during its own arrival: a job parked and unparked inside the Arrive call
// that admitted it is in the same state as one never parked.
func (s *System) Unpark(p *Parked) *Job {
	j := s.pool.get()
	id, class := int64(p.idClass>>parkClassBits), int32(p.idClass&(1<<parkClassBits-1))
	j.arrival, j.size, j.remaining = p.arrival, p.size, p.size
	j.id, j.class, j.need = id, class, s.classNeed[class]
	j.state = stateWaiting
	j.tagged = id >= s.winStart && id < s.winEnd
	j.delayed = id != s.arriving
	if j.tagged {
		s.parkedTagged[class]--
	}
	return j
}
