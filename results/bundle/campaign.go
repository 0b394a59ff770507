package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// checkCampaign checks that the archive's spec and manifest are those of
// the campaign format.json names, before either is used: the spec must
// expand to that campaign id (the id is the hash of the sweep the spec
// normalises), with the catalogue every reader plans it with (the
// built-in policies and the campaign's plugin pins, as `msjfarm report`
// has it: registry.ForCampaign), and the manifest must name that
// campaign and be no larger than a manifest of its points and tasks can
// be (manifestBound).
//
// Nothing covered the spec: an archive whose spec.yaml said replications
// 3 instead of 2 (the index rewritten to match) passed verify, which said
// OK; report then failed ("the stored spec expands to campaign …"), and
// import wrote the spec, manifest and results, exited 1, and left a
// campaign that results and reproduce failed on for good. A manifest
// naming another campaign passed every reader without a word.
func checkCampaign(ctx context.Context, st storage.Store, o *Opened) error {
	id := o.Format.Campaign
	specKey, manKey := storage.CampaignSpecKey(id), storage.ManifestKey(id)
	bad := func(key string, err error, format string, a ...any) error {
		return &Error{Archive: o.Path, Member: StorePrefix + key, Reason: fmt.Sprintf(format, a...), Err: err}
	}
	data, err := st.Get(ctx, specKey)
	if err != nil {
		return bad(specKey, err, "%v", err)
	}
	specSize := int64(len(data))
	if w := specWaste(data); w > maxSpecWaste {
		return bad(specKey, nil, "%d of its %d bytes are blank lines, comments, or runs of spaces that the YAML msjfarm writes has none of (at most %d, in a description's text): padded?", w, specSize, maxSpecWaste)
	}
	f, err := sweep.Parse(data, "yaml")
	data = nil
	if err != nil {
		return bad(specKey, err, "%v", err)
	}
	cat, err := registry.ForCampaign(ctx, st, id)
	if err != nil {
		return bad(protocol.PinsKey(id), err, "%v", err)
	}
	camp, err := sweep.Plan(f, cat)
	if err != nil {
		return bad(specKey, err, "does not expand here (%v): the campaign id it hashes to, which must be the archive's %s, cannot be checked", err, id)
	}
	if camp.ID != id {
		return bad(specKey, nil, "expands to campaign %s, not the archive's campaign %s: the spec is not the campaign's (edited, the index rewritten to match?), or it was written by a msjfarm that expands it otherwise", camp.ID, id)
	}
	if err := withinSpec(o, camp.File); err != nil {
		return err
	}
	info, err := st.Stat(ctx, manKey)
	if err != nil {
		return bad(manKey, err, "%v", err)
	}
	if bound := manifestBound(camp, specSize, len(o.Index.Members)); info.Size > bound {
		return bad(manKey, nil, "%d bytes, more than a manifest of this campaign (%d points, %d tasks, a spec of %d bytes, %d members) can take (%d): padded?",
			info.Size, camp.Points, camp.Len(), specSize, len(o.Index.Members), bound)
	}
	mdata, err := st.Get(ctx, manKey)
	if err != nil {
		return bad(manKey, err, "%v", err)
	}
	var man struct {
		Campaign string `json:"campaign"`
	}
	if err := json.Unmarshal(mdata, &man); err != nil {
		return bad(manKey, err, "%v", err)
	}
	if man.Campaign != id {
		return bad(manKey, nil, "names campaign %q, not the archive's campaign %s", man.Campaign, id)
	}
	return nil
}

// withinSpec checks the members whose limits the reader took from the
// manifest's sweep (campaignBounds) against the same limits from the
// campaign's spec f, which the campaign id pins: the manifest is covered
// by no checksum, and one whose sweep asked for a long time series made
// records padded to match pass every reader.
func withinSpec(o *Opened, f *sweep.File) error {
	b := campaignBounds{id: o.Format.Campaign, known: true, sweep: f}
	for _, e := range o.Index.Members {
		key, ok := strings.CutPrefix(e.Path, StorePrefix)
		if !ok {
			continue
		}
		max, what, refuse := b.limit(key)
		switch {
		case refuse != "":
			return &Error{Archive: o.Path, Member: e.Path, Reason: fmt.Sprintf("%d bytes, but by the campaign's spec %s", e.Size, refuse)}
		case max > 0 && e.Size > max:
			return &Error{Archive: o.Path, Member: e.Path, Reason: fmt.Sprintf("%d bytes, more than the limit of %d for %s by the campaign's spec (the manifest's sweep is not the spec's?): padded?", e.Size, max, what)}
		}
	}
	return nil
}

// manifestBound is the most bytes campaign c's manifest can take as a
// coordinator writes it (indented JSON): 64 KiB for its fixed fields and
// lists of policies, hosts and warnings; its sweep, as JSON at most four
// times its spec of specSize bytes; 2 KiB a point (its id in the point
// order, its precision outcome with its parameters and axis values); and
// 256 bytes a task (a version-1 manifest's seeds, about 170 bytes each),
// counting the archive's members besides the planned tasks for the
// replications precision mode added.
func manifestBound(c *sweep.Campaign, specSize int64, members int) int64 {
	return 64<<10 + 4*specSize + 2<<10*int64(c.Points) + 256*(int64(c.Len())+int64(members))
}

// maxSpecWaste bounds specWaste: the only such bytes a stored spec holds
// are in the text of its description (at most sweep.MaxDescriptionBytes,
// blank lines and runs of spaces included) and its few other strings.
const maxSpecWaste = 2*sweep.MaxDescriptionBytes + 64<<10

// specWaste counts the bytes of spec that the YAML msjfarm writes for a
// campaign's spec (coordinator.SpecYAML: a YAML encoder, indent 2) has
// none of, outside its strings: blank lines, comment lines, indentation
// past 64 columns, runs of more than one space or tab within a line,
// trailing whitespace and carriage returns, and everything after a
// document marker. It is counted before the spec is parsed: the spec's
// id pins its content but not its layout, and parsing spec.yaml padded
// with 120 MiB of newlines took 1.8 GB (with 1 GiB, `report` took 3.1
// GB and 72 s).
func specWaste(spec []byte) int64 {
	var waste int64
	for len(spec) > 0 {
		line := spec
		if i := bytes.IndexByte(spec, '\n'); i >= 0 {
			line, spec = spec[:i], spec[i+1:]
		} else {
			spec = nil
		}
		body := bytes.TrimLeft(line, " \t")
		indent := len(line) - len(body)
		trimmed := bytes.TrimRight(body, " \t\r")
		switch {
		case len(trimmed) == 0 || trimmed[0] == '#':
			waste += int64(len(line)) + 1
			continue
		case bytes.Equal(trimmed, []byte("---")) || bytes.Equal(trimmed, []byte("...")):
			return waste + int64(len(line)+1+len(spec))
		}
		if indent > 64 {
			waste += int64(indent - 64)
		}
		waste += int64(len(body) - len(trimmed))
		for i := 1; i < len(trimmed); i++ {
			if (trimmed[i] == ' ' || trimmed[i] == '\t') && (trimmed[i-1] == ' ' || trimmed[i-1] == '\t') {
				waste++
			}
		}
	}
	return waste
}
