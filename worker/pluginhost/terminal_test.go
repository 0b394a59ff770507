package pluginhost_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/msjfarm/msjfarm/internal/sandbox"
	"github.com/msjfarm/msjfarm/worker/pluginhost"
)

// A plugin gets nothing of the terminal `msjfarm run` was started from.
// The host here runs in a session whose controlling terminal (and
// standard input) is a pseudo-terminal the test made, as a user's shell
// would start it. Before, the plugin shared the host's session and
// standard input: with the sandbox off it opened /dev/tty and typed into
// it (TIOCSTI, "SUCCEEDED: typed into the worker's terminal"), and
// confined it did the same through its standard input, which go-plugin
// gave it: on a real terminal, `touch PWNED` typed by a plugin running as
// nobody under Landlock and seccomp ran in the user's root shell once
// msjfarm exited. Now the plugin runs in a session of its own (no
// controlling terminal) with /dev/null as its standard input.
func TestPluginTerminal(t *testing.T) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	// A line the user typed, waiting in the terminal.
	if _, err := master.WriteString("typed at the worker's terminal\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "HOSTTEST_TTY_PLUGIN="+binary("hostile"))
	cmd.Stdin = pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.Output()
	t.Logf("host on a terminal:\n%s", out)
	if err != nil {
		t.Fatalf("the host: %v", err)
	}
	// Confined, /dev/tty is not in the plugin's private root, where it has
	// one (Landlock refuses it where not).
	ttyRefusal := "permission denied"
	if sb, err := sandbox.New(sandbox.Options{Mode: sandbox.Require, User: "self"}); err == nil && sb.PrivateRoot() {
		ttyRefusal = "no such file or directory"
	}
	for _, want := range []string{
		"sandbox off: tty: attack tty refused: open /dev/tty: no such device or address",
		"sandbox off: stdin: attack stdin refused: read nothing from its standard input: EOF",
		"sandbox: tty: attack tty refused: open /dev/tty: " + ttyRefusal,
		"sandbox: stdin: attack stdin refused: read nothing from its standard input: EOF",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q", want)
		}
	}
}

// terminalHelper is TestPluginTerminal's host: it runs the tty and stdin
// attacks with the sandbox off and on, and prints what each got.
func terminalHelper(path string) {
	ways := []struct {
		name string
		mode sandbox.Mode
	}{{"sandbox off", sandbox.Off}, {"sandbox", sandbox.Require}}
	for _, w := range ways {
		sb, err := sandbox.New(sandbox.Options{Mode: w.mode, User: "self"})
		if err != nil {
			fmt.Printf("%s: %v\n", w.name, err)
			continue
		}
		h := pluginhost.New(pluginhost.Config{Logger: quiet, Sandbox: sb, MaxConcurrent: 1, DigestDir: "off"})
		for _, a := range []string{"tty", "stdin"} {
			_, err := h.Run(context.Background(), pluginhost.Binary{Path: path}, request(exitTB{}, "hostile-"+a, 100, 1), pluginhost.RunOptions{})
			msg := fmt.Sprint(err)
			if _, after, ok := strings.Cut(msg, "policy init: "); ok {
				msg = after
			}
			fmt.Printf("%s: %s: %s\n", w.name, a, msg)
		}
		h.Close()
	}
}
