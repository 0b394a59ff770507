package sandbox

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// init turns this process into the launcher when the host started it as
// one (argv[0] is the marker): it never returns then. Doing it in init,
// before main, means that any program that can host plugins (it imports
// this package through worker/pluginhost) is its own launcher: msjfarm,
// `go run`'s temporary binary, and test binaries alike.
func init() {
	if len(os.Args) == 4 && os.Args[0] == nsProbeArg0 {
		nsProbe(os.Args[1], os.Args[2], os.Args[3])
	}
	if len(os.Args) < 2 || os.Args[0] != launcherArg0 {
		return
	}
	// Everything below acts on the calling thread (no_new_privs, the
	// Landlock domain, the seccomp filter, the parent-death signal), and
	// execve keeps only that thread: it must be the one that execs.
	runtime.LockOSThread()
	var spec Spec
	if err := json.Unmarshal([]byte(os.Args[1]), &spec); err != nil {
		fail(2, "reading the launch spec: %v", err)
	}
	fail(126, "%v", launch(&spec, os.Args[2:]))
}

func fail(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "msjfarm-plugin-sandbox: "+format+"\n", a...)
	os.Exit(code)
}

// launch applies spec to this process and executes the plugin; it returns
// only on failure, with the reason. The order matters: the binary is
// opened and the ruleset built while the launcher still has its rights,
// the user is switched before the parent-death signal is set again, and
// the limits come last.
func launch(spec *Spec, args []string) error {
	if len(spec.MapIDs) == 2 {
		if err := writeMaps(spec.MapIDs[0], spec.MapIDs[1]); err != nil {
			return err
		}
	}
	fd, err := openBinary(spec)
	if err != nil {
		return err
	}
	ruleset, flags, err := landlockRuleset(spec)
	if err != nil {
		return err
	}
	if spec.PrivateRoot {
		ro := slices.DeleteFunc(append([]string{spec.Interp}, spec.ReadDirs...), func(p string) bool { return p == "" })
		if err := privateRoot(ro, append([]string{spec.TmpDir}, spec.Writable...)); err != nil {
			return err
		}
	}
	if len(spec.MapIDs) == 2 {
		if err := dropCaps(); err != nil {
			return err
		}
	}
	if err := switchUser(spec); err != nil {
		return err
	}
	if err := confine(spec, ruleset, flags); err != nil {
		return err
	}
	argv := append([]string{spec.Binary}, args...)
	env := os.Environ()
	// Last, so that a small address-space limit binds the plugin, not the
	// launcher's own runtime (lowering a limit needs no privilege).
	if err := setLimits(spec); err != nil {
		return err
	}
	return fmt.Errorf("executing %s: %v", spec.Binary, execveat(fd, argv, env))
}

// openBinary opens the plugin binary while the launcher may still
// traverse every directory (the plugin user may not, e.g. a root-owned
// 0700 cache), so that it is executed from this descriptor; it checks
// the pinned sha256 and refuses a script, whose interpreter may not run.
func openBinary(spec *Spec) (int, error) {
	fd, err := unix.Open(spec.Binary, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the plugin binary: %v", err)
	}
	if spec.SHA256 != "" {
		if err := verify(fd, spec.SHA256); err != nil {
			return -1, err
		}
	}
	var magic [2]byte
	if n, _ := unix.Pread(fd, magic[:], 0); n == 2 && string(magic[:]) == "#!" {
		return -1, fmt.Errorf("%s is a script (#!): a confined plugin must be an executable binary, its interpreter may not run (--plugin-sandbox off runs it unconfined)", spec.Binary)
	}
	return fd, nil
}

// landlockRuleset builds the Landlock ruleset of spec's rules (-1 when
// Landlock is off); in best-effort mode a kernel's missing features are
// dropped rather than refused.
func landlockRuleset(spec *Spec) (ruleset int, flags uint32, err error) {
	if !spec.Landlock {
		return -1, 0, nil
	}
	cfg := landlock.V6
	if spec.Mode == BestEffort {
		cfg = cfg.BestEffort()
	}
	if ruleset, flags, err = cfg.NewRulesetFD(rules(spec)...); err != nil {
		return -1, 0, fmt.Errorf("landlock ruleset: %v", err)
	}
	return ruleset, flags, nil
}

// switchUser becomes the plugin user (spec.UID < 0: stay). Groups go
// first: after setuid the launcher may no longer drop them.
func switchUser(spec *Spec) error {
	if spec.UID < 0 {
		return nil
	}
	if err := syscall.Setgroups([]int{spec.GID}); err != nil {
		return fmt.Errorf("setgroups %d: %v", spec.GID, err)
	}
	if err := syscall.Setresgid(spec.GID, spec.GID, spec.GID); err != nil {
		return fmt.Errorf("setgid %d: %v", spec.GID, err)
	}
	if err := syscall.Setresuid(spec.UID, spec.UID, spec.UID); err != nil {
		return fmt.Errorf("setuid %d: %v", spec.UID, err)
	}
	return nil
}

// confine sets the parent-death signal again (changing user cleared the
// one the host asked for) and makes sure the host did not die before
// that, then no_new_privs, the Landlock domain and the seccomp filter.
func confine(spec *Spec, ruleset int, flags uint32) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %v", err)
	}
	if os.Getppid() != spec.HostPID {
		return fmt.Errorf("the host (pid %d) exited before the plugin started", spec.HostPID)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %v", err)
	}
	if ruleset >= 0 {
		if err := llsys.LandlockRestrictSelf(ruleset, flags); err != nil {
			return fmt.Errorf("landlock: %v", err)
		}
		_ = unix.Close(ruleset)
	}
	if spec.Seccomp {
		if err := loadSeccomp(os.Getpid()); err != nil {
			return fmt.Errorf("seccomp: %v", err)
		}
	}
	return nil
}

func setLimits(spec *Spec) error {
	// Never above the hard limit the host already has, which an ordinary
	// user cannot raise and which bounds the plugin already: under a
	// shell's `ulimit -v` of 6 GB, setting the 7 GiB address-space limit
	// failed, and every replication's plugin with it, five times each.
	set := func(name string, res int, v uint64) error {
		var old unix.Rlimit
		if err := unix.Getrlimit(res, &old); err == nil && old.Max < v {
			v = old.Max
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("%s limit %d: %v", name, v, err)
		}
		return nil
	}
	if err := set("core", unix.RLIMIT_CORE, 0); err != nil {
		return err
	}
	if spec.Memory > 0 {
		if err := set("address-space", unix.RLIMIT_AS, uint64(spec.Memory)); err != nil {
			return err
		}
	}
	if spec.FileSize > 0 {
		if err := set("file-size", unix.RLIMIT_FSIZE, uint64(spec.FileSize)); err != nil {
			return err
		}
	}
	if spec.NProc > 0 {
		return set("process", unix.RLIMIT_NPROC, uint64(spec.NProc))
	}
	return nil
}

// userTasks counts the tasks (threads) whose real uid is uid, as the
// kernel counts them against RLIMIT_NPROC. ok is false where the count
// cannot be whole: in a pid namespace of its own, the host does not see
// its user's tasks outside it.
func userTasks(uid int) (n int64, ok bool) {
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	if ns := statusField(self, "NSpid:"); ns == "" || strings.ContainsAny(ns, " \t") {
		return 0, false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := strconv.Itoa(uid)
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone since the listing
		}
		if ids := strings.Fields(statusField(b, "Uid:")); len(ids) == 0 || ids[0] != want {
			continue
		}
		t, _ := strconv.ParseInt(statusField(b, "Threads:"), 10, 64)
		n += t
	}
	return n, true
}

// CPU is the CPU time process pid has used, user and system, all its
// threads (0 if it cannot be read: gone, or not Linux): the plugin host's
// measure of a plugin's, which a replication's own cpu_seconds (its
// engine thread's) does not show.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses,
	// so the fields are counted from the last ')'; utime and stime are
	// the 14th and 15th fields, the 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * time.Second / clockTicks
}

// clockTicks is the unit of /proc's CPU times (USER_HZ): 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// Threads is the number of threads of process pid (0 if it cannot be
// read: gone, or not Linux): the plugin host's count of a plugin's.
func Threads(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(statusField(b, "Threads:"), 10, 64)
	return n
}

// statusField is the value of a /proc/<pid>/status line, trimmed.
func statusField(status []byte, name string) string {
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, name); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// verify hashes the open binary and compares it with the pinned sha256.
func verify(fd int, want string) error {
	// A duplicate, so that closing it (or its finalizer) leaves fd open;
	// read at offsets, which leaves the shared file offset alone.
	dup, err := unix.Dup(fd)
	if err != nil {
		return fmt.Errorf("hashing the plugin binary: %v", err)
	}
	f := os.NewFile(uintptr(dup), "plugin")
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return fmt.Errorf("hashing the plugin binary: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("checksum mismatch: the binary's sha256 is %s, the campaign pins %s", got, want)
	}
	return nil
}

// rules are the Landlock rules of a plugin process: read and execute its
// binary (and the ELF interpreter of a dynamically linked one), read the
// system libraries such a binary loads, read and write its private
// TMPDIR and /dev/null. Nothing else: not /proc (the Go runtime runs
// without it: GOMAXPROCS falls back to the CPU affinity mask), not the
// worker's files, the store, the plugin cache or any home directory. No
// TCP port is granted, and the V6 scoping keeps signals and abstract unix
// sockets inside the plugin's own domain.
func rules(spec *Spec) []landlock.Rule {
	exec := landlock.AccessFSSet(llsys.AccessFSExecute | llsys.AccessFSReadFile)
	rs := []landlock.Rule{
		landlock.PathAccess(exec, spec.Binary),
		landlock.RWDirs(spec.TmpDir),
		landlock.PathAccess(landlock.AccessFSSet(llsys.AccessFSReadFile|llsys.AccessFSWriteFile), "/dev/null").IgnoreIfMissing(),
	}
	for _, d := range spec.Writable {
		rs = append(rs, landlock.RWDirs(d))
	}
	if spec.Interp != "" {
		rs = append(rs, landlock.PathAccess(exec, spec.Interp))
	}
	for _, d := range spec.ReadDirs {
		access := landlock.AccessFSSet(llsys.AccessFSReadFile)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			access |= llsys.AccessFSReadDir
		}
		rs = append(rs, landlock.PathAccess(access, d).IgnoreIfMissing())
	}
	return rs
}

// systemLibraries are the paths the loader of a dynamically linked binary
// reads.
var systemLibraries = []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"}

// libraries returns the ELF interpreter of a dynamically linked binary
// and the system paths its loader reads (nothing for a static binary).
func libraries(binary string) (interp string, paths []string) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return "", nil
		}
		for len(b) > 0 && b[len(b)-1] == 0 {
			b = b[:len(b)-1]
		}
		return string(b), systemLibraries
	}
	return "", nil
}

// LibraryHint says why a confined plugin could not start, and what to do,
// when its loader did not find a library (stderr, the process's, holds the
// loader's "error while loading shared libraries: LIB: …"); "" for any
// other failure or an unconfined plugin. The binary's RUNPATH (or
// RPATH) tells where its author meant LIB to be; those directories are
// named, not granted: the binary's author chose them, and only the
// operator gives a plugin a directory to read (--plugin-readable).
func (s *Sandbox) LibraryHint(binary, stderr string) string {
	if s.mode == Off {
		return ""
	}
	_, lib, ok := strings.Cut(stderr, "error while loading shared libraries: ")
	if !ok {
		return ""
	}
	lib, _, _ = strings.Cut(lib, ":")
	if lib == "" || strings.ContainsAny(lib, "/\n") {
		return ""
	}
	msg := fmt.Sprintf("its dynamic loader found no %s where a confined plugin may read: the system's libraries (%s) and the --plugin-readable directories", lib, strings.Join(systemLibraries[:4], ", "))
	// Named, not looked into: whether LIB is there would tell the plugin
	// (through its task's error) whether a path it chose exists on the
	// worker, which its own root keeps from it.
	dirs := runPath(binary)
	if len(dirs) > 0 {
		msg += fmt.Sprintf("; the binary's RUNPATH names %s: where it is, --plugin-readable DIR lets every confined plugin read that directory", strings.Join(dirs, ", "))
	} else {
		msg += "; give its directory with --plugin-readable DIR, which every confined plugin may then read"
	}
	if slices.ContainsFunc(dirs, func(d string) bool { return strings.Contains(d, "$ORIGIN") || strings.Contains(d, "${ORIGIN}") }) {
		// A worker fetches the pinned binary alone into its plugin cache,
		// and the launcher runs it from a descriptor, outside its root.
		msg += "; $ORIGIN (the binary's own directory) never holds its libraries for a confined plugin: link against their absolute directory"
	}
	return msg + "; or link the plugin statically (a pure Go one: CGO_ENABLED=0)"
}

// runPath is the binary's RUNPATH, or else its RPATH, split at colons:
// the directories its loader searches first. $ORIGIN and other tokens
// are left as they are (such a directory is then not found).
func runPath(binary string) []string {
	f, err := elf.Open(binary)
	if err != nil {
		return nil
	}
	defer f.Close()
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		if v, err := f.DynString(tag); err == nil && len(v) > 0 {
			var dirs []string
			for _, p := range v {
				dirs = append(dirs, filepath.SplitList(p)...)
			}
			return dirs
		}
	}
	return nil
}

// execveat executes the file open at fd (execveat with AT_EMPTY_PATH,
// i.e. fexecve). golang.org/x/sys has no wrapper for it.
func execveat(fd int, argv, envv []string) error {
	empty, err := syscall.BytePtrFromString("")
	if err != nil {
		return err
	}
	av, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	ev, err := syscall.SlicePtrFromStrings(envv)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(unsafe.Pointer(&av[0])), uintptr(unsafe.Pointer(&ev[0])), unix.AT_EMPTY_PATH, 0)
	return e
}

// probe reports the Landlock ABI and whether seccomp filters load.
func probe() (landlockABI int, seccompOK bool) {
	if v, err := llsys.LandlockGetABIVersion(); err == nil {
		landlockABI = v
	}
	return landlockABI, seccompSupported()
}

// launcherAttr starts the launcher in a session of its own (hence a
// process group of its own, which the host kills as one) with the
// parent-death signal set (the launcher sets it again after changing user,
// which clears it), in the namespaces cloneflags asks for (netnsFlags, or
// none). A session of its own has no controlling terminal: in the
// worker's, a plugin opened the terminal `msjfarm run` was started from
// (/dev/tty, with the sandbox off) and typed into the user's shell
// (TIOCSTI), which ran it once msjfarm exited.
func launcherAttr(cloneflags uintptr) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: cloneflags}
	if ownsUserNS(cloneflags) {
		// Executing the launcher with its uid not yet mapped drops the
		// capabilities the new namespace gave it, and giving up setgroups
		// (which mapping the gid requires) takes CAP_SYS_ADMIN there: it
		// is kept as an ambient capability until writeMaps and
		// privateRoot have used it (dropCaps).
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	return a
}

// netnsFlags are the clone flags that give a plugin process a network
// namespace of its own. Abstract unix socket names belong to a network
// namespace: in the machine's, a confined plugin could bind a name that
// one of its services (an X server, a session bus, a container runtime)
// means to listen on, and take that service's clients' connections
// (Landlock scopes connecting to such a name, not binding one; seccomp
// cannot read the address). Root creates the namespace itself; any other
// user through a user namespace of its own that owns it, in which the
// launcher maps the host's uid and gid to themselves (writeMaps), so that
// the plugin's ids, files and limits are the host's as before; dropCaps
// then drops every capability the namespace gave, so the plugin holds
// none. CLONE_NEWNS, added where the machine allows it, is the mount
// namespace of the plugin's private root (privateRoot).
func netnsFlags() uintptr {
	if os.Geteuid() == 0 {
		return unix.CLONE_NEWNET
	}
	return unix.CLONE_NEWUSER | unix.CLONE_NEWNET
}

// ownsUserNS reports whether cloneflags start the launcher in a user
// namespace of its own, where it must map its ids.
func ownsUserNS(cloneflags uintptr) bool { return cloneflags&unix.CLONE_NEWUSER != 0 }

// nprocPerNamespace reports whether this kernel counts a user's tasks
// against RLIMIT_NPROC in each user namespace apart (Linux 5.14 moved the
// count from the user to the user and its namespace): there a launcher in
// a user namespace of its own starts its plugin's count at its own tasks.
// Before, the count is the user's across the machine, and a limit of
// nprocLimit alone would stop an honest plugin of a user who runs more.
func nprocPerNamespace() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 14)
}

// kernelAtLeast reports whether release (uname -r: "6.18.44-fc", "5.4.0-150-generic")
// is major.minor or later; false if it does not read as a version.
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	lead := func(s string) (int, error) { // "14-rc1" is 14
		if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			s = s[:i]
		}
		return strconv.Atoi(s)
	}
	ma, err1 := lead(parts[0])
	mi, err2 := lead(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// hasNetNS and hasRoot report whether cloneflags give the plugin a
// network namespace, and a mount namespace for its private root.
func hasNetNS(cloneflags uintptr) bool { return cloneflags&unix.CLONE_NEWNET != 0 }
func hasRoot(cloneflags uintptr) bool  { return cloneflags&unix.CLONE_NEWNS != 0 }

// nsProbeArg0 marks the host's executable started only to learn whether
// this machine lets a process of this user have namespaces of its own
// (probeNamespaces).
const nsProbeArg0 = "msjfarm-plugin-ns-probe"

var namespaces struct {
	once            sync.Once
	flags           uintptr
	netErr, rootErr error
}

// probeNamespaces returns the clone flags a plugin process gets here: a
// network namespace and a private root (netnsFlags | CLONE_NEWNS), a
// network namespace alone, or none; and why not the rest. User namespaces
// may be off (a sysctl, a container's seccomp profile, AppArmor's
// restriction of unprivileged ones, which lets the namespace be made but
// nothing in it), and the private root needs Linux 5.12's mount API. It
// starts a process or two (this executable, which sets up what it is
// asked and exits) the first time.
func probeNamespaces() (flags uintptr, netErr, rootErr error) {
	namespaces.once.Do(func() {
		base := netnsFlags()
		if namespaces.rootErr = probeFlags(base|unix.CLONE_NEWNS, true); namespaces.rootErr == nil {
			namespaces.flags = base | unix.CLONE_NEWNS
			return
		}
		if namespaces.netErr = probeFlags(base, false); namespaces.netErr == nil {
			namespaces.flags = base
		}
	})
	return namespaces.flags, namespaces.netErr, namespaces.rootErr
}

// probeFlags starts the probe process with cloneflags; withRoot, it also
// builds a private root as a dynamically linked plugin's.
func probeFlags(cloneflags uintptr, withRoot bool) error {
	uid, gid := "-1", "-1"
	if ownsUserNS(cloneflags) {
		uid, gid = strconv.Itoa(os.Geteuid()), strconv.Itoa(os.Getegid())
	}
	var out bytes.Buffer
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{nsProbeArg0, uid, gid, strconv.FormatBool(withRoot)}, Env: []string{},
		Stdout: &out, Stderr: &out, SysProcAttr: launcherAttr(cloneflags)}
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace(out.Bytes()); len(msg) > 0 {
			return fmt.Errorf("%v: %s", err, msg)
		}
		return err
	}
	return nil
}

// nsProbe is the probe's process: it does what the launcher would (maps
// its ids, uid < 0 meaning no user namespace; builds a private root with
// the system libraries and loader and the temporary directory) and exits.
func nsProbe(uid, gid, withRoot string) {
	u, err1 := strconv.Atoi(uid)
	g, err2 := strconv.Atoi(gid)
	root, err3 := strconv.ParseBool(withRoot)
	if err1 != nil || err2 != nil || err3 != nil {
		fail(2, "namespace probe: %q %q %q", uid, gid, withRoot)
	}
	if u >= 0 {
		if err := writeMaps(u, g); err != nil {
			fail(1, "%v", err)
		}
	}
	if root {
		// As for a plugin linked as this executable is (with its loader
		// when it is dynamically linked), and its TMPDIR's directory.
		ro := systemLibraries
		if interp, dirs := libraries("/proc/self/exe"); interp != "" {
			ro = append([]string{interp}, dirs...)
		}
		if err := privateRoot(ro, []string{os.TempDir()}); err != nil {
			fail(1, "%v", err)
		}
	}
	os.Exit(0)
}

// dropCaps drops every capability this thread (the one that executes
// the plugin) holds in the user namespace it was started in. The ambient
// one above all: ambient capabilities survive execve, and without this
// the plugin ran with CAP_SYS_ADMIN in its namespace (TestPluginNamespace,
// as a user other than root).
func dropCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping the launcher's ambient capabilities: %v", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("dropping the launcher's capabilities: %v", err)
	}
	return nil
}

// writeMaps maps, in the user namespace this process was started in, the
// host's uid and gid (which it still has, unmapped) to themselves: the
// one mapping a namespace's owner may write without a capability, after
// giving up setgroups (which takes CAP_SYS_ADMIN in the namespace, the
// ambient capability launcherAttr keeps until dropCaps).
func writeMaps(uid, gid int) error {
	for _, w := range [...]struct{ file, text string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/uid_map", fmt.Sprintf("%d %d 1\n", uid, uid)},
		{"/proc/self/gid_map", fmt.Sprintf("%d %d 1\n", gid, gid)},
	} {
		f, err := os.OpenFile(w.file, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(w.text)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("mapping the plugin's user namespace: %v", err)
		}
	}
	return nil
}

// closeOnExec marks every descriptor of this process above standard
// error close-on-exec. Go opens its own so, but a descriptor the
// process inherited open (a shell's `200>>log 201<secrets.env`, a
// harness's) passed on through every exec: a confined plugin read a
// secret from fd 201 and appended to a root-owned 0600 file through fd
// 200. A plugin gets standard input (/dev/null), output and error, and
// nothing else. Called before each plugin starts (the host's descriptors
// are Go's own from then on; marking them again costs one system call).
func closeOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	// Before Linux 5.11: the descriptors /proc lists.
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range fds {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
