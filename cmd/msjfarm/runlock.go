package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/msjfarm/msjfarm/internal/flock"
	"github.com/msjfarm/msjfarm/storage"
)

// lockCampaign takes this machine's lock on running campaign id on the
// store at storeURL, for the life of this process (release: unlock). A
// second `msjfarm run` of the same sweep on the same store ran the whole
// campaign again beside the first (the store kept one result per task,
// but every replication was computed twice); now it is refused, naming
// the holder. The lock is a file in the temporary directory, not in the
// store (whose keys are the campaign's objects), held with flock, so a
// killed holder releases it (its file stays, empty of meaning, and is
// taken over), and removed by a holder that lets go; two machines
// sharing a store by NFS are not covered (they would share a farm, not
// two `run`s).
//
// A store is known by what it is, not its URL: the same directory reached
// through a symbolic link (or a bind mount) is a different URL, and two
// runs of one campaign on it each ran every task; so did one MinIO
// reached as 127.0.0.1 and as localhost (lockName).
func lockCampaign(ctx context.Context, st storage.Store, id string) (unlock func(), err error) {
	storeURL := st.URL()
	sum := sha256.Sum256([]byte(lockName(ctx, st) + "\x00" + id))
	path := filepath.Join(os.TempDir(), "msjfarm-run-"+hex.EncodeToString(sum[:8])+".lock")
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			// Another user's lock file (0644): flock needs only a read
			// descriptor. A lock that cannot be opened at all is not
			// taken: it guards against waste, and must not stop a run.
			if f, err = os.Open(path); err != nil {
				return func() {}, nil
			}
		}
		if !flock.TryLock(f) {
			f.Close()
			return nil, fmt.Errorf("campaign %s is being run on %s by %s: wait for it to finish, or stop it (its results are kept, and running the same command again resumes)", id, storeURL, flock.Holder(path))
		}
		// The holder removes the file as it lets go: a lock taken on a
		// file no longer at path is no lock (take the new one).
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		flock.Mark(f, "msjfarm run pid "+strconv.Itoa(os.Getpid()))
		return func() {
			_ = os.Remove(path)
			flock.Unlock(f)
			f.Close()
		}, nil
	}
}

// lockName names store st for lockCampaign: a local directory by device
// and inode (which a copy does not share, unlike its storage.ID), an S3
// store by its identity (storage.ID), else by its URL.
func lockName(ctx context.Context, st storage.Store) string {
	storeURL := st.URL()
	dir, ok := strings.CutPrefix(storeURL, "file://")
	if !ok {
		if id, err := storage.ID(ctx, st); err == nil {
			return "store:" + id
		}
		return storeURL
	}
	var fi unix.Stat_t
	if err := unix.Stat(dir, &fi); err != nil {
		return storeURL
	}
	return fmt.Sprintf("local:%d:%d", fi.Dev, fi.Ino)
}
