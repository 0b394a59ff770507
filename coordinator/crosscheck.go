package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
)

// An entry of the msjfarm_campaigns bucket that decodes and passes
// checkState may still lie: anyone with the farm's NATS credentials can
// flip a running campaign's state to done (it is never finished, its
// results never summarised), a finished one to running (it is finalised
// again), a cancelled one to running (the work its owner cancelled is
// published again). Such an entry was trusted at start. Each entry's
// state is now checked against the campaign's manifest in the store,
// which only the coordinator and the workers write; where they disagree
// the store is trusted: the entry is handled as an unusable one
// (recoverStates rebuilds the campaign from its manifest and logs why).

// An entry whose campaign has no manifest in the store is not trusted
// either: a submission writes the manifest before the entry that says the
// campaign runs (storeCampaign), so no submission of this coordinator
// left one. It was taken as it was: a forged running entry with a spec had
// its tasks published, a forged done one was listed done. It is now
// listed unreadable (noManifestWhy), and nothing of it runs. Entries of
// another store are not checked: their manifests are there. A finished
// or cancelled one was listed with its own counts and name as if
// trusted, so that a forged entry naming a made-up store showed any
// numbers: its status now says they are not checked (otherStoreNote).
//
// A done entry's counts, name and times are compared with its manifest's
// too (finalisation writes both from the same state): a forged one showed
// its own numbers in status.
//
// So are a cancelled entry's counts and name: a forged one showed made-up
// counts. A cancel records the counts of its task list in the entry and
// the manifest alike, so a cancelled campaign of this version agrees with
// its manifest; one cancelled by an older coordinator may not (its entry
// kept its submission's zeros, its manifest counted at its own writing).
// Such an entry is not declared unusable: its counts and name are taken
// from the manifest, the entry written back, and a line logged
// (recountCancelled), so that a genuine one is corrected once.

// manifestReads bounds the manifest reads of the start's cross-check in
// flight at once: one read per campaign, so that 10^4 campaigns cost
// 10^4 reads of which eight wait on the store at a time, and the memory
// is eight manifests however many entries there are.
const manifestReads = 8

// manifestState is what the cross-check decodes of a manifest; the rest
// (its sweep and point order, megabytes for a large campaign) is dropped
// with the bytes as soon as they are decoded.
type manifestState struct {
	Campaign string    `json:"campaign"`
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Finished time.Time `json:"finished"`
	Tasks    int       `json:"tasks"`
	Points   int       `json:"points"`
	Done     int       `json:"done"`
	Failed   int       `json:"failed"`
	Verify   *float64  `json:"verify"`
}

// distrust is why an entry is not to be trusted ("": it is), and whether
// that is because the store holds no manifest of its campaign (nothing to
// rebuild it from: recoverStates lists it without reading again).
type distrust struct {
	why        string
	noManifest bool
	// recount is the manifest of a cancelled entry whose counts or name
	// are not its manifest's (cancelledDiffers): the entry is corrected
	// from it (recounted), not distrusted.
	recount *manifestState
}

// noManifestWhy is why an entry whose campaign has no manifest in the
// store is not trusted.
const noManifestWhy = "no manifest in the store, which a submission writes before the entry: no submission wrote this entry, " +
	"or a coordinator older than this one stopped half-way through one"

// crossCheck reads the manifest of each campaign of sts (entries that
// decode and check) and says, per entry, why it is not to be trusted
// (disagreement): a zero distrust when it agrees with its manifest or
// cannot be compared (a manifest that cannot be read, a campaign of
// another store). At most manifestReads reads are in flight; the answers
// are one per entry, empty but for the entries that lie.
func (co *Coordinator) crossCheck(ctx context.Context, sts []protocol.CampaignState) []distrust {
	why := make([]distrust, len(sts))
	var failed atomic.Int64
	var firstErr atomic.Value
	sem := make(chan struct{}, manifestReads)
	var wg sync.WaitGroup
	for i := range sts {
		if ctx.Err() != nil {
			break
		}
		if st := &sts[i]; st.Store != "" && st.Store != co.storeID {
			continue // its manifest is in the other store
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			w, err := co.disagreement(ctx, &sts[i])
			if err != nil {
				if failed.Add(1) == 1 {
					firstErr.Store(fmt.Sprintf("campaign %s: %v", sts[i].ID, err))
				}
				return
			}
			why[i] = w
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 && ctx.Err() == nil {
		// One line however many: a store that fails every read would
		// otherwise log one per campaign.
		co.o.Logf("coordinator: %d campaigns' entries in NATS's %s bucket could not be checked against their manifests in the store, and are trusted as they are (first: %s)",
			n, protocol.CampaignBucket, firstErr.Load())
	}
	return why
}

// distrustLater is why entry st, written since the start (Status), is
// not to be trusted, as crossCheck says at start; nil when it is, or
// cannot be compared (a campaign of another store, a manifest that
// cannot be read: logged). A cancelled entry whose counts or name are
// not its manifest's gets the manifest's (recounted), in st only: the
// entry is written back at the next start.
func (co *Coordinator) distrustLater(ctx context.Context, st *protocol.CampaignState) error {
	if st.Store != "" && st.Store != co.storeID {
		return nil
	}
	d, err := co.disagreement(ctx, st)
	if err != nil {
		if ctx.Err() == nil {
			co.o.Logf("coordinator: campaign %s: its entry in NATS's %s bucket could not be checked against its manifest in the store, and is shown as it is: %v",
				st.ID, protocol.CampaignBucket, err)
		}
		return nil
	}
	if d.why != "" {
		return errors.New(d.why)
	}
	if d.recount != nil {
		fixed, err := recounted(st, d.recount)
		if err != nil {
			return err
		}
		*st = fixed
	}
	return nil
}

// cancelledDiffers says how cancelled entry st's counts and name differ
// from those its cancelled manifest m records ("": they do not, or either
// is not cancelled).
func cancelledDiffers(st *protocol.CampaignState, m *manifestState) string {
	if st.State != protocol.CampaignCancelled || m.State != protocol.CampaignCancelled ||
		st.Total == m.Tasks && st.Points == m.Points && st.Done == m.Done && st.Failed == m.Failed && st.Name == m.Name {
		return ""
	}
	return fmt.Sprintf("it counts %d done and %d failed of %d tasks in %d points, named %.40q, but its manifest in the store records %d done and %d failed of %d tasks in %d points, named %.40q",
		st.Done, st.Failed, st.Total, st.Points, st.Name, m.Done, m.Failed, m.Tasks, m.Points, m.Name)
}

// recounted is cancelled entry st with the counts and name of its
// manifest m; an error when they are no campaign's (checkState): the
// store itself is then not to be believed, and the entry is handled as
// one that disagrees with it.
func recounted(st *protocol.CampaignState, m *manifestState) (protocol.CampaignState, error) {
	fixed := *st
	fixed.Total, fixed.Points, fixed.Done, fixed.Failed, fixed.Name = m.Tasks, m.Points, m.Done, m.Failed, m.Name
	if err := checkState(st.ID, &fixed); err != nil {
		return *st, fmt.Errorf("%s, which are no campaign's: %v", cancelledDiffers(st, m), err)
	}
	return fixed, nil
}

// recountCancelled gives cancelled entry st, read at start, the counts
// and name of its manifest m and logs what it said (the caller writes
// the entry back); false, with why, when the manifest's are no
// campaign's.
func (co *Coordinator) recountCancelled(st *protocol.CampaignState, m *manifestState) (why string, ok bool) {
	fixed, err := recounted(st, m)
	if err != nil {
		return err.Error(), false
	}
	co.o.Logf("coordinator: campaign %s: its cancelled entry in NATS's %s bucket %s: corrected from the manifest "+
		"(a coordinator older than this one did not record a cancelled campaign's counts in its entry; else someone with the farm's NATS credentials wrote them)",
		st.ID, protocol.CampaignBucket, strings.TrimPrefix(cancelledDiffers(st, m), "it "))
	*st = fixed
	return "", true
}

// readManifestState reads and decodes campaign id's manifest
// (storage.ErrNotFound: there is none).
func (co *Coordinator) readManifestState(ctx context.Context, id string) (*manifestState, error) {
	data, err := co.o.Store.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		return nil, err
	}
	var m manifestState
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("its manifest does not decode: %w", err)
	}
	if m.Campaign != id {
		return nil, fmt.Errorf("its manifest names campaign %.40q", m.Campaign)
	}
	return &m, nil
}

// disagreement reads st's manifest and says why st is not to be trusted:
// it disagrees with its manifest, or there is none.
func (co *Coordinator) disagreement(ctx context.Context, st *protocol.CampaignState) (distrust, error) {
	m, err := co.readManifestState(ctx, st.ID)
	if errors.Is(err, storage.ErrNotFound) {
		return distrust{why: noManifestWhy, noManifest: true}, nil
	}
	if err != nil {
		return distrust{}, fmt.Errorf("reading its manifest: %w", err)
	}
	why := stateDisagreement(st, m)
	if why == "" && cancelledDiffers(st, m) != "" {
		return distrust{recount: m}, nil
	}
	if why != "" && st.State == protocol.CampaignRunning && m.State == protocol.CampaignDone {
		// Finalisation writes the manifest, then the report, then the
		// entry: a coordinator stopped between them leaves this pair with
		// the report's marker missing, and resuming the campaign (as the
		// entry says) finalises it again and publishes the report, which
		// is what it did before the cross-check. A liar gains nothing by
		// it: finalising again changes no result. With the marker there,
		// the campaign was finalised whole, and the entry is the liar.
		if _, err := co.o.Store.Stat(ctx, storage.ReportMarkerKey(st.ID)); errors.Is(err, storage.ErrNotFound) {
			return distrust{}, nil
		} else if err != nil {
			return distrust{}, fmt.Errorf("reading its report's marker: %w", err)
		}
	}
	return distrust{why: why}, nil
}

// stateDisagreement says why entry st is not what manifest m records ("":
// it is). Not disagreements: a manifest whose state is none of the three
// (nothing to trust instead), and a cancelled entry whose manifest says
// running but was written before the cancellation (Cancel writes the
// entry before the manifest, and anyone on NATS may cancel a campaign
// through the API: such an entry gives nobody a power they lack). A
// running manifest written after the cancellation is a resubmission's:
// a submission writes the manifest before the entry (storeCampaign), so a
// coordinator stopped between them leaves a finished entry beside a
// running manifest, and the store wins: the submission is completed.
func stateDisagreement(st *protocol.CampaignState, m *manifestState) string {
	switch {
	case m.State == st.State:
		return sameStateDisagreement(st, m)
	case st.State == protocol.CampaignCancelled && m.State == protocol.CampaignRunning &&
		(st.Finished.IsZero() || !m.Updated.After(st.Finished)):
		return ""
	case m.State != protocol.CampaignRunning && m.State != protocol.CampaignDone && m.State != protocol.CampaignCancelled:
		return ""
	}
	why := fmt.Sprintf("it says %s but its manifest in the store says %s", st.State, m.State)
	switch {
	case st.State == protocol.CampaignRunning:
		why += " (a coordinator older than this one, stopped while the campaign was submitted again, also leaves this: if so, submit it again)"
	case m.State == protocol.CampaignRunning:
		why += " (a coordinator stopped while the campaign was submitted again also leaves this: it runs on as submitted)"
	}
	return why
}

// sameStateDisagreement says why entry st, whose state is manifest m's,
// is not what m records: a running one's verification fraction, a done
// one's counts, name and times (finalisation writes the manifest and the
// entry from one state). A cancelled entry's counts and name are compared
// apart (cancelledDiffers): where they differ the entry is corrected, not
// distrusted.
func sameStateDisagreement(st *protocol.CampaignState, m *manifestState) string {
	switch st.State {
	case protocol.CampaignRunning:
		if m.Verify != nil && *m.Verify != st.Verify {
			return fmt.Sprintf("its spot-verification fraction %g is not the %g its manifest in the store records", st.Verify, *m.Verify)
		}
	case protocol.CampaignDone:
		if st.Total != m.Tasks || st.Points != m.Points || st.Done != m.Done || st.Failed != m.Failed {
			return fmt.Sprintf("it counts %d done and %d failed of %d tasks in %d points, but its manifest in the store records %d done and %d failed of %d tasks in %d points",
				st.Done, st.Failed, st.Total, st.Points, m.Done, m.Failed, m.Tasks, m.Points)
		}
		if st.Name != m.Name || !st.Created.Equal(m.Created) || !st.Finished.Equal(m.Finished) {
			return fmt.Sprintf("its name %.40q, creation %s and end %s are not the %.40q, %s and %s its manifest in the store records",
				st.Name, st.Created.Format(time.RFC3339), st.Finished.Format(time.RFC3339), m.Name, m.Created.Format(time.RFC3339), m.Finished.Format(time.RFC3339))
		}
	}
	return ""
}
