package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
)

const seedDerivation = "seed of replication r at a scenario = first 8 bytes (big-endian) of " +
	`SHA-256(JSON{"seed": campaign seed, "replication": r, "scenario": scenario without the policy}) (package sweep)`

// writeManifest writes the manifest; recs (may be nil) adds the policy
// provenance and hosts of the results.
func (co *Coordinator) writeManifest(ctx context.Context, c *campaign, recs map[string]*record.Record) ([]byte, error) {
	co.mu.Lock()
	m := archive.Manifest{Version: archive.ManifestVersion, Campaign: c.id, Name: c.st.Name, State: c.st.State, MsjfarmVersion: sim.Version,
		Created: c.st.Created, Updated: time.Now().UTC(), Finished: c.st.Finished, Tasks: c.tl.Len(),
		Points: c.st.Points, Done: len(c.done), Failed: len(c.failed), Warnings: c.warnings,
		Sweep: c.st.Spec, SeedDerivation: seedDerivation, Storage: co.o.Store.URL(),
		Layout: map[string]string{
			"stream": protocol.TaskStream, "subject": protocol.CampaignFilter(c.id),
			"consumer": protocol.WorkerConsumer, "ack_wait": co.h.Workers.CachedInfo().Config.AckWait.String(),
			"max_deliver": itoa(co.h.Workers.CachedInfo().Config.MaxDeliver),
		}}
	if c.st.Spec != nil {
		m.Seed, m.Replications = c.st.Spec.Seed, c.st.Spec.Replications
	}
	m.TaskListSHA256, m.PointOrder = c.tl.Hash(), c.tl.Points()
	m.Precision = c.precisionSummary()
	m.ChecksumsSHA256 = c.checksums
	if c.st.State == protocol.CampaignDone {
		m.Report = storage.ReportPrefix(c.id) + "index.html"
	}
	co.mu.Unlock()
	if recs != nil {
		pp := map[archive.PolicyProvenance]int{}
		hosts := map[string]bool{}
		for _, r := range recs {
			if h := r.Provenance.Host; h != "" {
				hosts[h] = true
			}
			if r.Failed() {
				continue
			}
			p := r.Provenance
			pp[archive.PolicyProvenance{Policy: r.Task.Policy, Runner: p.Runner, Plugin: p.Plugin,
				PluginVersion: p.PluginVersion, PluginSHA256: p.PluginSHA256, Engine: r.Result.Engine}]++
		}
		for p, n := range pp {
			p.Results = n
			m.Policies = append(m.Policies, p)
		}
		sort.Slice(m.Policies, func(i, j int) bool {
			a, b := m.Policies[i], m.Policies[j]
			if a.Policy != b.Policy {
				return a.Policy < b.Policy
			}
			return a.PluginSHA256 < b.PluginSHA256
		})
		for h := range hosts {
			m.Hosts = append(m.Hosts, h)
		}
		sort.Strings(m.Hosts)
	} else if old, err := co.o.Store.Get(ctx, storage.ManifestKey(c.id)); err == nil {
		// Keep what an earlier finalisation learnt from the results.
		var prev archive.Manifest
		if json.Unmarshal(old, &prev) == nil {
			m.Policies, m.Hosts = prev.Policies, prev.Hosts
			if m.ChecksumsSHA256 == "" {
				m.ChecksumsSHA256 = prev.ChecksumsSHA256
			}
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
	co.mu.Unlock()
	if err != nil {
		co.o.Logf("coordinator: finalising %s: %v", c.id, err)
	}
}

var errIncomplete = errors.New("results missing from storage; re-published")

func (co *Coordinator) doFinalize(ctx context.Context, c *campaign) error {
	id := c.id
	co.mu.Lock()
	tl := c.tl
	tasks := tl.Full()
	co.mu.Unlock()
	if tasks == nil {
		// Summarising needs every task and record in memory: generated
		// here for a large campaign, which holds only their ids while it
		// runs.
		tasks = tl.All()
	}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	recs := co.readRecords(ctx, id, ids)
	if len(recs) < len(tasks) {
		co.mu.Lock()
		c.finalizing = false
		co.mu.Unlock()
		if _, _, _, err := co.reconcile(ctx, c, true); err != nil {
			return err
		}
		return errIncomplete
	}
	// The result objects are checked against the checksums of an
	// earlier finalisation (a finished campaign submitted again): one
	// modified since is moved aside like a record of another task and its
	// task runs again, so that no summary counts it. The checksums of
	// the objects summarised here are recorded for the readers.
	sums, err := co.checkResults(ctx, c, ids)
	if err != nil {
		return err
	}
	pts := aggregate.Summarize(tasks, recs)
	if err := aggregate.Compare(pts, tl.camp.File.BaselineOf()); err != nil {
		co.o.Logf("coordinator: %s: %v: comparisons against the first policy", id, err)
	}
	var buf bytes.Buffer
	if err := aggregate.WriteCSV(&buf, pts); err != nil {
		return err
	}
	// A re-finalisation with the same results (a finished campaign
	// submitted again) keeps the stored report instead of rendering it
	// again.
	old, _ := co.o.Store.Get(ctx, storage.SummaryKey(id))
	sameSummary := old != nil && bytes.Equal(old, buf.Bytes())
	if err := co.o.Store.Put(ctx, storage.SummaryKey(id), buf.Bytes()); err != nil {
		return err
	}
	co.mu.Lock()
	if c.st.State != protocol.CampaignRunning {
		co.mu.Unlock()
		return nil // cancelled meanwhile
	}
	c.done, c.failed = map[string]bool{}, map[string]string{}
	for tid, r := range recs {
		if r.Failed() {
			c.failed[tid] = r.Error
		} else {
			c.done[tid] = true
		}
	}
	c.running = map[string]string{}
	c.st.State = protocol.CampaignDone
	c.st.Finished = time.Now().UTC()
	c.st.Done, c.st.Failed = len(c.done), len(c.failed)
	co.mu.Unlock()
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
	if err := co.o.Store.Put(ctx, storage.ChecksumsKey(id), sums); err != nil {
		return err
	}
	co.mu.Lock()
	c.checksums = archive.SHA256(sums)
	co.mu.Unlock()
	manifest, err := co.writeManifest(ctx, c, recs)
	if err != nil {
		return err
	}
	// The report is a view of the summary: a rendering failure is logged
	// (msjfarm report regenerates it) and does not fail the campaign. It
	// is kept only when it was published whole (archive.ReportComplete):
	// a report whose writer was killed half-way is rewritten.
	complete, cerr := archive.ReportComplete(ctx, co.o.Store, id)
	switch {
	case cerr == nil && complete && sameSummary:
		co.o.Logf("coordinator: campaign %s: results unchanged, report kept", id)
	default:
		if cerr == nil && !complete && sameSummary {
			co.o.Logf("coordinator: campaign %s: the stored report is incomplete (not published whole): writing it again", id)
		}
		if err := co.storeReport(ctx, id, report.Campaign{Points: pts, Tasks: tasks, Records: recs, Manifest: manifest}, prec); err != nil {
			co.o.Logf("coordinator: report of %s: %v", id, err)
		}
	}
	if err := co.putState(ctx, c); err != nil {
		return err
	}
	co.o.Logf("coordinator: campaign %s done: %d results, %d failed", id, c.st.Done, c.st.Failed)
	co.mu.Lock()
	c.close()
	co.mu.Unlock()
	return nil
}

// checkResults computes the checksums of the campaign's result objects
// (archive.Checksums), checking them against those of an earlier
// finalisation: a task whose object was modified since is logged, moved
// aside (RejectedKey) and published again, and errIncomplete returned.
func (co *Coordinator) checkResults(ctx context.Context, c *campaign, ids []string) ([]byte, error) {
	id := c.id
	var m *archive.Manifest
	if data, err := co.o.Store.Get(ctx, storage.ManifestKey(id)); err == nil {
		var prev archive.Manifest
		if json.Unmarshal(data, &prev) == nil {
			m = &prev
		}
	}
	old, warn, err := archive.LoadChecksums(ctx, co.o.Store, id, m)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		co.o.Logf("coordinator: campaign %s: %s", id, warn)
	}
	sums, modified, err := archive.Checksums(ctx, co.o.Store, id, ids, old)
	if err != nil {
		return nil, err
	}
	if len(modified) == 0 {
		return sums, nil
	}
	for tid, msg := range modified {
		co.o.Logf("coordinator: campaign %s: %s: moved to %s, the task will run again", id, msg, RejectedKey(id, tid))
		co.moveAside(ctx, id, tid)
	}
	// The checksums now recorded leave the moved tasks out: their
	// recomputed results are new objects (a result's provenance differs
	// from run to run), checked from the next finalisation on.
	if err := co.o.Store.Put(ctx, storage.ChecksumsKey(id), sums); err != nil {
		return nil, err
	}
	co.mu.Lock()
	c.checksums = archive.SHA256(sums)
	for tid := range modified {
		delete(c.done, tid)
		delete(c.failed, tid)
	}
	c.finalizing = false
	co.mu.Unlock()
	if _, err := co.writeManifest(ctx, c, nil); err != nil {
		return nil, err
	}
	if _, _, _, err := co.reconcile(ctx, c, true); err != nil {
		return nil, err
	}
	return nil, errIncomplete
}

// storeReport renders the report and publishes it whole under
// storage.ReportPrefix(id) (PublishReport). A publication that fails —
// storage full, unavailable — is retried in the background with backoff
// until it succeeds, a newer publication of the campaign starts, or the
// coordinator stops, each failure logged with its cause: a campaign is
// never left done with no report (or part of one) until someone
// resubmits it.
func (co *Coordinator) storeReport(ctx context.Context, id string, c report.Campaign, prec *archive.PrecisionSummary) error {
	files, err := archive.RenderReport(c, prec)
	if err != nil {
		return err
	}
	co.mu.Lock()
	if co.reportGen == nil {
		co.reportGen = map[string]int{}
	}
	co.reportGen[id]++
	gen := co.reportGen[id]
	co.mu.Unlock()
	err = PublishReport(ctx, co.o.Store, id, files)
	if err == nil {
		return nil
	}
	go co.retryReport(ctx, id, gen, files)
	return fmt.Errorf("not published: %w; publishing it again in %s", err, ReportRetryWait)
}

// retryReport publishes a report again after ReportRetryWait, doubling the
// wait up to reportRetryMax, while ctx lasts and no newer publication of
// the campaign started.
func (co *Coordinator) retryReport(ctx context.Context, id string, gen int, files map[string][]byte) {
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
		err := PublishReport(ctx, co.o.Store, id, files)
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
func PublishReport(ctx context.Context, st storage.Store, id string, files map[string][]byte) error {
	err := archive.PublishReport(ctx, st, id, files)
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
