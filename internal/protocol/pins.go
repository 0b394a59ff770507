package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

// Plugin pins are farm contract, not worker internals: whoever submits a
// campaign with plugin runners writes them (worker.PinPlugins, called by
// msjfarm submit and run), every worker reads them to run exactly the
// pinned binaries, and the coordinator copies them into the campaign
// manifest. They live in storage rather than in a KV bucket because the
// binaries they name do (storage.PluginKey) and an archived campaign must
// keep them without NATS. This package is the one both the worker and the
// coordinator import, so the coordinator does not import the worker.

// PluginPin is the binary a campaign pins for one policy.
type PluginPin struct {
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
	Engine  string `json:"engine"`
	SHA256  string `json:"sha256"`
	// Key is where the binary is in storage (storage.PluginKey).
	Key string `json:"key"`
	// Params and Reference are the policy's entry in the binary's Info
	// (its parameter schema; a reference model takes none), stored beside
	// the pin so that the coordinator validates a campaign's sweep against
	// the pinned binary without executing it. Empty in pins written before
	// they carried schemas.
	Params    []sim.Param `json:"params,omitempty"`
	Reference bool        `json:"reference,omitempty"`
}

// Pins is campaigns/<id>/plugins.json: the plugin binary of each policy of
// a campaign run with plugins. Workers run exactly these binaries,
// fetching them from storage when theirs differ.
type Pins struct {
	Campaign string               `json:"campaign"`
	Policies map[string]PluginPin `json:"policies"`
}

// PinsKey is the storage key of a campaign's Pins.
func PinsKey(campaign string) string { return storage.CampaignPrefix(campaign) + "plugins.json" }

// ReadPins returns a campaign's pins (nil, nil if it has none).
func ReadPins(ctx context.Context, st storage.Store, campaign string) (*Pins, error) {
	data, err := st.Get(ctx, PinsKey(campaign))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Pins
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", PinsKey(campaign), err)
	}
	return &p, nil
}

// WritePins stores p at PinsKey(p.Campaign), replacing what was there.
func WritePins(ctx context.Context, st storage.Store, p *Pins) error {
	if p.Campaign == "" {
		return errors.New("pins: campaign is empty")
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return st.Put(ctx, PinsKey(p.Campaign), append(data, '\n'))
}
