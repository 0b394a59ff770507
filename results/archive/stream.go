package archive

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// A campaign is read a point at a time (Reader.EachPoint): the points
// come from the planned sweep (sweep.Plan, which generates tasks without
// holding them), each point's result objects are read, filed and handed
// over, then dropped. What a Reader holds across points is its spec,
// manifest and checksums, the ids of the stored results (12 bytes each,
// from a paged listing: storage.Walk) and the messages about modified or
// foreign results, so that `msjfarm results` and `msjfarm reproduce` on a
// campaign of 10^5 tasks hold one point's records, never all of them (a
// record is tens of kilobytes in memory: Load of a 24,000-task campaign
// held 2.6 GB). Load is EachPoint collecting every point.

// maxWarnings is how many warnings a pass lists (the first met, sorted);
// the others are counted. A store that lost its stored results has one
// a task: 6·10^5 warnings, 100 MB, on the 10^6-task campaign.
var maxWarnings = 1000

// Reader reads an archived campaign point by point (EachPoint).
type Reader struct {
	ID           string
	Spec         *sweep.File
	ManifestJSON []byte
	Manifest     *Manifest
	// Campaign is the planned campaign (sweep.Plan: its Tasks are not
	// materialised); nil when the spec does not expand here, in which case
	// EachPoint loads every record at once (the tasks must then come from
	// the records: Load's fallback).
	Campaign *sweep.Campaign
	// Modified are the tasks whose result object was modified after the
	// campaign finalised (see Archive.Modified), filled by EachPoint.
	Modified map[string]string
	// Warnings are those of opening the campaign and of the last full
	// EachPoint pass, sorted.
	Warnings []string

	st       storage.Store
	cat      sweep.Catalog
	sums     *Sums
	openWarn []string
	stored   *idSet
}

// Open reads campaign id's spec, manifest and checksums from st, plans the
// spec (with cat: it must plan to the same campaign id) and lists the ids
// of its stored results, a page at a time.
func Open(ctx context.Context, st storage.Store, id string, cat sweep.Catalog) (*Reader, error) {
	f, err := readSpec(ctx, st, id)
	if err != nil {
		return nil, err
	}
	a := &Archive{ID: id, Spec: f}
	if err := a.readManifest(ctx, st); err != nil {
		return nil, err
	}
	if err := a.plan(cat); err != nil {
		return nil, err
	}
	sums, warn, err := LoadChecksums(ctx, st, id, a.Manifest)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		a.Warnings = append(a.Warnings, warn)
	}
	r := &Reader{ID: id, Spec: f, ManifestJSON: a.ManifestJSON, Manifest: a.Manifest, Campaign: a.Campaign,
		Modified: map[string]string{}, st: st, cat: cat, sums: sums, openWarn: a.Warnings}
	r.Warnings = slices.Sorted(slices.Values(r.openWarn))
	if r.Campaign != nil {
		if r.stored, err = listStored(ctx, st, id); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Close releases the checksums' file (archive.Sums), if any.
func (r *Reader) Close() error { return r.sums.Close() }

// plan plans the spec into a.Campaign (tasks not materialised), which
// must be the campaign of this id. A spec this binary cannot plan is an
// error only without a manifest, whose seeds then order the tasks
// instead (a.Campaign nil).
func (a *Archive) plan(cat sweep.Catalog) error {
	camp, err := sweep.Plan(a.Spec, cat)
	switch {
	case err != nil && a.Manifest == nil:
		return fmt.Errorf("campaign %s: spec.yaml: %w", a.ID, err)
	case err != nil:
		a.Warnings = append(a.Warnings, fmt.Sprintf("spec.yaml does not expand here (%v): tasks taken from the stored records", err))
	case camp.ID != a.ID:
		return fmt.Errorf("campaign %s: the stored spec expands to campaign %s (different msjfarm version?)", a.ID, camp.ID)
	}
	a.Campaign = camp
	return nil
}

// PointRecords is one point as EachPoint hands it over: its tasks (the
// expansion's, then the replications precision mode added, in
// replication order) and the records read for them, by task id (a task
// without a record is pending; one modified after finalisation is in
// Reader.Modified instead).
type PointRecords struct {
	Tasks   []sweep.Task
	Records map[string]*record.Record
	Raw     map[string][]byte
}

// EachPoint calls fn with each point of the campaign, in sweep order,
// reading the records of the tasks sel accepts (nil: every task; the
// others are handed over without a record). A full pass (sel nil) also
// reads the stored results that are no task of the campaign and warns
// about them, and leaves the pass's warnings, sorted, in Warnings. An
// error from fn or from reading stops the pass and is returned.
func (r *Reader) EachPoint(ctx context.Context, sel func(tid string) bool, fn func(PointRecords) error) error {
	if r.Campaign == nil {
		return r.eachLoaded(ctx, fn)
	}
	r.stored.resetSeen()
	warn := slices.Clone(r.openWarn)
	more := 0
	keep := func(w []string) {
		n := min(len(w), max(0, maxWarnings-len(warn)))
		warn = append(warn, w[:n]...)
		more += len(w) - n
	}
	var cur []sweep.Task
	eng := engines{}
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		p, w, err := r.readPoint(ctx, cur, sel)
		keep(w)
		if err != nil {
			return err
		}
		eng.add(p.Records)
		cur = nil
		if err := fn(p); err != nil {
			return err
		}
		return ctx.Err()
	}
	err := r.Campaign.Each(func(t sweep.Task) error {
		if len(cur) > 0 && cur[0].Point != t.Point {
			if err := flush(); err != nil {
				return err
			}
		}
		cur = append(cur, t)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	if sel == nil {
		w, err := r.readForeign(ctx)
		if err != nil {
			return err
		}
		keep(w)
		keep(eng.warnings())
		sort.Strings(warn)
		if more > 0 {
			warn = append(warn, fmt.Sprintf("%d more warnings not listed (the first %d are)", more, maxWarnings))
		}
		r.Warnings = warn
	}
	return nil
}

// readPoint reads the records of one point's tasks (those sel accepts)
// and of the replications precision mode added to it, filing them as Load
// does. It returns the point and the warnings of its filing.
func (r *Reader) readPoint(ctx context.Context, tasks []sweep.Task, sel func(string) bool) (PointRecords, []string, error) {
	f := r.Spec
	var added []string
	if f.Precision != nil {
		for rep := f.Replications; rep < f.Precision.MaxReplications; rep++ {
			if c := sweep.Replicate(tasks[0], f.Seed, rep); r.stored.has(c.ID) {
				added = append(added, c.ID)
			}
		}
	}
	var tids []string
	for _, t := range tasks {
		if r.stored.has(t.ID) && (sel == nil || sel(t.ID)) {
			tids = append(tids, t.ID)
		}
	}
	// An added replication is read even when sel does not want it: its
	// record says whether it is a task of the campaign.
	tids = append(tids, added...)
	pa := &Archive{ID: r.ID, Spec: f, Records: map[string]*record.Record{}, Raw: map[string][]byte{}, Modified: r.Modified}
	modRecs := map[string]*record.Record{}
	for i, o := range ReadTasks(ctx, r.st, r.ID, tids) {
		r.stored.see(tids[i])
		if err := pa.keepRecord(tids[i], o.Rec, o.Objs, o.Err, r.sums, modRecs); err != nil {
			return PointRecords{}, pa.Warnings, err
		}
	}
	out := PointRecords{Tasks: tasks, Records: pa.Records, Raw: pa.Raw}
	tmpl := map[string]sweep.Task{tasks[0].Point: tasks[0]}
	for _, tid := range added {
		rec, kept := pa.Records[tid]
		if !kept {
			rec = modRecs[tid] // modified: its task is still the campaign's
		}
		switch {
		case rec == nil || rec.Task.ID != tid:
		case pa.addedReplication(tmpl, rec.Task, tid):
			out.Tasks = append(out.Tasks, rec.Task)
		case kept:
			delete(pa.Records, tid)
			delete(pa.Raw, tid)
			pa.Warnings = append(pa.Warnings, foreignWarning(r.ID, tid))
		}
		if sel != nil && !sel(tid) {
			delete(pa.Records, tid)
			delete(pa.Raw, tid)
		}
	}
	return out, pa.Warnings, nil
}

// readForeign reads the stored results that no point claimed: a record
// of a task that is not the campaign's is left out with a warning (as is
// an unreadable or modified one).
func (r *Reader) readForeign(ctx context.Context) ([]string, error) {
	tids := r.stored.unseen()
	pa := &Archive{ID: r.ID, Spec: r.Spec, Records: map[string]*record.Record{}, Raw: map[string][]byte{}, Modified: map[string]string{}}
	for i, o := range ReadTasks(ctx, r.st, r.ID, tids) {
		if err := pa.keepRecord(tids[i], o.Rec, o.Objs, o.Err, r.sums, map[string]*record.Record{}); err != nil {
			return pa.Warnings, err
		}
		if rec := pa.Records[tids[i]]; rec != nil && rec.Task.ID == tids[i] {
			pa.Warnings = append(pa.Warnings, foreignWarning(r.ID, tids[i]))
		}
		delete(pa.Records, tids[i])
		delete(pa.Raw, tids[i])
	}
	return pa.Warnings, nil
}

func foreignWarning(id, tid string) string {
	return fmt.Sprintf("%s: the record of task %s is not of a task of the campaign: left out", storage.ResultKey(id, tid), tid)
}

// eachLoaded is EachPoint for a spec that does not expand here: the
// records are all read (Load's fallback, which takes the tasks from
// them) and handed over a point at a time.
func (r *Reader) eachLoaded(ctx context.Context, fn func(PointRecords) error) error {
	a := &Archive{ID: r.ID, Spec: r.Spec, ManifestJSON: r.ManifestJSON, Manifest: r.Manifest,
		Records: map[string]*record.Record{}, Raw: map[string][]byte{}, Modified: r.Modified, Warnings: slices.Clone(r.openWarn)}
	if _, err := a.readRecords(ctx, r.st, r.sums); err != nil {
		return err
	}
	eng := engines{}
	eng.add(a.Records)
	a.Warnings = append(a.Warnings, eng.warnings()...)
	sort.Strings(a.Warnings)
	r.Warnings = a.Warnings
	a.tasksFromManifest()
	for i := 0; i < len(a.Tasks); {
		j := i + 1
		for j < len(a.Tasks) && a.Tasks[j].Point == a.Tasks[i].Point {
			j++
		}
		p := PointRecords{Tasks: a.Tasks[i:j], Records: map[string]*record.Record{}, Raw: map[string][]byte{}}
		for _, t := range p.Tasks {
			if rec := a.Records[t.ID]; rec != nil {
				p.Records[t.ID], p.Raw[t.ID] = rec, a.Raw[t.ID]
			}
		}
		if err := fn(p); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// TaskObjects is what record.ReadObjects read for one task.
type TaskObjects struct {
	Rec  *record.Record
	Objs []record.Object
	Err  error
}

// ReadTasks reads the result objects of tasks tids of campaign id, eight
// at a time (the round trips to a remote store, or a local one's file
// opens, overlap), in the order of tids.
func ReadTasks(ctx context.Context, st storage.Store, id string, tids []string) []TaskObjects {
	out := make([]TaskObjects, len(tids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, tid := range tids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, objs, err := record.ReadObjects(ctx, st, id, tid)
			out[i] = TaskObjects{Rec: r, Objs: objs, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// idSet is the set of a campaign's stored result ids: task ids (24 hex
// digits) as 12 bytes, sorted, any other name as a string, and which of
// them a pass has read.
type idSet struct {
	ids   [][12]byte
	other []string
	seen  []bool
}

// listStored lists the task ids of campaign id's stored results.
func listStored(ctx context.Context, st storage.Store, id string) (*idSet, error) {
	s := &idSet{}
	err := storage.Walk(ctx, st, storage.ResultsPrefix(id), func(k string) error {
		tid, ok := storage.ResultTaskID(id, k)
		if !ok {
			return nil
		}
		if b, ok := taskBytes(tid); ok {
			s.ids = append(s.ids, b)
		} else {
			s.other = append(s.other, tid)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(s.ids, func(a, b [12]byte) int { return bytes.Compare(a[:], b[:]) })
	s.ids = slices.Clip(s.ids)
	sort.Strings(s.other)
	return s, nil
}

// taskBytes is a task id (24 lower-case hex digits) as 12 bytes.
func taskBytes(tid string) ([12]byte, bool) {
	var b [12]byte
	if len(tid) != 24 || strings.ToLower(tid) != tid {
		return b, false
	}
	_, err := hex.Decode(b[:], []byte(tid))
	return b, err == nil
}

func (s *idSet) find(tid string) (int, bool) {
	b, ok := taskBytes(tid)
	if !ok {
		return 0, false
	}
	return slices.BinarySearchFunc(s.ids, b, func(x, y [12]byte) int { return bytes.Compare(x[:], y[:]) })
}

func (s *idSet) has(tid string) bool {
	_, ok := s.find(tid)
	return ok
}

func (s *idSet) resetSeen() {
	s.seen = make([]bool, len(s.ids))
}

func (s *idSet) see(tid string) {
	if i, ok := s.find(tid); ok {
		s.seen[i] = true
	}
}

// unseen are the ids no point read since resetSeen, sorted.
func (s *idSet) unseen() []string {
	var out []string
	for i, b := range s.ids {
		if !s.seen[i] {
			out = append(out, hex.EncodeToString(b[:]))
		}
	}
	out = append(out, s.other...)
	sort.Strings(out)
	return out
}

// engines are the engine versions (sim.Version) of a campaign's results,
// by policy.
type engines map[string]map[string]bool

func (e engines) add(recs map[string]*record.Record) {
	for _, rec := range recs {
		if rec == nil || rec.Failed() || rec.Result.Engine == "" {
			continue
		}
		if e[rec.Task.Policy] == nil {
			e[rec.Task.Policy] = map[string]bool{}
		}
		e[rec.Task.Policy][rec.Result.Engine] = true
	}
}

// warnings names each policy whose results come from more than one
// engine version: workers of different msjfarm versions ran one campaign,
// and its means pooled numbers a version bump says may differ, with no
// word anywhere.
func (e engines) warnings() []string {
	var out []string
	for pol, vs := range e {
		if len(vs) < 2 {
			continue
		}
		list := slices.Sorted(maps.Keys(vs))
		out = append(out, fmt.Sprintf("policy %s: results of engine versions %s are pooled (workers of different msjfarm versions ran the campaign); "+
			"they are not comparable bit for bit: to have one version's, run the campaign again with every process of the farm at that version "+
			"into a store that does not hold these results (submitting it again here counts them done)", pol, strings.Join(list, ", ")))
	}
	sort.Strings(out)
	return out
}

// StoredMixedEngines is MixedEngines of campaign id's stored manifest
// (nil when it has none or it does not parse).
func StoredMixedEngines(ctx context.Context, st storage.Store, id string) []string {
	data, err := st.Get(ctx, storage.ManifestKey(id))
	if err != nil {
		return nil
	}
	var m Manifest
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return MixedEngines(&m)
}

// MixedEngines warns, as the readers do, of each policy whose results the
// manifest lists under more than one engine version: for readers of the
// stored summary (msjfarm results) and the coordinator's finalisation,
// which read no record. A rolling upgrade of a farm's workers pooled two
// versions in a summary that only report warned of.
func MixedEngines(m *Manifest) []string {
	if m == nil {
		return nil
	}
	e := engines{}
	for _, p := range m.Policies {
		if p.Engine == "" {
			continue
		}
		if e[p.Policy] == nil {
			e[p.Policy] = map[string]bool{}
		}
		e[p.Policy][p.Engine] = true
	}
	return e.warnings()
}
