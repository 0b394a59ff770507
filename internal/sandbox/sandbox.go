// Package sandbox confines policy plugin processes (issue #28): a plugin
// binary is third-party code that runs on every worker of a farm, so it
// must compute a replication and nothing else — no secret, no server, no
// stored byte, no process left behind.
//
// The host does not exec a plugin directly. It re-executes its own binary
// (/proc/self/exe) under a marker argv[0]; this package's init function
// recognises the marker before main runs and, as that launcher:
//
//  1. opens the plugin binary and, when the campaign pins it, verifies its
//     sha256 through that descriptor (the file that runs is the file that
//     was hashed: no window to swap it);
//  2. builds the Landlock ruleset while it may still open every path;
//  3. drops to the plugin user (--plugin-user), sets no_new_privs, enforces
//     Landlock (files, TCP, signals and abstract unix sockets), sets its
//     parent-death signal and checks its parent is still the host;
//  4. loads the seccomp filters (only unix stream sockets, no connect, no
//     fork, no ptrace, no signals to other processes, no change to any
//     file's mode, owner, times or attributes, no namespaces, no
//     io_uring, no SysV IPC or inotify, nothing but the native
//     architecture's system calls);
//  5. sets the resource limits (no core dumps, an address-space limit,
//     and under a dedicated plugin user a process limit);
//  6. executes the plugin binary from the descriptor of step 1.
//
// The launcher itself starts in a network namespace and a mount
// namespace of its own where the machine allows them (see netnsFlags), in
// a user namespace that owns them when the host is not root: before step
// 1 it then maps the host's ids there, and after step 2 it makes its root
// a private one that holds only what the plugin may use (privateRoot) and
// drops the capability it kept to do so.
//
// Everything is applied to the thread that executes the plugin, and all
// of it survives execve, so the plugin's first instruction already runs
// confined: it cannot opt out. The environment the plugin sees is the one
// the host built (an allow-list, see worker/pluginhost), with TMPDIR set
// to a directory private to this process, the only place it may write.
package sandbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/msjfarm/msjfarm/sim"
)

// Mode is how much confinement a worker demands (--plugin-sandbox).
type Mode string

// Modes.
const (
	// Auto is the default: Require where the kernel supports every
	// mechanism, BestEffort (saying what is missing) elsewhere.
	Auto Mode = ""
	// Require refuses to start a plugin unless every mechanism applies.
	Require Mode = "require"
	// BestEffort applies what the kernel supports and names the rest.
	BestEffort Mode = "best-effort"
	// Off runs plugins unconfined (the environment is still an
	// allow-list and TMPDIR still private).
	Off Mode = "off"
)

// ParseMode parses a --plugin-sandbox value ("" and "auto" are Auto).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "auto", Auto:
		return Auto, nil
	case Require, BestEffort, Off:
		return m, nil
	}
	return "", fmt.Errorf("--plugin-sandbox %q: want require, best-effort, off or auto", s)
}

// Options are a worker's sandbox choices (flags).
type Options struct {
	Mode Mode
	// User runs plugins as another user: a name, uid or uid:gid; "self"
	// keeps the host's. "" is the default: "nobody" when the host runs as
	// root (a plugin must not hold root's capabilities, even confined),
	// the host's own user otherwise.
	User string
	// MemoryLimit is the address space one plugin process may map, in
	// bytes (0: derived from the engine's memory budget, see Limit).
	MemoryLimit int64
	// Writable are directories every plugin process may also read and
	// write (--plugin-writable): shared state an operator chooses to give
	// plugins (the fault suite's once-per-worker token). Never the store or
	// the plugin cache.
	Writable []string
	// Readable are directories every plugin process may also read, not
	// write (--plugin-readable): where a dynamically linked plugin's own
	// libraries lie outside the system's (a C or C++ policy library under
	// /opt, a conda environment, /nix/store). The operator's choice, never
	// the binary's: its RUNPATH names whatever its author wrote (LibraryHint
	// reads it to say what to give).
	Readable []string
	// TmpQuota is what a plugin process may write into its private TMPDIR,
	// in bytes (--plugin-tmp-quota; 0: DefaultTmpQuota). The plugin host
	// enforces it, confined or not; confined, no file may grow past it
	// either (RLIMIT_FSIZE).
	TmpQuota int64
}

// DefaultTmpQuota is Options.TmpQuota's default. A confined plugin may
// write only into its private TMPDIR (go-plugin's socket lives there), and
// nothing bounded what it wrote: the hostile test plugin's diskfill attack
// put 4 GiB there, on the worker's disk. A policy needs no files; a plugin
// packed as one self-extracting binary may unpack itself there, which is
// what the quota leaves room for.
const DefaultTmpQuota = 256 << 20

var (
	defaultMu sync.Mutex
	byDefault *Sandbox
)

// SetDefault makes s the sandbox of every plugin host of this process that
// is not given one (the commands set it from their flags, so that every
// place that starts plugins — runs, workers, checks — applies them).
func SetDefault(s *Sandbox) {
	defaultMu.Lock()
	byDefault = s
	defaultMu.Unlock()
}

// Default is the sandbox set by SetDefault, or else Options{} resolved:
// the kernel's best with the default plugin user.
func Default() *Sandbox {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if byDefault == nil {
		s, err := New(Options{})
		if err != nil {
			// Only the default user can fail here (root without a
			// usable "nobody"): confine all the same, as the host's user.
			s, _ = New(Options{User: "self"})
		}
		byDefault = s
	}
	return byDefault
}

// MinLandlockABI is the Landlock ABI Require needs: 6 is the first that
// restricts files, TCP bind/connect and signals/abstract unix sockets
// (scoping) together.
const MinLandlockABI = 6

// Sandbox is resolved Options: the mechanisms this kernel offers, the
// plugin user, and what is missing. It is immutable and safe to share.
type Sandbox struct {
	mode     Mode // Require, BestEffort or Off (never Auto)
	asked    Mode
	uid, gid int // -1: keep the host's
	userName string
	memory   int64
	tmpQuota int64
	writable []string
	readable []string
	landlock int // ABI the kernel offers (0: none)
	seccomp  bool
	missing  []string
	// nsFlags are the clone flags of a plugin process's own namespaces: a
	// network namespace, and a mount namespace for its private root (0:
	// none here; netnsErr and rootErr say why not). They are not among
	// Require's mechanisms: a machine without user namespaces confines as
	// before, and Describe says what that leaves.
	nsFlags           uintptr
	netnsErr, rootErr error
}

// New probes the kernel and resolves opt. It fails when opt asks for
// Require and the kernel lacks a mechanism, or when the plugin user is
// unknown or cannot be switched to.
func New(opt Options) (*Sandbox, error) {
	s := &Sandbox{asked: opt.Mode, mode: opt.Mode, uid: -1, gid: -1, memory: opt.MemoryLimit, tmpQuota: cmp.Or(opt.TmpQuota, DefaultTmpQuota)}
	if opt.MemoryLimit < 0 {
		return nil, fmt.Errorf("--plugin-memory %d: must be positive (0: derived from the engine's memory budget)", opt.MemoryLimit)
	}
	if opt.TmpQuota < 0 {
		return nil, fmt.Errorf("--plugin-tmp-quota %d: must be positive", opt.TmpQuota)
	}
	if err := s.resolveUser(opt.User); err != nil {
		return nil, err
	}
	var err error
	if s.writable, err = directories("--plugin-writable", opt.Writable); err != nil {
		return nil, err
	}
	if s.readable, err = directories("--plugin-readable", opt.Readable); err != nil {
		return nil, err
	}
	if s.mode == Off {
		return s, nil
	}
	s.landlock, s.seccomp = probe()
	s.nsFlags, s.netnsErr, s.rootErr = probeNamespaces()
	switch {
	case runtime.GOOS != "linux":
		s.missing = append(s.missing, "no confinement on "+runtime.GOOS+" (Landlock and seccomp are Linux's): plugins can read, connect and fork like the worker")
	default:
		if s.landlock == 0 {
			what := "plugins can read and write every file the plugin user can"
			if s.uid < 0 {
				// The worker's own user: its store and cache are the plugin's.
				what += " (the worker's own user: its local result store, plugin cache and config files too; --plugin-user gives plugins a user of their own)"
			}
			s.missing = append(s.missing, "Landlock unavailable (kernel without it, or not in the lsm= list): "+what+", and make TCP connections unless seccomp stops the socket")
		} else if s.landlock < MinLandlockABI {
			s.missing = append(s.missing, fmt.Sprintf("Landlock ABI %d < %d: %s", s.landlock, MinLandlockABI, landlockGaps(s.landlock)))
		}
		if !s.seccomp {
			s.missing = append(s.missing, "seccomp unavailable: plugins can open network sockets, connect to unix sockets, fork, ptrace, and signal processes of their user (unless Landlock ABI 6 scopes signals)")
		}
	}
	switch s.mode {
	case Auto:
		s.mode = Require
		if len(s.missing) > 0 {
			s.mode = BestEffort
		}
	}
	if runtime.GOOS != "linux" && s.mode != Require {
		s.mode = Off // the launcher is Linux's
	}
	switch s.mode {
	case Require:
		if len(s.missing) > 0 || runtime.GOOS != "linux" {
			return nil, fmt.Errorf("--plugin-sandbox require: this kernel cannot confine plugins fully: %s (use --plugin-sandbox best-effort to run with what it offers)", strings.Join(s.missing, "; "))
		}
	}
	return s, nil
}

// directories makes the directories of flag absolute, refusing one that
// is not an existing directory. A path through a symbolic link is given
// resolved too: the plugin's root recreates the link, and the directory
// it leads to must be there as well.
func directories(flag string, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err == nil {
			var st os.FileInfo
			if st, err = os.Stat(abs); err == nil && !st.IsDir() {
				err = errors.New("not a directory")
			}
		}
		var resolved string
		if err == nil {
			resolved, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, &UsageError{fmt.Errorf("%s %q: %v", flag, d, err)}
		}
		out = append(out, abs)
		if resolved != abs {
			out = append(out, resolved)
		}
	}
	return out, nil
}

// landlockGaps says what an old Landlock ABI leaves unrestricted.
func landlockGaps(abi int) string {
	var g []string
	if abi < 3 {
		g = append(g, "truncation")
	}
	if abi < 4 {
		g = append(g, "TCP bind/connect (seccomp still refuses network sockets)")
	}
	if abi < 5 {
		g = append(g, "device ioctls")
	}
	if abi < 6 {
		g = append(g, "abstract unix sockets (signals to other processes: seccomp still refuses them)")
	}
	return "not restricted: " + strings.Join(g, ", ")
}

// UsageError is an option no machine could honour (a user that does not
// exist or is root, a malformed uid:gid, a writable directory that is not
// one): the command's usage error (exit 2), where a user this worker lacks
// the privilege to switch to is a failure of the machine it runs on (exit
// 1).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func (s *Sandbox) resolveUser(name string) error {
	root := os.Geteuid() == 0
	switch name {
	case "self":
		return nil
	case "":
		if !root {
			return nil
		}
		name = "nobody"
		if _, err := user.Lookup(name); err != nil {
			name = "65534:65534" // nobody's customary ids, without an entry
		}
	}
	uid, gid, err := lookupUser(name)
	if err != nil {
		return &UsageError{fmt.Errorf("--plugin-user %q: %v", name, err)}
	}
	if uid == 0 || gid == 0 {
		// The root group too: 65534:0 read what root's group may.
		return &UsageError{fmt.Errorf("--plugin-user %q: plugins must not run as root or in its group (use \"self\" to keep the worker's user on purpose)", name)}
	}
	if uid == os.Geteuid() && (gid < 0 || gid == os.Getegid()) {
		return nil
	}
	if !root {
		return fmt.Errorf("--plugin-user %q: switching to uid %d needs a worker running as root (this one runs as uid %d; omit the flag to run plugins as yourself)", name, uid, os.Geteuid())
	}
	s.uid, s.gid, s.userName = uid, gid, name
	return nil
}

// maxID is the largest Linux uid or gid (2^32 − 2; 2^32 − 1 is the
// "unchanged" value of setresuid).
const maxID = 1<<32 - 2

// lookupUser resolves a name, uid or uid:gid.
func lookupUser(name string) (uid, gid int, err error) {
	if a, b, ok := strings.Cut(name, ":"); ok {
		u, err1 := strconv.Atoi(a)
		g, err2 := strconv.Atoi(b)
		if err1 != nil || err2 != nil || u < 0 || g < 0 {
			return 0, 0, errors.New("want a user name, a uid, or uid:gid")
		}
		if int64(u) > maxID || int64(g) > maxID { // int64: int is 32 bits on 386 and arm
			return 0, 0, fmt.Errorf("a uid or gid is at most %d", int64(maxID))
		}
		return u, g, nil
	}
	if u, err := strconv.Atoi(name); err == nil {
		if u < 0 {
			return 0, 0, errors.New("a uid is not negative")
		}
		if int64(u) > maxID {
			// Linux ids are 32 bits, and (uid_t)-1 means "unchanged":
			// 99999999999 was taken and truncated by the kernel call.
			return 0, 0, fmt.Errorf("a uid is at most %d", int64(maxID))
		}
		if us, err := user.LookupId(name); err == nil {
			if g, err := strconv.Atoi(us.Gid); err == nil {
				return u, g, nil
			}
		}
		return u, u, nil
	}
	us, err := user.Lookup(name)
	if err != nil {
		return 0, 0, err
	}
	u, err := strconv.Atoi(us.Uid)
	if err != nil {
		return 0, 0, err
	}
	g, err := strconv.Atoi(us.Gid)
	if err != nil {
		return 0, 0, err
	}
	return u, g, nil
}

// Mode is the mode in force (Require, BestEffort or Off).
func (s *Sandbox) Mode() Mode { return s.mode }

// Missing lists what the kernel does not let the sandbox restrict.
func (s *Sandbox) Missing() []string { return append([]string(nil), s.missing...) }

// NetNS reports whether each plugin process gets a network namespace of
// its own.
func (s *Sandbox) NetNS() bool { return hasNetNS(s.nsFlags) }

// PrivateRoot reports whether each plugin process gets a root directory
// of its own, holding only what it may use.
func (s *Sandbox) PrivateRoot() bool { return hasRoot(s.nsFlags) }

// UID is the plugin user's uid (-1: the host's).
func (s *Sandbox) UID() int { return s.uid }

// Describe is the line a worker prints at start: the mode and why, what
// is applied, and, in best-effort, exactly what is missing.
func (s *Sandbox) Describe() string {
	if s.mode == Off {
		return "plugin sandbox: off (--plugin-sandbox off): plugins run with the worker's authority over files, network and processes; only their environment is an allow-list, and their " + s.tmpQuotaDesc()
	}
	why := string(s.asked)
	if s.asked == Auto {
		why = "default: " + string(s.mode) + " on this kernel"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "plugin sandbox: %s (%s): ", s.mode, why)
	var on []string
	if s.landlock > 0 {
		on = append(on, fmt.Sprintf("Landlock ABI %d (read the binary and system libraries, write a private TMPDIR; no TCP, no signals or abstract sockets outside)", s.landlock))
	}
	if s.seccomp {
		on = append(on, "seccomp (unix stream sockets only, no connect, no fork, no ptrace, no signals outside, no chmod or chown, no namespaces, no io_uring, no SysV IPC or inotify)")
	}
	if hasNetNS(s.nsFlags) {
		on = append(on, "a network namespace of its own (the abstract unix socket names it binds are not the machine's)")
	}
	if hasRoot(s.nsFlags) {
		on = append(on, "a root directory of its own (the system libraries read-only, its TMPDIR and /dev/null; no other path of the machine, not even to stat)")
	}
	on = append(on, "no core dumps, address space "+s.memoryDesc(), s.tmpQuotaDesc(), "parent-death signal, own session (no terminal)")
	if s.uid >= 0 {
		on = append(on, fmt.Sprintf("user %s (uid %d, gid %d), at most %d tasks", s.userName, s.uid, s.gid, nprocLimit))
	} else {
		on = append(on, fmt.Sprintf("the worker's user (uid %d), %s", os.Geteuid(), s.nprocDesc()))
	}
	if len(s.writable) > 0 {
		on = append(on, "also writable: "+strings.Join(s.writable, ", ")+" (--plugin-writable)")
	}
	if len(s.readable) > 0 {
		on = append(on, "also readable: "+strings.Join(s.readable, ", ")+" (--plugin-readable)")
	}
	b.WriteString(strings.Join(on, "; "))
	if len(s.missing) > 0 {
		b.WriteString("; MISSING: " + strings.Join(s.missing, "; "))
	}
	if !hasNetNS(s.nsFlags) {
		fmt.Fprintf(&b, "; not required, not here: a network namespace of its own (%v): a plugin may bind an abstract unix socket name a service of the machine means to use", s.netnsErr)
	}
	if !hasRoot(s.nsFlags) {
		what := "a plugin may stat any path of the machine (whether it exists, its size, owner and times)"
		if s.landlock == 0 {
			what = "a plugin may read and stat every file its user may"
		}
		fmt.Fprintf(&b, "; not required, not here: a root directory of its own (%v): %s", s.rootErr, what)
	}
	return b.String()
}

// nprocDesc says how the tasks of a plugin running as the host's user are
// bounded in the kernel (nproc).
func (s *Sandbox) nprocDesc() string {
	switch {
	case os.Getuid() == 0:
		return "tasks not bounded by the kernel (root ignores RLIMIT_NPROC; threads counted by the host)"
	case s.nprocInNS():
		return fmt.Sprintf("at most %d tasks, counted in its own user namespace", nprocLimit)
	case s.nproc() == 0:
		return "tasks not bounded by the kernel (in a pid namespace of its own the worker cannot count its user's; threads counted by the host)"
	}
	return fmt.Sprintf("at most %d tasks more than its user has as it starts", nprocLimit)
}

// TmpQuota is what a plugin process may write into its private TMPDIR.
func (s *Sandbox) TmpQuota() int64 { return s.tmpQuota }

func (s *Sandbox) tmpQuotaDesc() string {
	return fmt.Sprintf("TMPDIR at most %d MiB (--plugin-tmp-quota)", s.tmpQuota>>20)
}

func (s *Sandbox) memoryDesc() string {
	if s.memory > 0 {
		return fmt.Sprintf("%d MiB per plugin process (--plugin-memory)", s.memory>>20)
	}
	return fmt.Sprintf("%d MiB + %d MiB per replication a process runs at once", baseAddressSpace>>20, slotAddressSpace>>20)
}

// The address-space limit of a plugin process, when not given: a Go
// process maps far more than it uses (an idle plugin has some 1.2 GiB of
// address space, most of it reserved, never touched), so the limit is that
// base plus, per replication the process runs at once, the engine's memory
// budget (sim.MemoryBudget, what its default cap on jobs in system is sized
// for) times the heap growth GOGC=400 allows (5×) before a collection.
const (
	baseAddressSpace = 2 << 30
	slotAddressSpace = 5 * sim.MemoryBudget
)

// Limit is the address-space limit of a plugin process running
// concurrency replications at once.
func (s *Sandbox) Limit(concurrency int) int64 {
	if s.memory > 0 {
		return s.memory
	}
	return baseAddressSpace + slotAddressSpace*int64(max(concurrency, 1))
}

// Spec is what the launcher applies to one plugin process; it travels in
// the launcher's argv (no secret is in it).
type Spec struct {
	Mode     Mode     `json:"mode"`
	Binary   string   `json:"binary"`
	SHA256   string   `json:"sha256,omitempty"` // verified through the executed descriptor
	TmpDir   string   `json:"tmpdir"`
	UID      int      `json:"uid"`
	GID      int      `json:"gid"`
	Memory   int64    `json:"memory"`
	NProc    int64    `json:"nproc,omitempty"`
	FileSize int64    `json:"file_size,omitempty"` // RLIMIT_FSIZE: no file written larger
	HostPID  int      `json:"host_pid"`
	Landlock bool     `json:"landlock"`
	Seccomp  bool     `json:"seccomp"`
	Writable []string `json:"writable,omitempty"`
	Interp   string   `json:"interp,omitempty"` // the ELF interpreter of a dynamically linked binary
	ReadDirs []string `json:"read_dirs,omitempty"`
	// MapIDs are the host's uid and gid, which the launcher maps to
	// themselves in the user namespace it was started in (none: it was not).
	MapIDs []int `json:"map_ids,omitempty"`
	// PrivateRoot: the launcher was started in a mount namespace of its
	// own, and makes its root one that holds only what the plugin may use.
	PrivateRoot bool `json:"private_root,omitempty"`
}

// launcherArg0 marks the host's executable run as the launcher.
const launcherArg0 = "msjfarm-plugin-sandbox"

// ChecksumMarker starts the launcher's report of a binary whose sha256 is
// not the pinned one (the host turns it into a checksum error).
const ChecksumMarker = "msjfarm-plugin-sandbox: checksum mismatch"

// Process is a plugin process about to start: its command and the
// private temporary directory to remove once it has exited.
type Process struct {
	Cmd    *exec.Cmd
	TmpDir string
	// Verified: the launcher verifies the pinned sha256 (the caller need
	// not, and must not ask go-plugin to hash the launcher).
	Verified bool
}

// Cleanup removes the private temporary directory.
func (p *Process) Cleanup() {
	if p.TmpDir != "" {
		_ = removeTmp(p.TmpDir)
	}
}

// Command prepares a plugin process: binary with args, environment env
// (to which TMPDIR is added), running concurrency replications at once;
// sha256 (hex, may be empty) is the pinned checksum; no file it writes
// may grow past fileSize bytes (0: no limit), a write past it kills the
// process (SIGXFSZ).
func (s *Sandbox) Command(binary string, args, env []string, concurrency int, sha256 string, fileSize int64) (*Process, error) {
	tmp, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", tmpPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("private TMPDIR: %v", err)
	}
	p := &Process{TmpDir: tmp}
	if s.uid >= 0 {
		if err := os.Chown(tmp, s.uid, s.gid); err != nil {
			p.Cleanup()
			return nil, fmt.Errorf("private TMPDIR for uid %d: %v", s.uid, err)
		}
	}
	env = append(append([]string(nil), env...), "TMPDIR="+tmp)
	closeOnExec()
	if s.mode == Off {
		p.Cmd = exec.Command(binary, args...)
		p.Cmd.Env = env
		p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return p, nil
	}
	spec := Spec{Mode: s.mode, Binary: binary, SHA256: sha256, TmpDir: tmp, UID: s.uid, GID: s.gid,
		Memory: s.Limit(concurrency), HostPID: os.Getpid(), Landlock: s.landlock > 0, Seccomp: s.seccomp, Writable: s.writable,
		FileSize: fileSize}
	spec.NProc = s.nproc()
	var system []string
	spec.Interp, system = libraries(binary)
	spec.ReadDirs = slices.Concat(system, s.readable)
	if ownsUserNS(s.nsFlags) {
		spec.MapIDs = []int{os.Geteuid(), os.Getegid()}
	}
	spec.PrivateRoot = hasRoot(s.nsFlags)
	js, err := json.Marshal(spec)
	if err != nil {
		p.Cleanup()
		return nil, err
	}
	// /proc/self/exe is the running image, even if its file was replaced
	// since. Pdeathsig here covers the launcher until it sets its own
	// (changing user clears it).
	p.Cmd = &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{launcherArg0, string(js)}, args...), Env: env,
		SysProcAttr: launcherAttr(s.nsFlags)}
	p.Verified = sha256 != ""
	return p, nil
}

// tmpPrefix begins a plugin process's private TMPDIR's name, which goes on
// with the host's pid (RemoveStale).
const tmpPrefix = "msjfarm-plugin-"

// RemoveStale removes the private TMPDIRs whose host process is gone: a
// host removes its plugins' directories as they exit, but a host killed
// (SIGKILL, the OOM killer) leaves them, each with what its plugin wrote
// (up to the TMPDIR quota). Hosts call it once as they start. A directory
// of a live process, or of another user's process, is left alone; one
// named without a pid (an older msjfarm's) too. It returns how many it
// removed.
func RemoveStale() int {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpPrefix+"*-*"))
	n := 0
	for _, d := range dirs {
		pidText, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), tmpPrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // alive (EPERM: another user's)
		}
		if removeTmp(d) == nil {
			n++
		}
	}
	return n
}

// nprocLimit bounds the tasks (processes and threads) of a dedicated
// plugin user, and what one plugin process may add to its user's when it
// runs as the host's: a plugin process has a few dozen threads.
const nprocLimit = 4096

// nproc is a plugin process's RLIMIT_NPROC (0: none). The kernel counts a
// user's tasks, threads included, against it, and refuses a new one past
// it. Forks are refused by seccomp, but threads are a Go program's own:
// as the host's user, a plugin started 20 000 in a second (every pid of a
// machine whose pid_max is 32768, which is below most users' limit), and
// the worker, out of threads, dies. So:
//
//   - a dedicated plugin user's tasks are bounded (nprocLimit);
//   - as the host's own user in a user namespace of its own, on Linux
//     5.14 or later, a plugin's tasks are bounded (nprocLimit): the
//     kernel counts a user's tasks against RLIMIT_NPROC per user
//     namespace there, so the count starts at the launcher's, whatever
//     the user runs elsewhere and wherever the host cannot see it;
//   - otherwise, as the host's own user, a plugin may add nprocLimit
//     tasks to those the user has as it starts (the limit is the count
//     plus that), where the host can count them all: not in a pid
//     namespace of its own, where its user's tasks outside are invisible
//     but counted (a limit below them would stop an honest plugin's
//     first thread);
//   - root is not bounded by the kernel (it ignores RLIMIT_NPROC).
//
// The plugin host also counts each process's threads (pluginhost's
// MaxThreads) and kills it past a thousand; this limit is what holds
// between two counts.
func (s *Sandbox) nproc() int64 {
	if s.uid >= 0 {
		return nprocLimit
	}
	if os.Getuid() == 0 {
		return 0
	}
	if s.nprocInNS() {
		return nprocLimit
	}
	n, ok := userTasks(os.Getuid())
	if !ok {
		return 0
	}
	return n + nprocLimit
}

// nprocInNS reports whether a plugin process running as the host's own
// user has its tasks counted apart from that user's others: it starts in
// a user namespace of its own, on a kernel that counts RLIMIT_NPROC per
// user namespace (nproc).
func (s *Sandbox) nprocInNS() bool {
	return s.uid < 0 && os.Getuid() != 0 && ownsUserNS(s.nsFlags) && nprocPerNamespace()
}

// CheckEnvName refuses, for --plugin-env, a variable that is or looks like
// a credential: msjfarm's own variables and the storage ones (MSJFARM_*,
// AWS_*, MINIO_*), and any name with KEY, SECRET, TOKEN, PASSWORD or
// CREDENTIAL in it. A plugin never gets one, even by the operator's mistake.
func CheckEnvName(name string) error {
	up := strings.ToUpper(name)
	if name == "" || strings.ContainsAny(name, "= \x00") {
		return fmt.Errorf("--plugin-env %q: not a variable name", name)
	}
	for _, p := range []string{"MSJFARM_", "AWS_", "MINIO_"} {
		if strings.HasPrefix(up, p) {
			return fmt.Errorf("--plugin-env %s: %s* variables configure msjfarm and its storage; plugins never get them", name, p)
		}
	}
	for _, w := range []string{"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(up, w) {
			return fmt.Errorf("--plugin-env %s: the name says it holds a credential (%s); plugins never get one", name, w)
		}
	}
	return nil
}
