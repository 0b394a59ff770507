package pluginhost

import (
	"io/fs"
	"path/filepath"
	"time"
)

// tmpPoll is how often a process's TMPDIR is measured: a private directory
// usually holds one socket, and a walk of it costs microseconds.
const tmpPoll = 250 * time.Millisecond

// watchTmp kills p's process group once its TMPDIR holds more than the
// quota, and stops when p is killed or has exited. No file may grow past
// the quota either (RLIMIT_FSIZE, under the sandbox): so between two
// measures a plugin writes at most one quota per file it opens, and many
// files cost it their count in blocks (dirSize).
func (h *Host) watchTmp(p *proc) {
	quota := h.cfg.TmpQuota
	t := time.NewTicker(tmpPoll)
	defer t.Stop()
	for range t.C {
		p.mu.Lock()
		done := p.killed
		p.mu.Unlock()
		if done || p.client.Exited() {
			return
		}
		n := dirSize(p.sb.TmpDir, quota)
		if n <= quota {
			continue
		}
		p.overQuota.Store(n)
		h.logger.Error("plugin wrote past its TMPDIR quota; killing its process", "binary", p.key.path, "pid", p.info.PID, "bytes", n, "quota", quota)
		// SIGKILL now: the replication writing is in flight, and its
		// failure (callError) reports the quota.
		killGroup(p.info.PID)
		h.retireHung(p)
		return
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
