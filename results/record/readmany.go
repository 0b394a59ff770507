package record

import (
	"context"
	"sync"

	"github.com/msjfarm/msjfarm/storage"
)

// ReadMany reads the records of tasks tids of campaign (Read, references
// followed), eight at a time: a campaign's records are small objects, and
// one at a time they cost a round trip (S3) or a file open each in a row.
// A record that cannot be read is left out of the map and reported to
// onErr (if not nil), which may be called concurrently.
func ReadMany(ctx context.Context, st storage.Store, campaign string, tids []string, onErr func(tid string, err error)) map[string]*Record {
	out := make(map[string]*Record, len(tids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, tid := range tids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, _, err := Read(ctx, st, campaign, tid)
			if err != nil {
				if onErr != nil {
					onErr(tid, err)
				}
				return
			}
			mu.Lock()
			out[tid] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
