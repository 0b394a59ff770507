package sim

import (
	"unsafe"

	"github.com/msjfarm/msjfarm/internal/prefetch"
)

type jobState uint8

const (
	stateFree jobState = iota
	stateWaiting
	stateRunning
	stateTimer // an engine-internal Job standing for a policy timer in the event heap (tag in id)
)

// Job is a job in the system. The engine owns it; policies read it through its
// methods and may use the exported scratch fields (Idx, Tag, Key) for their
// own bookkeeping — the engine never reads them and clears them on arrival.
//
// Sizes are deliberately not readable here: a policy reads them only through
// System.Size and System.Remaining, which require the SizeAware capability.
type Job struct {
	// Idx is free for the policy, e.g. the job's position in a policy heap.
	Idx int
	// Tag is free for the policy, e.g. a partition or a flag.
	Tag int
	// Key is free for the policy, e.g. a priority.
	Key float64

	// The fields below are laid out so that the struct has no padding
	// (4-byte fields in pairs, the 1-byte flags together): 96 bytes (it
	// had 104 with the flags scattered). A backlog
	// is mostly Job structs — 10^6 waiting jobs are ~100 MB, which the
	// kernel zero-fills page by page on first touch — so every 8 bytes
	// is ~8% of an unstable run's memory; TestJobSize keeps it so. (A
	// policy that only takes the front of its queue parks the jobs behind
	// it instead, 24 bytes each: Parked.)
	//
	// The fields a move reads or writes (a preemption, a start, an entry
	// moved past in the event heap: remaining, started, need, heapIdx,
	// preempted and the flags) are bytes 32–63, which are in one cache
	// line whatever the Job's place: Jobs are allocated 256 at a time in
	// a 64-byte-aligned array, so one Job in two starts at a line and one
	// in two in the middle of one, and its bytes 32–63 are then the first
	// half of its second line. With them spread over the struct (need at
	// 36, started at 64, state at 92) a move touched two lines of every
	// other job, and the jobs a move touches are mostly cold (see
	// docs/design.md, issue #35's sixth round); TestJobHotLine keeps them
	// so. evSeq, which a start writes and the heap reads only on a tie,
	// shares a line with them for one Job in two.
	evSeq     uint64  // insertion order of the job's event (heap tie-break)
	remaining float64 // remaining duration, as of the last start or preemption
	started   float64 // time of the last start
	need      int32
	heapIdx   int32 // position in the event heap while running
	preempted int32
	state     jobState
	delayed   bool // not in service at some instant while in the system
	tagged    bool // arrived inside the measurement window
	// suspended: preempted while its departure entry is still in the
	// event list (a stale entry, see eventHeap).
	suspended bool
	id        int64
	class     int32
	runIdx    int32 // position in System.running while running (once listed)
	arrival   float64
	size      float64 // original service duration
}

// ID is the job's arrival index, counting from 0 at the first arrival of the
// replication (including warm-up): unique, and increasing in arrival order.
func (j *Job) ID() int64 { return j.id }

// Class is the index of the job's class in the workload.
func (j *Job) Class() int { return int(j.class) }

// Need is the number of servers the job holds while in service.
func (j *Job) Need() int { return int(j.need) }

// Arrival is the job's arrival instant.
func (j *Job) Arrival() float64 { return j.arrival }

// Running reports whether the job is in service.
func (j *Job) Running() bool { return j.state == stateRunning }

// Waiting reports whether the job is in the system and not in service.
func (j *Job) Waiting() bool { return j.state == stateWaiting }

// Preemptions is the number of times the job has been preempted.
func (j *Job) Preemptions() int { return int(j.preempted) }

// jobPool recycles Job structs so that the steady state allocates nothing:
// memory is O(jobs in system), whatever the run length.
type jobPool struct {
	free   []*Job
	chunks [][]Job // every Job allocated, for the end-of-run census (undeparted)
}

func (p *jobPool) get() *Job {
	if len(p.free) == 0 {
		chunk := make([]Job, 256)
		p.chunks = append(p.chunks, chunk)
		for i := range chunk {
			p.free = append(p.free, &chunk[i])
		}
	}
	n := len(p.free) - 1
	j := p.free[n]
	p.free = p.free[:n]
	if n > 0 {
		// The next job handed out may have been freed long ago (a queue
		// that grows takes jobs from deep in the free list): fetch it now
		// rather than when the next arrival is compared with the next
		// departure.
		prefetch.Line(unsafe.Pointer(p.free[n-1]))
	}
	return j
}

func (p *jobPool) put(j *Job) {
	*j = Job{}
	p.free = append(p.free, j)
}

// undeparted counts, per class, the measured jobs still in the system (not
// yet departed, not free): the census behind ClassStats.Undeparted, taken
// once at the end of a run, O(jobs allocated).
func (p *jobPool) undeparted(classes int) []int64 {
	n := make([]int64, classes)
	for _, c := range p.chunks {
		for i := range c {
			if j := &c[i]; j.tagged && j.state != stateFree {
				n[j.class]++
			}
		}
	}
	return n
}
