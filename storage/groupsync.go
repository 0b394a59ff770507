package storage

import (
	"os"
	"sync"
)

// syncDir syncs the file system holding dir. It opens dir for each sync
// rather than holding it open, so that an idle store pins nothing (a file
// system it is on can be unmounted).
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return syncFS(f)
}

// groupSync makes the writes of concurrent writers durable together (group
// commit). A writer whose writes have returned calls wait; wait returns once
// a sync of the whole file system that began after the call has finished,
// so the writes are on stable storage. One waiter runs the sync for every
// writer waiting meanwhile: with 16 writers a sync covers about 16 writes,
// where an fsync(2) of each file wrote its data, inode and parent
// directory one file at a time. The sync is syncfs(2) where the system has
// it; it also reports the file system's writeback errors since the last
// sync, so a failed write of any file reaches every waiter of that sync
// (conservatively: a waiter may be told of another writer's failure, and
// just writes again).
type groupSync struct {
	sync func() error // syncs the store's file system (syncDir of its root)

	mu      sync.Mutex
	cond    sync.Cond
	started uint64 // syncs begun
	done    uint64 // syncs finished; done == started when none runs
	failed  uint64 // the latest failed sync, 0 if none
	err     error  // its error
}

func newGroupSync(root string) *groupSync {
	g := &groupSync{sync: func() error { return syncDir(root) }}
	g.cond.L = &g.mu
	return g
}

// wait returns when everything written before the call is durable, or the
// error of a sync that should have made it so.
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// A sync running now may have begun before our writes ended: only the
	// next one covers them.
	need := g.started + 1
	for g.done < need {
		if g.started != g.done {
			g.cond.Wait()
			continue
		}
		g.started++
		gen := g.started
		g.mu.Unlock()
		err := g.sync()
		g.mu.Lock()
		g.done = gen
		if err != nil {
			g.failed, g.err = gen, err
		}
		g.cond.Broadcast()
	}
	if g.failed >= need {
		return g.err
	}
	return nil
}
