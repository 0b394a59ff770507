package coordinator

import (
	"fmt"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
)

// strayRefusals are the task messages workers refused (StateRejected)
// that name a campaign this coordinator does not know: published before
// the campaign's submission, or forged under any campaign id by someone
// who may publish on the task subjects. A refusal is listed in its
// campaign's status; these were listed nowhere, and a worker's log was
// the only sign that someone publishes forged work onto the farm. They
// are kept in memory only (the workers' task states in NATS are their
// record, replayed at each start), bounded against a flood: the first
// maxRejected refusals of each of maxStrayCampaigns campaigns, each line
// clipped, and counts of the rest. A campaign submitted under one of
// these ids takes its refusals into its own status (adoptStrayLocked).
type strayRefusals struct {
	camps map[string]*stray
	// others counts the refusals naming further campaigns, not kept;
	// total counts them all (for the log's bound).
	others, total int
}

// stray is the refusals naming one unknown campaign.
type stray struct {
	lines []string // the first maxRejected
	n     int
	// first is when the coordinator saw the first (its status's
	// Created: a zero time printed as year 1).
	first time.Time
}

// maxStrayCampaigns bounds the unknown campaigns whose refusals are kept.
const maxStrayCampaigns = 10

// maxStrayLogged bounds the log lines of refusals naming unknown
// campaigns: past it, one line at each power of two.
const maxStrayLogged = 20

// maxRefusalLine bounds one refusal's line: its worker name and reason
// are read from a task state anyone on NATS may write.
const maxRefusalLine = 1000

// refusalLine is how a status lists the refusal of task's message.
func refusalLine(task string, st protocol.TaskState) string {
	return termtext.Clip(termtext.OneLine(fmt.Sprintf("task %s: refused by %s: %s", task, st.Worker, st.Error)), maxRefusalLine)
}

// noteStrayLocked records the refusal st of task tid's message naming
// campaign cid, which the coordinator does not know (co.mu held), and
// logs it once the task states are replayed (ready).
func (co *Coordinator) noteStrayLocked(cid, tid string, st protocol.TaskState, ready bool) {
	s := &co.strays
	s.total++
	if ready && (s.total <= maxStrayLogged || s.total&(s.total-1) == 0) {
		co.o.Logf("coordinator: a worker refused a task message naming campaign %s, which this coordinator does not know (forged, or published before the campaign's submission; %d such refusals so far): %s",
			termtext.OneLine(cid), s.total, refusalLine(tid, st))
	}
	sc := s.camps[cid]
	if sc == nil || cid == NoCampaign {
		// NoCampaign is no campaign id: its entry is the malformed
		// messages' (malformed.go), not counted among the ids kept.
		kept := len(s.camps)
		if s.camps[NoCampaign] != nil {
			kept--
		}
		if kept >= maxStrayCampaigns || cid == NoCampaign {
			s.others++
			return
		}
		if s.camps == nil {
			s.camps = map[string]*stray{}
		}
		sc = &stray{first: time.Now().UTC()}
		s.camps[cid] = sc
	}
	if len(sc.lines) < maxRejected {
		sc.lines = append(sc.lines, refusalLine(tid, st))
	}
	sc.n++
}

// adoptStrayLocked moves the refusals naming c, kept while it was
// unknown, into its status, and the malformed messages whose subject
// names it (co.mu held).
func (co *Coordinator) adoptStrayLocked(c *campaign) {
	co.spreadMalformedLocked()
	sc := co.strays.camps[c.id]
	if sc == nil {
		return
	}
	delete(co.strays.camps, c.id)
	lines := append(append([]string(nil), sc.lines...), c.rejected...)
	c.rejected = lines[:min(len(lines), maxRejected)]
	c.rejectedN += sc.n
}

// StateUnknown is the state status reports for a campaign id the
// coordinator does not know but that refused task messages named.
const StateUnknown = "unknown"

// strayStatusLocked is the status of unknown campaign id whose refusals
// sc lists (co.mu held), or the entry of malformed messages naming no
// campaign (NoCampaign, malformed.go), kept among the strays so that
// status and its list find it.
func (co *Coordinator) strayStatusLocked(id string, sc *stray) protocol.Status {
	if id == NoCampaign {
		return co.malformedStatusLocked()
	}
	why := fmt.Sprintf("not a campaign this coordinator knows: workers refused %d task messages naming it (forged, or published before the campaign was submitted; none ran). "+
		"Whoever published them holds the farm's NATS credentials. A campaign submitted under this id lists them in its status", sc.n)
	if o := co.strays.others; o > 0 {
		why += fmt.Sprintf(" (%d more refused messages name other unknown campaigns, not listed)", o)
	}
	return protocol.Status{Campaign: id, State: StateUnknown, Created: sc.first, Elsewhere: why,
		Rejected: append([]string(nil), sc.lines...), RejectedTotal: sc.n}
}
