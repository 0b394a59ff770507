package record

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/msjfarm/msjfarm/storage"
)

// Unreferenced returns the stored results (storage.StoredResultKey) that
// no campaign refers to and that are older than minAge, sorted by key.
//
// minAge protects results in flight: a worker stores a result before the
// campaign's reference to it (Store), and a coordinator checks a result
// exists before referencing it, so a young unreferenced result may be
// about to be referenced. Deleting one then would leave a campaign with a
// dangling reference; `msjfarm gc` keeps results younger than an hour by
// default and should not run while campaigns are being submitted.
func Unreferenced(ctx context.Context, st storage.Store, minAge time.Duration) ([]storage.Info, error) {
	keys, err := st.List(ctx, "campaigns/")
	if err != nil {
		return nil, err
	}
	var entries []string
	for _, k := range keys {
		rest, _ := strings.CutPrefix(k, "campaigns/")
		if id, _, ok := strings.Cut(rest, "/"); ok {
			if _, ok := storage.ResultTaskID(id, k); ok {
				entries = append(entries, k)
			}
		}
	}
	referenced := map[string]bool{}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, k := range entries {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			data, err := st.Get(ctx, k)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			if key, ok := ParseRef(data); ok {
				referenced[key] = true
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	stored, err := st.List(ctx, storage.StoredResultsPrefix)
	if err != nil {
		return nil, err
	}
	var out []storage.Info
	for _, k := range stored {
		ck, ok := storage.StoredResultContentKey(k)
		if !ok || referenced[ck] {
			continue
		}
		info, err := st.Stat(ctx, k)
		if err != nil {
			return nil, err
		}
		if time.Since(info.ModTime) < minAge {
			continue
		}
		info.Key = k
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
