package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
)

// queuedSet is the set of a campaign's tasks that have a message in the
// stream, read by reconcile before storage. A campaign held in full
// (up to fullTasks tasks, or a precision campaign) keeps it as a map of
// task ids; a compact one as one bit per task position (1.25 MB for 10^7
// tasks), filled from the stream's subjects a page at a time: the map of
// every queued subject that jetstream's StreamInfo builds holds about 100
// bytes per queued message, a gigabyte for a fresh 10^7-task campaign,
// every reconcile.
type queuedSet struct {
	m    map[string]bool
	bits []uint64
	tl   *taskList
}

// has reports whether task tid, at position i of the task list, is queued.
func (q *queuedSet) has(i int, tid string) bool {
	if q.bits != nil {
		return q.bits[i/64]&(1<<(i%64)) != 0
	}
	return q.m[tid]
}

func (q *queuedSet) add(tid string) {
	if q.bits == nil {
		q.m[tid] = true
		return
	}
	if i, ok := q.tl.Index(tid); ok {
		q.bits[i/64] |= 1 << (i % 64)
	}
}

// queuedTasks reads which of c's tasks have a message in the stream.
func (co *Coordinator) queuedTasks(ctx context.Context, c *campaign) (*queuedSet, error) {
	co.mu.Lock()
	tl := c.tl
	compact := tl.full == nil && tl.ids != nil
	n := tl.Len()
	co.mu.Unlock()
	filter := protocol.CampaignFilter(c.id)
	if !compact {
		info, err := co.h.Tasks.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return nil, fmt.Errorf("stream info: %w", err)
		}
		q := &queuedSet{m: make(map[string]bool, len(info.State.Subjects))}
		for subj := range info.State.Subjects {
			if _, tid, ok := protocol.ParseTaskSubject(subj); ok {
				q.add(tid)
			}
		}
		return q, nil
	}
	q := &queuedSet{bits: make([]uint64, (n+63)/64), tl: tl}
	err := co.eachQueuedSubject(ctx, filter, func(subj string) {
		if _, tid, ok := protocol.ParseTaskSubject(subj); ok {
			q.add(tid)
		}
	})
	return q, err
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
