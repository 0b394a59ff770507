package protocol

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/msjfarm/msjfarm/internal/flock"
)

// storeLockName is the file in an embedded server's store directory whose
// flock marks the directory as in use.
const storeLockName = "msjfarm-embedded.lock"

// storeLocks are the store directories this process holds, by absolute
// path, each with the server last started on it: a process may start a
// server again on a directory once the one before has stopped (a
// coordinator's tests do), and must not be refused by its own lock.
var storeLocks = struct {
	sync.Mutex
	m map[string]*storeLock
}{m: map[string]*storeLock{}}

type storeLock struct {
	f   *os.File
	srv *server.Server
}

// lockStoreDir takes dir for an embedded server, for as long as this
// process lives (the kernel lets go of it when the process ends, however
// it ends). Two servers on one JetStream store directory each take it for
// their own: a second coordinator started with the first's --store-dir
// (two Slurm allocations submitted from one directory, whose default is
// the submit directory) took over the lease, both went on as the active
// coordinator with different views of the same files, the first could not
// be stopped, and a campaign was lost. The holder's pid and host are
// written into the file for the message.
func lockStoreDir(dir string) (hold func(*server.Server), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	storeLocks.Lock()
	defer storeLocks.Unlock()
	for d, l := range storeLocks.m {
		// Directories of stopped servers that are gone (a run's
		// temporary store): let go of them.
		if _, err := os.Stat(d); os.IsNotExist(err) && (l.srv == nil || !l.srv.Running()) {
			l.f.Close()
			delete(storeLocks.m, d)
		}
	}
	if l, ok := storeLocks.m[abs]; ok {
		if l.srv != nil && l.srv.Running() {
			return nil, fmt.Errorf("embedded NATS: store directory %s is in use by another embedded server of this process", dir)
		}
		return func(s *server.Server) { l.srv = s }, nil
	}
	f, err := os.OpenFile(filepath.Join(abs, storeLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: store directory %s: %w", dir, err)
	}
	if !flock.TryLock(f) {
		f.Close()
		return nil, fmt.Errorf("embedded NATS: store directory %s is in use by %s: two servers on one store directory corrupt it; give this one its own --store-dir, or connect to the running one with --nats-url", dir, flock.Holder(f.Name()))
	}
	host, _ := os.Hostname()
	flock.Mark(f, "msjfarm pid "+strconv.Itoa(os.Getpid())+" on "+host)
	l := &storeLock{f: f}
	storeLocks.m[abs] = l
	return func(s *server.Server) { l.srv = s }, nil
}
