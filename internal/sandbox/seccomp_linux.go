package sandbox

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denied are system calls a policy plugin has no use for and a hostile
// one would: reading or steering other processes, changing what the
// process can see or reach (mounts, namespaces, keys), escaping the
// filter (io_uring runs operations seccomp never sees), loading kernel
// code, and leaving the host's process group or its parent-death signal.
var denied = []string{
	"fork", "vfork",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
	"move_mount", "open_tree", "fsopen", "fsmount", "fspick", "mount_setattr",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm",
	"open_by_handle_at", "name_to_handle_at",
	"setsid", "setpgid",
	"connect",
	// Signals to other processes (kill and the like, below, reach the
	// plugin's own pid only): tkill names a thread of any process, and
	// pidfd_send_signal takes a descriptor that opening /proc/<pid> gives.
	// Landlock scopes signals only from ABI 6 (Linux 6.12); before it, a
	// plugin running as the worker's user killed any process of that user.
	"tkill", "pidfd_send_signal",
	// Other processes' limits, priorities and memory: Landlock scopes
	// signals and ptrace, not these, so a plugin set its worker's
	// RLIMIT_CPU to 1 s and RLIMIT_NOFILE to 0 (the run hung, then died),
	// or every process of its user's (the worker's other plugins).
	// prlimit64 on itself stays (pid 0: the Go runtime raises its own
	// RLIMIT_NOFILE), below.
	"setpriority", "ioprio_set", "sched_setaffinity", "sched_setattr", "sched_setscheduler", "sched_setparam",
	"migrate_pages", "move_pages", "process_madvise", "process_mrelease",
	// Memory the address-space limit does not count: a plugin held 8 GiB
	// of RAM in memfds, past --plugin-memory.
	"memfd_create", "memfd_secret",
	// SysV IPC: shared memory no limit of the process counts, which the
	// kernel keeps after it exits (a plugin left 2 GiB of segments
	// behind, freed only by ipcrm), and message queues, semaphores and
	// segments by key, state every plugin of the machine (one uid) may
	// read and write across tasks, campaigns and binaries. POSIX message
	// queues, which /dev/mqueue's permissions already refused, likewise.
	"shmget", "shmat", "shmdt", "shmctl",
	"msgget", "msgsnd", "msgrcv", "msgctl",
	"semget", "semop", "semtimedop", "semctl",
	"ipc", // 32-bit x86 and ARM's multiplexer of the calls above
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
	// Metadata of files: Landlock governs opening, creating, renaming and
	// linking them, not their modes, owners, times or extended attributes,
	// so a plugin running as the worker's user could make that user's
	// files anywhere readable or writable by all (the worker's config file
	// with its secrets, the store), or their times lie. A policy sets none.
	"chmod", "fchmod", "fchmodat", "fchmodat2",
	"chown", "fchown", "lchown", "fchownat",
	"utime", "utimes", "futimesat", "utimensat",
	"setxattr", "lsetxattr", "fsetxattr", "setxattrat",
	"removexattr", "lremovexattr", "fremovexattr", "removexattrat",
	// Watching files: Landlock governs opening them, not inotify, through
	// which a plugin read the names and times of other users' and other
	// plugins' files in /tmp (task and campaign ids among them).
	"inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_mark",
}

// policy is the plugin's seccomp policy: everything the native
// architecture offers is allowed except the calls above (EPERM, which the
// plugin's code sees as "operation not permitted"), clone without
// CLONE_THREAD (a new process: threads are the Go runtime's, processes are
// not a policy's business), socket other than an AF_UNIX stream socket
// (go-plugin's server listens on one in the private TMPDIR; no TCP, no
// MPTCP, no UDP, no raw, no netlink, no datagram to /dev/log) and
// prlimit64 of another process. What an int argument decides is in
// intArgFilter: this package's conditions compare all 64 bits.
// clone3 answers ENOSYS, its flags being out of a filter's reach, so
// that callers fall back to clone.
//
// A name this architecture's table lacks is left out (go-seccomp-bpf
// refuses the whole policy for one): it has no such call to refuse. arm64
// has neither fork, vfork (clone does both) nor inotify_init (its _init1
// stays refused), iopl or ioperm; 386 has no kexec_file_load, semop or
// semtimedop (ipc, refused, multiplexes them); amd64 has no ipc.
func policy(info *arch.Info) seccomp.Policy {
	var names []string
	for _, n := range denied {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: eperm},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
				{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				// Types 2–5 and 10 (datagram, raw, rdm, seqpacket, packet)
				// all set a bit of 0xe; a stream socket (1) sets none.
				{Name: "socket", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.BitsSet, Value: 0xe}}},
				{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				{Name: "prlimit64", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
			}, Action: eperm},
		},
	}
}

// loadSeccomp installs the plugin's filters on the calling thread: the
// policy, under it a filter that kills a process making a system call of
// another architecture (on x86-64, int 0x80 reaches the i386 table, which
// the policy's names do not cover and would allow), and intArgFilter for
// pid, the plugin's own (the launcher's, which the plugin's execve keeps).
// The kernel applies every filter and the strictest answer.
func loadSeccomp(pid int) error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	if err := loadArchFilter(info); err != nil {
		return err
	}
	if err := seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: policy(info)}); err != nil {
		return err
	}
	return loadProgram(intArgFilter(info, pid))
}

// intArgFilter refuses (EPERM) the calls whose meaning an int argument
// decides, reading only that argument's low 32 bits, as the kernel does:
// a condition on all 64 bits (policy's) is passed by setting the upper
// ones. prctl(PR_SET_PDEATHSIG) with the option's upper bits set cleared
// the plugin's parent-death signal, so that it could outlive a dead host.
// Refused:
//   - prctl(PR_SET_PDEATHSIG), and prctl(PR_SET_DUMPABLE): a plugin that
//     made itself non-dumpable hid its /proc/<pid>/fd and maps from a
//     host running as its user (not root), and with them the files it
//     holds removed in its TMPDIR past the quota (pluginhost's
//     deletedHeld);
//   - kill of any process but pid, its process group (0, −pid: the
//     plugin leads its own session), and tgkill, rt_sigqueueinfo and
//     rt_tgsigqueueinfo of any but pid (the Go runtime signals its own
//     threads with tgkill);
//   - fcntl F_SETOWN, F_SETOWN_EX and F_SETSIG, and ioctl FIOSETOWN and
//     SIOCSPGRP: a descriptor's owner is sent SIGIO, or the signal
//     F_SETSIG names, by the kernel itself when the descriptor is ready.
func intArgFilter(info *arch.Info, pid int) []bpf.Instruction {
	// struct seccomp_data: nr (u32) at 0, arch (u32) at 4, the
	// instruction pointer (u64) at 8, then six u64 arguments.
	low := func(i uint32) bpf.Instruction {
		off := 16 + 8*i
		if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big-endian
			off += 4
		}
		return bpf.LoadAbsolute{Off: off, Size: 4}
	}
	deny := bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.EPERM)}
	allow := bpf.RetConstant{Val: uint32(seccomp.ActionAllow)}
	// when returns the instructions that answer yes when the loaded
	// value is one of vals, and no otherwise.
	when := func(vals []uint32, yes, no bpf.Instruction) []bpf.Instruction {
		var out []bpf.Instruction
		for i, v := range vals {
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(vals) - i)})
		}
		return append(out, no, yes)
	}
	own := uint32(pid)
	sections := []struct {
		names []string // the calls (by this architecture's names) the body judges
		body  []bpf.Instruction
	}{
		{[]string{"prctl"}, append([]bpf.Instruction{low(0)}, when([]uint32{unix.PR_SET_PDEATHSIG, unix.PR_SET_DUMPABLE}, deny, allow)...)},
		{[]string{"kill"}, append([]bpf.Instruction{low(0)}, when([]uint32{own, 0, uint32(-int32(own))}, allow, deny)...)},
		{[]string{"tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"}, append([]bpf.Instruction{low(0)}, when([]uint32{own}, allow, deny)...)},
		// fcntl64: 32-bit architectures' fcntl.
		{[]string{"fcntl", "fcntl64"}, append([]bpf.Instruction{low(1)}, when([]uint32{unix.F_SETOWN, unix.F_SETOWN_EX, unix.F_SETSIG}, deny, allow)...)},
		{[]string{"ioctl"}, append([]bpf.Instruction{low(1)}, when([]uint32{fioSetOwn, unix.SIOCSPGRP}, deny, allow)...)},
	}
	prog := []bpf.Instruction{bpf.LoadAbsolute{Off: 0, Size: 4}}
	for _, sc := range sections {
		for _, name := range sc.names {
			nr, ok := info.SyscallNames[name]
			if !ok {
				continue // not on this architecture
			}
			// Not this call: skip its section, which always returns.
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: uint8(len(sc.body))})
			prog = append(prog, sc.body...)
		}
	}
	return append(prog, allow)
}

// fioSetOwn is FIOSETOWN (asm-generic/sockios.h), which x/sys/unix
// does not name: SIOCSPGRP's twin for any socket.
const fioSetOwn = 0x8901

// loadArchFilter is the three-instruction filter go-seccomp-bpf cannot
// express (its policies allow a foreign architecture's calls when their
// default is to allow), assembled with x/net/bpf.
func loadArchFilter(info *arch.Info) error {
	return loadProgram([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
		bpf.RetConstant{Val: uint32(seccomp.ActionAllow)},
	})
}

// loadProgram assembles a filter and installs it on the calling thread
// (with no_new_privs, which an unprivileged process needs for it).
func loadProgram(insns []bpf.Instruction) error {
	prog, err := bpf.Assemble(insns)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("filter: %v", err)
	}
	return nil
}

// seccompSupported reports whether seccomp filters are available.
func seccompSupported() bool { return seccomp.Supported() }
