package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/termtext"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// A campaign's entry in the msjfarm_campaigns bucket is written by anyone
// who holds the farm's NATS credentials, the store's by the coordinator
// and the workers alone. An entry that did not decode made its campaign
// vanish at the next start (loadCampaigns logged a line and went on):
// status listed nothing, and a running campaign stopped for good. Such an
// entry is never trusted now: its campaign is rebuilt from what the store
// holds (the manifest written at its submission, and the sweep in it),
// or, when the store cannot say, listed with what to do (badStatus).

// checkState says what makes st, read from key, not a state of campaign
// key: an entry that decodes but names another campaign, an unknown
// state, counts that cannot be, a running campaign without a spec. Every
// field a resumed campaign takes from its state is checked; the counts a
// running one shows are recomputed from its tasks (expand).
func checkState(key string, st *protocol.CampaignState) error {
	switch {
	case !archive.IsCampaignID(key):
		return errors.New("its key is not a campaign id")
	case st.ID != key:
		return fmt.Errorf("it names campaign %.40q", st.ID)
	case st.State != protocol.CampaignRunning && st.State != protocol.CampaignDone && st.State != protocol.CampaignCancelled:
		return fmt.Errorf("its state %.40q is none of running, done, cancelled", st.State)
	case st.Total < 0 || st.Points < 0 || st.Done < 0 || st.Failed < 0 || st.Epoch < 0:
		return fmt.Errorf("it has negative counts (total %d, points %d, done %d, failed %d, epoch %d)", st.Total, st.Points, st.Done, st.Failed, st.Epoch)
	case int64(st.Total) > maxStateTasks || int64(st.Points) > maxStateTasks: // int64: int is 32 bits on 386 and arm
		return fmt.Errorf("it counts %d tasks and %d points, beyond any campaign", st.Total, st.Points)
	case st.Done > st.Total || st.Failed > st.Total-st.Done:
		return fmt.Errorf("it counts %d done and %d failed of %d tasks", st.Done, st.Failed, st.Total)
	case int64(st.Epoch) > maxEpoch:
		return fmt.Errorf("its epoch %d is beyond any count of publishing rounds", st.Epoch)
	case sweep.CheckVerify(st.Verify) != nil:
		return fmt.Errorf("its verify fraction %v is not in [0, 1]", st.Verify)
	case st.Store != "" && !storage.ValidID(st.Store):
		return fmt.Errorf("its store %.40q is not a store identity", st.Store)
	case st.State == protocol.CampaignRunning && st.Spec == nil && st.SpecKey == "":
		return errors.New("it is running but has neither a spec nor a spec key")
	}
	return nil
}

// maxStateTasks bounds a stored count of tasks or points: a campaign of
// 10^7 tasks already fills a coordinator's memory with their ids, so a
// count past 10^12 is not a campaign's.
const maxStateTasks = 1 << 40

// maxEpoch bounds a stored epoch: far beyond any number of publishing
// rounds, and beyond the clock epoch a rebuilt campaign starts from
// (epochAfterLoss), so that adding one never overflows.
const maxEpoch = 1 << 50

// epochAfterLoss is the epoch a campaign whose state was lost publishes
// from: its last epoch is unknown, and messages published again under an
// epoch already used within the stream's duplicate window would be
// dropped as duplicates. The clock in seconds is above any count of
// rounds a campaign made.
func epochAfterLoss() int { return int(time.Now().Unix()) }

// badState is a campaign whose entry does not decode or fails checkState,
// or could not be resumed from: its key, why, and when the NATS server
// says the entry was written (its status's Created: a zero time printed
// as year 1).
type badState struct {
	id, why string
	at      time.Time
	// noManifest: the store holds no manifest of it (crossCheck), so
	// there is nothing to rebuild it from.
	noManifest bool
}

// maxBadListed bounds the unreadable entries listed (Coordinator.bad):
// anyone on NATS may write keys without end; the rest are counted.
const maxBadListed = 20

// readState decodes and checks the entry of campaign key.
func readState(key string, value []byte) (protocol.CampaignState, error) {
	var st protocol.CampaignState
	if err := json.Unmarshal(value, &st); err != nil {
		return st, fmt.Errorf("it does not decode: %v", err)
	}
	if err := checkState(key, &st); err != nil {
		return st, err
	}
	return st, nil
}

// recoverStates rebuilds each campaign of bad (entries read at start that
// do not decode or check, or running campaigns that could not be
// resumed) from the store: a campaign whose manifest says it is running
// is submitted again with the sweep of its manifest and its stored plugin
// pins (the submission replaces the entry, and publishes exactly the
// tasks with neither a result nor a message, as for any resubmission); a
// finished or cancelled one gets its state back from its manifest. What
// cannot be rebuilt is listed (noteBad) and logged with what to do.
func (co *Coordinator) recoverStates(ctx context.Context, bad []badState) {
	for _, b := range bad {
		if ctx.Err() != nil {
			return
		}
		if b.noManifest {
			co.noteBad(b)
			continue
		}
		how, err := co.recoverState(ctx, b.id)
		if err != nil {
			b.why = fmt.Sprintf("%s; not rebuilt from the store: %v", b.why, err)
			co.noteBad(b)
			continue
		}
		co.o.Logf("coordinator: campaign %s: its entry in NATS's %s bucket was not usable (%s): %s", b.id, protocol.CampaignBucket, b.why, how)
	}
}

// recoverState rebuilds campaign id from its manifest (recoverStates)
// and says how.
func (co *Coordinator) recoverState(ctx context.Context, id string) (string, error) {
	if !archive.IsCampaignID(id) {
		return "", errors.New("the key is not a campaign id")
	}
	data, err := co.o.Store.Get(ctx, storage.ManifestKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return "", errors.New("the store holds no manifest of it")
	}
	if err != nil {
		return "", fmt.Errorf("reading its manifest: %w", err)
	}
	var m archive.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("its manifest does not decode: %w", err)
	}
	if m.Campaign != id {
		return "", fmt.Errorf("its manifest names campaign %.40q", m.Campaign)
	}
	switch m.State {
	case protocol.CampaignRunning:
		return co.resubmitStored(ctx, id, &m)
	case protocol.CampaignDone, protocol.CampaignCancelled:
		return co.restoreFinished(ctx, id, &m)
	}
	return "", fmt.Errorf("its manifest's state %.40q is none of running, done, cancelled", m.State)
}

// resubmitStored submits campaign id again with the sweep of its
// manifest m and its stored pins, from a new epoch (epochAfterLoss).
func (co *Coordinator) resubmitStored(ctx context.Context, id string, m *archive.Manifest) (string, error) {
	if m.Sweep == nil {
		return "", errors.New("its manifest holds no sweep")
	}
	req := protocol.SubmitRequest{Spec: m.Sweep}
	pins, err := protocol.ReadPins(ctx, co.o.Store, id)
	if err != nil {
		return "", err
	}
	if pins != nil {
		req.Pins = pins.Policies
	}
	if m.Verify != nil {
		req.Verify = *m.Verify // checked by validate, as a submission's
	}
	specKey, camp, err := co.validate(ctx, &req)
	if err != nil {
		return "", fmt.Errorf("its stored sweep: %w", err)
	}
	if camp.ID != id {
		return "", fmt.Errorf("its stored sweep now expands to campaign %s (another msjfarm version?)", camp.ID)
	}
	c, created := co.campaignFor(camp)
	co.mu.Lock()
	c.st.Epoch = max(c.st.Epoch, epochAfterLoss())
	co.mu.Unlock()
	rep, err := co.submitCampaign(ctx, c, req, camp, specKey)
	if err != nil {
		if created && !co.stateReadable(ctx, id) {
			co.mu.Lock()
			if co.camps[id] == c && c.submitting == 0 {
				delete(co.camps, id)
			}
			co.mu.Unlock()
		}
		return "", err
	}
	verify := "a spot-verification fraction given with --verify was in the lost entry only (its manifest predates recording it): submit it again with --verify to verify it"
	if m.Verify != nil {
		verify = fmt.Sprintf("spot verification %g, as its manifest records", req.Verify)
	}
	return fmt.Sprintf("resumed from its manifest in the store (%d tasks, %d with a result, %d published, %d already queued; %s)",
		rep.Tasks, rep.AlreadyDone, rep.Published, rep.Queued, verify), nil
}

// stateReadable reports whether campaign id's entry now decodes and checks.
func (co *Coordinator) stateReadable(ctx context.Context, id string) bool {
	e, err := co.h.Campaigns.Get(ctx, id)
	if err != nil {
		return false
	}
	_, err = readState(id, e.Value())
	return err == nil
}

// restoreFinished gives finished campaign id its state back from its
// manifest m, in memory and in the bucket.
func (co *Coordinator) restoreFinished(ctx context.Context, id string, m *archive.Manifest) (string, error) {
	st := protocol.CampaignState{ID: id, Name: m.Name, State: m.State, Total: m.Tasks, Points: m.Points,
		Created: m.Created, Finished: m.Finished, Done: m.Done, Failed: m.Failed, Store: co.storeID}
	if m.Verify != nil {
		st.Verify = *m.Verify
	}
	if err := checkState(id, &st); err != nil {
		return "", fmt.Errorf("its manifest: %w", err)
	}
	c := &campaign{id: id, st: st, finished: make(chan struct{})}
	c.close()
	co.mu.Lock()
	if co.camps[id] != nil { // submitted meanwhile
		co.mu.Unlock()
		return "submitted meanwhile", nil
	}
	co.camps[id] = c
	co.adoptStrayLocked(c)
	co.mu.Unlock()
	if err := co.putState(ctx, c); err != nil {
		return "", fmt.Errorf("writing its state back: %w", err)
	}
	how := fmt.Sprintf("its state (%s, %d of %d tasks done) rebuilt from its manifest in the store", st.State, st.Done, st.Total)
	// A coordinator stopped while finalising writes the manifest, then
	// the report, then the entry: an entry still running beside a done
	// manifest may have a report never published, which resuming the
	// campaign used to write again. Only the marker is looked at (the
	// report itself may be a hundred megabytes).
	if st.State == protocol.CampaignDone {
		if _, err := co.o.Store.Stat(ctx, storage.ReportMarkerKey(id)); errors.Is(err, storage.ErrNotFound) {
			how += fmt.Sprintf("; its report was never published whole: `msjfarm report %s` writes it", id)
		}
	}
	return how, nil
}

// noteBad lists campaign id as unreadable (the first maxBadListed; the
// rest are counted) and logs it.
func (co *Coordinator) noteBad(b badState) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.camps[b.id] != nil {
		return
	}
	if co.bad == nil {
		co.bad = map[string]badState{}
	}
	if _, ok := co.bad[b.id]; !ok && len(co.bad) >= maxBadListed {
		co.badMore++
		if co.badMore&(co.badMore-1) == 0 { // 1, 2, 4, …: a flood logs a few lines
			co.o.Logf("coordinator: %d more unusable entries in NATS's %s bucket, not listed", co.badMore, protocol.CampaignBucket)
		}
		return
	}
	co.bad[b.id] = b
	co.o.Logf("coordinator: campaign %s: %s", termtext.OneLine(b.id), badAdvice(b.why))
}

// badAdvice is what an unusable entry's campaign says, in the log and
// its status.
func badAdvice(why string) string {
	return fmt.Sprintf("its entry in NATS's %s bucket is not usable (%s): it does not run here. "+
		"Someone with the farm's NATS credentials, or a damaged NATS store, wrote it. "+
		"If it is one of your campaigns, submit its sweep again: it runs on, its stored results kept and not run again, and the entry is replaced",
		protocol.CampaignBucket, termtext.Clip(termtext.OneLine(why), 400))
}

// badStatus is the status of a campaign whose entry is unusable.
func badStatus(b badState) protocol.Status {
	return protocol.Status{Campaign: b.id, State: StateUnreadable, Created: b.at, Elsewhere: badAdvice(b.why)}
}

// StateUnreadable is the state status reports for a campaign whose
// entry in the campaigns bucket is not usable and that was not rebuilt.
const StateUnreadable = "unreadable"

// badListLocked lists the unusable entries not submitted since (co.mu
// held), and one line for those not listed.
func (co *Coordinator) badListLocked() []protocol.Status {
	var out []protocol.Status
	for id, b := range co.bad {
		if co.camps[id] == nil {
			out = append(out, badStatus(b))
		}
	}
	if co.badMore > 0 {
		for i := range out {
			out[i].Elsewhere += fmt.Sprintf(" (%d more unusable entries in the bucket are not listed)", co.badMore)
		}
	}
	return out
}
