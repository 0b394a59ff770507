package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/msjfarm/msjfarm/internal/protocol/natstest"
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
