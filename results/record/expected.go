package record

import (
	"context"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// ExpectedImpls resolves the code each policy of campaign id is expected
// to run with: the pinned plugin binary (plugins.json), else the built-in
// policies of this engine. Policies missing from the map are built-in.
// The coordinator keys the stored results it reuses with it, and a worker
// checks a task message's result key against it.
func ExpectedImpls(ctx context.Context, st storage.Store, id string) (map[string]Impl, error) {
	pins, err := protocol.ReadPins(ctx, st, id)
	if err != nil {
		return nil, err
	}
	out := map[string]Impl{}
	if pins != nil {
		for pol, p := range pins.Policies {
			out[pol] = Plugin(p.Engine, p.SHA256)
		}
	}
	return out, nil
}

// ExpectedKey is the content key of t's result under impls
// (ExpectedImpls).
func ExpectedKey(impls map[string]Impl, t sweep.Task) string {
	im, ok := impls[t.Policy]
	if !ok {
		im = Builtin()
	}
	return Key(t.ID, im)
}
