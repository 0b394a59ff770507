package bundle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

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
}

// Import copies an extracted archive's store into dst, all or nothing:
// content-addressed objects (results, plugin binaries, traces) first,
// then the campaign's objects, its spec last (a campaign is listed once
// its spec exists). Before anything is written it checks that no object
// the archive holds is in dst with other content: the campaign (same id)
// or a result under the same content key computed again elsewhere (the
// campaign's checksums pin the archived bytes, so keeping the other
// would leave the task out of every report). If a write fails, every
// object this call created is deleted again.
func Import(ctx context.Context, x *Extracted, dst storage.Store) (*ImportSummary, error) {
	keys, err := x.Store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	id := x.Format.Campaign
	sum := &ImportSummary{Campaign: id}
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
		ok, err := putObject(ctx, x, dst, k)
		if ok {
			mu.Lock()
			created = append(created, k)
			mu.Unlock()
		}
		return err
	}
	for rank := range 4 {
		var group []string
		for _, k := range todo {
			if importRank(id, k) == rank {
				group = append(group, k)
			}
		}
		if err := forEach(ctx, group, 8, put); err != nil {
			return nil, rollback(err)
		}
	}
	sum.Written = len(created)
	return sum, nil
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
