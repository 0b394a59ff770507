// Command msjfarm-policy-hostile is a test plugin for the plugin sandbox
// (issue #28): each of its policies is an FCFS whose Init first tries one
// attack a hostile third party would, and then fails the replication with
// what happened: "refused: <error>" when the attack was stopped,
// "SUCCEEDED: <what it got>" when it was not. Its targets come from
// $HOSTILE_* variables the test adds to the plugin's environment and, on a
// farm (where no test variable reaches a plugin), from the parameters
// port and port2 (TCP ports on 127.0.0.1). hostile-honest attacks nothing.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/msjfarm/msjfarm/plugins/fcfs"
	"github.com/msjfarm/msjfarm/sdk"
)

var attacks = map[string]func(p *hostile) (string, error){
	"honest": nil,
	// The whole environment, as the plugin sees it.
	"env": func(*hostile) (string, error) { return strings.Join(os.Environ(), " "), nil },
	// The host's environment and command line through /proc.
	"procenv": func(*hostile) (string, error) {
		return read(fmt.Sprintf("/proc/%d/environ", os.Getppid()), fmt.Sprintf("/proc/%d/cmdline", os.Getppid()))
	},
	"config": func(*hostile) (string, error) { return read(os.Getenv("HOSTILE_CONFIG")) },
	// The worker's config file's mode set (to 0600, a secret's: the call
	// is the attack; 0644 would show its secrets to every user): Landlock
	// governs opening files, not their metadata.
	"chmod": func(*hostile) (string, error) {
		cfg := os.Getenv("HOSTILE_CONFIG")
		return "set the mode of " + cfg, os.Chmod(cfg, 0o600)
	},
	// The worker's standard input: on a terminal, what its user types,
	// and a descriptor through which TIOCSTI types into the user's shell.
	"stdin": func(*hostile) (string, error) {
		b := make([]byte, 64)
		n, err := os.Stdin.Read(b)
		if n == 0 {
			return "", fmt.Errorf("read nothing from its standard input: %v", err)
		}
		return fmt.Sprintf("read %q from its standard input", b[:n]), nil
	},
	// The worker's limits and priority, set to what they are (harmless
	// if it succeeds): a plugin that may set them may set RLIMIT_CPU to
	// 1 s or RLIMIT_NOFILE to 0.
	"prlimit": func(*hostile) (string, error) {
		var l syscall.Rlimit
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(os.Getppid()), syscall.RLIMIT_CORE, 0, uintptr(unsafe.Pointer(&l)), 0, 0); e != 0 {
			return "", e
		}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(os.Getppid()), syscall.RLIMIT_CORE, uintptr(unsafe.Pointer(&l)), 0, 0, 0); e != 0 {
			return "read the worker's RLIMIT_CORE", e
		}
		return "set the worker's RLIMIT_CORE", nil
	},
	"setpriority": func(*hostile) (string, error) {
		prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, os.Getppid())
		if err != nil {
			return "", err
		}
		// The raw call returns 20 - nice.
		return "set the worker's priority", syscall.Setpriority(syscall.PRIO_PROCESS, os.Getppid(), 20-prio)
	},
	// An error of 4 MiB: it went whole to the terminal, the worker's log,
	// the stored record (six times over) and NATS.
	"bigerror": func(*hostile) (string, error) {
		return "", errors.New(strings.Repeat("x", 4<<20))
	},
	// A descriptor the worker inherited open ($HOSTILE_FD), read.
	"fd": func(*hostile) (string, error) {
		fd, _ := strconv.Atoi(os.Getenv("HOSTILE_FD"))
		b := make([]byte, 64)
		n, err := syscall.Pread(fd, b, 0)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("read %q from descriptor %d", b[:n], fd), nil
	},
	// Memory outside the address-space limit.
	"memfd": func(*hostile) (string, error) {
		name := []byte("held\x00")
		fd, _, e := syscall.Syscall(319 /* memfd_create */, uintptr(unsafe.Pointer(&name[0])), 0, 0)
		if e != 0 {
			return "", e
		}
		syscall.Close(int(fd))
		return "created a memfd", nil
	},
	// The worker's controlling terminal, and a character typed into it
	// (TIOCSTI): what the worker's shell reads once the worker exits.
	"tty": func(*hostile) (string, error) {
		f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return "", err
		}
		defer f.Close()
		c := byte('#')
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			return "opened the worker's terminal", e
		}
		return "typed into the worker's terminal", nil
	},
	// 64 goroutines spinning for ever, then the replication ends: the
	// process, idle, takes every core it may, and no result shows it.
	"spin": func(*hostile) (string, error) {
		spin(64)
		return fmt.Sprintf("spinning in pid %d", os.Getpid()), nil
	},
	// The same past its GOMAXPROCS, within a replication that lasts a
	// minute.
	"spinprocs": func(*hostile) (string, error) {
		runtime.GOMAXPROCS(64)
		spin(64)
		time.Sleep(time.Minute)
		return fmt.Sprintf("spun a minute in pid %d", os.Getpid()), nil
	},
	// SysV shared memory, message queues and semaphores: memory no
	// limit of the process counts, kept by the kernel after it exits,
	// and state shared with every other plugin of the machine's (one
	// uid): a plugin left 2 GiB of segments behind. What it gets it
	// removes, so that a control run leaves nothing.
	"shm": func(*hostile) (string, error) {
		id, _, e := syscall.Syscall(syscall.SYS_SHMGET, 0 /* IPC_PRIVATE */, 1<<20, 0o1600 /* IPC_CREAT|0600 */)
		if e != 0 {
			return "", e
		}
		syscall.Syscall(syscall.SYS_SHMCTL, id, 0 /* IPC_RMID */, 0)
		return "created a SysV shared memory segment", nil
	},
	"msgq": func(*hostile) (string, error) {
		id, _, e := syscall.Syscall(syscall.SYS_MSGGET, 0, 0o1600, 0)
		if e != 0 {
			return "", e
		}
		syscall.Syscall(syscall.SYS_MSGCTL, id, 0, 0)
		return "created a SysV message queue", nil
	},
	"sem": func(*hostile) (string, error) {
		id, _, e := syscall.Syscall(syscall.SYS_SEMGET, 0, 1, 0o1600)
		if e != 0 {
			return "", e
		}
		syscall.Syscall6(syscall.SYS_SEMCTL, id, 0, 0, 0, 0, 0)
		return "created a SysV semaphore set", nil
	},
	// Other users' and plugins' file activity (names, times) in /tmp,
	// which Landlock does not cover.
	"inotify": func(*hostile) (string, error) {
		fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
		if err != nil {
			return "", err
		}
		defer syscall.Close(fd)
		if _, err := syscall.InotifyAddWatch(fd, "/tmp", syscall.IN_CREATE); err != nil {
			return "created an inotify instance", err
		}
		return "watching /tmp", nil
	},
	"store": func(*hostile) (string, error) { return list(os.Getenv("HOSTILE_STORE")) },
	"cache": func(*hostile) (string, error) { return list(os.Getenv("HOSTILE_CACHE")) },
	"home":  func(*hostile) (string, error) { return list(os.Getenv("HOSTILE_HOME")) },
	// A new object beside the stored results.
	"write-store": func(*hostile) (string, error) {
		p := os.Getenv("HOSTILE_STORE") + "/forged.json"
		return p, os.WriteFile(p, []byte(`{"forged":true}`), 0o644)
	},
	"tcp": func(p *hostile) (string, error) {
		var got []string
		targets := strings.Split(os.Getenv("HOSTILE_TCP"), ",")
		if targets[0] == "" {
			targets = []string{fmt.Sprintf("127.0.0.1:%d", p.port), fmt.Sprintf("127.0.0.1:%d", p.port2)}
		}
		for _, a := range targets {
			c, err := net.DialTimeout("tcp", a, 2*time.Second)
			if err != nil {
				return strings.Join(got, " "), err
			}
			got = append(got, "connected to "+a)
			c.Close()
		}
		return strings.Join(got, " "), nil
	},
	"udp": func(*hostile) (string, error) {
		c, err := net.Dial("udp", os.Getenv("HOSTILE_UDP"))
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte("exfiltrated"))
		return "sent a datagram", err
	},
	"bind": func(*hostile) (string, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close()
		return "listening on " + l.Addr().String(), nil
	},
	// An abstract unix socket name a service of the machine means to
	// listen on ($HOSTILE_ABSTRACT), bound first and held, answering
	// "squatted" to whoever connects: that service's clients. The plugin
	// cannot tell whose namespace the name is in; the test dials it.
	"squat": func(*hostile) (string, error) {
		name := "@" + os.Getenv("HOSTILE_ABSTRACT")
		l, err := net.Listen("unix", name)
		if err != nil {
			return "", err
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("squatted"))
				c.Close()
			}
		}()
		return "bound " + name, nil
	},
	"unix": func(*hostile) (string, error) {
		c, err := net.Dial("unix", os.Getenv("HOSTILE_UNIX"))
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected to the host's unix socket", nil
	},
	// A child in a session of its own, to outlive the worker.
	"setsid": func(*hostile) (string, error) {
		pid, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "sleeper"},
			&syscall.ProcAttr{Env: []string{"HOSTILE_SLEEPER=1"}, Sys: &syscall.SysProcAttr{Setsid: true}})
		return fmt.Sprintf("started pid %d in its own session", pid), err
	},
	"fork": func(*hostile) (string, error) {
		n := 0
		for range 200 {
			if _, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "sleeper"}, &syscall.ProcAttr{Env: []string{"HOSTILE_SLEEPER=1"}}); err != nil {
				return fmt.Sprintf("%d processes started", n), err
			}
			n++
		}
		return fmt.Sprintf("%d processes started", n), nil
	},
	// Address space far past any budget (mapped, not touched).
	"alloc": func(*hostile) (string, error) {
		var keep [][]byte
		for range 64 {
			keep = append(keep, make([]byte, 1<<30))
		}
		return fmt.Sprintf("mapped %d GiB", len(keep)), nil
	},
	"signal": func(*hostile) (string, error) {
		return fmt.Sprintf("signalled pid %d", os.Getppid()), syscall.Kill(os.Getppid(), syscall.SIGCONT)
	},
	// The parent-death signal cleared, so that the plugin outlives a dead
	// host, by prctl with the option's upper 32 bits set: the kernel reads
	// the option as an int, a filter comparing all 64 bits saw another.
	"pdeathsig": func(*hostile) (string, error) {
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 1<<32|syscall.PR_SET_PDEATHSIG, 0, 0); e != 0 {
			return "", e
		}
		var sig int32
		if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, 2 /* PR_GET_PDEATHSIG */, uintptr(unsafe.Pointer(&sig)), 0); e != 0 {
			return "", e
		}
		return fmt.Sprintf("set its parent-death signal to %d", sig), nil
	},
	// Its /proc/<pid>/fd and maps made root's: a host running as the
	// plugin's user (not root) then cannot count the files it holds
	// removed in its TMPDIR (diskhidden).
	"undumpable": func(*hostile) (string, error) {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			return "", err
		}
		return "made itself non-dumpable", nil
	},
	// Every process of its user (signal 0: the kernel checks, delivers
	// nothing): as the worker's user, the worker, its other plugins and
	// the user's shell, which SIGKILL would kill. kill(-1) answers 0 even
	// when it may signal none of them (Landlock's scope refuses each), so
	// only a refusal of the call itself (seccomp's EPERM) says anything.
	"killall": func(*hostile) (string, error) {
		return "may signal every process of its user", syscall.Kill(-1, 0)
	},
	// The host signalled through the owner of a descriptor (SIGIO, or
	// any signal F_SETSIG names, sent when the descriptor is ready):
	// no kill call at all.
	"sigio": func(*hostile) (string, error) {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return "", err
		}
		defer syscall.Close(fds[0])
		defer syscall.Close(fds[1])
		if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fds[0]), 10 /* F_SETSIG */, uintptr(syscall.SIGCONT)); e != 0 {
			return "", e
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, uintptr(fds[0]), syscall.F_SETOWN, uintptr(os.Getppid())); e != 0 {
			return "made SIGCONT its descriptor's signal", e
		}
		return fmt.Sprintf("made pid %d its descriptor's owner, to be sent SIGCONT", os.Getppid()), nil
	},
	"ptrace": func(*hostile) (string, error) {
		return "attached to the host", syscall.PtraceAttach(os.Getppid())
	},
	// Up to 4 GiB into the private TMPDIR, in files of up to 64 MiB (a
	// file the size limit stops is left for the next one): the one place
	// a confined plugin may write fills the worker's disk.
	// Files of TMPDIR removed but held open, which no walk of it sees:
	// 16 MiB each (under a quota per file), up to 1 GiB, held 10 s.
	"diskhidden": func(*hostile) (string, error) {
		chunk := make([]byte, 1<<20)
		var held []*os.File
		n := 0
		for n < 1<<30 {
			f, err := os.CreateTemp("", "hidden")
			if err != nil {
				return fmt.Sprintf("held %d MiB", n>>20), err
			}
			os.Remove(f.Name())
			held = append(held, f)
			for range 16 {
				if _, err := f.Write(chunk); err != nil {
					return fmt.Sprintf("held %d MiB", n>>20), err
				}
				n += len(chunk)
			}
		}
		time.Sleep(10 * time.Second)
		return fmt.Sprintf("held %d MiB in %d removed files of %s", n>>20, len(held), os.TempDir()), nil
	},
	// 256 MiB in files of 16 MiB (under a quota per file) in a directory
	// of TMPDIR made with mode 0300: a host that is not root, running the
	// plugin as its own user, can neither list it nor remove it. Held
	// 10 s.
	"diskdark": func(*hostile) (string, error) {
		// Mode 0300: the plugin may create files in it by name, no one
		// but root may list it.
		dark := filepath.Join(os.TempDir(), "dark")
		if err := os.Mkdir(dark, 0o300); err != nil {
			return "", err
		}
		chunk := make([]byte, 1<<20)
		n := 0
		for i := 0; n < 256<<20; i++ {
			f, err := os.Create(filepath.Join(dark, fmt.Sprintf("f%d", i)))
			if err != nil {
				return fmt.Sprintf("wrote %d MiB", n>>20), err
			}
			for range 16 {
				if _, err := f.Write(chunk); err != nil {
					return fmt.Sprintf("wrote %d MiB", n>>20), err
				}
				n += len(chunk)
			}
			f.Close()
		}
		// (chmod, to mode 0 or on the TMPDIR itself, is refused under
		// the sandbox: the mode mkdir gives is enough.)
		time.Sleep(10 * time.Second)
		return fmt.Sprintf("held %d MiB in %s, unreadable", n>>20, dark), nil
	},
	// Files of TMPDIR removed but one page of each kept mapped (the
	// descriptor closed): 16 MiB each, up to 1 GiB, held 10 s.
	"diskmapped": func(*hostile) (string, error) {
		chunk := make([]byte, 1<<20)
		var held [][]byte
		n := 0
		for n < 1<<30 {
			f, err := os.CreateTemp("", "mapped")
			if err != nil {
				return fmt.Sprintf("held %d MiB", n>>20), err
			}
			for range 16 {
				if _, err := f.Write(chunk); err != nil {
					f.Close()
					return fmt.Sprintf("held %d MiB", n>>20), err
				}
				n += len(chunk)
			}
			m, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
			f.Close()
			os.Remove(f.Name())
			if err != nil {
				return fmt.Sprintf("held %d MiB", n>>20), err
			}
			held = append(held, m)
		}
		time.Sleep(10 * time.Second)
		return fmt.Sprintf("held %d MiB in %d removed, mapped files of %s", n>>20, len(held), os.TempDir()), nil
	},
	"diskfill": func(*hostile) (string, error) {
		chunk := make([]byte, 1<<20)
		n := 0
		var last error
		for i := 0; n < 4<<30 && i < 100000; i++ {
			f, err := os.Create(filepath.Join(os.TempDir(), fmt.Sprintf("fill%d", i)))
			if err != nil {
				return fmt.Sprintf("wrote %d MiB", n>>20), err
			}
			for range 64 {
				if _, err := f.Write(chunk); err != nil {
					last = err
					break
				}
				n += len(chunk)
			}
			f.Close()
		}
		if n < 4<<30 {
			return fmt.Sprintf("wrote %d MiB", n>>20), last
		}
		return fmt.Sprintf("wrote %d MiB to %s", n>>20, os.TempDir()), nil
	},
	// $HOSTILE_THREADS (default 20000) OS threads, each held by a
	// goroutine locked to it and parked: every task the plugin's user may
	// run, and on a machine whose pid_max is below that user's process
	// limit, every pid (no fork is needed for this). About 20 000 a second.
	"threads": func(*hostile) (string, error) {
		want, _ := strconv.Atoi(os.Getenv("HOSTILE_THREADS"))
		if want <= 0 {
			want = 20000
		}
		n := startThreads(want)
		return fmt.Sprintf("ran %d threads", n), nil
	},
	// An hclog JSON line on stderr, which go-plugin re-logs at its level
	// with its fields: fields the host's own lines carry, forged.
	"logfields": func(*hostile) (string, error) {
		line := `{"@level":"error","@message":"plugin sandbox disabled by operator","@timestamp":"2026-01-01T00:00:00.000000Z","binary":"/usr/lib/msjfarm/msjfarm-policy-fcfs","task":"0000deadbeef","worker":"w9"}` + "\n"
		_, err := syscall.Write(2, []byte(line))
		time.Sleep(200 * time.Millisecond) // for go-plugin to read it
		return "wrote a forged log line", err
	},
	// 64 MiB of stderr in lines go-plugin re-logs at error level (every
	// line after one that begins "panic: "), written to file descriptor 2
	// itself (the SDK's Serve sends os.Stderr through gRPC, where the host
	// discards it): the host's log must not take them all. The writes
	// themselves succeed, so this attack is judged by the host's log, not
	// by its report.
	"logflood": func(*hostile) (string, error) {
		line := []byte("[ERROR] flood " + strings.Repeat("x", 90) + "\n")
		syscall.Write(2, []byte("panic: flood\n"))
		n := 0
		for n < 64<<20 {
			if _, err := syscall.Write(2, line); err != nil {
				return fmt.Sprintf("wrote %d bytes to stderr", n), err
			}
			n += len(line)
		}
		return fmt.Sprintf("wrote %d MiB to stderr", n>>20), nil
	},
}

func read(paths ...string) (string, error) {
	var got []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return strings.Join(got, " "), err
		}
		got = append(got, p+": "+string(b))
	}
	return strings.Join(got, " "), nil
}

func list(dir string) (string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return dir + ": " + strings.Join(names, ","), nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sleeper" {
		time.Sleep(time.Minute)
		return
	}
	// $HOSTILE_INIT_THREADS: the threads attack before the handshake, so
	// that it runs before the host has heard of the process.
	if n, _ := strconv.Atoi(os.Getenv("HOSTILE_INIT_THREADS")); n > 0 {
		fmt.Fprintf(os.Stderr, "ran %d threads before the handshake\n", startThreads(n))
	}
	var specs []sdk.Spec
	for name, attack := range attacks {
		specs = append(specs, sdk.Spec{Name: "hostile-" + name, Doc: "tries the attack " + name,
			New: func() sdk.Policy { return &hostile{name: name, attack: attack} }})
	}
	sdk.Serve("hostile", "0.0.1", specs)
}

type hostile struct {
	fcfs.FCFS
	name        string
	attack      func(*hostile) (string, error)
	port, port2 int
}

func (p *hostile) Params() []sdk.Param {
	return []sdk.Param{
		{Name: "port", Type: sdk.Int, Default: 0, Min: sdk.Bound(0), Max: sdk.Bound(65535), Doc: "a TCP port on 127.0.0.1 to connect to"},
		{Name: "port2", Type: sdk.Int, Default: 0, Min: sdk.Bound(0), Max: sdk.Bound(65535), Doc: "another one"},
	}
}

func (p *hostile) Configure(v sdk.Values) error {
	p.port, p.port2 = v.Int("port"), v.Int("port2")
	return nil
}

func (p *hostile) Init(s *sdk.System) error {
	if p.attack == nil {
		return p.FCFS.Init(s)
	}
	got, err := p.attack(p)
	if err != nil {
		return fmt.Errorf("attack %s refused: %w (after: %s)", p.name, err, got)
	}
	return fmt.Errorf("attack %s SUCCEEDED: %s", p.name, got)
}

// spin starts n goroutines that spin for ever.
func spin(n int) {
	for range n {
		go func() {
			for x := 0; ; x++ {
				_ = x
			}
		}()
	}
}

// startThreads starts want OS threads, each held by a goroutine locked to
// it and parked, and returns how many it got (it waits until none has
// started for 10 s).
func startThreads(want int) int64 {
	debug.SetMaxThreads(want + 1000)
	var locked atomic.Int64 // each goroutine locked to a thread of its own
	for range want {
		go func() {
			runtime.LockOSThread()
			locked.Add(1)
			select {}
		}()
	}
	n, last, since := int64(0), int64(0), time.Now()
	for n < int64(want) && time.Since(since) < 10*time.Second {
		time.Sleep(50 * time.Millisecond)
		if n = locked.Load(); n > last {
			last, since = n, time.Now()
		}
	}
	return n
}
