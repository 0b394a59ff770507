package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/registry"
)

// declaring is the members of ms up to the one named name, whose header
// declares size bytes, and nothing after it: a reader must refuse the
// member from its header, before reading a byte of it (the archive ends
// there, so a reader that read on would say "truncated" instead).
func declaring(t *testing.T, ms []member, name string, size int64) string {
	t.Helper()
	var plain bytes.Buffer
	tw := tar.NewWriter(&plain)
	for _, m := range ms {
		h := m.hdr
		if h.Name == name {
			h.Size = size
			if err := tw.WriteHeader(&h); err != nil {
				t.Fatal(err)
			}
			break
		}
		h.Size = int64(len(m.data))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	z, _ := zstd.NewWriter(&buf)
	z.Write(plain.Bytes())
	z.Close()
	return writeFile(t, buf.Bytes())
}

// TestMemberLimits: the members a reader loads into memory whole are
// refused from their header past a limit an honest campaign keeps within
// (memberLimit), naming the member and the limit. A manifest padded with
// 1 GiB of spaces (valid JSON, covered by no checksum) made verify take
// 1.07 GB and import 14.5 GB; a spec padded with newlines made report
// take 3.1 GB.
func TestMemberLimits(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	for _, c := range []struct {
		key   string
		limit int64
	}{
		{StorePrefix + storage.ManifestKey(id), MaxManifest},
		{StorePrefix + storage.CampaignSpecKey(id), MaxSpec},
		{StorePrefix + storage.CampaignPrefix(id) + "layout", maxCampaignSmall},
		{SubmittedMember, sweep.MaxFileSize},
		{ProvenanceMember, maxDescription},
	} {
		t.Run(c.key, func(t *testing.T) {
			file := declaring(t, ms, c.key, c.limit+1)
			want := "more than the limit of " + itoa(int(c.limit))
			if _, err := Verify(file, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "member "+c.key+": declares") || !strings.Contains(err.Error(), want) {
				t.Fatalf("verify: %v", err)
			}
			if x, err := Extract(t.Context(), file, nil, Limits{}); err == nil || !strings.Contains(err.Error(), want) {
				if x != nil {
					x.Close()
				}
				t.Fatalf("extract: %v", err)
			}
		})
	}
	// Export keeps within them: a spec over its limit is refused as it is
	// written (memberWriter.fits).
	if !memberOver(StorePrefix+storage.CampaignSpecKey(id), MaxSpec+1) || memberOver(StorePrefix+storage.CampaignSpecKey(id), MaxSpec) ||
		memberOver(StorePrefix+storage.StoredResultKey("0123456789abcdef0123456789abcdef"), 1<<30) {
		t.Fatal("memberOver")
	}
}

// TestPaddedManifest: a manifest within MaxManifest but larger than a
// manifest of its campaign's points and tasks can be (manifestBound) is
// refused before it is parsed, by verify and by every reader.
func TestPaddedManifest(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	i := find(ms, StorePrefix+storage.ManifestKey(id))
	ms[i].data = append(bytes.Clone(ms[i].data), bytes.Repeat([]byte(" "), 4<<20)...)
	file := writeMembers(t, reindex(t, ms))
	for _, f := range []func() error{
		func() error { _, err := Verify(file, nil, Limits{}); return err },
		func() error {
			x, err := Extract(t.Context(), file, nil, Limits{})
			if x != nil {
				x.Close()
			}
			return err
		},
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "manifest.json: 4196") || !strings.Contains(err.Error(), "padded?") {
			t.Fatalf("padded manifest: %v", err)
		}
	}
}

// TestSpecIsTheCampaigns: an archive whose spec does not expand to its
// campaign, or whose manifest names another, is refused by verify and by
// every reader (Extract: import, report, reproduce), naming the member.
// Verify said OK to both; import of the first wrote the campaign and
// failed, leaving it unreadable for good.
func TestSpecIsTheCampaigns(t *testing.T) {
	orig := readMembers(t, committed)
	id := readFormat(t, orig).Campaign
	spec, man := StorePrefix+storage.CampaignSpecKey(id), StorePrefix+storage.ManifestKey(id)
	for _, c := range []struct {
		name, member, want string
		edit               func([]byte) []byte
	}{
		{"replications", spec, "expands to campaign ", func(b []byte) []byte {
			return bytes.Replace(b, []byte("replications: 2"), []byte("replications: 3"), 1)
		}},
		{"name", spec, "expands to campaign ", func(b []byte) []byte {
			return bytes.Replace(b, []byte("name: small"), []byte("name: other"), 1)
		}},
		{"unplannable", spec, "does not expand here", func(b []byte) []byte {
			return bytes.Replace(b, []byte("replications: 2"), []byte("replications: 0"), 1)
		}},
		{"padded", spec, "1048576 of its 1048734 bytes are blank lines, comments, or runs of spaces", func(b []byte) []byte {
			// Still the campaign's spec (its id pins its content, not its
			// layout), but no msjfarm writes it so.
			return append(bytes.Clone(b), bytes.Repeat([]byte("\n"), 1<<20)...)
		}},
		{"manifest", man, `names campaign "1ed465688f7eab18", not the archive's campaign ` + id, func(b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m["campaign"] = "1ed465688f7eab18"
			out, _ := json.Marshal(m)
			return out
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := readMembers(t, committed)
			i := find(ms, c.member)
			was := ms[i].data
			if ms[i].data = c.edit(ms[i].data); bytes.Equal(was, ms[i].data) {
				t.Fatal("nothing edited")
			}
			file := writeMembers(t, reindex(t, ms))
			if _, err := Verify(file, nil, Limits{}); err == nil || !strings.Contains(err.Error(), "member "+c.member+": "+c.want) {
				t.Fatalf("verify: %v", err)
			}
			x, err := Extract(t.Context(), file, nil, Limits{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				if x != nil {
					x.Close()
				}
				t.Fatalf("extract: %v", err)
			}
		})
	}
}

// TestDerivedNotExtracted: the campaign's report, summary and precision
// table, which every reader rebuilds from the records, are checked
// against the index and dropped, not extracted: four 1 GiB report plots
// of zeros (a 159 KB archive) made `report FILE` write 4 GB to $TMPDIR.
func TestDerivedNotExtracted(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	at := find(ms, SubmittedMember)
	var plots []member
	for _, n := range []string{"p0.png", "p1.png", "index.html"} {
		plots = append(plots, reg(StorePrefix+storage.ReportPrefix(id)+n, make([]byte, 8<<20)))
	}
	ms = append(ms[:at:at], append(plots, ms[at:]...)...)
	file := writeMembers(t, reindex(t, ms))
	x, err := Extract(context.Background(), file, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Derived != 4 { // the three and summary.csv
		t.Fatalf("%d derived members counted, want 4", x.Derived)
	}
	if keys, _ := x.Store.List(t.Context(), storage.ReportPrefix(id)); len(keys) != 0 {
		t.Fatalf("extracted: %v", keys)
	}
	var size int64
	filepath.Walk(x.Dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	if size > 1<<20 {
		t.Fatalf("%d bytes extracted", size)
	}
	// Dropped, but not unchecked: an edited plot is still a member that
	// differs from the index.
	i := find(ms, StorePrefix+storage.ReportPrefix(id)+"p1.png")
	ms[i].data = append(bytes.Clone(ms[i].data[:100]), 1)
	if _, err := Extract(t.Context(), writeMembers(t, ms), nil, Limits{}); err == nil || !strings.Contains(err.Error(), "p1.png") {
		t.Fatalf("an edited report plot: %v", err)
	}
}

// TestSpecWasteHonest: the specs msjfarm writes (coordinator.SpecYAML) of
// every example sweep, and of one whose description has blank lines and
// runs of spaces, are within maxSpecWaste; padding is not.
func TestSpecWasteHonest(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	loaded := 0
	for _, file := range files {
		f, err := sweep.Load(file)
		if err != nil {
			continue // a profile-only or limit file
		}
		loaded++
		spec, err := coordinator.SpecYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		if w := specWaste(spec); w > 64 {
			t.Errorf("%s: its spec counts %d bytes of padding:\n%s", file, w, spec)
		}
	}
	if loaded < len(files)/2 {
		t.Fatalf("%d of %d examples loaded", loaded, len(files))
	}
	desc := strings.Repeat("a paragraph  with   runs of spaces,\n\n    an indented line\n\n", 600)
	f, err := sweep.Parse([]byte("name: d\ndescription: "+strconv.Quote(desc)+"\nseed: 1\nworkload: one-or-all\naxes: {arrival_rate: [2]}\npolicies: [fcfs]\nreplications: 2\nrun: {arrivals: 100}\n"), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := coordinator.SpecYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	if w := specWaste(spec); w == 0 || w > int64(len(desc)) {
		t.Errorf("a description of %d bytes counts %d bytes of padding", len(desc), w)
	}
	for _, pad := range []string{"\n", "# c\n", "   \n", "x:      1\n"} {
		if w := specWaste(append(bytes.Clone(spec), strings.Repeat(pad, maxSpecWaste)...)); w <= maxSpecWaste {
			t.Errorf("padded with %q: %d", pad, w)
		}
	}
}

// TestSpecOfAPinnedPlugin: a campaign of a third-party policy expands
// against the parameter schema its pins store (plugins.json), as report
// plans it, with no plugin binary: its archive is the campaign's. Without
// the pins, the spec does not expand here, and the archive is refused
// rather than taken unchecked.
func TestSpecOfAPinnedPlugin(t *testing.T) {
	ctx := t.Context()
	spec := []byte("name: third\nseed: 3\nworkload: one-or-all\naxes:\n  arrival_rate:\n    - 2\npolicies:\n  - name: randomfit\n    tries: [2, 4]\nreplications: 2\nrun:\n  arrivals: 100\n")
	f, err := sweep.Parse(spec, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	pins := &protocol.Pins{Policies: map[string]protocol.PluginPin{"randomfit": {Plugin: "randomfit", Version: "1.0.0", Engine: "0.6.0",
		SHA256: strings.Repeat("ab", 32), Params: []sim.Param{{Name: "tries", Type: sim.Int, Default: 1}}}}}
	camp, err := sweep.Plan(f, registry.New(ctx, registry.Options{Pins: pins}))
	if err != nil {
		t.Fatal(err)
	}
	pins.Campaign = camp.ID
	st, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := &Opened{Path: "third.msjar", Format: Format{Campaign: camp.ID}}
	if err := st.Put(ctx, storage.CampaignSpecKey(camp.ID), spec); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, storage.ManifestKey(camp.ID), []byte(`{"campaign": "`+camp.ID+`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := checkCampaign(ctx, st, o); err == nil || !strings.Contains(err.Error(), "spec.yaml: does not expand here") {
		t.Fatalf("without its pins: %v", err)
	}
	if err := protocol.WritePins(ctx, st, pins); err != nil {
		t.Fatal(err)
	}
	if err := checkCampaign(ctx, st, o); err != nil {
		t.Fatalf("with its pins: %v", err)
	}
}
