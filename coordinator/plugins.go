package coordinator

import (
	"context"
	"fmt"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
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

// catalog is the catalogue a campaign with these pins is validated
// against: the pinned policies with their stored schemas, then
// Options.Catalog.
func (co *Coordinator) catalog(pins map[string]protocol.PluginPin) sweep.Catalog {
	if len(pins) == 0 {
		return co.o.Catalog
	}
	return pinnedCatalog{pins: registry.New(context.Background(), registry.Options{Pins: &protocol.Pins{Policies: pins}}), next: co.o.Catalog}
}

// pinnedCatalog answers pinned policies from the pins and the rest from
// next.
type pinnedCatalog struct {
	pins *registry.Registry
	next sweep.Catalog
}

// CheckWorkload tries an unpinned policy on the workload through next
// (sweep.WorkloadChecker); a pinned plugin is checked by its schema only.
func (c pinnedCatalog) CheckWorkload(policy string, params map[string]any, w *sim.Workload) error {
	if e, err := c.pins.Lookup(policy); err == nil && e.Source == registry.Pinned {
		return nil
	}
	if wc, ok := c.next.(sweep.WorkloadChecker); ok {
		return wc.CheckWorkload(policy, params, w)
	}
	return nil
}

func (c pinnedCatalog) Schema(policy string) ([]sim.Param, error) {
	if e, err := c.pins.Lookup(policy); err == nil && e.Source == registry.Pinned {
		return e.Params, nil
	}
	return c.next.Schema(policy)
}

// checkPins refuses a submission whose pins are not the ones stored for
// its campaign: workers run what plugins.json says, so a sweep validated
// against other schemas (or against pins that were never written) would
// run code it was not checked against.
func (co *Coordinator) checkPins(ctx context.Context, id string, pins map[string]protocol.PluginPin) error {
	if len(pins) == 0 {
		return nil
	}
	stored, err := protocol.ReadPins(ctx, co.o.Store, id)
	if err != nil {
		return err
	}
	for pol, p := range pins {
		var s protocol.PluginPin
		ok := stored != nil
		if ok {
			s, ok = stored.Policies[pol]
		}
		if !ok {
			return fmt.Errorf("policy %s: the submission pins %s sha256 %.12s, but %s does not (pin before submitting: msjfarm submit does)", pol, p.Plugin, p.SHA256, protocol.PinsKey(id))
		}
		if s.SHA256 != p.SHA256 {
			return fmt.Errorf("policy %s: the submission pins sha256 %.12s, %s pins %.12s", pol, p.SHA256, protocol.PinsKey(id), s.SHA256)
		}
	}
	return nil
}
