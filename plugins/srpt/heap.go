package srpt

import "github.com/msjfarm/msjfarm/sdk"

// less is the SRPT order: smaller remaining size (Job.Key) first, ties to the
// earlier arrival. Every policy of the package and SRPT-1 use it, so that
// they agree when they should (see TestNeedKIsSRPT1).
func less(a, b *sdk.Job) bool {
	return a.Key < b.Key || (a.Key == b.Key && a.ID() < b.ID())
}

// jobHeap is a binary min-heap of waiting jobs in the SRPT order. A waiting
// job's remaining size does not change, so its key (Job.Key) is set once
// when it starts waiting. Job.Idx holds its position.
type jobHeap struct {
	h []*sdk.Job
}

func (q *jobHeap) len() int { return len(q.h) }

func (q *jobHeap) top() *sdk.Job { return q.h[0] }

func (q *jobHeap) set(i int, j *sdk.Job) { q.h[i] = j; j.Idx = i }

func (q *jobHeap) push(j *sdk.Job) {
	q.h = append(q.h, j)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(j, q.h[p]) {
			break
		}
		q.set(i, q.h[p])
		i = p
	}
	q.set(i, j)
}

func (q *jobHeap) pop() *sdk.Job {
	top := q.h[0]
	last := len(q.h) - 1
	j := q.h[last]
	q.h[last] = nil
	q.h = q.h[:last]
	if last > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= last {
				break
			}
			if r := c + 1; r < last && less(q.h[r], q.h[c]) {
				c = r
			}
			if !less(q.h[c], j) {
				break
			}
			q.set(i, q.h[c])
			i = c
		}
		q.set(i, j)
	}
	return top
}

func (q *jobHeap) reset() {
	clear(q.h)
	q.h = q.h[:0]
}
