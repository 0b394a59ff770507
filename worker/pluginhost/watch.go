package pluginhost

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/msjfarm/msjfarm/internal/sandbox"
)

// watchPoll is how often a plugin process is measured: its threads (one
// read of /proc/<pid>/status, microseconds) at every tick, its TMPDIR (a
// walk, usually of one socket) every tmpEvery ticks. A thread costs a
// plugin some 50 µs to start, so at most about a thousand start between
// two counts.
const (
	watchPoll = 50 * time.Millisecond
	tmpEvery  = 5
)

// DefaultMaxThreads is Config.MaxThreads's default. A Go plugin runs a
// thread per replication it computes at once and a few for its runtime
// and its gRPC server: some dozens. Nothing bounded more: the hostile
// test plugin's threads attack started 20 000 in a second as the
// worker's own user (no fork is needed), every pid on a machine whose
// pid_max is 32768 within two. The sandbox also bounds a plugin's tasks
// in the kernel where it can (RLIMIT_NPROC, internal/sandbox), which
// holds between two counts and before the first.
const DefaultMaxThreads = 1024

// watcher is what watch knows of one plugin process from the moment it
// exists (procRunner.started), before its handshake, and what it found.
type watcher struct {
	path   string     // the plugin binary, for the log
	tmpDir string     // its private TMPDIR
	budget *logBudget // its log's: an exit watch causes is expected
	exited chan struct{}
	pid    int
	// proc is the process once it answered Info: killed through it, the
	// replications it ran then are known (killNow).
	proc atomic.Pointer[proc]
	// overQuota is what watch found in the TMPDIR when it killed the
	// process (0: it did not); overThreads, the threads it counted.
	overQuota, overThreads atomic.Int64
}

// watch kills w's process group once it runs more than MaxThreads threads
// or its TMPDIR holds more than the quota, from the process's start until
// it has exited. No file may grow past the quota either (RLIMIT_FSIZE,
// under the sandbox): so between two measures a plugin writes at most one
// quota per file it opens, and many files cost it their count in blocks
// (dirSize).
func (h *Host) watch(w *watcher) {
	quota, maxThreads := h.cfg.TmpQuota, int64(h.cfg.MaxThreads)
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	for i := 1; ; i++ {
		select {
		case <-w.exited:
			return
		case <-t.C:
		}
		if maxThreads > 0 {
			if n := sandbox.Threads(w.pid); n > maxThreads {
				w.overThreads.Store(n)
				h.logger.Error("plugin ran too many threads; killing its process", "binary", w.path, "pid", w.pid, "threads", n, "max", maxThreads)
				h.killNow(w)
				return
			}
		}
		if quota <= 0 || i%tmpEvery != 0 {
			continue
		}
		if n := dirSize(w.tmpDir, quota) + deletedHeld(w.pid, w.tmpDir, quota); n > quota {
			w.overQuota.Store(n)
			h.logger.Error("plugin wrote past its TMPDIR quota; killing its process", "binary", w.path, "pid", w.pid, "bytes", n, "quota", quota)
			h.killNow(w)
			return
		}
	}
}

// killNow SIGKILLs w's process group: the replication in flight is what
// crossed the bound, and its failure (callError) reports which; before
// the process answered Info, its start fails with it (starting.fail).
func (h *Host) killNow(w *watcher) {
	select {
	case <-w.exited:
		return // reaped since it was measured: its pid may be another's now
	default:
	}
	w.budget.exitExpected.Store(true)
	p := w.proc.Load()
	if p != nil {
		p.mu.Lock()
		p.killedRunning.Store(int64(p.inflight))
		p.mu.Unlock()
	}
	killGroup(w.pid)
	if p != nil {
		h.retireHung(p)
	}
}

// dirSize is the bytes under dir, each entry counted as at least one 4 KiB
// block (a million empty files fill a disk's inodes), stopping once past
// limit.
func dirSize(dir string, limit int64) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		size := int64(0)
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
		n += max(size, 4096)
		if n > limit {
			return filepath.SkipAll
		}
		return nil
	})
	return n
}

// deletedHeld is the bytes of the files under dir that process pid
// holds open or mapped after they were removed (or never named:
// O_TMPFILE), which a walk of dir does not see: a plugin held 1 GiB that
// way under a 16 MiB quota, and when open descriptors counted, 400 MiB in
// 40 files of which it kept one page mapped each (the mapping holds the
// file; at 4 KiB of address space a file, some 65,000 may be). Read from
// /proc/<pid>/fd and /proc/<pid>/maps, which the host may read when it
// runs as root or as the plugin's user (0 otherwise); each file counted
// once, stopping once past limit. A mapped file's size is read through
// /proc/<pid>/map_files, which only a privileged host may read; any other
// host counts each such file as limit, the most it could be
// (RLIMIT_FSIZE), so that two are over: a policy has no use for them.
func deletedHeld(pid int, dir string, limit int64) int64 {
	if pid <= 0 {
		return 0
	}
	seen := map[uint64]bool{}
	n := deletedOpen(pid, dir, limit, seen)
	if n > limit {
		return n
	}
	return n + deletedMapped(pid, dir, limit-n, seen)
}

// deletedOpen is deletedHeld's open files, their inodes added to seen.
func deletedOpen(pid int, dir string, limit int64, seen map[uint64]bool) int64 {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range fds {
		p := filepath.Join(fdDir, e.Name())
		target, err := os.Readlink(p)
		if err != nil || !strings.HasPrefix(target, dir+"/") || !strings.HasSuffix(target, " (deleted)") {
			continue
		}
		info, err := os.Stat(p)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				continue
			}
			seen[st.Ino] = true
		}
		if n += max(info.Size(), 4096); n > limit {
			break
		}
	}
	return n
}

// deletedMapped is deletedHeld's mapped files not in seen.
func deletedMapped(pid int, dir string, limit int64, seen map[uint64]bool) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path (deleted)
		line := sc.Text()
		if !strings.HasSuffix(line, " (deleted)") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 6 {
			continue
		}
		ino, err := strconv.ParseUint(fields[4], 10, 64)
		if err != nil || seen[ino] {
			continue
		}
		if at := strings.Index(line, " "+dir+"/"); at < 0 {
			continue
		}
		seen[ino] = true
		size := limit
		if info, err := os.Stat(fmt.Sprintf("/proc/%d/map_files/%s", pid, fields[0])); err == nil {
			size = info.Size()
		}
		if n += max(size, 4096); n > limit {
			break
		}
	}
	return n
}
