// Package archive reads a finished (or interrupted) campaign back from
// storage, without NATS: its spec, manifest and result records
// (campaigns/<id>/...), summarised again or re-run. It also defines the
// manifest the coordinator writes there, so that the writer (the
// coordinator imports this package) and the readers (msjfarm report and
// reproduce) share one type, and the report rendering both store.
package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/results/report"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Archive is a campaign as archived in storage: what `msjfarm report` and
// `msjfarm reproduce` read, without NATS.
type Archive struct {
	ID string
	// Spec is campaigns/<id>/spec.yaml parsed; Campaign it planned
	// (sweep.Plan: its Tasks are not materialised, Tasks below are).
	Spec     *sweep.File
	Campaign *sweep.Campaign
	// ManifestJSON is manifest.json as stored (nil if absent); Manifest
	// is it parsed.
	ManifestJSON []byte
	Manifest     *Manifest
	// Tasks are the expanded tasks followed by the replications added in
	// precision mode (found in the records), grouped by point in sweep
	// order and by replication index: the task list the coordinator
	// summarised.
	Tasks []sweep.Task
	// Records are the stored result records by task id; Raw are their bytes
	// as stored.
	Records map[string]*record.Record
	Raw     map[string][]byte
	// Modified are the tasks whose result object was modified after the
	// campaign finalised (its sha256 is not the one in the campaign's
	// checksums), each with a message naming the object: they are left
	// out of Records (and so of every summary made from the archive).
	Modified map[string]string
	// Warnings: e.g. the spec could not be expanded here (a policy this
	// binary does not know), so Tasks come from the records in manifest
	// order and pending tasks are missing.
	Warnings []string
}

// Load reads campaign id from st: spec, manifest and every result
// record, all at once (a reader that can take the campaign a point at a
// time uses Open and Reader.EachPoint instead: Load is that, collecting
// every point). The spec must expand (with cat) to the same campaign id;
// if it does not expand at all (cat does not know a policy), the tasks
// are taken from the records, in the order of the manifest's seeds, with
// a warning.
func Load(ctx context.Context, st storage.Store, id string, cat sweep.Catalog) (*Archive, error) {
	r, err := Open(ctx, st, id, cat)
	if err != nil {
		return nil, err
	}
	return r.Load(ctx)
}

// Load reads every point (EachPoint) into an Archive: every record at
// once.
func (r *Reader) Load(ctx context.Context) (*Archive, error) {
	a := &Archive{ID: r.ID, Spec: r.Spec, Campaign: r.Campaign, ManifestJSON: r.ManifestJSON, Manifest: r.Manifest,
		Records: map[string]*record.Record{}, Raw: map[string][]byte{}, Modified: r.Modified}
	err := r.EachPoint(ctx, nil, func(p PointRecords) error {
		a.Tasks = append(a.Tasks, p.Tasks...)
		maps.Copy(a.Records, p.Records)
		maps.Copy(a.Raw, p.Raw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.Warnings = r.Warnings
	return a, nil
}

// readSpec reads and parses the campaign's stored spec.
func readSpec(ctx context.Context, st storage.Store, id string) (*sweep.File, error) {
	spec, err := st.Get(ctx, storage.CampaignSpecKey(id))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("campaign %s: no %s in %s", id, storage.CampaignSpecKey(id), st.URL())
	}
	if err != nil {
		return nil, err
	}
	f, err := sweep.Parse(spec, "yaml")
	if err != nil {
		return nil, fmt.Errorf("campaign %s: spec.yaml: %w", id, err)
	}
	return f, nil
}

// readManifest reads the manifest, which a campaign interrupted before
// the coordinator wrote one does not have.
func (a *Archive) readManifest(ctx context.Context, st storage.Store) error {
	m, err := st.Get(ctx, storage.ManifestKey(a.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	a.ManifestJSON = m
	var mf Manifest
	if err := json.Unmarshal(m, &mf); err != nil {
		return fmt.Errorf("campaign %s: manifest.json: %w", a.ID, err)
	}
	a.Manifest = &mf
	return nil
}

// readRecords reads every result record of the campaign, eight at a
// time (a store is often remote). It returns the records left out as
// modified after finalisation that are still records of their task.
func (a *Archive) readRecords(ctx context.Context, st storage.Store, sums *Sums) (map[string]*record.Record, error) {
	keys, err := st.List(ctx, storage.ResultsPrefix(a.ID))
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	modRecs := map[string]*record.Record{}
	sem := make(chan struct{}, 8)
	for _, k := range keys {
		tid, ok := storage.ResultTaskID(a.ID, k)
		if !ok {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, objs, err := record.ReadObjects(ctx, st, a.ID, tid)
			mu.Lock()
			defer mu.Unlock()
			if err := a.keepRecord(tid, r, objs, err, sums, modRecs); err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return modRecs, firstErr
}

// keepRecord files one task's read result (the caller holds the lock). A
// reference is followed to the stored result; a record in place
// (failure, layout 1) is read as it is. An object modified after
// finalisation, or that is not a record of its task, is left out with a
// warning: it is not this campaign's result; so is an entry whose stored
// result is gone. Any other read error is returned.
func (a *Archive) keepRecord(tid string, r *record.Record, objs []record.Object, err error, sums *Sums, modRecs map[string]*record.Record) error {
	if msg := modified(sums, objs); msg != "" {
		a.Modified[tid] = msg
		if r != nil && err == nil {
			modRecs[tid] = r // its task is still the campaign's
		}
		a.Warnings = append(a.Warnings, msg+": left out")
		return nil
	}
	if ie, ok := errors.AsType[*record.IntegrityError](err); ok {
		// Not this task's result: a forged or altered record. Marked as
		// modified, so that reproduce reports it as different (it passed
		// over it as a task that "failed or never ran", exit 0).
		msg := fmt.Sprintf("%v (%s)", ie, ie.Key)
		a.Modified[tid] = msg
		a.Warnings = append(a.Warnings, msg+": left out")
		return nil
	}
	if errors.Is(err, storage.ErrNotFound) {
		if gone := deleted(sums, objs); gone != "" {
			// The campaign finalised with this result (its checksums
			// list it), and it is gone: an archive with a member taken
			// out, a store pruned by hand. Not "not run": a published
			// number is missing, which reproduce must not pass over.
			a.Modified[tid] = gone
			a.Warnings = append(a.Warnings, gone+": left out")
			return nil
		}
		// The entry refers to a stored result that is gone (deleted
		// from the store, or the entry removed since the listing): the
		// task reads as not run, as the coordinator counts it.
		a.Warnings = append(a.Warnings, fmt.Sprintf("%v: left out, the task reads as not run", err))
		return nil
	}
	if err != nil {
		return err
	}
	a.Records[tid], a.Raw[tid] = r, objs[len(objs)-1].Data
	return nil
}

// tasksFromManifest orders the records' tasks as the manifest does, for
// a spec that does not expand here: version 1 listed every task; version
// 2 lists the points.
//
// A task listed twice counts once: a manifest repeating one task fifty
// times made its point n = 50 with a zero-width interval, and reproduce
// "50 bit-identical".
func (a *Archive) tasksFromManifest() {
	listed := make(map[string]bool, len(a.Manifest.Seeds))
	for _, s := range a.Manifest.Seeds {
		if r := a.Records[s.Task]; r != nil && r.Task.ID == s.Task && !listed[s.Task] {
			listed[s.Task] = true
			a.Tasks = append(a.Tasks, r.Task)
		}
	}
	if len(a.Manifest.Seeds) == 0 {
		a.Tasks = recordsInOrder(a.Records, a.Manifest.PointOrder)
	}
}

// addedReplication says whether t (stored as task tid) is a replication
// precision mode added: the task the sweep generates for its point and
// replication index (sweep.Replicate), within the precision cap. tmpl
// holds each point's first task.
func (a *Archive) addedReplication(tmpl map[string]sweep.Task, t sweep.Task, tid string) bool {
	f := a.Spec
	t0, ok := tmpl[t.Point]
	rep := t.Replication
	return ok && f.Precision != nil && rep >= f.Replications && rep < f.Precision.MaxReplications &&
		sweep.Replicate(t0, f.Seed, rep).ID == tid
}

// Points summarises the archived records (aggregate.Summarize over Tasks).
// The paired comparisons are against the spec's baseline (compare block),
// else the first policy.
func (a *Archive) Points() []aggregate.Point {
	pts := aggregate.Summarize(a.Tasks, a.Records)
	_ = aggregate.Compare(pts, a.Spec.BaselineOf()) // validated at submission; else the first policy's stand
	return pts
}

// ReportCampaign is the archive as report.Render takes it: the summary, the
// replications and the stored manifest.
func (a *Archive) ReportCampaign() report.Campaign {
	return report.Campaign{Points: a.Points(), Tasks: a.Tasks, Records: a.Records, Manifest: a.ManifestJSON}
}

// Report renders the campaign's report from the archive (report.Render
// with the stored manifest, plus precision.csv: the manifest's precision
// rule and points, decided again from the records), with the other archives' campaigns overlaid in its
// figures and tables (msjfarm report A B).
func (a *Archive) Report(overlay ...*Archive) (map[string][]byte, error) {
	rc := a.ReportCampaign()
	var prec *PrecisionSummary
	if a.Manifest != nil {
		prec = a.Manifest.Precision.FromRecords(rc.Points)
	}
	var others []report.Campaign
	for _, o := range overlay {
		others = append(others, o.ReportCampaign())
	}
	return RenderReport(rc, prec, others...)
}

// recordsInOrder are the tasks of the records whose point is in points,
// ordered by point (as listed) and replication.
func recordsInOrder(recs map[string]*record.Record, points []string) []sweep.Task {
	order := make(map[string]int, len(points))
	for i, p := range points {
		order[p] = i
	}
	var tasks []sweep.Task
	for tid, r := range recs {
		if _, ok := order[r.Task.Point]; ok && r.Task.ID == tid {
			tasks = append(tasks, r.Task)
		}
	}
	sort.Slice(tasks, func(i, j int) bool {
		a, b := tasks[i], tasks[j]
		if a.Point != b.Point {
			return order[a.Point] < order[b.Point]
		}
		return a.Replication < b.Replication
	})
	return tasks
}
