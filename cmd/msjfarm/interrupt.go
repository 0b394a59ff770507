package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/msjfarm/msjfarm/internal/scratch"
)

// interruptStatus is the exit status of a command a signal interrupted:
// 128 + the signal's number, as a shell reports a process the signal
// killed: 130 for SIGINT (Ctrl-C), 143 for SIGTERM. Every interrupt
// exited 130, and a SIGTERM (Slurm's scancel and time limit, Kubernetes'
// pod stop, kill) read as a Ctrl-C to the scripts that look.
func interruptStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGINT)
}

// signalled is the cause a signalContext ends with: which signal it was.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return s.sig.String() + " signal received" }

// signalContext is a context that the first SIGINT or SIGTERM cancels,
// its cause (signalled) naming the signal for interruptCode; its cancel
// stops listening. (signal.NotifyContext's cause says the signal in words
// only.)
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-sigs:
			cancel(signalled{sig})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// interruptCode is the exit status of a command whose signalContext ctx
// (or a context derived from it) a signal ended: 130 for SIGINT, 143 for
// SIGTERM; 130 when no signal is recorded.
func interruptCode(ctx context.Context) int {
	var s signalled
	if errors.As(context.Cause(ctx), &s) {
		return interruptStatus(s.sig)
	}
	return interruptStatus(os.Interrupt)
}

// interruptedAs is code, or the signal's status (interruptCode) when a
// signal ended ctx (a signalContext, or one derived from it) and the
// command failed: a command that stops at the interrupt's cancellation
// ("context canceled") exited 1 where the documented status is 130.
func interruptedAs(ctx context.Context, cmd string, code int) int {
	if code != 0 && errors.As(context.Cause(ctx), new(signalled)) {
		fmt.Fprintf(stderr, "msjfarm %s: interrupted\n", cmd)
		return interruptCode(ctx)
	}
	return code
}

// cleanOnInterrupt makes an interrupt (SIGINT, SIGTERM) cancel the
// command's context (stop), remove the paths given to add, and exit
// (interruptStatus: 130 for SIGINT, 143 for SIGTERM) once the command
// returns (done; at most 10 s later): report installed
// no handler, and Ctrl-C left its archive's extraction directory (a
// probe's: 954 MB) or its rendering directory behind. An extraction under
// way ends at its next member and removes its own directory.
func cleanOnInterrupt(cmd string, stop context.CancelFunc) (add func(path string), done func()) {
	var mu sync.Mutex
	var paths []string
	var interrupted atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	returned := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			interrupted.Store(true)
			stop()
			select {
			case <-returned:
			case <-time.After(10 * time.Second):
			}
			mu.Lock()
			for _, p := range paths {
				os.RemoveAll(p)
			}
			scratch.Close()
			fmt.Fprintf(stderr, "msjfarm %s: interrupted; its temporary files were removed\n", cmd)
			os.Exit(interruptStatus(sig))
		case <-returned:
		}
	}()
	var once sync.Once
	add = func(path string) {
		mu.Lock()
		paths = append(paths, path)
		mu.Unlock()
	}
	done = func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(returned)
		})
		if interrupted.Load() {
			select {} // the handler exits
		}
	}
	return add, done
}
