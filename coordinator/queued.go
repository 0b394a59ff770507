package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// taskSet is a set of a campaign's tasks: the tasks with a message in
// the stream (queuedTasks), with a result in storage (storedTasks), done.
// A campaign held in full (up to fullTasks tasks, or a precision
// campaign, whose sets also hold replications not yet in its list) keeps
// it as a map of task ids; a compact one as one bit per task position
// (1.25 MB for 10^7 tasks) and a count: a map holds about 100 bytes per
// task, a gigabyte for 10^7 tasks (the map of every queued subject that
// jetstream's StreamInfo builds is one such).
type taskSet struct {
	m    map[string]bool
	bits []uint64
	n    int // members in bit mode
	tl   *taskList
}

// newTaskSet is an empty set of tl's tasks.
func newTaskSet(tl *taskList) *taskSet {
	if tl.ids == nil {
		return &taskSet{m: map[string]bool{}, tl: tl}
	}
	return &taskSet{bits: make([]uint64, (tl.Len()+63)/64), tl: tl}
}

// hasAt reports whether task tid, at position i of the task list, is in
// the set.
func (s *taskSet) hasAt(i int, tid string) bool {
	if s.bits != nil {
		return s.bits[i/64]&(1<<(i%64)) != 0
	}
	return s.m[tid]
}

// has reports whether task tid is in the set.
func (s *taskSet) has(tid string) bool {
	if s.bits == nil {
		return s.m[tid]
	}
	i, ok := s.tl.Index(tid)
	return ok && s.hasAt(i, tid)
}

// add adds tid (in bit mode, only a task of the list).
func (s *taskSet) add(tid string) {
	if s.bits == nil {
		s.m[tid] = true
		return
	}
	if i, ok := s.tl.Index(tid); ok && !s.hasAt(i, tid) {
		s.bits[i/64] |= 1 << (i % 64)
		s.n++
	}
}

// del removes tid.
func (s *taskSet) del(tid string) {
	if s.bits == nil {
		delete(s.m, tid)
		return
	}
	if i, ok := s.tl.Index(tid); ok && s.hasAt(i, tid) {
		s.bits[i/64] &^= 1 << (i % 64)
		s.n--
	}
}

// delAt removes task tid, at position i of the task list.
func (s *taskSet) delAt(i int, tid string) {
	if s.bits == nil {
		delete(s.m, tid)
		return
	}
	if s.hasAt(i, tid) {
		s.bits[i/64] &^= 1 << (i % 64)
		s.n--
	}
}

// len is the number of tasks in the set.
func (s *taskSet) len() int {
	if s.bits == nil {
		return len(s.m)
	}
	return s.n
}

// each calls fn with every task of the set (in bit mode, by position).
func (s *taskSet) each(fn func(tid string)) {
	if s.bits == nil {
		for tid := range s.m {
			fn(tid)
		}
		return
	}
	for w, word := range s.bits {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			fn(s.tl.ID(w*64 + b))
		}
	}
}

// queuedTasks reads which of c's tasks have a message in the stream.
func (co *Coordinator) queuedTasks(ctx context.Context, c *campaign) (*taskSet, error) {
	co.mu.Lock()
	tl := c.tl
	co.mu.Unlock()
	q := newTaskSet(tl)
	filter := protocol.CampaignFilter(c.id)
	if q.bits == nil {
		info, err := co.h.Tasks.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return nil, fmt.Errorf("stream info: %w", err)
		}
		for subj := range info.State.Subjects {
			if _, tid, ok := protocol.ParseTaskSubject(subj); ok {
				q.add(tid)
			}
		}
		return q, nil
	}
	err := co.eachQueuedSubject(ctx, filter, func(subj string) {
		if _, tid, ok := protocol.ParseTaskSubject(subj); ok {
			q.add(tid)
		}
	})
	return q, err
}

// storedTasks reads which of c's tasks have a result in storage.
func (co *Coordinator) storedTasks(ctx context.Context, c *campaign) (*taskSet, error) {
	co.mu.Lock()
	tl := c.tl
	co.mu.Unlock()
	// The keys are walked a page at a time, not listed: a list of every
	// result key is ~100 bytes a result, 100 MB on a 10^6-task campaign,
	// where the set is a bit a task.
	s := newTaskSet(tl)
	err := storage.Walk(ctx, co.o.Store, storage.ResultsPrefix(c.id), func(k string) error {
		if tid, ok := storage.ResultTaskID(c.id, k); ok {
			s.add(tid)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// pageTimeout bounds the wait for one page of the stream's subjects.
const pageTimeout = time.Minute

// streamInfoPage is the part of the JetStream API's paged stream-info
// response read here ($JS.API.STREAM.INFO.<stream> with subjects_filter).
type streamInfoPage struct {
	Total  int `json:"total"`
	Offset int `json:"offset"`
	State  struct {
		Subjects map[string]uint64 `json:"subjects"`
	} `json:"state"`
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// eachQueuedSubject calls fn with the subject of every message of the task
// stream that matches filter, one page of the server's answer at a time
// (the server's page is at most 100,000 subjects), so that only one page
// is ever held. As with jetstream's StreamInfo, which pages the same way,
// a page read while messages are acked may shift the next: a subject
// missed is a task published again, which its worker finds stored.
func (co *Coordinator) eachQueuedSubject(ctx context.Context, filter string, fn func(string)) error {
	subject := "$JS.API.STREAM.INFO." + protocol.TaskStream
	for offset := 0; ; {
		req, err := json.Marshal(map[string]any{"subjects_filter": filter, "offset": offset})
		if err != nil {
			return err
		}
		// A page of 10^5 subjects took the server 2.5–3.3 s on a loaded
		// 2-core machine: jetstream's 5-s API timeout failed the
		// reconcile of a 3·10^5-task campaign (BenchmarkSubmitScale).
		pctx, cancel := context.WithTimeout(ctx, pageTimeout)
		msg, err := co.o.Conn.RequestWithContext(pctx, subject, req)
		cancel()
		if err != nil {
			return fmt.Errorf("stream info: %w", err)
		}
		var page streamInfoPage
		if err := json.Unmarshal(msg.Data, &page); err != nil {
			return fmt.Errorf("stream info: %w", err)
		}
		if page.Error != nil {
			return fmt.Errorf("stream info: %s (%d)", page.Error.Description, page.Error.Code)
		}
		for subj := range page.State.Subjects {
			fn(subj)
		}
		got := len(page.State.Subjects)
		if got == 0 || offset+got >= page.Total {
			return nil
		}
		offset += got
		if ctx.Err() != nil {
			return errors.Join(errors.New("stream info interrupted"), ctx.Err())
		}
	}
}
