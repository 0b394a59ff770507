package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// refusedByEveryReader checks that verify and extract (import, report,
// reproduce) both refuse file with an error holding every one of want,
// and that nothing is left in TMPDIR (tmp, from isolate).
func refusedByEveryReader(t *testing.T, tmp, file string, want ...string) {
	t.Helper()
	_, verr := Verify(file, nil, Limits{})
	x, xerr := Extract(t.Context(), file, nil, Limits{})
	if x != nil {
		x.Close()
	}
	for _, err := range []error{verr, xerr} {
		if err == nil {
			t.Fatalf("accepted (verify: %v, extract: %v)", verr, xerr)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%v\nwant %q in it", err, w)
			}
		}
	}
	if left := scratch.Left(tmp); len(left) != 0 {
		t.Fatalf("left in TMPDIR: %v", left)
	}
}

// manifestOf is the index and decoded content of campaign id's manifest
// among ms.
func manifestOf(t *testing.T, ms []member, id string) (int, map[string]any) {
	t.Helper()
	i := find(ms, StorePrefix+storage.ManifestKey(id))
	var m map[string]any
	if err := json.Unmarshal(ms[i].data, &m); err != nil {
		t.Fatal(err)
	}
	return i, m
}

// sweepOf is the sweep of the committed campaign, from its spec.
func sweepOf(t *testing.T, ms []member, id string) *sweep.File {
	t.Helper()
	f, err := sweep.Parse(ms[find(ms, StorePrefix+storage.CampaignSpecKey(id))].data, "yaml")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// insertBefore is ms with m inserted before the member named name.
func insertBefore(ms []member, name string, m member) []member {
	at := find(ms, name)
	return append(ms[:at:at], append([]member{m}, ms[at:]...)...)
}

func hexSHA(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// TestCampaignMemberLimits: result records, counter descriptions and
// plugin binaries, whose honest size depends on the campaign, are
// refused from their tar header past the limit the campaign allows
// (campaignBounds), naming the member, its size and the limit. Before,
// each had only the 1 GiB of any member: a header declaring 900 MiB was
// read on (the archive ends after it here, so such a reader says
// "truncated"), and 64 of them made every reader hash 64 GiB and import
// extract it.
func TestCampaignMemberLimits(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	record, _ := recordBound(sweepOf(t, ms, id))
	if record < 4<<20 || record > 16<<20 {
		t.Fatalf("record bound %d of the committed campaign: not the few MiB its formula makes", record)
	}
	spec := StorePrefix + storage.CampaignSpecKey(id)
	plugin := StorePrefix + storage.PluginKey("pol", strings.Repeat("ab", 32))
	counters := StorePrefix + storage.CounterInfoKey(strings.Repeat("cd", 32))
	withExtra := insertBefore(insertBefore(ms, spec, reg(counters, []byte("[]"))), SubmittedMember, reg(plugin, []byte("x")))
	for _, c := range []struct {
		member string
		limit  int64
		what   string
	}{
		{ms[storedResult(t, ms)].hdr.Name, record, "for one replication's record of this campaign"},
		{ms[find(ms, StorePrefix+storage.ResultsPrefix(id))].hdr.Name, record, "for one replication's record of this campaign"},
		{counters, maxCounterInfo, "for a policy's counter descriptions"},
		{plugin, maxPluginBinary, "for a plugin binary"},
	} {
		for _, size := range []int64{c.limit + 1, 900 << 20} {
			t.Run(strings.TrimPrefix(c.member, StorePrefix)+"/"+itoa(int(size)), func(t *testing.T) {
				tmp := isolate(t)
				refusedByEveryReader(t, tmp, declaring(t, withExtra, c.member, size),
					"member "+c.member+": declares "+itoa(int(size))+" bytes, more than the limit of "+itoa(int(c.limit))+" "+c.what)
			})
		}
	}
	// A real body just over the limit, the index rewritten to match: the
	// same refusal, before the body is read (a stored result padded with
	// spaces is still JSON; the campaign's checksums would catch it only
	// after it was read, and only in a finished campaign).
	t.Run("real bodies", func(t *testing.T) {
		tmp := isolate(t)
		padded := readMembers(t, committed)
		i := storedResult(t, padded)
		padded[i].data = append(bytes.Clone(padded[i].data), bytes.Repeat([]byte(" "), int(record)+1-len(padded[i].data))...)
		refusedByEveryReader(t, tmp, writeMembers(t, reindex(t, padded)),
			"member "+padded[i].hdr.Name+": declares "+itoa(int(record)+1)+" bytes, more than the limit of "+itoa(int(record)))
		big := insertBefore(readMembers(t, committed), spec, reg(counters, bytes.Repeat([]byte(" "), maxCounterInfo+1)))
		refusedByEveryReader(t, tmp, writeMembers(t, reindex(t, big)),
			"member "+counters+": declares "+itoa(maxCounterInfo+1)+" bytes, more than the limit of "+itoa(maxCounterInfo))
	})
}

// TestTraceMemberLimit: a trace is the one the campaign's sweep pins,
// of the size it pins, or it is refused from its header. Before, a trace
// the campaign does not replay (its content matching its name) passed
// every reader, and one the sweep pins at 100 bytes could declare up to
// 1 GiB.
func TestTraceMemberLimit(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	t.Run("not the campaign's", func(t *testing.T) {
		tmp := isolate(t)
		body := []byte("1 0 1 5 2 -1 -1 2 -1 -1 1 -1 -1 -1 -1 -1 -1 -1\n")
		name := StorePrefix + storage.TraceKey(hexSHA(body))
		file := writeMembers(t, reindex(t, insertBefore(readMembers(t, committed), SubmittedMember, reg(name, body))))
		refusedByEveryReader(t, tmp, file, "member "+name+": declares "+itoa(len(body))+" bytes, but it is not the trace the campaign's sweep pins")
	})
	t.Run("larger than pinned", func(t *testing.T) {
		tmp := isolate(t)
		sum := strings.Repeat("ef", 32)
		name := StorePrefix + storage.TraceKey(sum)
		ms := readMembers(t, committed)
		i, m := manifestOf(t, ms, id)
		m["sweep"].(map[string]any)["trace"] = map[string]any{"sha256": sum, "size": 100}
		ms[i].data, _ = json.Marshal(m)
		ms = insertBefore(ms, SubmittedMember, reg(name, []byte("x")))
		refusedByEveryReader(t, tmp, declaring(t, ms, name, 512<<20),
			"member "+name+": declares 536870912 bytes, more than the limit of 100 for the trace the campaign's sweep pins")
	})
}

// TestRecordsAfterTheManifest: the manifest's sweep bounds the records,
// so a record before the manifest (export writes it first), or a
// manifest without a sweep, is refused. Before, the members' order was
// not checked but for the format's and the index's places.
func TestRecordsAfterTheManifest(t *testing.T) {
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	man := StorePrefix + storage.ManifestKey(id)
	first := ms[find(ms, StorePrefix+storage.ResultsPrefix(id))]
	t.Run("out of order", func(t *testing.T) {
		tmp := isolate(t)
		ms := readMembers(t, committed)
		i := find(ms, man)
		m := ms[i]
		ms = insertBefore(append(ms[:i:i], ms[i+1:]...), StorePrefix+storage.CampaignSpecKey(id), m)
		refusedByEveryReader(t, tmp, writeMembers(t, reindex(t, ms)),
			"member "+first.hdr.Name+": declares "+itoa(len(first.data))+" bytes, but it comes before the campaign's manifest.json")
	})
	t.Run("no sweep", func(t *testing.T) {
		tmp := isolate(t)
		ms := readMembers(t, committed)
		i, m := manifestOf(t, ms, id)
		delete(m, "sweep")
		ms[i].data, _ = json.Marshal(m)
		refusedByEveryReader(t, tmp, writeMembers(t, reindex(t, ms)),
			"member "+first.hdr.Name+": declares "+itoa(len(first.data))+` bytes, but the campaign's manifest.json records no sweep to bound it by (no "sweep" in it)`)
	})
}

// TestRecordsWithinSpec: the manifest is covered by no checksum, so a
// manifest whose sweep asks for a long time series raised the records'
// limit; the records are checked again against the spec's limit, which
// the campaign id pins.
func TestRecordsWithinSpec(t *testing.T) {
	tmp := isolate(t)
	ms := readMembers(t, committed)
	id := readFormat(t, ms).Campaign
	record, _ := recordBound(sweepOf(t, ms, id))
	i, m := manifestOf(t, ms, id)
	run := m["sweep"].(map[string]any)["run"].(map[string]any)
	run["series_interval"], run["series_max"] = 1, 1_000_000
	ms[i].data, _ = json.Marshal(m)
	j := storedResult(t, ms)
	ms[j].data = append(bytes.Clone(ms[j].data), bytes.Repeat([]byte(" "), int(record)+1-len(ms[j].data))...)
	refusedByEveryReader(t, tmp, writeMembers(t, reindex(t, ms)),
		"member "+ms[j].hdr.Name+": "+itoa(int(record)+1)+" bytes, more than the limit of "+itoa(int(record))+" for one replication's record of this campaign",
		"by the campaign's spec")
}

// TestExportRecordLimit: export applies the readers' record limit as it
// writes: a stored result past it (padded in the store) fails the
// export, naming the member and the limit, and leaves no archive, rather
// than making one that every reader refuses.
func TestExportRecordLimit(t *testing.T) {
	id, dst := imported(t)
	ms := readMembers(t, committed)
	record, _ := recordBound(sweepOf(t, ms, id))
	key := strings.TrimPrefix(ms[storedResult(t, ms)].hdr.Name, StorePrefix)
	data, err := dst.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Put(t.Context(), key, append(data, bytes.Repeat([]byte(" "), int(record)+1-len(data))...)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "a.msjar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = Export(t.Context(), dst, id, f, ExportOptions{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "member "+StorePrefix+key+": "+itoa(int(record)+1)+" bytes, more than the "+itoa(int(record))+" an archive reader accepts for one replication's record") {
		t.Fatalf("export: %v", err)
	}
}

// TestSweepCatcher: the sweep is taken from a manifest as it streams
// past, whitespace dropped (a manifest padded with it costs no memory),
// the last "sweep" key winning as for encoding/json, and keys and
// strings that only look like it ignored.
func TestSweepCatcher(t *testing.T) {
	pad := string(bytes.Repeat([]byte(" \n"), 1<<20))
	for _, c := range []struct {
		in, want string
	}{
		{`{"name":"a","sweep":{"name":"s1","replications":2,"policies":["fcfs"]},"x":1}`, "s1"},
		{`{"sweep":{"name":"s1"},` + pad + `"sweep"` + pad + `:` + pad + `{"name":"s2","axes":{"k":[1,2]}}` + pad + `}`, "s2"},
		{`{"note":"\"sweep\":{\"name\":\"no\"}","nested":{"sweep":{"name":"no"}},"sweep":{"name":"yes"}}`, "yes"},
		{`{"sweeps":{"name":"no"}}`, ""},
		{`{"sweep":null}`, ""},
	} {
		var sc sweepCatcher
		for _, b := range []byte(c.in) { // byte by byte: any split of the stream
			sc.Write([]byte{b})
		}
		f, why := sc.sweep()
		switch {
		case c.want == "" && f != nil:
			t.Errorf("%.60s: caught %+v", c.in, f)
		case c.want != "" && (f == nil || f.Name != c.want):
			t.Errorf("%.60s: caught %+v (%s), want %s", c.in, f, why, c.want)
		}
		if cap(sc.buf) > 1<<10 {
			t.Errorf("%.60s: kept %d bytes", c.in, cap(sc.buf))
		}
	}
}
