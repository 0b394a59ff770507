package coordinator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
)

// malformedLog is what the task-state bucket's malformed-message keys
// hold (protocol.MalformedKey): the task messages that did not decode, as
// the workers that terminated them recorded them. Anyone who holds the
// farm's NATS credentials may publish onto the task subjects; such a
// message was named in one worker's log and nowhere else. It is no more
// than those keys (at most protocol.MalformedSlots records, each clipped
// as it is read), so a flood costs bounded memory and status lines, and
// the bucket is replayed when the coordinator starts, so a restart
// forgets nothing the keys still hold. A record whose subject names a
// campaign this coordinator knows is listed in that campaign's status;
// the others under the list entry NoCampaign, which also gives the
// farm's total (the keys' counts: protocol.MalformedMsg.N).
type malformedLog struct {
	slots [protocol.MalformedSlots]*protocol.MalformedMsg
	// named are the campaigns whose status lists some
	// (spreadMalformedLocked), so that the next spread clears them.
	named map[string]bool
	// none are the lines of the records naming no known campaign (the
	// first maxRejected by sequence), noneN all of them; total is the
	// farm's count; kept is the number of records; first is the
	// earliest publication among them (the entry's Created).
	none        []string
	noneN, kept int
	total       int64
	first       time.Time
	seen        int // records taken while running, for the log's bound
}

// NoCampaign is the id under which status lists the malformed task
// messages whose subject names no campaign the coordinator knows (not a
// campaign id: those are 16 hex digits).
const NoCampaign = "no-campaign"

// StateMalformed is the state of the NoCampaign entry.
const StateMalformed = "malformed"

// maxMalformedLogged bounds the log lines of malformed messages: past it,
// one line at each power of two.
const maxMalformedLogged = 20

// malformedUpdate applies task-state entry e if its key is a
// malformed-message key (it reports whether it was): the slot takes the
// record, or is emptied by a delete or by a value that is not a record.
func (co *Coordinator) malformedUpdate(e jetstream.KeyValueEntry, ready bool) bool {
	slot, ok := protocol.MalformedSlot(e.Key())
	if !ok {
		return false
	}
	var rec *protocol.MalformedMsg
	if e.Operation() == jetstream.KeyValuePut {
		var m protocol.MalformedMsg
		if json.Unmarshal(e.Value(), &m) == nil && m.Seq > 0 {
			rec = boundMalformed(m)
		}
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	m := &co.malformed
	m.slots[slot] = rec
	co.spreadMalformedLocked()
	if rec == nil || !ready {
		return true
	}
	m.seen++
	if m.seen <= maxMalformedLogged || m.seen&(m.seen-1) == 0 {
		co.o.Logf("coordinator: a worker terminated a task message that does not decode (%d such messages on the farm so far; whoever published it holds the farm's NATS credentials): %s",
			m.total, malformedLine(rec))
	}
	return true
}

// boundMalformed is record m with its texts clipped and its counts in
// range: workers write it, and so may anyone on NATS.
func boundMalformed(m protocol.MalformedMsg) *protocol.MalformedMsg {
	m.Subject = termtext.Clip(m.Subject, protocol.MaxMalformedText)
	m.Error = termtext.Clip(m.Error, protocol.MaxMalformedText)
	m.Worker = termtext.Clip(m.Worker, protocol.MaxMalformedText)
	m.N = min(max(m.N, 1), protocol.MaxMalformedCount)
	m.Size = max(m.Size, 0)
	return &m
}

// malformedLine is how a status lists record r: where the message was,
// never what it held.
func malformedLine(r *protocol.MalformedMsg) string {
	what := "malformed task message"
	if strings.HasPrefix(r.Subject, protocol.VerifySubjectRoot+".") {
		what = "malformed or forged verification request" // a worker refuses both alike
	}
	return termtext.Clip(termtext.OneLine(fmt.Sprintf("%s %d on %s (%d bytes, published %s), terminated by worker %s: %s",
		what, r.Seq, r.Subject, r.Size, r.Published.UTC().Format(time.RFC3339), r.Worker, r.Error)), maxRefusalLine)
}

// spreadMalformedLocked hands the records out to the campaigns their
// subjects name and to the NoCampaign entry (co.mu held). It runs at each
// record and at each campaign's creation (adoptStrayLocked): a campaign
// submitted under an id a record named takes it.
func (co *Coordinator) spreadMalformedLocked() {
	m := &co.malformed
	for id := range m.named {
		if c := co.camps[id]; c != nil {
			c.malformed, c.malformedN = nil, 0
		}
	}
	clear(m.named)
	recs := make([]*protocol.MalformedMsg, 0, len(m.slots))
	for _, r := range m.slots {
		if r != nil {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b *protocol.MalformedMsg) int { return cmp.Compare(a.Seq, b.Seq) })
	m.none, m.noneN, m.kept, m.total, m.first = nil, 0, len(recs), 0, time.Time{}
	for _, r := range recs {
		m.total += r.N
		if at := r.Published; at.Year() > 1 && (m.first.IsZero() || at.Before(m.first)) {
			m.first = at.UTC()
		}
		lines, n := &m.none, &m.noneN
		if c := co.camps[protocol.SubjectCampaign(r.Subject)]; c != nil {
			if m.named == nil {
				m.named = map[string]bool{}
			}
			m.named[c.id] = true
			lines, n = &c.malformed, &c.malformedN
		}
		if len(*lines) < maxRejected {
			*lines = append(*lines, malformedLine(r))
		}
		*n++
	}
	if m.kept == 0 {
		delete(co.strays.camps, NoCampaign)
		return
	}
	if co.strays.camps == nil {
		co.strays.camps = map[string]*stray{}
	}
	sc := co.strays.camps[NoCampaign]
	if sc == nil {
		sc = &stray{first: time.Now().UTC()}
		co.strays.camps[NoCampaign] = sc
	}
	if m.first.IsZero() { // records that name no time (forged)
		m.first = sc.first
	}
}

// malformedStatusLocked is the NoCampaign entry's status (co.mu held).
func (co *Coordinator) malformedStatusLocked() protocol.Status {
	m := &co.malformed
	why := fmt.Sprintf("workers terminated %d task messages that do not decode (the latest %d kept; %d of these name no campaign this coordinator knows and are listed here, the others under their campaign). "+
		"Whoever published them holds the farm's NATS credentials", m.total, m.kept, m.noneN)
	return protocol.Status{Campaign: NoCampaign, State: StateMalformed, Created: m.first, Elsewhere: why,
		Malformed: append([]string(nil), m.none...), MalformedTotal: m.noneN}
}
