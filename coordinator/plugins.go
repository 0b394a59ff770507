package coordinator

import (
	"context"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
)

// pluginPins reads the campaign's pins for the manifest. Whoever submits
// a campaign with plugin runners pins it first (worker.PinPlugins: the
// binaries go to storage.PluginKey, the pins to protocol.PinsKey), so the
// coordinator only records them; nil when the campaign has none (it runs
// in-process) or they cannot be read (the results' provenance still names
// each binary's sha256).
func (co *Coordinator) pluginPins(ctx context.Context, id string) archive.PluginPins {
	p, err := protocol.ReadPins(ctx, co.o.Store, id)
	if err != nil {
		co.o.Logf("coordinator: plugin pins of %s: %v", id, err)
		return nil
	}
	if p == nil {
		return nil
	}
	return p.Policies
}
