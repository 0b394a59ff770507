package coordinator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/sim"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Manifest is campaigns/<id>/manifest.json: what is needed to reproduce
// any number of the campaign.
type Manifest struct {
	Campaign string `json:"campaign"`
	Name     string `json:"name"`
	State    string `json:"state"`
	// MsjfarmVersion is the coordinator's engine version (sim.Version);
	// each policy entry names the engine its results came from.
	MsjfarmVersion string    `json:"msjfarm_version"`
	Created        time.Time `json:"created"`
	Updated        time.Time `json:"updated"`
	Finished       time.Time `json:"finished,omitzero"`
	Tasks          int       `json:"tasks"`
	Points         int       `json:"points"`
	Done           int       `json:"done"`
	Failed         int       `json:"failed"`
	Replications   int       `json:"replications"`
	// Seed is the campaign seed; SeedDerivation says how each task's seed
	// follows from it; Seeds lists them.
	Seed           uint64              `json:"seed"`
	SeedDerivation string              `json:"seed_derivation"`
	Seeds          []TaskSeed          `json:"seeds"`
	Policies       []PolicyProvenance  `json:"policies,omitempty"`
	Hosts          []string            `json:"hosts,omitempty"`
	Warnings       []string            `json:"warnings,omitempty"`
	Sweep          *sweep.File         `json:"sweep"`
	Layout         map[string]string   `json:"nats_layout"`
	Storage        string              `json:"storage"`
	Extra          map[string][]string `json:"extra,omitempty"`
	// Precision is the outcome of precision mode (sweep precision block):
	// per point, the replications it ended with and whether it met the
	// target or hit max_replications. Also in precision.csv.
	Precision *PrecisionSummary `json:"precision,omitempty"`
	// Report is the storage prefix of the rendered report (index.html,
	// plots, summary.csv/json, manifest.json), once finished.
	Report string `json:"report,omitempty"`
	// Plugins is the plugin binary each policy is pinned to when the
	// campaign runs with plugin runners (see plugins.go).
	Plugins PluginPins `json:"plugins,omitempty"`
}

// TaskSeed pins one task.
type TaskSeed struct {
	Task        string `json:"task"`
	Point       string `json:"point"`
	Policy      string `json:"policy"`
	Replication int    `json:"replication"`
	Seed        uint64 `json:"seed"`
}

// PolicyProvenance is one (policy, code) pair seen in the results.
type PolicyProvenance struct {
	Policy        string `json:"policy"`
	Runner        string `json:"runner,omitempty"`
	Plugin        string `json:"plugin,omitempty"`
	PluginVersion string `json:"plugin_version,omitempty"`
	PluginSHA256  string `json:"plugin_sha256,omitempty"`
	Engine        string `json:"engine,omitempty"`
	Results       int    `json:"results"`
}

const seedDerivation = "seed of replication r at a scenario = first 8 bytes (big-endian) of " +
	`SHA-256(JSON{"seed": campaign seed, "replication": r, "scenario": scenario without the policy}) (package sweep)`

// writeManifest writes the manifest; recs (may be nil) adds the policy
// provenance and hosts of the results.
func (co *Coordinator) writeManifest(ctx context.Context, c *campaign, recs map[string]*record.Record) ([]byte, error) {
	co.mu.Lock()
	m := Manifest{Campaign: c.id, Name: c.st.Name, State: c.st.State, MsjfarmVersion: sim.Version,
		Created: c.st.Created, Updated: time.Now().UTC(), Finished: c.st.Finished, Tasks: len(c.tasks),
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
	for _, t := range c.tasks {
		m.Seeds = append(m.Seeds, TaskSeed{Task: t.ID, Point: t.Point, Policy: t.Policy, Replication: t.Replication, Seed: t.Seed})
	}
	m.Precision = c.precisionSummary()
	if c.st.State == protocol.CampaignDone {
		m.Report = storage.ReportPrefix(c.id) + "index.html"
	}
	co.mu.Unlock()
	if recs != nil {
		pp := map[PolicyProvenance]int{}
		hosts := map[string]bool{}
		for _, r := range recs {
			if h := r.Provenance.Host; h != "" {
				hosts[h] = true
			}
			if r.Failed() {
				continue
			}
			p := r.Provenance
			pp[PolicyProvenance{Policy: r.Task.Policy, Runner: p.Runner, Plugin: p.Plugin,
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
		var prev Manifest
		if json.Unmarshal(old, &prev) == nil {
			m.Policies, m.Hosts = prev.Policies, prev.Hosts
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
	tasks := c.tasks
	co.mu.Unlock()
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
	pts := aggregate.Summarize(tasks, recs)
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
		pc := precisionCSV(prec)
		if old, _ := co.o.Store.Get(ctx, PrecisionKey(id)); !bytes.Equal(old, pc) {
			sameSummary = false
		}
		if err := co.o.Store.Put(ctx, PrecisionKey(id), pc); err != nil {
			return err
		}
	}
	manifest, err := co.writeManifest(ctx, c, recs)
	if err != nil {
		return err
	}
	// The report is a view of the summary: a rendering failure is logged
	// (msjfarm report regenerates it) and does not fail the campaign.
	if _, err := co.o.Store.Stat(ctx, storage.ReportPrefix(id)+"index.html"); err == nil && sameSummary {
		co.o.Logf("coordinator: campaign %s: results unchanged, report kept", id)
	} else if err := co.storeReport(ctx, id, pts, manifest, prec); err != nil {
		co.o.Logf("coordinator: report of %s: %v", id, err)
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

// storeReport renders the report and stores each file under
// storage.ReportPrefix(id).
func (co *Coordinator) storeReport(ctx context.Context, id string, pts []aggregate.Point, manifest []byte, prec *PrecisionSummary) error {
	files, err := RenderReport(pts, manifest, prec)
	if err != nil {
		return err
	}
	// Stored eight at a time: a report is a few dozen files, and one at a
	// time they cost a few dozen fsyncs (local) or round trips (S3) in a
	// row at the end of every campaign.
	sem := make(chan struct{}, 8)
	errs := make(chan error, len(files))
	for name, data := range files {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			errs <- co.o.Store.Put(ctx, storage.ReportPrefix(id)+name, data)
		}()
	}
	var first error
	for range files {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// RenderReport is report.Render plus precision.csv for a precision
// campaign (prec may be nil).
func RenderReport(pts []aggregate.Point, manifest []byte, prec *PrecisionSummary) (map[string][]byte, error) {
	files, err := report.Render(pts, manifest)
	if err != nil {
		return nil, err
	}
	if prec != nil {
		files["precision.csv"] = precisionCSV(prec)
	}
	return files, nil
}

func sortStatus(s []protocol.Status) {
	sort.Slice(s, func(i, j int) bool {
		if !s[i].Created.Equal(s[j].Created) {
			return s[i].Created.Before(s[j].Created)
		}
		return s[i].Campaign < s[j].Campaign
	})
}
