package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/coordinator"
	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
	"github.com/msjfarm/msjfarm/storage"
	"github.com/msjfarm/msjfarm/sweep"
	"github.com/msjfarm/msjfarm/worker"
)

// TestSubmitSaysItWaitsForACoordinator: `submit` to a NATS server no
// coordinator serves says at once that it waits for one, and for how
// long; it waited its five minutes in silence.
func TestSubmitSaysItWaitsForACoordinator(t *testing.T) {
	natsURL := natstest.StartEmbedded(t)
	dir := t.TempDir()
	sw := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(sw, []byte(newcomerBase), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(msjfarmBinary(t), "submit", "--nats-url", natsURL, "--storage", filepath.Join(dir, "data"), "--plugin-trial=false", sw)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	found := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "no coordinator answers on this NATS system yet") {
				found <- sc.Text()
				return
			}
		}
		found <- "not said; stderr:\n" + seen.String()
	}()
	select {
	case line := <-found:
		if !strings.Contains(line, "waiting up to 5 minutes") {
			t.Fatalf("%s", line)
		}
	case <-time.After(2 * time.Minute): // a ceiling for a hang, not a timing
		t.Fatal("submit said nothing of the missing coordinator within two minutes")
	}
}

// TestSubmitWaitOutlivesACoordinatorRestart: submit --wait goes on
// waiting while no coordinator answers (one restarting, a standby taking
// over) and ends when the campaign does. It exited 1 at the first status
// no one answered.
func TestSubmitWaitOutlivesACoordinatorRestart(t *testing.T) {
	url, nc := natstest.ConnectEmbedded(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// Each coordinator on a connection of its own, as a process is.
	start := func() func() {
		cnc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		co, err := coordinator.New(context.Background(), coordinator.Options{Conn: cnc, Store: st, Reconcile: 500 * time.Millisecond, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- co.Run(ctx) }()
		<-co.Ready()
		return func() { cancel(); <-done; cnc.Close() }
	}
	stop := start()
	f, err := sweep.Parse([]byte(newcomerBase), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rep protocol.SubmitReply
	if err := protocol.Request(t.Context(), nc, protocol.APISubmit, protocol.SubmitRequest{Spec: f}, &rep); err != nil {
		t.Fatal(err)
	}
	waited := make(chan int, 1)
	go func() { waited <- waitCampaign(context.Background(), nc, rep, nil) }()
	stop()
	// No coordinator for a few of waitCampaign's one-second polls.
	select {
	case code := <-waited:
		t.Fatalf("submit --wait ended with %d while the coordinator restarted", code)
	case <-time.After(3 * time.Second):
	}
	stop = start()
	defer stop()
	w, err := worker.New(context.Background(), worker.Options{Conn: nc, Store: st, Concurrency: 2, FetchWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithCancel(context.Background())
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(wctx) }()
	defer func() { wcancel(); <-wdone }()
	select {
	case code := <-waited:
		if code != 0 {
			t.Fatalf("submit --wait: exit %d, want 0", code)
		}
	case <-time.After(2 * time.Minute): // a ceiling for a hang
		t.Fatal("submit --wait did not end with the campaign")
	}
}

// TestWorkerStoppedBeforeLayout: a worker stopped (SIGTERM, as a pod's
// stop or scancel sends; SIGINT) while it waits for a coordinator to
// create the JetStream layout exits 0, saying it took no task, as it
// does when stopped after a drain: a signal is how a service is
// stopped. It exited 1 with "context canceled". The signal is sent once
// the worker asks NATS for the layout (its handler is in place by then).
func TestWorkerStoppedBeforeLayout(t *testing.T) {
	url, nc := natstest.ConnectEmbedded(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			asked := make(chan struct{}, 1)
			sub, err := nc.Subscribe("$JS.API.STREAM.INFO.>", func(*nats.Msg) {
				select {
				case asked <- struct{}{}:
				default:
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cmd := exec.Command(msjfarmBinary(t), "worker", "--nats-url", url, "--storage", filepath.Join(dir, "data"), "--trace-cache", filepath.Join(dir, "traces"))
			cmd.Env = append(os.Environ(), "HOME="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-asked:
			case err := <-done:
				t.Fatalf("the worker exited (%v) before asking for the layout:\n%s", err, stderr.String())
			case <-time.After(2 * time.Minute): // a ceiling for a hang, not a timing
				cmd.Process.Kill()
				t.Fatalf("the worker did not ask NATS for the layout within two minutes:\n%s", stderr.String())
			}
			if err := signalWait(t, cmd, done, sig, &stderr); err != nil || !strings.Contains(stderr.String(), "before the coordinator created the JetStream layout; no task was taken") {
				t.Fatalf("after %v: %v, want exit 0 saying no task was taken; stderr:\n%s", sig, err, stderr.String())
			}
		})
	}
}
