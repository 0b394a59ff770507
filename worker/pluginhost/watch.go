package pluginhost

import (
	"bufio"
	"fmt"
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
	// status is how the process ended ("exit status 2", "signal:
	// killed"), set before exited is closed.
	status atomic.Pointer[string]
	// proc is the process once it answered Info: killed through it, the
	// replications it ran then are known (killNow).
	proc atomic.Pointer[proc]
	// overQuota is what watch found in the TMPDIR when it killed the
	// process (0: it did not); overThreads, the threads it counted;
	// overCPU, the thousandths of a core it measured (cpuWatch).
	overQuota, overThreads, overCPU atomic.Int64
	// idleCPU: the process was killed for using CPU with no replication
	// in flight (else for using more cores than its GOMAXPROCS).
	idleCPU atomic.Bool
}

// cpuWindow is the span over which a plugin process's CPU time is
// judged, and idleCores and defaultCPUMargin its allowances (cpuWatch).
const (
	cpuWindow        = 5 * time.Second
	idleCores        = 0.5
	defaultCPUMargin = 0.5
)

// cpuWatch judges a plugin process's CPU time (all its threads, from
// /proc) over windows of cpuWindow. A replication reports its engine
// thread's CPU time only, so a plugin that started 64 goroutines spinning
// for ever, then ran its replications honestly, took every core of its
// worker while each result recorded 0.04 s (the worker's other slots
// slowed to a sixth). Two rules no honest plugin comes near:
//
//   - idle: in a window with no replication in flight at any sample, at
//     most idleCores on average (an idle Go process uses next to none);
//   - any window: at most its GOMAXPROCS cores plus a margin (Go code
//     runs on at most GOMAXPROCS threads at once, the collector's
//     included; more means the plugin raised it, or spins in threads of
//     its own).
//
// What it does not catch: a plugin that spins only while its own
// replications run and within its GOMAXPROCS, which is the host's (the
// worker's cores): that is the CPU the host gave the process.
type cpuWatch struct {
	pid    int
	procs  int                     // the plugin's GOMAXPROCS
	margin float64                 // cores beyond it (Config.CPUMargin)
	cpu    func(int) time.Duration // sandbox.CPU
	start  time.Time
	cpu0   time.Duration
	busy   bool // a replication in flight (or no Info yet) at some sample
	calls  int64
}

// observe is what watch knows of w's process at a sample: whether a
// replication is in flight (or the process has not answered Info), and
// how many calls it has been given.
func observe(w *watcher) (inflight bool, calls int64) {
	p := w.proc.Load()
	if p == nil {
		return true, 0
	}
	calls = p.calls.Load()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight > 0, calls
}

// sample takes one measure at now; at the end of a window it returns the
// cores used over it and whether a rule was broken. A call made since
// the last sample counts as in flight (a short replication between two
// samples).
func (c *cpuWatch) sample(now time.Time, inflight bool, calls int64) (cores float64, idle, over bool) {
	c.busy = c.busy || inflight || calls != c.calls
	c.calls = calls
	if c.start.IsZero() {
		c.start, c.cpu0 = now, c.cpu(c.pid)
		return 0, false, false
	}
	elapsed := now.Sub(c.start)
	if elapsed < cpuWindow {
		return 0, false, false
	}
	cpu := c.cpu(c.pid)
	cores = float64(cpu-c.cpu0) / float64(elapsed)
	idle = !c.busy
	over = (idle && cores > idleCores) || cores > float64(c.procs)+c.margin
	c.start, c.cpu0, c.busy = now, cpu, inflight
	return cores, idle, over
}

// watch kills w's process group once it runs more than MaxThreads threads
// or its TMPDIR holds more than the quota, from the process's start until
// it has exited. No file may grow past the quota either (RLIMIT_FSIZE,
// under the sandbox): so between two measures a plugin writes at most one
// quota per file it opens, and many files cost it their count in blocks
// (dirSize).
func (h *Host) watch(w *watcher) {
	quota, maxThreads := h.cfg.TmpQuota, int64(h.cfg.MaxThreads)
	cw := cpuWatch{pid: w.pid, procs: h.pluginProcs(), margin: h.cpuMargin(), cpu: sandbox.CPU}
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	for i := 1; ; i++ {
		var now time.Time
		select {
		case <-w.exited:
			return
		case now = <-t.C:
		}
		if i%tmpEvery == 0 {
			inflight, calls := observe(w)
			if cores, idle, over := cw.sample(now, inflight, calls); over {
				w.overCPU.Store(int64(cores * 1000))
				w.idleCPU.Store(idle)
				h.logger.Error("plugin used more CPU than it may; killing its process", "binary", w.path, "pid", w.pid,
					"cores", fmt.Sprintf("%.2f", cores), "idle", idle, "gomaxprocs", cw.procs)
				h.killNow(w)
				return
			}
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

// dirSize is the bytes under a plugin's TMPDIR, stopping once past limit
// (sandbox.TmpUsage, which a plugin's modes do not hide anything from).
func dirSize(dir string, limit int64) int64 { return sandbox.TmpUsage(dir, limit) }

// deletedHeld is the bytes of the files under dir that process pid
// holds open or mapped after they were removed (or never named:
// O_TMPFILE), which a walk of dir does not see: a plugin held 1 GiB that
// way under a 16 MiB quota, and when open descriptors counted, 400 MiB in
// 40 files of which it kept one page mapped each (the mapping holds the
// file; at 4 KiB of address space a file, some 65,000 may be). Read from
// /proc/<pid>/fd and /proc/<pid>/maps, which the host may read when it
// runs as root or as the plugin's user (0 otherwise; a confined plugin
// cannot make them root's: seccomp refuses prctl(PR_SET_DUMPABLE)); each file counted
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
