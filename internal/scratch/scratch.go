// Package scratch keeps an msjfarm process's temporary files and
// directories in one directory of its own under $TMPDIR, so that what a
// killed process leaves behind is found and removed by the next msjfarm
// that starts on the machine.
//
// A process killed with SIGKILL (the OOM killer, the end of a Slurm job, a
// `kill -9` of a stuck coordinator, a test's timeout) runs none of its
// deferred removals. Before this package, each such death left its scratch
// in /tmp for good: the finalisation's checksums and summaries, an
// archive's extraction (as large as the archive allows), a local run's
// NATS store. A machine running the tests and a few walks for a day held
// 22 of them.
//
// A directory is known to be abandoned by a lock, not a pid: its owner
// holds an flock on the file [lockName] inside it for its whole life, and
// the kernel lets go of that lock when the process ends, however it ends.
// A pid would be reused, and would mean nothing to a process in another
// pid namespace sharing the same /tmp (two containers). The directory is
// made under a name the sweep does not look at and renamed once its lock
// is held, so that a sweep never finds the unheld lock of a live process.
package scratch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/msjfarm/msjfarm/internal/flock"
)

const (
	// prefix begins a process's scratch directory's name in $TMPDIR.
	prefix = "msjfarm-tmp-"
	// initPrefix names it until its lock is held.
	initPrefix = ".msjfarm-tmp-init-"
	// lockName is the file whose flock marks the directory as in use.
	lockName = ".lock"
	// initAge is how old an unrenamed directory must be to be removed: its
	// maker died between making it and renaming it (a few system calls).
	initAge = time.Hour
)

var (
	mu   sync.Mutex
	root string   // this process's directory, once made
	held *os.File // its lock file, open (and locked) until Close
)

// Dir returns this process's scratch directory, making it on first use,
// and again when it is gone (a cleaner of /tmp removed it under a
// coordinator running for weeks) or $TMPDIR now names another directory.
func Dir() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if root != "" {
		if fi, err := os.Lstat(root); err == nil && fi.IsDir() && filepath.Dir(root) == filepath.Clean(os.TempDir()) {
			return root, nil
		}
		held.Close()
		root, held = "", nil
	}
	tmp, err := os.MkdirTemp("", initPrefix)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil && !flock.TryLock(f) {
		f.Close()
		err = errors.New("scratch: a new lock file is locked already")
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	final := filepath.Join(filepath.Dir(tmp), prefix+strings.TrimPrefix(filepath.Base(tmp), initPrefix))
	if err := os.Rename(tmp, final); err != nil {
		f.Close()
		_ = os.RemoveAll(tmp)
		return "", err
	}
	root, held = final, f
	return root, nil
}

// MkdirTemp is os.MkdirTemp in this process's scratch directory.
func MkdirTemp(pattern string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return os.MkdirTemp(d, pattern)
}

// CreateTemp is os.CreateTemp in this process's scratch directory.
func CreateTemp(pattern string) (*os.File, error) {
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	return os.CreateTemp(d, pattern)
}

// Close removes this process's scratch directory with all it holds; the
// next use makes a new one. main calls it as the command ends.
func Close() {
	mu.Lock()
	defer mu.Unlock()
	if root == "" {
		return
	}
	_ = os.RemoveAll(root)
	held.Close()
	root, held = "", nil
}

// RemoveStale removes the scratch directories in $TMPDIR whose owner is
// gone (their lock is free), and those left unnamed an hour ago, and
// returns how many it removed. A directory it cannot lock for another
// reason (another user's, unreadable) is left alone.
func RemoveStale() int {
	n := 0
	tmp := os.TempDir()
	dirs, _ := filepath.Glob(filepath.Join(tmp, prefix+"*"))
	for _, d := range dirs {
		if abandoned(d) && os.RemoveAll(d) == nil {
			n++
		}
	}
	inits, _ := filepath.Glob(filepath.Join(tmp, initPrefix+"*"))
	for _, d := range inits {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() && time.Since(fi.ModTime()) > initAge && abandoned(d) && os.RemoveAll(d) == nil {
			n++
		}
	}
	return n
}

// abandoned reports whether d is a scratch directory whose lock nobody
// holds. Taking the lock here and removing the directory while holding it
// is safe: its owner, were it alive, would hold it.
func abandoned(d string) bool {
	fi, err := os.Lstat(d)
	if err != nil || !fi.IsDir() {
		return false // a link or a file named like one: not ours
	}
	f, err := os.OpenFile(filepath.Join(d, lockName), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		// Made by the init path and killed before the lock file was
		// created (an unnamed directory), or emptied by hand.
		return strings.HasPrefix(filepath.Base(d), initPrefix)
	}
	if err != nil {
		return false
	}
	defer f.Close()
	return flock.TryLock(f)
}

// Left lists what is in dir (a test's $TMPDIR) besides scratch
// directories holding nothing but their lock: the temporary files a
// command left behind, for tests that check it left none. A process's
// scratch directory stays, empty, until the process ends.
func Left(dir string) []string {
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			inner, _ := os.ReadDir(filepath.Join(dir, e.Name()))
			for _, f := range inner {
				if f.Name() != lockName {
					left = append(left, filepath.Join(e.Name(), f.Name()))
				}
			}
			continue
		}
		left = append(left, e.Name())
	}
	return left
}
