package bundle

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// ExportOptions are the choices of Export.
type ExportOptions struct {
	// Compression is "zstd" (default) or "gzip".
	Compression string
	// Submitted is the sweep file as the user submitted it (nil: not
	// included; the store holds only the normalised spec). Export checks
	// that it is the campaign's sweep (SubmittedOK).
	Submitted []byte
	// Key signs the Merkle root (nil: unsigned).
	Key ed25519.PrivateKey
	// NoReport leaves the stored report (campaigns/<id>/report/: plots in
	// three formats, megabytes) out; `msjfarm report FILE` rebuilds it
	// from the records. The summary and everything else stay.
	NoReport bool
	// Authors are CITATION.cff's authors (default: "msjfarm user").
	Authors []string
	// Concurrency is the number of objects fetched from storage at once
	// (default 16): an S3 round trip per object in a row made a 10^4-task
	// export take minutes.
	Concurrency int
	// Now is the export time (default time.Now).
	Now time.Time
	// Build is the exporting binary (default: Exporter()).
	Build *Build
	// Limits are the readers' limits the archive must keep within (zero
	// fields: DefaultLimits, what every reader applies). A campaign that
	// would take the archive past them is refused (ErrTooLarge), before
	// its objects are read where their number already tells.
	Limits Limits
}

// Summary describes a written archive.
type Summary struct {
	Campaign string
	Members  int
	// Bytes is the members' total size, before compression.
	Bytes    int64
	Records  int
	Plugins  int
	Traces   int
	Root     string
	Signed   bool
	Warnings []string
}

// Export writes campaign id of st to w as a .msjar archive. Objects are
// streamed from storage a bounded number at a time (ExportOptions.Concurrency),
// never all records in memory at once; plugin binaries and traces go
// through a temporary file. The campaign must have a manifest (it ran, or
// is running, on a coordinator).
//
// The members go in a fixed order, each written by its own step: the
// format, the campaign's objects, the plugin binaries and traces, the
// submitted sweep, the metadata that describes them all, and last the
// index and the signature that seal them.
//
// Every error names the campaign, once.
func Export(ctx context.Context, st storage.Store, id string, w io.Writer, o ExportOptions) (*Summary, error) {
	sum, err := export(ctx, st, id, w, o)
	if err != nil {
		return nil, fmt.Errorf("campaign %s: %w", id, err)
	}
	return sum, nil
}

func export(ctx context.Context, st storage.Store, id string, w io.Writer, o ExportOptions) (*Summary, error) {
	o.defaults()
	c, err := readCampaign(ctx, st, id, o.Submitted)
	if err != nil {
		return nil, err
	}
	mtime := c.man.Finished
	if mtime.IsZero() {
		mtime = c.man.Updated
	}
	mw, err := newMemberWriter(w, o.Compression, mtime, o.Limits, o.Key != nil)
	if err != nil {
		return nil, err
	}
	// The readers' limits of the records, binaries and trace, from the
	// spec they check them against (checkCampaign).
	mw.bounds = &campaignBounds{id: id, known: true, sweep: c.spec}
	sum, err := exportMembers(ctx, st, id, c, mw, o)
	if errors.Is(err, ErrTooLarge) {
		err = fmt.Errorf("does not fit in one archive: %w", err)
	}
	return sum, err
}

// exportMembers writes the members of Export, in its order.
func exportMembers(ctx context.Context, st storage.Store, id string, c *exported, mw *memberWriter, o ExportOptions) (*Summary, error) {
	sum := &Summary{Campaign: id}
	fj, _ := json.MarshalIndent(Format{Format: FormatName, Version: FormatVersion, Campaign: id, Name: c.man.Name, Msjfarm: o.Build.String()}, "", "  ")
	if err := mw.add(FormatMember, append(fj, '\n')); err != nil {
		return nil, err
	}
	prov := newProvenance(id, &c.man, c.pins, *o.Build, o.Now)
	prov.Warnings = c.warnings
	sums, err := loadSums(ctx, st, id, &c.man)
	if err != nil {
		return nil, err
	}
	defer sums.Close()
	if err := exportCampaign(ctx, st, id, mw, prov, o.Concurrency, o.NoReport); err != nil {
		return nil, err
	}
	if _, err := checkMembers(sums, mw.entries, c.man.State == protocol.CampaignDone); err != nil {
		return nil, fmt.Errorf("%w; not archived: submit the campaign again, and its finalisation runs those tasks again", err)
	}
	if err := exportBinaries(ctx, st, mw, prov, binaryKeys(c.pins, prov, c.spec), sum); err != nil {
		return nil, err
	}
	if err := exportDescription(mw, prov, o); err != nil {
		return nil, err
	}
	if err := seal(mw, id, o.Key, sum); err != nil {
		return nil, err
	}
	sum.Records, sum.Warnings = prov.Records, prov.Warnings
	return sum, nil
}

// defaults fills the zero values ExportOptions documents.
func (o *ExportOptions) defaults() {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Build == nil {
		b := Exporter()
		o.Build = &b
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
}

// exported is what Export reads of a campaign before writing anything:
// its manifest, its stored spec, its plugin pins, and the warnings the
// archive will carry.
type exported struct {
	man      archive.Manifest
	spec     *sweep.File
	pins     *protocol.Pins
	warnings []string
}

// readCampaign reads the campaign's manifest, spec and pins, and checks
// that submitted (if any) is its sweep, so that a wrong campaign fails
// before the archive is begun.
func readCampaign(ctx context.Context, st storage.Store, id string, submitted []byte) (*exported, error) {
	c := &exported{}
	manData, err := st.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		return nil, fmt.Errorf("reading the manifest: %w", err)
	}
	if err := json.Unmarshal(manData, &c.man); err != nil {
		return nil, fmt.Errorf("%s: %w", storage.ManifestKey(id), err)
	}
	specData, err := st.Get(ctx, storage.CampaignSpecKey(id))
	if err != nil {
		return nil, err
	}
	if c.spec, err = sweep.Parse(specData, "yaml"); err != nil {
		return nil, fmt.Errorf("spec.yaml: %w", err)
	}
	if submitted != nil {
		if err := SubmittedOK(submitted, c.spec); err != nil {
			return nil, err
		}
	}
	if c.man.State != protocol.CampaignDone {
		what := fmt.Sprintf("state %q", c.man.State)
		if c.man.State == protocol.CampaignRunning {
			// The manifest cannot tell a campaign still running from one
			// whose run was interrupted (status reads "interrupted" when
			// its run does not answer): an archive reader was told a
			// process was still at work.
			what = `its manifest says "running": still running, or interrupted`
		}
		c.warnings = append(c.warnings, fmt.Sprintf("campaign %s is not finished (%s): the archive holds the results stored so far", id, what))
	}
	if c.pins, err = protocol.ReadPins(ctx, st, id); err != nil {
		return nil, err
	}
	return c, nil
}

// exportBinaries writes the plugin binaries and traces at keys. One
// missing from the store is a warning, not an error: the archive still
// holds the results, which only cannot be re-run from it.
func exportBinaries(ctx context.Context, st storage.Store, mw *memberWriter, prov *Provenance, keys []string, sum *Summary) error {
	for _, k := range keys {
		ok, err := exportFile(ctx, st, k, mw)
		if err != nil {
			return err
		}
		if !ok {
			prov.Warnings = append(prov.Warnings, fmt.Sprintf("%s is not in %s: not archived (its results cannot be re-run from the archive)", k, st.URL()))
			continue
		}
		prov.markIncluded(k)
		if strings.HasPrefix(k, "plugins/") {
			sum.Plugins++
		} else {
			sum.Traces++
		}
	}
	return nil
}

// exportDescription writes the submitted sweep (if given) and the
// members that describe the archive: provenance, RO-Crate metadata and
// CITATION.cff.
func exportDescription(mw *memberWriter, prov *Provenance, o ExportOptions) error {
	if o.Submitted != nil {
		if err := mw.add(SubmittedMember, o.Submitted); err != nil {
			return err
		}
	}
	prov.finish()
	pj, _ := json.MarshalIndent(prov, "", "  ")
	if err := mw.add(ProvenanceMember, append(pj, '\n')); err != nil {
		return err
	}
	if err := mw.add(ROCrateMember, roCrate(prov, mw.entries)); err != nil {
		return err
	}
	return mw.add(CitationMember, citation(prov, o.Authors, mw.entries))
}

// seal writes the index of every member so far and its Merkle root, the
// signature of that root with key (if any), and closes the archive.
func seal(mw *memberWriter, id string, key ed25519.PrivateKey, sum *Summary) error {
	idx := Index{Format: FormatName, Version: FormatVersion, Campaign: id, Tree: TreeName, Members: mw.entries, Root: MerkleRoot(mw.entries)}
	ij, _ := json.MarshalIndent(idx, "", " ")
	if n := int64(len(ij)) + 1; n > mw.lim.MaxIndex {
		return fmt.Errorf("member %s: %d bytes for %d members, more than the %d an archive reader accepts for the index (%w)", IndexMember, n, len(mw.entries), mw.lim.MaxIndex, ErrTooLarge)
	}
	sum.Members, sum.Bytes, sum.Root = len(mw.entries), mw.bytes, idx.Root
	if err := mw.add(IndexMember, append(ij, '\n')); err != nil {
		return err
	}
	if key != nil {
		sig, err := sign(key, id, idx.Root)
		if err != nil {
			return err
		}
		if err := mw.add(SignatureMember, sig); err != nil {
			return err
		}
		sum.Signed = true
	}
	return mw.close()
}

// SubmittedOK checks that a sweep file as submitted is the campaign's:
// parsed as is, or with one of its profiles overlaid, it normalises to
// the same JSON as the stored spec (the campaign id hashes that JSON).
// A trace is named by file in the submitted sweep and by content in the
// stored one, so it is compared without it.
func SubmittedOK(submitted []byte, spec *sweep.File) error {
	f, err := sweep.Parse(submitted, "yaml")
	if err != nil {
		return fmt.Errorf("the submitted sweep file: %w", err)
	}
	norm := func(f *sweep.File) string {
		c := *f
		c.Trace = nil
		b, _ := json.Marshal(c)
		return string(b)
	}
	want := norm(spec)
	if norm(f) == want {
		return nil
	}
	for _, p := range f.ProfileNames() {
		if g, err := sweep.ParseProfile(submitted, "yaml", p); err == nil && norm(g) == want {
			return nil
		}
	}
	return errors.New("the submitted sweep file is not this campaign's (neither it nor any of its profiles normalises to the stored spec.yaml; a campaign run with environment overrides, MSJFARM_<KEY>=…, is not its file's: its archive's spec.yaml is the sweep that ran)")
}

// fetched is one campaign object read from storage, with the stored
// result it refers to.
type fetched struct {
	objs []record.Object
	rec  *record.Record
	err  error
}

// exportCampaign writes every object under campaigns/<id>/ (except a
// report being staged) and, after each result entry that is a reference,
// the stored result it names. Objects are read conc at a time but
// written in key order, so that an archive of the same store is the
// same bytes.
func exportCampaign(ctx context.Context, st storage.Store, id string, mw *memberWriter, prov *Provenance, conc int, noReport bool) error {
	keys, err := st.List(ctx, storage.CampaignPrefix(id))
	if err != nil {
		return err
	}
	var todo []string
	results := 0
	for _, k := range keys {
		if !strings.HasPrefix(k, storage.ReportStagingPrefix(id)) && (!noReport || !strings.HasPrefix(k, storage.ReportPrefix(id))) {
			todo = append(todo, k)
			if _, ok := storage.ResultTaskID(id, k); ok {
				results++
			}
		}
	}
	if err := mw.room(len(todo), results); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan chan fetched, conc)
	go func() {
		defer close(slots)
		for _, k := range todo {
			c := make(chan fetched, 1)
			select {
			case slots <- c:
			case <-ctx.Done():
				return
			}
			go func() { c <- fetchObject(ctx, st, id, k) }()
		}
	}()
	written := map[string]bool{}
	for c := range slots {
		f := <-c
		if f.err != nil {
			return f.err
		}
		for _, ob := range f.objs {
			if written[ob.Key] {
				continue
			}
			written[ob.Key] = true
			if err := mw.add(StorePrefix+ob.Key, ob.Data); err != nil {
				return err
			}
		}
		if f.rec != nil {
			if err := addCounterInfo(mw, f.rec, written); err != nil {
				return err
			}
			prov.addRecord(f.rec)
		}
	}
	return nil
}

// addCounterInfo writes the counter descriptions r refers to
// (record.CounterInfoObject, read with r), after the first record that
// refers to them: the archive holds what a reader of the store reads.
// An object the store did not have (or not intact) is not archived, as
// the reader did not use it either.
func addCounterInfo(mw *memberWriter, r *record.Record, written map[string]bool) error {
	if r.CounterInfoRef == "" {
		return nil
	}
	ob, ok := record.CounterInfoObject(r.CounterInfoRef)
	if !ok || written[ob.Key] {
		return nil
	}
	written[ob.Key] = true
	return mw.add(StorePrefix+ob.Key, ob.Data)
}

// fetchObject reads key; a result entry is read with record.ReadObjects
// (following its reference). A record that is not its task's is archived
// as stored, with the reader's warning in the provenance: the archive is
// the store as it is, and every reader checks records again.
func fetchObject(ctx context.Context, st storage.Store, id, key string) fetched {
	tid, ok := storage.ResultTaskID(id, key)
	if !ok {
		data, err := st.Get(ctx, key)
		if err != nil {
			return fetched{err: err}
		}
		return fetched{objs: []record.Object{{Key: key, Data: data}}}
	}
	r, objs, err := record.ReadObjects(ctx, st, id, tid)
	if _, ok := errors.AsType[*record.IntegrityError](err); ok {
		return fetched{objs: objs}
	}
	if err != nil {
		return fetched{err: err}
	}
	return fetched{objs: objs, rec: r}
}

// binaryKeys are the store keys of the plugin binaries the campaign pins
// or whose results it holds, and of its trace, sorted.
func binaryKeys(pins *protocol.Pins, prov *Provenance, spec *sweep.File) []string {
	set := map[string]bool{}
	if pins != nil {
		for _, p := range pins.Policies {
			k := p.Key
			if k == "" {
				k = storage.PluginKey(p.Plugin, p.SHA256)
			}
			set[k] = true
		}
	}
	for _, p := range prov.Plugins {
		set[storage.PluginKey(p.Name, p.SHA256)] = true
	}
	if spec.Trace != nil && storage.ValidTraceSHA256(spec.Trace.SHA256) {
		set[storage.TraceKey(spec.Trace.SHA256)] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// exportFile streams a large object through a temporary file into the
// archive; false if it is not in storage.
func exportFile(ctx context.Context, st storage.Store, key string, mw *memberWriter) (bool, error) {
	dir, err := scratch.MkdirTemp("msjar-export-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "object")
	if err := st.GetFile(ctx, key, tmp); errors.Is(err, storage.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	mode := int64(0o644)
	if strings.HasPrefix(key, "plugins/") {
		mode = 0o755
	}
	return true, mw.addFile(StorePrefix+key, tmp, mode)
}
