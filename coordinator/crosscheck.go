package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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

// manifestReads bounds the manifest reads of the start's cross-check in
// flight at once: one read per campaign, so that 10^4 campaigns cost
// 10^4 reads of which eight wait on the store at a time, and the memory
// is eight manifests however many entries there are.
const manifestReads = 8

// manifestState is what the cross-check decodes of a manifest; the rest
// (its sweep and point order, megabytes for a large campaign) is dropped
// with the bytes as soon as they are decoded.
type manifestState struct {
	Campaign string   `json:"campaign"`
	State    string   `json:"state"`
	Verify   *float64 `json:"verify"`
}

// crossCheck reads the manifest of each campaign of sts (entries that
// decode and check) and says, per entry, why it is not to be trusted:
// "" when it agrees with its manifest or there is nothing to compare it
// with (no manifest, one that cannot be read, a campaign of another
// store). At most manifestReads reads are in flight; the answers are one
// string per entry, empty but for the entries that lie.
func (co *Coordinator) crossCheck(ctx context.Context, sts []protocol.CampaignState) []string {
	why := make([]string, len(sts))
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

// disagreement reads st's manifest and says why st disagrees with it
// ("" when it does not, or there is no manifest: a campaign whose
// coordinator stopped before it wrote one, or a key the store knows
// nothing of, whose entry can only be taken as it is).
func (co *Coordinator) disagreement(ctx context.Context, st *protocol.CampaignState) (string, error) {
	data, err := co.o.Store.Get(ctx, storage.ManifestKey(st.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading its manifest: %w", err)
	}
	var m manifestState
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("its manifest does not decode: %w", err)
	}
	if m.Campaign != st.ID {
		return "", fmt.Errorf("its manifest names campaign %.40q", m.Campaign)
	}
	why := stateDisagreement(st, &m)
	if why != "" && st.State == protocol.CampaignRunning && m.State == protocol.CampaignDone {
		// Finalisation writes the manifest, then the report, then the
		// entry: a coordinator stopped between them leaves this pair with
		// the report's marker missing, and resuming the campaign (as the
		// entry says) finalises it again and publishes the report, which
		// is what it did before the cross-check. A liar gains nothing by
		// it: finalising again changes no result. With the marker there,
		// the campaign was finalised whole, and the entry is the liar.
		if _, err := co.o.Store.Stat(ctx, storage.ReportMarkerKey(st.ID)); errors.Is(err, storage.ErrNotFound) {
			return "", nil
		} else if err != nil {
			return "", fmt.Errorf("reading its report's marker: %w", err)
		}
	}
	return why, nil
}

// stateDisagreement says why entry st is not what manifest m records ("":
// it is). Two cases are not disagreements: a cancelled entry whose
// manifest says running (Cancel writes the entry before the manifest, and
// anyone on NATS may cancel a campaign through the API: such an entry
// gives nobody a power they lack), and a manifest whose state is none of
// the three (nothing to trust instead). A running entry whose manifest
// says finished is also what a coordinator stopped between a
// resubmission's entry and its manifest leaves (the manifest comes once
// the task list is generated): trusting the store, that submission is
// lost, and the reason says to submit again.
func stateDisagreement(st *protocol.CampaignState, m *manifestState) string {
	switch {
	case m.State == st.State:
		if st.State == protocol.CampaignRunning && m.Verify != nil && *m.Verify != st.Verify {
			return fmt.Sprintf("its spot-verification fraction %g is not the %g its manifest in the store records", st.Verify, *m.Verify)
		}
		return ""
	case st.State == protocol.CampaignCancelled && m.State == protocol.CampaignRunning:
		return ""
	case m.State != protocol.CampaignRunning && m.State != protocol.CampaignDone && m.State != protocol.CampaignCancelled:
		return ""
	}
	why := fmt.Sprintf("it says %s but its manifest in the store says %s", st.State, m.State)
	if st.State == protocol.CampaignRunning {
		why += " (a campaign submitted again just before the coordinator stopped also leaves this: if so, submit it again)"
	}
	return why
}
