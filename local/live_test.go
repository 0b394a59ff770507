package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/msjfarm/msjfarm/internal/protocol"
	"github.com/msjfarm/msjfarm/local"
	"github.com/msjfarm/msjfarm/storage"
)

// TestLiveRun: while a campaign runs, storage names the run's server and
// that server answers status requests from another connection (another
// terminal's msjfarm status); the entry is gone once the run ends.
func TestLiveRun(t *testing.T) {
	f, camp := spec(t)
	st, err := storage.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := &blocking{}
	checked := make(chan error, 1)
	go func() {
		_, err := local.Run(ctx, local.Options{Spec: f, Store: st, Runner: b, Workers: 1})
		if err != nil {
			checked <- err
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	var data []byte
	for time.Now().Before(deadline) {
		if data, err = st.Get(t.Context(), protocol.LiveRunKey(camp.ID)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no live-run entry: %v", err)
	}
	var lr protocol.LiveRun
	if err := json.Unmarshal(data, &lr); err != nil || lr.Campaign != camp.ID || lr.NATSURL == "" {
		t.Fatalf("live run %s: %v", data, err)
	}
	// The server takes its token only, from a file only this user reads.
	if nc, err := nats.Connect(lr.NATSURL); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	tok, err := os.ReadFile(lr.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(lr.NATSURL, nats.Token(string(tok)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var s protocol.Status
	if err := protocol.Request(t.Context(), nc, protocol.APIStatus, protocol.StatusRequest{Campaign: camp.ID}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Campaign != camp.ID || s.State != protocol.CampaignRunning || s.Total != 6 {
		t.Fatalf("status from the live server: %+v", s)
	}
	cancel()
	deadline = time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err = st.Stat(t.Context(), protocol.LiveRunKey(camp.ID)); errors.Is(err, storage.ErrNotFound) {
			waitGone(t, lr.TokenFile)
			return
		}
		select {
		case err := <-checked:
			t.Fatal(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("live-run entry left after the run: %v", err)
}

// waitGone waits for the run to remove path (its stop removes the token
// file after the live-run entry).
func waitGone(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			return
		}
	}
	t.Errorf("token file %s left after the run", path)
}
