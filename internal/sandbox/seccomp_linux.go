package sandbox

import (
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
	"mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
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
// prctl(PR_SET_PDEATHSIG) (which would let it outlive a dead host) and
// prlimit64 of another process.
// clone3 answers ENOSYS, its flags being out of a filter's reach, so
// that callers fall back to clone.
func policy() seccomp.Policy {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: denied, Action: eperm},
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsNotSet, Value: unix.CLONE_THREAD}}},
				{Name: "socket", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				// Types 2–5 and 10 (datagram, raw, rdm, seqpacket, packet)
				// all set a bit of 0xe; a stream socket (1) sets none.
				{Name: "socket", Conditions: []seccomp.Condition{{Argument: 1, Operation: seccomp.BitsSet, Value: 0xe}}},
				{Name: "socketpair", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: unix.AF_UNIX}}},
				{Name: "prctl", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: unix.PR_SET_PDEATHSIG}}},
				{Name: "prlimit64", Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.NotEqual, Value: 0}}},
			}, Action: eperm},
		},
	}
}

// loadSeccomp installs the plugin's filters on the calling thread: the
// policy, and under it a filter that kills a process making a system call
// of another architecture (on x86-64, int 0x80 reaches the i386 table,
// which the policy's names do not cover and would allow).
func loadSeccomp() error {
	if err := loadArchFilter(); err != nil {
		return err
	}
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Policy: policy()})
}

// loadArchFilter is the three-instruction filter go-seccomp-bpf cannot
// express (its policies allow a foreign architecture's calls when their
// default is to allow), assembled with x/net/bpf.
func loadArchFilter() error {
	info, err := arch.GetInfo("")
	if err != nil {
		return err
	}
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionKillProcess)},
		bpf.RetConstant{Val: uint32(seccomp.ActionAllow)},
	})
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
		return fmt.Errorf("architecture filter: %v", err)
	}
	return nil
}

// seccompSupported reports whether seccomp filters are available.
func seccompSupported() bool { return seccomp.Supported() }
