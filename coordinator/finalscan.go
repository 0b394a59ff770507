package coordinator

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/internal/scratch"
	"github.com/msjfarm/msjfarm/results/aggregate"
	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
)

// Finalisation streams: the campaign's tasks are generated and their
// result objects read a point at a time (finalScan), each point summarised
// as soon as its records are read (aggregate.SummarizePoint) and the
// checksums written to a temporary file, so that what the scan holds is
// one point's records plus O(points) summaries — never every record. The
// paired comparisons read the records again a scenario at a time
// (aggregate.ComparePaired). The per-replication table of the report
// needs every record: it is built only for campaigns of at most
// reportRecordsMax tasks (`msjfarm report` builds it from the archive).

// reportRecordsMax is the largest campaign whose coordinator-rendered
// report has the per-replication table (and so whose records the
// finalisation keeps): archive.ReportRecordsMax, `msjfarm report`'s rule
// too. A record is a few kilobytes in memory.
var reportRecordsMax = archive.ReportRecordsMax

// finalScan is what one pass over a campaign's results learnt.
type finalScan struct {
	pts []aggregate.Point
	// done and failed are the tasks with a record (failed: task → error).
	done   *taskSet
	failed map[string]string
	// missing counts the tasks without a readable record of their own
	// (absent, or moved aside here: not a record of their task), and
	// missingIDs names the first maxMissingIDs of them (rerun takes them
	// out of the campaign's done set).
	missing    int
	missingIDs []string
	// modified are the tasks whose object differs from the checksums of
	// an earlier finalisation (task → message); they were moved aside.
	modified map[string]string
	prov     provenance
	// sums is the checksums object being written (one line per result
	// object, in task order), sumsHash its sha256 so far.
	sums     *os.File
	sumsBuf  *bufio.Writer
	sumsHash hash.Hash
	// tasks and recs are kept for the report's per-replication table
	// (nil beyond reportRecordsMax tasks).
	tasks []sweep.Task
	recs  map[string]*record.Record
}

// flush writes out the checksums buffered.
func (s *finalScan) flush() error {
	if err := s.sumsBuf.Flush(); err != nil {
		return fmt.Errorf("checksums: %w", err)
	}
	return nil
}

// close removes the temporary checksums file.
func (s *finalScan) close() {
	if s.sums != nil {
		_ = s.sums.Close()
		_ = os.Remove(s.sums.Name())
	}
}

// provenance is what the manifest records about the results: the code
// each policy ran with (counted) and the hosts that ran them.
type provenance struct {
	policies map[archive.PolicyProvenance]int
	hosts    map[string]bool
}

func (p *provenance) add(r *record.Record) {
	if p.hosts == nil {
		p.policies, p.hosts = map[archive.PolicyProvenance]int{}, map[string]bool{}
	}
	if h := r.Provenance.Host; h != "" {
		p.hosts[h] = true
	}
	if r.Failed() {
		return
	}
	pv := r.Provenance
	p.policies[archive.PolicyProvenance{Policy: r.Task.Policy, Runner: pv.Runner, Plugin: pv.Plugin,
		PluginVersion: pv.PluginVersion, PluginSHA256: pv.PluginSHA256, Engine: r.Result.Engine}]++
}

// manifest is the provenance as the manifest lists it: policies sorted
// by name then plugin hash, hosts sorted.
func (p *provenance) manifest() ([]archive.PolicyProvenance, []string) {
	var pols []archive.PolicyProvenance
	for pp, n := range p.policies {
		pp.Results = n
		pols = append(pols, pp)
	}
	slices.SortFunc(pols, func(a, b archive.PolicyProvenance) int {
		if a.Policy != b.Policy {
			return strings.Compare(a.Policy, b.Policy)
		}
		return strings.Compare(a.PluginSHA256, b.PluginSHA256)
	})
	hosts := slices.Sorted(maps.Keys(p.hosts))
	return pols, hosts
}

// inParallel calls fn(i) for every i in [0, n), eight at a time: the
// round trips to storage (S3), or its file opens, overlap.
func inParallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// scanResults reads every task's result objects a point at a time,
// checking them against old (the checksums of an earlier finalisation,
// may be nil).
func (co *Coordinator) scanResults(ctx context.Context, c *campaign, tl *taskList, old *archive.Sums) (*finalScan, error) {
	f, err := scratch.CreateTemp("msjfarm-checksums-*")
	if err != nil {
		return nil, fmt.Errorf("checksums: %w", err)
	}
	s := &finalScan{done: newTaskSet(tl), failed: map[string]string{}, modified: map[string]string{},
		sums: f, sumsBuf: bufio.NewWriterSize(f, 1<<16), sumsHash: sha256.New()}
	if tl.Len() <= reportRecordsMax {
		s.recs = map[string]*record.Record{}
	}
	co.mu.Lock()
	s.pts = make([]aggregate.Point, 0, len(tl.Points())) // not grown by doubling: 10^5 summaries
	co.mu.Unlock()
	w := io.MultiWriter(s.sumsBuf, s.sumsHash)
	err = co.eachPoint(tl, func(tasks []sweep.Task) error {
		ids := make([]string, len(tasks))
		for i, t := range tasks {
			ids[i] = t.ID
		}
		objs := archive.ReadTasks(ctx, co.o.Store, c.id, ids)
		recs := make(map[string]*record.Record, len(tasks))
		for i, t := range tasks {
			if err := co.scanTask(ctx, c.id, t, objs[i], old, s, w); err != nil {
				return err
			}
			if r := objs[i].Rec; objs[i].Err == nil && s.modified[t.ID] == "" {
				recs[t.ID] = r
			}
		}
		s.pts = append(s.pts, aggregate.SummarizePoint(tasks, recs))
		if s.recs != nil {
			s.tasks = append(s.tasks, tasks...)
			maps.Copy(s.recs, recs)
		}
		return ctx.Err()
	})
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// scanTask files one task's objects: unreadable (an error), missing (none,
// or not a record of its task: moved aside), modified since the last
// finalisation (moved aside), or a record whose objects' checksums are
// written to w.
func (co *Coordinator) scanTask(ctx context.Context, id string, t sweep.Task, o archive.TaskObjects, old *archive.Sums, s *finalScan, w io.Writer) error {
	if o.Err != nil {
		ie, integrity := errors.AsType[*record.IntegrityError](o.Err)
		switch {
		case errors.Is(o.Err, storage.ErrNotFound):
			co.dropDanglingRef(ctx, id, t.ID)
		case integrity:
			co.o.Logf("coordinator: campaign %s: %v: moved to %s, the task will run again", id, o.Err, RejectedKey(id, t.ID))
			co.moveAsideKey(ctx, id, t.ID, ie.Key)
		default:
			return fmt.Errorf("reading result %s: %w", t.ID, o.Err)
		}
		s.missing++
		if len(s.missingIDs) < maxMissingIDs {
			s.missingIDs = append(s.missingIDs, t.ID)
		}
		return nil
	}
	if msg := archive.ModifiedObject(old, o.Objs); msg != "" {
		co.o.Logf("coordinator: campaign %s: %s: moved to %s, the task will run again", id, msg, RejectedKey(id, t.ID))
		co.moveAside(ctx, id, t.ID)
		s.modified[t.ID] = msg
		return nil
	}
	for _, ob := range o.Objs {
		sum := sha256.Sum256(ob.Data)
		if _, err := fmt.Fprintf(w, "%s  %s\n", hex.EncodeToString(sum[:]), ob.Key); err != nil {
			return fmt.Errorf("checksums: %w", err)
		}
	}
	s.prov.add(o.Rec)
	if o.Rec.Failed() {
		s.failed[t.ID] = o.Rec.Error
	} else {
		s.done.add(t.ID)
	}
	return nil
}

// maxMissingIDs bounds finalScan.missingIDs: a campaign that lost more
// results than this (a store swapped under it) is reconciled from storage
// alone.
const maxMissingIDs = 1 << 16

// dropDanglingRef removes the campaign's reference to task tid's result
// when the object it refers to is gone: another campaign's verification
// outvoted that shared result and moved it aside, or gc removed it. Kept,
// the reconcile counted the task as stored and never ran it again, while
// each finalisation found it missing and started the next at once: a
// resubmitted campaign logged "results missing from storage;
// re-published" 87,522 times in ten minutes, and no task was published.
func (co *Coordinator) dropDanglingRef(ctx context.Context, id, tid string) {
	key := storage.ResultKey(id, tid)
	if _, err := co.o.Store.Stat(ctx, key); err != nil {
		return // no reference either: nothing stored yet
	}
	co.o.Logf("coordinator: campaign %s: the result of task %s refers to an object that is gone (outvoted by a verification, or removed): the task will run again", id, tid)
	if err := co.o.Store.Delete(ctx, key); err != nil && !errors.Is(err, storage.ErrNotFound) {
		co.o.Logf("coordinator: campaign %s: removing the reference of task %s: %v", id, tid, err)
	}
}

// pairLoader reads the records of the points ComparePaired asks for (by
// position in the campaign's point order).
func (co *Coordinator) pairLoader(ctx context.Context, id string, tl *taskList) func([]int) (map[int][]*record.Record, error) {
	return func(idx []int) (map[int][]*record.Record, error) {
		out := make(map[int][]*record.Record, len(idx))
		for _, k := range idx {
			tasks := co.pointTasks(tl, k)
			ids := make([]string, len(tasks))
			for i, t := range tasks {
				ids[i] = t.ID
			}
			recs := record.ReadMany(ctx, co.o.Store, id, ids, nil)
			for _, tid := range ids {
				if r := recs[tid]; r != nil {
					out[k] = append(out[k], r)
				}
			}
		}
		return out, ctx.Err()
	}
}

// eachPoint calls fn with the tasks of each point of tl, in the
// campaign's point order (tl.Points), generated a point at a time in
// compact mode.
func (co *Coordinator) eachPoint(tl *taskList, fn func([]sweep.Task) error) error {
	co.mu.Lock()
	n := len(tl.Points())
	co.mu.Unlock()
	for k := range n {
		if err := fn(co.pointTasks(tl, k)); err != nil {
			return err
		}
	}
	return nil
}

// pointTasks is tl.pointTasks under co.mu (a precision campaign's list
// grows under it).
func (co *Coordinator) pointTasks(tl *taskList, k int) []sweep.Task {
	co.mu.Lock()
	defer co.mu.Unlock()
	return tl.pointTasks(k)
}

// pointTasks are the tasks of the k-th point (tl.Points order), in
// replication order. In compact mode every point has the sweep's
// replications, consecutive in the expansion; a full list (precision mode
// adds replications at the end) is indexed by point once.
func (tl *taskList) pointTasks(k int) []sweep.Task {
	if tl.ids != nil {
		reps := tl.Len() / len(tl.Points())
		out := make([]sweep.Task, reps)
		for j := range out {
			out[j] = tl.At(k*reps + j)
		}
		return out
	}
	if tl.byPoint == nil || tl.byPointLen != len(tl.full) {
		pos := map[string]int{}
		for i, p := range tl.Points() {
			pos[p] = i
		}
		tl.byPoint = make([][]int32, len(tl.Points()))
		for i, t := range tl.full {
			p := pos[t.Point]
			tl.byPoint[p] = append(tl.byPoint[p], int32(i))
		}
		tl.byPointLen = len(tl.full)
	}
	out := make([]sweep.Task, len(tl.byPoint[k]))
	for j, i := range tl.byPoint[k] {
		out[j] = tl.full[i]
	}
	slices.SortStableFunc(out, func(a, b sweep.Task) int { return a.Replication - b.Replication })
	return out
}
