package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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
// A local store is known by its directory's device and inode, not its
// URL: the same directory reached through a symbolic link (or a bind
// mount) is a different URL, and two runs of one campaign on it each ran
// every task. An S3 store is known by its URL (endpoint, bucket, prefix):
// one server reached by two endpoint names is not caught.
func lockCampaign(storeURL, id string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(storeIdentity(storeURL) + "\x00" + id))
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
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			holder, _ := os.ReadFile(path)
			f.Close()
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "another process"
			}
			return nil, fmt.Errorf("campaign %s is being run on %s by %s: wait for it to finish, or stop it (its results are kept, and running the same command again resumes)", id, storeURL, who)
		}
		// The holder removes the file as it lets go: a lock taken on a
		// file no longer at path is no lock (take the new one).
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte("msjfarm run pid "+strconv.Itoa(os.Getpid())+" since "+time.Now().Format(time.DateTime)+"\n"), 0)
		return func() {
			_ = os.Remove(path)
			_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
		}, nil
	}
}

// storeIdentity names the store at storeURL for lockCampaign: a local
// directory by device and inode, anything else by its URL.
func storeIdentity(storeURL string) string {
	dir, ok := strings.CutPrefix(storeURL, "file://")
	if !ok {
		return storeURL
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return storeURL
	}
	return fmt.Sprintf("local:%d:%d", st.Dev, st.Ino)
}
