// Package jobring is a first-in first-out queue of jobs whose Push, Pop and
// Prefetch the compiler inlines into the caller, for the policies on the
// speed benchmarks (MSF and MSFQ, whose queue operations are a large part
// of their cost per event).
//
// sdk.FIFO, the queue the SDK offers policy authors, does the same job but
// its Pop is a call: it clears the vacated slot (a pointer store with a
// write barrier) and prefetches in the same body, which makes it too big to
// inline. Ring leaves the slot stale — it is never read before a push
// overwrites it, and the engine owns and pools the jobs, so a stale pointer
// keeps no memory alive — and leaves the prefetch to the caller, who knows
// whether its queues are long enough for one to pay.
package jobring

import (
	"unsafe"

	"github.com/msjfarm/msjfarm/internal/prefetch"
	"github.com/msjfarm/msjfarm/sim"
)

// Ring is the queue, on a ring buffer whose length is a power of two. The
// zero value is an empty ring.
type Ring struct {
	buf  []*sim.Job
	head int
	n    int
}

// Len is the number of queued jobs.
func (r *Ring) Len() int { return r.n }

// Reset empties the ring, keeping its buffer.
func (r *Ring) Reset() {
	clear(r.buf)
	r.head, r.n = 0, 0
}

// Push appends j at the back.
func (r *Ring) Push(j *sim.Job) {
	if r.n == len(r.buf) {
		// Grown here rather than in a call, which would make Push too
		// big to inline: appending the buffer to itself keeps every
		// job at its ring position under the doubled mask (those that
		// had wrapped round reappear right after the old end, where
		// the larger ring looks for them).
		r.buf = append(r.buf, r.buf...)
		if r.n == 0 {
			r.buf = make([]*sim.Job, 16)
		}
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = j
	r.n++
}

// Pop removes and returns the oldest job. The ring must not be empty.
func (r *Ring) Pop() *sim.Job {
	mask := len(r.buf) - 1
	j := r.buf[r.head&mask]
	r.head = (r.head + 1) & mask
	r.n--
	return j
}

// Prefetch starts fetching the cache line of the job that the ahead-th
// next Pop will return (0: the next one); ahead must be below Len. In a
// long queue the jobs at the front have waited behind the others and are
// likely cold, and they are the next ones a policy starts: fetching one a
// few pops early overlaps the miss with the events in between (see
// sdk.FIFO.Pop for the measurements behind three).
func (r *Ring) Prefetch(ahead int) {
	prefetch.Line(unsafe.Pointer(r.buf[(r.head+ahead)&(len(r.buf)-1)]))
}
