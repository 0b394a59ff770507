package coordinator

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/msjfarm/msjfarm/internal/gcpace"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

const seedDerivation = "seed of replication r at a scenario = first 8 bytes (big-endian) of " +
	`SHA-256(JSON{"seed": campaign seed, "replication": r, "scenario": scenario without the policy}) (package sweep)`

// writeManifest writes the manifest; prov (may be nil) adds the policy
// provenance and hosts of the results.
func (co *Coordinator) writeManifest(ctx context.Context, c *campaign, prov *provenance) ([]byte, error) {
	co.mu.Lock()
	m := archive.Manifest{Version: archive.ManifestVersion, Campaign: c.id, Name: c.st.Name, State: c.st.State, MsjfarmVersion: sim.Version,
		Created: c.st.Created, Updated: time.Now().UTC(), Finished: c.st.Finished, Tasks: c.st.Total,
		Points: c.st.Points, Failed: len(c.failed), Warnings: c.warnings,
		Sweep: c.st.Spec, SeedDerivation: seedDerivation, Storage: co.o.Store.URL(),
		Layout: map[string]string{
			"stream": protocol.TaskStream, "subject": protocol.CampaignFilter(c.id),
			"consumer": protocol.WorkerConsumer, "ack_wait": co.h.Workers.CachedInfo().Config.AckWait.String(),
			"max_deliver": itoa(co.h.Workers.CachedInfo().Config.MaxDeliver),
		}}
	if c.st.Spec != nil {
		m.Seed, m.Replications = c.st.Spec.Seed, c.st.Spec.Replications
	}
	if c.tl != nil { // nil: a submission is generating it (and writes the manifest then)
		m.Tasks, m.Done = c.tl.Len(), c.done.len()
		m.TaskListSHA256, m.PointOrder = c.tl.Hash(), c.tl.Points()
	}
	if c.st.State == protocol.CampaignDone || c.st.State == protocol.CampaignCancelled {
		// A finished campaign's counts are those its entry records,
		// frozen when it finished (markDone, Cancel): a task state
		// reported since (anyone on NATS may write one) made a manifest
		// written later count one more than the entry, which the next
		// start took for a lie (crossCheck).
		m.Done, m.Failed = c.st.Done, c.st.Failed
	}
	m.Precision = c.precisionSummary()
	m.ChecksumsSHA256 = c.checksums
	verify := c.st.Verify
	m.Verify = &verify
	if c.st.State == protocol.CampaignDone {
		m.Report = storage.ReportPrefix(c.id) + "index.html"
	}
	co.mu.Unlock()
	if prov != nil {
		m.Policies, m.Hosts = prov.manifest()
		// Workers of two engine versions (a rolling upgrade): said in the
		// manifest and the coordinator's log, not only by report.
		for _, w := range archive.MixedEngines(&m) {
			m.Warnings = append(slices.Clone(m.Warnings), w)
			co.o.Logf("coordinator: campaign %s: warning: %s", c.id, w)
		}
	} else if prev := co.storedManifest(ctx, c.id); prev != nil {
		// Keep what an earlier finalisation learnt from the results.
		m.Policies, m.Hosts = prev.Policies, prev.Hosts
		if m.ChecksumsSHA256 == "" {
			m.ChecksumsSHA256 = prev.ChecksumsSHA256
		}
	}
	m.Plugins = co.pluginPins(ctx, c.id)
	data, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	return data, co.o.Store.Put(ctx, storage.ManifestKey(c.id), data)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// finalize writes the summary and manifest of a campaign whose tasks all
// have a record, after checking storage once more.
func (co *Coordinator) finalize(ctx context.Context, c *campaign) {
	c.finalMu.Lock()
	defer c.finalMu.Unlock()
	err := co.doFinalize(ctx, c)
	co.mu.Lock()
	c.finalizing = false
	if err != nil && c.st.State == protocol.CampaignDone && !c.closed {
		// Failed after marking it done (e.g. storage unavailable): back to
		// running, so that the next reconcile finalises it again.
		c.st.State, c.st.Finished = protocol.CampaignRunning, time.Time{}
	}
	switch {
	case err == nil:
		c.finalErr, c.finalFails, c.incomplete = nil, 0, 0
	case errors.Is(err, errIncomplete):
		c.incomplete, c.incompleteAt = c.incomplete+1, time.Now()
		if c.incomplete >= incompleteWarn {
			c.finalErr, c.finalFails = fmt.Errorf("%d finalisations in a row found results missing from storage after workers had reported them stored: "+
				"do the workers store where the coordinator reads (%s)?", c.incomplete, co.o.Store.URL()), c.incomplete
		}
	case ctx.Err() == nil:
		c.finalErr, c.finalFails = err, c.finalFails+1
	}
	co.mu.Unlock()
	if err != nil {
		co.o.Logf("coordinator: finalising %s: %v", c.id, err)
	}
}

var errIncomplete = errors.New("results missing from storage; re-published")

// incompleteWarn is the number of finalisations in a row that found
// results missing after which the next one waits for the periodic
// reconcile, and the status says so. A worker storing elsewhere than its
// coordinator (another --storage) acked every task it found in its own
// store, and the coordinator finalised, found them missing and
// re-published them 17,113 times a minute.
const incompleteWarn = 3

// FinalisationError is the failures in a row of campaign id's
// finalisation and the last one's error (0, nil: none failed since the
// last success), for
// a caller that owns the farm and would rather stop than wait for ever
// (local.Run: `msjfarm run` on a full disk).
func (co *Coordinator) FinalisationError(id string) (int, error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if c := co.camps[id]; c != nil {
		return c.finalFails, c.finalErr
	}
	return 0, nil
}

// doFinalize finalises c in named steps: previousChecksums, scanResults
// (every result read once, a point at a time), then either rerun (the one
// place a finalisation gives up: results missing or modified) or
// pairPoints, writeSummary, markDone (which finds a cancelled campaign)
// and publish.
func (co *Coordinator) doFinalize(ctx context.Context, c *campaign) error {
	// The summaries and the report's tables are built and dropped: at the
	// simulation pace of `msjfarm run`'s process (GOGC=400) they grew it
	// to 3.2 GB at 12,000 points. A coordinator of its own is at the
	// default pace already.
	defer gcpace.Hold()()
	co.mu.Lock()
	tl, spec, specKey := c.tl, c.st.Spec, c.st.SpecKey
	co.mu.Unlock()
	if err := co.restoreCampaignObjects(ctx, c.id, spec, specKey); err != nil {
		return err
	}
	old, err := co.previousChecksums(ctx, c.id)
	if err != nil {
		return err
	}
	s, err := co.scanResults(ctx, c, tl, old)
	if err != nil {
		return err
	}
	defer s.close()
	if s.missing > 0 || len(s.modified) > 0 {
		return co.rerun(ctx, c, s)
	}
	if err := co.pairPoints(ctx, c, tl, s.pts); err != nil {
		return err
	}
	sameSummary, err := co.writeSummary(ctx, c.id, s.pts)
	if err != nil {
		return err
	}
	if !co.markDone(c, s) {
		return nil // cancelled meanwhile
	}
	return co.publishFinal(ctx, c, s, sameSummary)
}

// restoreCampaignObjects writes again the objects of campaign id that its
// submission wrote and storage has lost since (a bucket deleted and made
// again mid-campaign): the layout marker, spec.yaml, by which readers
// find a campaign, and the spec under specKey, by which a restarted
// coordinator reads it. The coordinator restored the store's identity
// and re-ran the lost results, and the campaign finished "done", but
// `results` and `report` answered "unknown campaign". Nothing is
// written when they are there, or when the spec is not at hand (f nil).
func (co *Coordinator) restoreCampaignObjects(ctx context.Context, id string, f *sweep.File, specKey string) error {
	if f == nil {
		return nil
	}
	lost := func(key string) (bool, error) {
		_, err := co.o.Store.Stat(ctx, key)
		if errors.Is(err, storage.ErrNotFound) {
			return true, nil
		}
		return false, err
	}
	for _, key := range []string{storage.LayoutKey(id), storage.CampaignSpecKey(id)} {
		if gone, err := lost(key); err != nil {
			return err
		} else if gone {
			co.o.Logf("coordinator: campaign %s: %s is gone from storage: its layout marker and spec written again", id, key)
			if err := co.putCampaignObjects(ctx, id, f); err != nil {
				return err
			}
			break
		}
	}
	if specKey == "" {
		return nil
	}
	if gone, err := lost(specKey); err != nil || !gone {
		return err
	}
	co.o.Logf("coordinator: campaign %s: %s is gone from storage: written again", id, specKey)
	if key, err := protocol.PutSpec(ctx, co.o.Store, f); err != nil || key != specKey {
		return cmp.Or(err, fmt.Errorf("the campaign's spec hashes to %s now, its state names %s", key, specKey))
	}
	return nil
}

// storedManifest is campaign id's manifest as stored, nil when there is
// none or it does not parse.
func (co *Coordinator) storedManifest(ctx context.Context, id string) *archive.Manifest {
	data, err := co.o.Store.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		return nil
	}
	var m archive.Manifest
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return &m
}

// previousChecksums are the checksums of an earlier finalisation (a
// finished campaign submitted again), nil when there are none or they
// cannot be trusted (logged).
func (co *Coordinator) previousChecksums(ctx context.Context, id string) (*archive.Sums, error) {
	old, warn, err := archive.LoadChecksums(ctx, co.o.Store, id, co.storedManifest(ctx, id))
	if warn != "" {
		co.o.Logf("coordinator: campaign %s: %s", id, warn)
	}
	return old, err
}

// rerun ends a finalisation that found results missing (or moved aside:
// not their task's) or modified since an earlier finalisation: their
// tasks are published again and the campaign stays running. The
// checksums now recorded leave the modified tasks out: their recomputed
// results are new objects (a result's provenance differs from run to
// run), checked from the next finalisation on.
func (co *Coordinator) rerun(ctx context.Context, c *campaign, s *finalScan) error {
	if len(s.modified) > 0 {
		if err := co.putChecksums(ctx, c, s); err != nil {
			return err
		}
		co.mu.Lock()
		for tid := range s.modified {
			c.done.del(tid)
			delete(c.failed, tid)
		}
		co.mu.Unlock()
	}
	co.mu.Lock()
	// The missing tasks are not done: left in the done set, the campaign
	// stayed complete, and the reconcile below started the next
	// finalisation at once, which found them missing again, in a loop
	// that never ran them (dropDanglingRef).
	for _, tid := range s.missingIDs {
		c.done.del(tid)
	}
	c.finalizing = false
	co.mu.Unlock()
	if len(s.modified) > 0 {
		if _, err := co.writeManifest(ctx, c, nil); err != nil {
			return err
		}
	}
	if _, _, _, err := co.reconcile(ctx, c, true); err != nil {
		return err
	}
	return errIncomplete
}

// putChecksums stores the checksums the scan wrote and records their hash.
func (co *Coordinator) putChecksums(ctx context.Context, c *campaign, s *finalScan) error {
	if err := s.flush(); err != nil {
		return err
	}
	if err := co.o.Store.PutFile(ctx, storage.ChecksumsKey(c.id), s.sums.Name()); err != nil {
		return err
	}
	co.mu.Lock()
	c.checksums = hex.EncodeToString(s.sumsHash.Sum(nil))
	co.mu.Unlock()
	return nil
}

// pairPoints sets the points' paired comparisons against the sweep's
// baseline (the first policy when it names none of them, logged), reading
// the records again a scenario at a time.
func (co *Coordinator) pairPoints(ctx context.Context, c *campaign, tl *taskList, pts []aggregate.Point) error {
	baseline := tl.camp.File.BaselineOf()
	if _, err := aggregate.BaselineLabel(pts, baseline); err != nil {
		co.o.Logf("coordinator: %s: %v: comparisons against the first policy", c.id, err)
		baseline = ""
	}
	return aggregate.ComparePaired(pts, baseline, co.pairLoader(ctx, c.id, tl))
}

// writeSummary writes summary.csv and reports whether it is the one
// stored already (a finished campaign submitted again, with the same
// results: its report is kept).
//
// The table goes to a temporary file and is stored from there, and the
// stored one is compared by size and sha256, read from a temporary file
// too: at 10^5 points summary.csv is 70 MB, and built in a growing
// buffer and compared with the stored one read whole it took 200 MB.
func (co *Coordinator) writeSummary(ctx context.Context, id string, pts []aggregate.Point) (same bool, err error) {
	f, err := scratch.CreateTemp("msjfarm-summary-*.csv")
	if err != nil {
		return false, fmt.Errorf("summary.csv: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<16)
	if err := aggregate.WriteCSV(bw, pts); err != nil {
		return false, err
	}
	if err := bw.Flush(); err != nil {
		return false, fmt.Errorf("summary.csv: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, fmt.Errorf("summary.csv: %w", err)
	}
	same = co.storedSum(ctx, storage.SummaryKey(id), size) == string(h.Sum(nil))
	return same, co.o.Store.PutFile(ctx, storage.SummaryKey(id), f.Name())
}

// storedSum is the sha256 of the object key if it is size bytes long,
// "" if it is not, is missing or cannot be read.
func (co *Coordinator) storedSum(ctx context.Context, key string, size int64) string {
	if info, err := co.o.Store.Stat(ctx, key); err != nil || info.Size != size {
		return ""
	}
	dir, err := scratch.MkdirTemp("msjfarm-stored-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "object")
	if err := co.o.Store.GetFile(ctx, key, path); err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return string(h.Sum(nil))
}

// markDone marks c done with the scan's tasks, unless it was cancelled
// meanwhile (false).
func (co *Coordinator) markDone(c *campaign, s *finalScan) bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	if c.st.State != protocol.CampaignRunning {
		return false
	}
	c.done, c.failed = s.done, s.failed
	c.running = map[string]string{}
	c.st.State = protocol.CampaignDone
	c.st.Finished = time.Now().UTC()
	c.st.Done, c.st.Failed = c.done.len(), len(c.failed)
	return true
}

// publishFinal writes what a done campaign has: precision.csv, the
// checksums, the manifest, the report, and its state (then closes it).
func (co *Coordinator) publishFinal(ctx context.Context, c *campaign, s *finalScan, sameSummary bool) error {
	id := c.id
	co.mu.Lock()
	prec := c.precisionSummary()
	co.mu.Unlock()
	if prec != nil {
		pc := archive.PrecisionCSV(prec)
		if old, _ := co.o.Store.Get(ctx, archive.PrecisionKey(id)); !bytes.Equal(old, pc) {
			sameSummary = false
		}
		if err := co.o.Store.Put(ctx, archive.PrecisionKey(id), pc); err != nil {
			return err
		}
	}
	if err := co.putChecksums(ctx, c, s); err != nil {
		return err
	}
	manifest, err := co.writeManifest(ctx, c, &s.prov)
	if err != nil {
		return err
	}
	co.finalReport(ctx, id, report.Campaign{Points: s.pts, Tasks: s.tasks, Records: s.recs, Manifest: manifest}, prec, sameSummary)
	if err := co.putState(ctx, c); err != nil {
		return err
	}
	co.o.Logf("coordinator: campaign %s done: %d results, %d failed", id, c.st.Done, c.st.Failed)
	co.mu.Lock()
	c.close()
	co.mu.Unlock()
	return nil
}

// finalReport renders and publishes the report unless the stored one is
// whole and the summary unchanged. The report is a view of the summary: a
// rendering failure is logged (msjfarm report regenerates it) and does not
// fail the campaign. It is kept only when it was published whole
// (archive.ReportComplete): a report whose writer was killed half-way is
// rewritten.
func (co *Coordinator) finalReport(ctx context.Context, id string, rc report.Campaign, prec *archive.PrecisionSummary, sameSummary bool) {
	complete, cerr := archive.ReportComplete(ctx, co.o.Store, id)
	if cerr == nil && complete && sameSummary {
		co.o.Logf("coordinator: campaign %s: results unchanged, report kept", id)
		return
	}
	if cerr == nil && !complete && sameSummary {
		co.o.Logf("coordinator: campaign %s: the stored report is incomplete (not published whole): writing it again", id)
	}
	err := co.storeReport(ctx, id, rc, prec)
	co.setReportErr(id, err)
	if err != nil {
		co.o.Logf("coordinator: report of %s: %v", id, err)
	}
}

// setReportErr records the outcome of campaign id's last report
// publication (ReportError).
func (co *Coordinator) setReportErr(id string, err error) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.reportErr == nil {
		co.reportErr = map[string]error{}
	}
	if err == nil {
		delete(co.reportErr, id)
		return
	}
	co.reportErr[id] = err
}

// ReportError is why campaign id's report is not published (nil: it is,
// or none was tried): `msjfarm run` printed only "report: not rendered
// (… index.html: not found)" of a full disk.
func (co *Coordinator) ReportError(id string) error {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.reportErr[id]
}

// storeReport renders the report and publishes it whole under
// storage.ReportPrefix(id) (PublishReport). A publication that fails —
// storage full, unavailable — is retried in the background with backoff
// until it succeeds, a newer publication of the campaign starts, or the
// coordinator stops, each failure logged with its cause: a campaign is
// never left done with no report (or part of one) until someone
// resubmits it.
//
// The report is rendered into a temporary directory, each file written as
// it is finished, and published from there a file at a time: at 10^5
// points its files weigh over 100 MB, which held in memory next to the
// point summaries took the coordinator past its memory bound. The
// directory is removed once the report is published or given up.
func (co *Coordinator) storeReport(ctx context.Context, id string, c report.Campaign, prec *archive.PrecisionSummary) error {
	dir, err := scratch.MkdirTemp("msjfarm-report-")
	if err != nil {
		return err
	}
	if err := archive.RenderReportTo(report.DirSink(dir), c, prec); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	co.mu.Lock()
	if co.reportGen == nil {
		co.reportGen = map[string]int{}
	}
	co.reportGen[id]++
	gen := co.reportGen[id]
	co.mu.Unlock()
	err = PublishReport(ctx, co.o.Store, id, archive.DirSource(dir))
	if err == nil {
		return os.RemoveAll(dir)
	}
	go co.retryReport(ctx, id, gen, dir)
	return fmt.Errorf("not published: %w; publishing it again in %s", err, ReportRetryWait)
}

// retryReport publishes the report rendered in dir again after
// ReportRetryWait, doubling the wait up to reportRetryMax, while ctx lasts
// and no newer publication of the campaign started; it removes dir when
// it stops.
func (co *Coordinator) retryReport(ctx context.Context, id string, gen int, dir string) {
	defer os.RemoveAll(dir)
	wait := ReportRetryWait
	for attempt := 2; ; attempt++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		co.mu.Lock()
		stale := co.reportGen[id] != gen
		co.mu.Unlock()
		if stale {
			return
		}
		err := PublishReport(ctx, co.o.Store, id, archive.DirSource(dir))
		co.setReportErr(id, err)
		if err == nil {
			co.o.Logf("coordinator: report of %s published whole on attempt %d", id, attempt)
			return
		}
		wait = min(2*wait, reportRetryMax)
		co.o.Logf("coordinator: report of %s not published (attempt %d): %v; publishing it again in %s", id, attempt, err, wait)
	}
}

// ReportRetryWait is the first wait before a failed report publication is
// tried again (doubled after each failure, up to reportRetryMax); a
// variable so that tests need not wait seconds.
var ReportRetryWait = 2 * time.Second

const reportRetryMax = 5 * time.Minute

// PublishReport publishes a campaign's report whole
// (archive.PublishReport) and, when that fails, removes what it staged, so
// that a failed attempt leaves no staging objects behind (the published
// report, if any, is the previous complete one or an incomplete one that
// ReportComplete tells and the next attempt replaces). msjfarm report
// --store and the coordinator publish through it.
func PublishReport(ctx context.Context, st storage.Store, id string, files archive.ReportSource) error {
	err := archive.PublishReportFrom(ctx, st, id, files)
	if err == nil {
		return nil
	}
	if cerr := RemoveStaging(context.WithoutCancel(ctx), st, id); cerr != nil {
		return fmt.Errorf("%w (and removing the staged files: %v)", err, cerr)
	}
	return err
}

// RemoveStaging deletes every object under the campaign's report staging
// prefix.
func RemoveStaging(ctx context.Context, st storage.Store, id string) error {
	keys, err := st.List(ctx, storage.ReportStagingPrefix(id))
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := st.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

func sortStatus(s []protocol.Status) {
	sort.Slice(s, func(i, j int) bool {
		if !s[i].Created.Equal(s[j].Created) {
			return s[i].Created.Before(s[j].Created)
		}
		return s[i].Campaign < s[j].Campaign
	})
}
