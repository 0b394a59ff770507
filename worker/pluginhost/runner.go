package pluginhost

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
)

// procRunner starts a plugin process for go-plugin, as go-plugin's own
// command runner does, and tells the host the moment the process exists.
// With go-plugin's runner the host learnt the pid only from the
// handshake: a plugin that started threads in init() and answered late
// (up to StartTimeout, 20 s) was bounded until then only by the kernel's
// RLIMIT_NPROC, which is not set for root, in a pid namespace of its own,
// or with the sandbox off; at some 20 000 threads a second that is every
// pid of the machine. Through started, watch counts from the first tick.
type procRunner struct {
	cmd            *exec.Cmd
	secure         *plugin.SecureConfig // checked here: go-plugin checks only a Cmd of its own
	stdout, stderr io.ReadCloser
	started        func(pid int) // called once, right after the process started
	w              *watcher      // its exited is closed, and status set, once the process has been reaped
	pid            int
}

// runnerFunc is the ClientConfig.RunnerFunc that runs cmd, the sandbox's
// command. go-plugin hands it a placeholder command with the handshake's
// variables, which cmd takes, except the socket directory go-plugin makes
// for a runner of its own: a plugin listens in its private TMPDIR, the
// only place the host connects to (start), and the directory go-plugin
// makes, in the host's temporary directory, is removed.
func runnerFunc(cmd *exec.Cmd, secure *plugin.SecureConfig, started func(int), w *watcher) func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
	return func(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
		for _, kv := range spec.Env {
			if !strings.HasPrefix(kv, plugin.EnvUnixSocketDir+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		if socketDir != "" {
			_ = os.Remove(socketDir)
		}
		r := &procRunner{cmd: cmd, secure: secure, started: started, w: w}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		r.stdout = &lineCapped{r: stdout, max: maxStdoutLine}
		if r.stderr, err = cmd.StderrPipe(); err != nil {
			return nil, err
		}
		return r, nil
	}
}

func (r *procRunner) Start(context.Context) error {
	if r.secure != nil {
		ok, err := r.secure.Check(r.cmd.Path)
		if err != nil {
			return err
		}
		if !ok {
			return plugin.ErrChecksumsDoNotMatch
		}
	}
	if err := r.cmd.Start(); err != nil {
		close(r.w.exited)
		return err
	}
	r.pid = r.cmd.Process.Pid
	r.started(r.pid)
	return nil
}

func (r *procRunner) Wait(context.Context) error {
	defer close(r.w.exited)
	err := r.cmd.Wait()
	if st := r.cmd.ProcessState; st != nil {
		s := st.String()
		r.w.status.Store(&s)
	}
	return err
}

func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && err != os.ErrProcessDone {
		return err
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.cmd.Path }
func (r *procRunner) Diagnose(context.Context) string {
	return "" // the host reports a failed start with the plugin's stderr
}

// ID is the pid, as go-plugin's runner's: go-plugin kills nothing whose
// ID is empty.
func (r *procRunner) ID() string {
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

// The plugin's addresses are the host's: both run on one machine.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// maxStdoutLine is the longest line of a plugin's stdout that go-plugin
// is handed whole (lineCapped). A handshake line is a few hundred bytes
// (versions, the socket's path in the plugin's TMPDIR, the protocol).
const maxStdoutLine = 4 << 10

// lineCapped is a plugin's stdout with a newline put in after every
// max bytes that have none. go-plugin reads that pipe with a
// bufio.Scanner, for the handshake and then, discarding them, for every
// line after it; a line of 64 KiB stops the scanner for good, nothing
// reads the pipe any more, and the plugin blocks in its next write to
// fd 1 once the pipe's buffer is full. A C library's printf writes there
// (go-plugin redirects os.Stdout, not the descriptor), so an honest
// plugin hung in the middle of a replication, until the stall watch
// killed it and the task ran again, to hang again; and one whose first
// line was over 64 KiB failed to start with an empty "Unrecognized
// remote plugin message". The lines after the handshake are discarded
// either way, so splitting them loses nothing.
type lineCapped struct {
	r       io.ReadCloser
	max     int  // bytes a line may have
	run     int  // bytes since the last newline
	pending bool // a newline is owed before the next byte
}

func (l *lineCapped) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if l.pending {
		p[0], l.pending, l.run = '\n', false, 0
		return 1, nil
	}
	p = p[:min(len(p), l.max-l.run)] // at least one byte: run < max here
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.run = n - i - 1
	} else {
		l.run += n
	}
	l.pending = l.run >= l.max
	return n, err
}

func (l *lineCapped) Close() error { return l.r.Close() }
