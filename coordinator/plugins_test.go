package coordinator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/sweep"
)

// TestSubmitValidatesAgainstPins: a sweep naming a third-party policy is
// validated against the schema pinned with the submission, without any
// binary: a value outside it is refused (naming policy, parameter and
// bound) and nothing is written; a value inside it is accepted; without
// the pins the policy is unknown.
func TestSubmitValidatesAgainstPins(t *testing.T) {
	e := newEnv(t)
	co, _ := e.startCoordinator(protocol.Layout{})
	one := 1.0
	pins := map[string]protocol.PluginPin{"lcfs-fit": {Plugin: "lcfsfit", Version: "0.1.0", SHA256: strings.Repeat("cd", 32),
		Params: []sim.Param{{Name: "weight", Type: sim.Float, Default: 0.5, Min: new(float64), Max: &one}}}}
	f := loadSpec(t, "testdata/small.yaml")
	f.Policies = []any{map[string]any{"name": "lcfs-fit", "weight": 2.0}}
	_, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f, Pins: pins})
	if err == nil || !strings.Contains(err.Error(), "lcfs-fit") || !strings.Contains(err.Error(), `"weight"`) || !strings.Contains(err.Error(), "<= 1") {
		t.Fatalf("outside the pinned schema: %v", err)
	}
	if keys, _ := objectsWritten(e.store); len(keys) != 0 {
		t.Fatalf("stored %v", keys)
	}
	f.Policies = []any{map[string]any{"name": "lcfs-fit", "weight": 0.25}}
	if _, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f}); err == nil || !strings.Contains(err.Error(), `unknown policy "lcfs-fit"`) {
		t.Fatalf("without pins: %v", err)
	}
	// Pins the submitter did not store are refused: workers could not run
	// them.
	if _, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f, Pins: pins}); err == nil || !strings.Contains(err.Error(), "plugins.json") {
		t.Fatalf("unstored pins: %v", err)
	}
	camp, err := sweep.Expand(f, pinnedSchemas(pins))
	if err != nil {
		t.Fatal(err)
	}
	if err := protocol.WritePins(context.Background(), e.store, &protocol.Pins{Campaign: camp.ID, Policies: pins}); err != nil {
		t.Fatal(err)
	}
	rep, err := co.Submit(context.Background(), protocol.SubmitRequest{Spec: f, Pins: pins})
	if err != nil || rep.Tasks == 0 || rep.Campaign != camp.ID {
		t.Fatalf("inside the pinned schema: %+v %v", rep, err)
	}
}

// pinnedSchemas is a sweep.Catalog of pins' schemas, as the submitter's
// registry sees them.
type pinnedSchemas map[string]protocol.PluginPin

func (p pinnedSchemas) Schema(policy string) ([]sim.Param, error) {
	if pin, ok := p[policy]; ok {
		return pin.Params, nil
	}
	return nil, fmt.Errorf("unknown policy %q", policy)
}
