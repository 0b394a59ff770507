package bundle

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/msjfarm/msjfarm/internal/wire"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker/resultcheck"
)

// Per-member limits of the members a reader loads into memory whole, from
// what an honest campaign can hold, checked from a member's tar header
// before any of its bytes are read (admit), and by export as it writes
// (fits). Without them a member was bounded only by MaxMember (1 GiB):
// manifest.json padded with 1 GiB of spaces (valid JSON, covered by no
// checksum), a 49 KB archive, made `archive import` take 14.5 GB and 75 s
// and write 3 GB into the store; spec.yaml padded with 1 GiB of newlines
// made `report` take 3.1 GB.
const (
	// MaxSpec bounds a campaign's spec.yaml, the normalised sweep: a
	// sweep file is at most sweep.MaxFileSize, and its block-style
	// normal form at most about 1.7 times its flow-style lists.
	MaxSpec = 2 * sweep.MaxFileSize
	// MaxManifest bounds a campaign's manifest.json: its sweep (as JSON,
	// at most twice the spec), and per-point and per-task lists (the point
	// order, the precision outcome of each point, a version-1 manifest's
	// seeds, about 170 bytes a task) of a campaign an archive can hold
	// (2·10^6 replications). Once the spec is read, manifestBound holds a
	// manifest to what its own campaign's points and tasks can make.
	MaxManifest = 2*MaxSpec + 256<<20
	// maxCampaignSmall bounds a campaign's layout and plugins.json (its
	// NATS layout and plugin pins: a few kilobytes).
	maxCampaignSmall = 16 << 20
)

// memberLimit is the size limit of the member name, and what it is (0
// when the member has only MaxMember): the members every reader loads
// into memory whole.
func memberLimit(name string) (int64, string) {
	switch name {
	case FormatMember, SignatureMember:
		return maxFormat, "this member"
	case ProvenanceMember, ROCrateMember, CitationMember:
		return maxDescription, "this member (export writes a few kilobytes)"
	case SubmittedMember:
		return sweep.MaxFileSize, "the sweep file as submitted (a sweep file's limit)"
	}
	key, ok := strings.CutPrefix(name, StorePrefix)
	if !ok {
		return 0, ""
	}
	rest, ok := strings.CutPrefix(key, "campaigns/")
	if !ok {
		return 0, ""
	}
	id, tail, ok := strings.Cut(rest, "/")
	if !ok || key != storage.CampaignPrefix(id)+tail {
		return 0, ""
	}
	switch tail {
	case "spec.yaml":
		return MaxSpec, "a campaign's spec (the normalised sweep file, whose limit is " + sizeText(sweep.MaxFileSize) + ")"
	case "manifest.json":
		return MaxManifest, "a campaign's manifest (its sweep and per-point lists)"
	case "layout", "plugins.json":
		return maxCampaignSmall, "this campaign object (a few kilobytes)"
	}
	return 0, ""
}

// sizeText is n bytes in MiB when whole.
func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// memberOver: size is past name's limit (memberLimit).
func memberOver(name string, size int64) bool {
	max, _ := memberLimit(name)
	return max > 0 && size > max
}

// Limits of the members whose honest size depends on the campaign:
// result records, counter descriptions, plugin binaries and traces. Each
// is checked from the member's tar header, from what the reader has read
// before it (campaignBounds): without them such a member had only
// MaxMember (1 GiB), so that an archive of 64 "result records" of 1 GiB
// each (zeros, megabytes compressed) could make every reader hash them and
// `import` extract them, up to the 64 GiB of the archive's limit.
const (
	// maxPluginBinary bounds a plugin binary. Its pin (plugins.json)
	// records its sha256, not its size, so the limit is fixed: a policy
	// plugin is a Go binary of tens of megabytes (msjfarm's own are about
	// 20 MB: plugins/balanced), and 512 MiB is far above any.
	maxPluginBinary = 512 << 20
	// maxCounterInfo bounds a policy's counter descriptions
	// (counters/<sha256>.json): at most wire.MaxCounters of them, each of
	// a name, label, unit and doc of bounded length, under 1 KiB as JSON
	// even in four-byte characters.
	maxCounterInfo = 1 << 20
	// maxSweepJSON bounds the sweep a reader takes from the manifest as
	// it streams past (sweepCatcher): the manifest's own limit allows its
	// sweep twice the spec's (MaxManifest).
	maxSweepJSON = 2 * MaxSpec
	// maxFamilyClasses bounds the classes of a named workload family (the
	// built-in ones have 4 to 7); minTraceLine is the shortest line of a
	// trace in its canonical SWF form (18 fields and their separators), so
	// that a trace of S bytes has at most S/minTraceLine classes, one per
	// distinct need.
	maxFamilyClasses = 64
	minTraceLine     = 36
	// recordSlack is what a record holds besides its result, its task and
	// its classes: provenance (a few hundred bytes), an error text (a
	// failure's, which travels in a task state through NATS, whose
	// default payload limit is 1 MiB), and inline counter descriptions
	// (maxCounterInfo).
	recordSlack = 2 << 20
)

// recordBound is the most bytes one replication's record of a campaign
// of sweep f can take, and what it is made of. An honest record is its
// task (the point's parameters, axis values and run settings, all from
// the sweep: at most four times the sweep as JSON), its result (at most
// resultcheck.MaxBytes without its time series, as the worker checks a
// plugin's, plus resultcheck.SampleBytes a sample when the sweep asks
// for a series; 2 KiB a class for the class statistics and work-deficit
// entries of a workload with more classes than a plugin's result may
// have) and recordSlack; the bound is twice that. A stored result and a
// campaign's result entry (a reference, or a whole record in layout 1)
// have it.
func recordBound(f *sweep.File) (int64, string) {
	js, _ := json.Marshal(f)
	series := int64(0)
	if f.Run.SeriesInterval > 0 {
		series = int64(f.Run.SeriesMax)
		if series <= 0 {
			series = resultcheck.DefaultSeriesMax
		}
		series = min(series, 1<<32) // past MaxMember either way; no overflow
	}
	classes := int64(len(f.Classes)) + maxFamilyClasses
	if f.Trace != nil {
		classes += max(f.Trace.Size, 0) / minTraceLine
	}
	b := 2 * (resultcheck.MaxBytes + resultcheck.SampleBytes*series + 4*int64(len(js)) + 2<<10*classes + recordSlack)
	return b, fmt.Sprintf("one replication's record of this campaign (a sweep of %d bytes as JSON, at most %d classes, a time series of %d samples)", len(js), classes, series)
}

// campaignBounds are the limits of campaign id's members whose honest
// size depends on the campaign, from its sweep: as the reader knows it
// from the campaign's manifest, which export writes before them
// (campaigns/<id>/ in key order: manifest.json before results/; each
// stored result and counter description after the entry that refers to
// it; plugin binaries and traces after every campaign object), and again
// from the spec once it is read (checkCampaign), so that a manifest whose
// sweep claims more than the spec's gains nothing.
type campaignBounds struct {
	id string
	// known: the manifest was read (or the spec given); sweep is its
	// sweep, nil if it records none (noSweep says why).
	known   bool
	sweep   *sweep.File
	noSweep string
	// record and recordWhat are recordBound of sweep, once computed.
	record     int64
	recordWhat string
}

// limit is the size limit of store key key and what it is (0: none but
// memberLimit's and MaxMember), or why key may not come here at all.
func (b *campaignBounds) limit(key string) (max int64, what, refuse string) {
	switch {
	case strings.HasPrefix(key, storage.CounterInfosPrefix):
		return maxCounterInfo, "a policy's counter descriptions (at most " + strconv.Itoa(wire.MaxCounters) + ", of bounded fields)", ""
	case strings.HasPrefix(key, "plugins/"):
		return maxPluginBinary, "a plugin binary (plugins.json pins its sha256, not its size)", ""
	}
	trace := strings.HasPrefix(key, storage.TracesPrefix)
	_, entry := storage.ResultTaskID(b.id, key)
	_, stored := storage.StoredResultContentKey(key)
	if !trace && !entry && !stored {
		return 0, "", ""
	}
	if !b.known {
		return 0, "", "it comes before the campaign's manifest.json, whose sweep bounds it: export writes the manifest before every result, plugin binary and trace (the campaign's objects in key order, then the binaries and the trace), so this archive is out of order"
	}
	if b.sweep == nil {
		return 0, "", "the campaign's manifest.json records no sweep to bound it by (" + b.noSweep + ")"
	}
	if trace {
		pin := b.sweep.Trace
		if pin == nil || storage.TraceKey(pin.SHA256) != key {
			return 0, "", "it is not the trace the campaign's sweep pins (export archives that one only)"
		}
		return pin.Size, "the trace the campaign's sweep pins (its size)", ""
	}
	if b.record == 0 {
		b.record, b.recordWhat = recordBound(b.sweep)
	}
	return b.record, b.recordWhat, ""
}

// sweepCatcher takes the top-level "sweep" of a JSON object written
// through it (the campaign's manifest, as it streams past), whitespace
// outside strings dropped, and nothing else: the manifest may be hundreds
// of megabytes (a version-1 manifest lists every task), and its padding
// costs no memory. The last "sweep" wins, as for encoding/json.
type sweepCatcher struct {
	depth            int
	inStr, esc       bool
	inKey, colon     bool
	key              []byte
	capturing, found bool
	buf              []byte
	over             bool
}

func (c *sweepCatcher) Write(p []byte) (int, error) {
	for _, ch := range p {
		c.byte(ch)
	}
	return len(p), nil
}

func (c *sweepCatcher) keep(ch byte) {
	if len(c.buf) >= maxSweepJSON {
		c.over = true
		return
	}
	c.buf = append(c.buf, ch)
}

func (c *sweepCatcher) byte(ch byte) {
	if c.inStr {
		if c.capturing {
			c.keep(ch)
		}
		switch {
		case c.esc:
			c.esc = false
		case ch == '\\':
			c.esc = true
		case ch == '"':
			c.inStr, c.inKey = false, false
			return
		}
		if c.inKey && len(c.key) <= len("sweep") {
			c.key = append(c.key, ch)
		}
		return
	}
	switch ch {
	case ' ', '\t', '\n', '\r':
		return
	}
	// The end of the captured value: a comma or the closing brace of
	// the manifest at its depth.
	if c.capturing && c.depth == 1 && (ch == ',' || ch == '}') {
		c.capturing, c.found = false, true
	}
	if c.capturing {
		c.keep(ch)
	}
	switch ch {
	case '"':
		c.inStr = true
		if c.depth == 1 && !c.colon {
			c.inKey, c.key = true, c.key[:0]
		}
	case '{', '[':
		c.depth++
	case '}', ']':
		c.depth--
		if c.capturing && c.depth == 1 {
			c.capturing, c.found = false, true
		}
	case ':':
		if c.depth == 1 && !c.colon {
			c.colon = true
			if string(c.key) == "sweep" {
				c.capturing, c.found, c.over, c.buf = true, false, false, c.buf[:0]
			}
		}
	case ',':
		if c.depth == 1 {
			c.colon = false
		}
	}
}

// sweep is the sweep caught, or nil and why there is none.
func (c *sweepCatcher) sweep() (*sweep.File, string) {
	switch {
	case c.over:
		return nil, fmt.Sprintf("its sweep is more than %d bytes as JSON", maxSweepJSON)
	case !c.found:
		return nil, "no \"sweep\" in it"
	}
	var f *sweep.File
	if err := json.Unmarshal(c.buf, &f); err != nil {
		return nil, "its sweep: " + err.Error()
	}
	if f == nil {
		return nil, "its sweep is null"
	}
	return f, ""
}
