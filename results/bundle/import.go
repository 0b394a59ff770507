package bundle

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/msjfarm/msjfarm/results/archive"
	"github.com/msjfarm/msjfarm/results/record"
	"github.com/msjfarm/msjfarm/storage"
)

// ImportSummary counts what Import did.
type ImportSummary struct {
	Campaign string
	// Written objects were stored; Present ones were already there with
	// the same content (a result another campaign computed, the same
	// campaign imported before).
	Written int
	Present int
	// Marked are the results written that other campaigns will not reuse
	// until a run here agrees (storage.ImportedKey; not in Written).
	Marked int
	// Derived objects (summary.csv, precision.csv, the report) were left
	// out: nothing ties them to the records, so the importer rebuilds
	// them from the records (cmd/msjfarm).
	Derived int
}

// Import copies an extracted archive's store into dst (what importKeys
// admits: its campaign and what that refers to, but the derived summary
// and report, which the caller rebuilds), all or nothing:
// content-addressed objects (results, plugin binaries, traces) first,
// then the campaign's objects, its spec last (a campaign is listed once
// its spec exists). Before anything is written it checks that no object
// the archive holds is in dst with other content: the campaign (same id)
// or a result under the same content key computed again elsewhere (the
// campaign's checksums pin the archived bytes, so keeping the other
// would leave the task out of every report). If a write fails, every
// object this call created is deleted again.
func Import(ctx context.Context, x *Extracted, dst storage.Store) (*ImportSummary, error) {
	id := x.Format.Campaign
	sum := &ImportSummary{Campaign: id}
	if err := consistent(ctx, x.Store, x.Opened); err != nil {
		return nil, fmt.Errorf("%w; not imported", err)
	}
	keys, derived, err := importKeys(ctx, x)
	if err != nil {
		return nil, err
	}
	sum.Derived = derived + x.Derived
	// Plan: which objects are missing, which are present and equal.
	var todo []string
	var conflicts []string
	var mu sync.Mutex
	err = forEach(ctx, keys, 8, func(k string) error {
		info, err := dst.Stat(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			mu.Lock()
			todo = append(todo, k)
			mu.Unlock()
			return nil
		}
		if err != nil {
			return err
		}
		same, err := sameObject(ctx, x, dst, k, info)
		if errors.Is(err, storage.ErrNotFound) {
			same, err = true, nil // gone since the Stat: checked again before the spec
		}
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if same {
			sum.Present++
		} else {
			conflicts = append(conflicts, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import into %s: %w", dst.URL(), err)
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		more := ""
		if len(conflicts) > 10 {
			more = fmt.Sprintf(" and %d more", len(conflicts)-10)
			conflicts = conflicts[:10]
		}
		return nil, fmt.Errorf("import into %s: nothing imported: %s%s already there with other content "+
			"(the same campaign changed since, or the same computation stored by another run; import into another store)",
			dst.URL(), strings.Join(conflicts, ", "), more)
	}
	sort.Slice(todo, func(i, j int) bool {
		return importRank(id, todo[i]) < importRank(id, todo[j]) ||
			importRank(id, todo[i]) == importRank(id, todo[j]) && todo[i] < todo[j]
	})
	var created []string
	rollback := func(cause error) error {
		if _, err := dst.Stat(context.WithoutCancel(ctx), storage.CampaignSpecKey(id)); err == nil {
			// Another import of the campaign finished meanwhile, counting
			// as there what this one wrote: deleting it left that import
			// "done" with results missing (two imports, one interrupted).
			return fmt.Errorf("import into %s: %w; the campaign was imported meanwhile by another process, so the %d objects this one wrote stay", dst.URL(), cause, len(created))
		}
		var failed []string
		for _, k := range slices.Backward(created) {
			if err := dst.Delete(context.WithoutCancel(ctx), k); err != nil {
				failed = append(failed, k)
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("import into %s: %w; rolling back, %d of %d written objects could not be deleted: %s",
				dst.URL(), cause, len(failed), len(created), strings.Join(failed, ", "))
		}
		return fmt.Errorf("import into %s: %w; the %d objects written were deleted again: nothing imported", dst.URL(), cause, len(created))
	}
	// Content-addressed objects, then the campaign's other objects, 8 at
	// once (one at a time, a local store's fsync per object made a
	// 10^4-task import take 90 s); the manifest and the spec last, in
	// that order.
	put := func(k string) error {
		// A result is marked imported before it is written, so that no
		// other campaign reuses it unconfirmed (record.Reusable); a mark
		// whose result was never written marks nothing.
		if key, ok := storage.StoredResultContentKey(k); ok {
			made, err := dst.PutIfAbsent(ctx, storage.ImportedKey(key), []byte(id+"\n"))
			if made {
				mu.Lock()
				created = append(created, storage.ImportedKey(key))
				sum.Marked++
				mu.Unlock()
			}
			if err != nil {
				return err
			}
		}
		// Written, or found there; found and then gone is another
		// import's object, deleted again by its rollback: written again
		// (that failed an honest import, "stat …: not found").
		for range 3 {
			ok, err := putObject(ctx, x, dst, k)
			if ok {
				mu.Lock()
				created = append(created, k)
				mu.Unlock()
			}
			if err != nil || ok {
				return err
			}
			// Stored meanwhile, by a run of the same task on this store:
			// the campaign's checksums pin the archived bytes, so another
			// result there is a conflict, as it is before the writes (it
			// was kept, marked imported, and the import said it wrote it).
			info, err := dst.Stat(ctx, k)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			same, err := sameObject(ctx, x, dst, k, info)
			if errors.Is(err, storage.ErrNotFound) {
				continue
			}
			if err != nil || !same {
				return cmp.Or(err, fmt.Errorf("%s was stored meanwhile with other content (the same computation, by a run on this store: import again once it has finished, or into another store)", k))
			}
			return nil
		}
		return fmt.Errorf("%s: written by another process and deleted again, three times", k)
	}
	for rank := range 4 {
		var group []string
		for _, k := range todo {
			if importRank(id, k) == rank {
				group = append(group, k)
			}
		}
		if rank == 3 {
			// Before the spec makes the campaign visible: the objects
			// found there at the start may have been another import's,
			// rolled back since.
			gone, err := missing(ctx, dst, keys, storage.CampaignSpecKey(id))
			if err == nil {
				err = forEach(ctx, gone, 8, put)
			}
			if err != nil {
				return nil, rollback(err)
			}
		}
		if err := forEach(ctx, group, 8, put); err != nil {
			return nil, rollback(err)
		}
	}
	sum.Written = len(created) - sum.Marked
	// A store an import made is a result store like one a run made (gc
	// refused it: it had no identity).
	if _, err := storage.ID(ctx, dst); err != nil {
		return nil, fmt.Errorf("import into %s: %w", dst.URL(), err)
	}
	return sum, nil
}

// missing lists the keys (but spec) that dst lacks.
func missing(ctx context.Context, dst storage.Store, keys []string, spec string) ([]string, error) {
	var out []string
	var mu sync.Mutex
	err := forEach(ctx, keys, 8, func(k string) error {
		if k == spec {
			return nil
		}
		_, err := dst.Stat(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			mu.Lock()
			out = append(out, k)
			mu.Unlock()
			return nil
		}
		return err
	})
	return out, err
}

// importRank orders the writes: content-addressed objects (0), the
// campaign's other objects (1), its manifest (2), its spec (3).
func importRank(id, k string) int {
	switch {
	case k == storage.CampaignSpecKey(id):
		return 3
	case k == storage.ManifestKey(id):
		return 2
	case strings.HasPrefix(k, "campaigns/"):
		return 1
	}
	return 0
}

// putObject writes one object; created reports whether it now exists
// because of this call.
func putObject(ctx context.Context, x *Extracted, dst storage.Store, k string) (bool, error) {
	if strings.HasPrefix(k, "plugins/") || strings.HasPrefix(k, "traces/") {
		// Streamed through a file: a binary or trace may be large.
		tmp, err := os.CreateTemp(x.Dir, "object-*")
		if err != nil {
			return false, err
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if err := x.Store.GetFile(ctx, k, tmp.Name()); err != nil {
			return false, err
		}
		err = dst.PutFile(ctx, k, tmp.Name())
		return err == nil, err
	}
	data, err := x.Store.Get(ctx, k)
	if err != nil {
		return false, err
	}
	return dst.PutIfAbsent(ctx, k, data)
}

// sameObject reports whether dst's object k has the archived content.
func sameObject(ctx context.Context, x *Extracted, dst storage.Store, k string, info storage.Info) (bool, error) {
	mine, err := x.Store.Stat(ctx, k)
	if err != nil {
		return false, err
	}
	if mine.Size != info.Size {
		return false, nil
	}
	if contentName(k) != "" {
		return true, nil // named by its sha256, and fetchers verify it
	}
	a, err := x.Store.Get(ctx, k)
	if err != nil {
		return false, err
	}
	b, err := dst.Get(ctx, k)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// forEach calls fn for every key, n at once, and returns the first error.
func forEach(ctx context.Context, keys []string, n int, fn func(string) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(k); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// importKeys is what Import writes of x's store: the objects of its
// campaign but the derived ones (counted), the results its entries refer
// to, and the counter descriptions, plugin binaries and trace named by
// their sha256. Anything else refuses the whole archive, naming the
// object: an archive could otherwise write any key of the store it is
// imported into: results of another campaign, which a later run of that
// sweep reused as its own; files in another campaign's report; a
// runs/<id>.json that made `msjfarm status` connect to a NATS address of
// the archive's choosing. An archive msjfarm exports holds nothing else.
func importKeys(ctx context.Context, x *Extracted) (keys []string, derived int, err error) {
	id := x.Format.Campaign
	all, err := x.Store.List(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	sums := map[string]string{}
	for _, e := range x.Index.Members {
		sums[e.Path] = e.SHA256
	}
	refs := map[string]bool{}
	var results []string
	for _, k := range all {
		switch rest, mine := strings.CutPrefix(k, storage.CampaignPrefix(id)); {
		case mine && isDerived(id, k):
			derived++
		case mine && strings.HasPrefix(k, storage.ReportStagingPrefix(id)):
			return nil, 0, foreign(id, k, "a report being written, which no export holds")
		case mine:
			if tid, ok := storage.ResultTaskID(id, k); ok {
				data, err := x.Store.Get(ctx, k)
				if err != nil {
					return nil, 0, err
				}
				if ref, ok := record.ParseRef(data); ok {
					if err := refersToItsOwn(ctx, x.Store, tid, ref); err != nil {
						return nil, 0, foreign(id, k, err.Error())
					}
					refs[storage.StoredResultKey(ref)] = true
				}
			} else if rest == "" {
				return nil, 0, foreign(id, k, "not an object of the campaign")
			}
			keys = append(keys, k)
		case strings.HasPrefix(k, storage.StoredResultsPrefix):
			results = append(results, k) // checked once every entry is read
		case strings.HasPrefix(k, storage.CounterInfosPrefix):
			name, ok := strings.CutSuffix(strings.TrimPrefix(k, storage.CounterInfosPrefix), ".json")
			if !ok || sums[StorePrefix+k] != name {
				return nil, 0, foreign(id, k, "counter descriptions whose name is not the sha256 of their content")
			}
			keys = append(keys, k)
		case contentName(k) != "":
			keys = append(keys, k) // the reader checked that the name is the content's sha256
		default:
			return nil, 0, foreign(id, k, "not part of the campaign")
		}
	}
	for _, k := range results {
		if !refs[k] {
			return nil, 0, foreign(id, k, "a result none of the campaign's tasks refers to")
		}
		keys = append(keys, k)
	}
	return keys, derived, nil
}

// isDerived: the campaign's summary table, precision table and report,
// computed from its records, which the archive does not tie to them.
func isDerived(id, k string) bool {
	return k == storage.SummaryKey(id) || k == archive.PrecisionKey(id) || strings.HasPrefix(k, storage.ReportPrefix(id))
}

func foreign(id, k, why string) error {
	return fmt.Errorf("nothing imported: the archive holds %q, %s (an archive of campaign %s holds its objects, the results they refer to, and the counter descriptions, plugin binaries and trace named by their sha256)",
		k, why, id)
}

// refersToItsOwn checks that a campaign entry of task tid refers to
// its own task's result: the record stored under ref is tid's, and ref is
// the content key a run here would file it under. Results are shared
// between campaigns by that key, so an archive whose entry referred to
// another sweep's key, with a forged record of that sweep's task under it,
// planted the record for that sweep: its later run found the key taken,
// and its task failed for good.
func refersToItsOwn(ctx context.Context, st storage.Store, tid, ref string) error {
	data, err := st.Get(ctx, storage.StoredResultKey(ref))
	if err != nil {
		return fmt.Errorf("refers to result %s: %w", ref, err)
	}
	r, err := record.Decode(data, tid)
	if err != nil {
		return fmt.Errorf("refers to result %s, which is not a record of its task: %w", ref, err)
	}
	im, ok := record.ImplOf(r.Provenance)
	if !ok {
		return fmt.Errorf("refers to result %s, whose record has no provenance to key it by", ref)
	}
	if want := record.Key(tid, im); want != ref {
		return fmt.Errorf("refers to result %s, but its task's result is filed under %s: a result under another task's key", ref, want)
	}
	return nil
}
