package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/storage"
)

// findUnknown lists the campaigns the store holds as running (their
// manifest, written at the submission, says so and no finalisation or
// cancellation has rewritten it) that NATS does not know: their JetStream
// state was lost (a NATS volume recreated, a server wiped), or they run on
// another farm that shares this store. Such a campaign does not run here:
// a coordinator started on an empty NATS said nothing of it, `status`
// listed nothing, and its submitter's `submit --wait` found no campaign.
// They are logged and listed (Status.Elsewhere says what to do). The store
// is listed a level deep (storage.Children: one name per campaign, not
// one per result) and each candidate's manifest read once, at start.
func (co *Coordinator) findUnknown(ctx context.Context) {
	ids, err := storage.Children(ctx, co.o.Store, "campaigns/")
	if err != nil {
		if ctx.Err() == nil {
			co.o.Logf("coordinator: listing the store's campaigns for those NATS does not know: %v", err)
		}
		return
	}
	co.mu.Lock()
	todo := ids[:0:0]
	for _, id := range ids {
		if co.camps[id] == nil && co.elsewhere[id].ID == "" && co.bad[id].id == "" { // bad: listed already
			todo = append(todo, id)
		}
	}
	co.mu.Unlock()
	found := map[string]protocol.CampaignState{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range todo {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if st, ok := co.runningInStore(ctx, id); ok {
				mu.Lock()
				found[id] = st
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(found) == 0 {
		return
	}
	co.mu.Lock()
	if co.unknown == nil {
		co.unknown = map[string]protocol.CampaignState{}
	}
	n := 0
	for id, st := range found {
		if co.camps[id] != nil { // submitted meanwhile
			continue
		}
		co.unknown[id] = st
		if n++; n <= maxUnknownLogged {
			co.o.Logf("coordinator: campaign %s (%s) is running in the store (%d tasks, created %s) but NATS does not know it: %s",
				id, st.Name, st.Total, st.Created.Format("2006-01-02 15:04:05 MST"), unknownAdvice)
		}
	}
	co.mu.Unlock()
	if n > maxUnknownLogged {
		co.o.Logf("coordinator: %d more campaigns running in the store that NATS does not know (msjfarm status lists them)", n-maxUnknownLogged)
	}
}

// maxUnknownLogged bounds findUnknown's log lines.
const maxUnknownLogged = 20

// unknownAdvice is what findUnknown's campaigns say, in the log and
// their status.
const unknownAdvice = "its state on NATS is gone (JetStream's store lost or wiped), or it runs on another farm sharing this store; " +
	"it does not run here: submit its sweep again to finish it (its stored results are kept and not run again)"

// runningInStore reads campaign id's manifest: its state, if it says the
// campaign is running.
func (co *Coordinator) runningInStore(ctx context.Context, id string) (protocol.CampaignState, bool) {
	data, err := co.o.Store.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) && ctx.Err() == nil {
			co.o.Logf("coordinator: campaign %s in the store: reading its manifest: %v", id, err)
		}
		return protocol.CampaignState{}, false
	}
	var m archive.Manifest
	if json.Unmarshal(data, &m) != nil || m.State != protocol.CampaignRunning || m.Campaign != id {
		return protocol.CampaignState{}, false
	}
	return protocol.CampaignState{ID: id, Name: m.Name, State: protocol.CampaignRunning, Total: m.Tasks, Points: m.Points,
		Created: m.Created, Store: co.storeID}, true
}

// unknownStatus is the status of a campaign findUnknown found.
func unknownStatus(st protocol.CampaignState) protocol.Status {
	s := (&campaign{id: st.ID, st: st}).status()
	s.Elsewhere = fmt.Sprintf("in this coordinator's store but unknown to NATS: %s", unknownAdvice)
	return s
}
